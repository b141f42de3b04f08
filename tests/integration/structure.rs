//! The trust boundary as structure: project data (what a cloned repository or a child may have
//! written) enters through one door, `src/project/`. This test keeps it so: a module that opens
//! or lists files must be one of those below, each with the reason it may. A new capability
//! that wants a project file asks `crate::effects::project` for it (a file proven inside its root, a
//! name of a checked shape) instead of opening it on its own.

use std::path::{Path, PathBuf};

/// Modules that may open or list files, and what they open.
const MAY_OPEN: &[(&str, &str)] = &[
    ("src/effects/project/", "the one door for project data"),
    (
        "src/effects/store/",
        "cuekit's own records, registry and logs (opened without following links)",
    ),
    ("src/effects/process.rs", "the kernel's /proc"),
    (
        "src/effects/owner.rs",
        "the names in a tree cuekit just made for a sandboxed child of root's (its checkout, its \
         git dir, a check's scratch), each handed to the sandbox's uid without following a link",
    ),
    (
        "src/effects/git/cleanup.rs",
        "the kernel's /proc (processes inside a worktree)",
    ),
    (
        "src/effects/git/include.rs",
        "names in a folder of untracked files being copied (each entry checked before it is)",
    ),
    (
        "src/effects/git/checkout.rs",
        "cuekit's own index of a task's checkout, in the task directory (copied per process; \
         never the child's index)",
    ),
    (
        "src/effects/git/inventory.rs",
        "the names of a task git dir's refs, reflogs and submodule git dirs (their contents read \
         through the store: no link followed, bounded), and cuekit's own index of a submodule",
    ),
    (
        "src/effects/git/fingerprint.rs",
        "the names and `lstat` of a task worktree's entries (never their contents), for the \
         conflict recheck's fingerprint",
    ),
    (
        "src/ops/task/mod.rs",
        "the names in a project's tasks folder (records go through the store)",
    ),
    (
        "src/ops/doctor/storage.rs",
        "the names in a project's tasks folder (records go through the store)",
    ),
    (
        "src/ops/doctor/git.rs",
        "the names in a project's tasks folder, for worktrees no task knows",
    ),
    (
        "src/ops/doctor/sandbox.rs",
        "the kernel's /proc (whether TIOCSTI is allowed)",
    ),
    ("src/effects/config/mod.rs", "the user's own config file"),
    ("src/effects/role/mod.rs", "the user's own role profiles"),
    (
        "src/effects/trust.rs",
        "the user's trust entries and the file the user trusts",
    ),
    (
        "src/cli/mod.rs",
        "a file the user names on the command line",
    ),
    (
        "src/domain/adapter/",
        "the agents' own settings in the user's HOME (auth probes)",
    ),
    (
        "src/effects/remote/",
        "cuekit's own files in the user's data directory",
    ),
    (
        "src/ops/remote/hosts.rs",
        "cuekit's own binary, copied to a host",
    ),
    (
        "src/ops/report/dropped.rs",
        "a sandboxed child's report drop in cuekit's data dir: regular files only, size-limited, parsed typed",
    ),
    (
        "src/ops/sandbox/plan.rs",
        "the names in the agents' settings folders in the user's HOME, the folders below an in-place work dir (names only, links not followed: a nested repository's `.git`), a program's `#!` line",
    ),
    (
        "src/ops/sandbox/sockets.rs",
        "the names and types of what a sandbox shows of the machine (names only, links not followed: its socket files, to cover)",
    ),
    (
        "src/ops/parent_setup.rs",
        "the MCP clients' own config files in the user's HOME (`mcp install`); a project's file goes through the door",
    ),
];

const OPENERS: &[&str] = &[
    "fs::read(",
    "fs::read_to_string(",
    "fs::read_dir(",
    "File::open(",
    ".read(true)",
    "fs::copy(",
];

/// A file's code before its unit tests: the first `#[cfg(test)]` on an inline module (one on
/// another item, `mod fixtures;`, is not their start).
fn before_unit_tests(text: &str) -> &str {
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]") {
        let start = from + at;
        let next = text[start..].lines().nth(1).unwrap_or_default();
        if next.starts_with("mod ") && next.trim_end().ends_with('{') {
            return &text[..start];
        }
        from = start + 1;
    }
    text
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every code line (before a file's unit tests, comments left out) of the files under `dir`
/// that names one of `words`, as `path:line: text`, but in the files `allowed` lists.
fn lines_naming(dir: &str, words: &[&str], allowed: &[(&str, &str)]) -> Vec<String> {
    lines_naming_under(Path::new(env!("CARGO_MANIFEST_DIR")), dir, words, allowed)
}

/// [`lines_naming`] in the tree at `root`.
fn lines_naming_under(
    root: &Path,
    dir: &str,
    words: &[&str],
    allowed: &[(&str, &str)],
) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&root.join(dir), &mut files);
    let mut found = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if allowed
            .iter()
            .any(|(prefix, _)| relative.starts_with(prefix))
        {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        // Unit tests make their own files.
        let code = before_unit_tests(&text);
        for (index, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or_default();
            if words.iter().any(|word| line.contains(word)) {
                found.push(format!("{relative}:{}: {}", index + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn only_the_door_and_named_modules_open_files() {
    let unexplained = lines_naming("src", OPENERS, MAY_OPEN);
    assert!(
        unexplained.is_empty(),
        "these open files outside the door; read project data through crate::effects::project (or \
         cuekit's own files through crate::effects::store), or add the module to MAY_OPEN with why:\n{}",
        unexplained.join("\n")
    );
}

#[test]
fn every_module_named_still_opens_files() {
    // A stale entry would let a later change open files there unseen.
    still_named(MAY_OPEN, OPENERS, "opens no file any more");
}

/// Fails on an entry of `list` whose files name none of `words` before their unit tests.
fn still_named(list: &[(&str, &str)], words: &[&str], stale: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (prefix, why) in list {
        let path = root.join(prefix);
        let mut files = Vec::new();
        if path.is_dir() {
            rust_files(&path, &mut files);
        } else {
            files.push(path.clone());
        }
        let does = files.iter().any(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let code = before_unit_tests(&text).to_string();
            words.iter().any(|word| code.contains(word))
        });
        assert!(does, "{prefix} ({why}) {stale}: drop it");
    }
}

/// The layers, bottom up, and what each may import: an arrow only points down (or stays in
/// its layer). Faces are `cli`, `mcp`, `top` (and `web`); `cli` starts the others.
const LAYERS: &[(&str, &[&str])] = &[
    ("domain", &["domain"]),
    ("effects", &["domain", "effects"]),
    ("ops", &["domain", "effects", "ops"]),
    ("cli", &["domain", "ops", "cli", "mcp", "top", "web"]),
    ("mcp", &["domain", "ops", "mcp"]),
    ("top", &["domain", "ops", "top"]),
    ("web", &["domain", "ops", "web"]),
];

/// What the crate root re-exports, by the layer it comes from.
const ROOT_ITEMS: &[(&str, &str)] = &[
    ("Error", "domain"),
    ("ErrorCode", "domain"),
    ("Result", "domain"),
];

/// The module path of a file under `src/`: `src/ops/schedule/start.rs` is `ops::schedule::start`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .skip(1)
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

/// The first segment of every path a line names through `crate::` or `super::`, each as the
/// top-level module it reaches (`None` for the crate root's own items it cannot place).
fn reached_modules(line: &str, module: &[String]) -> Vec<String> {
    let mut reached = Vec::new();
    let bytes = line.as_bytes();
    let mut at = 0;
    while at < line.len() {
        let rest = &line[at..];
        let word_start =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let base: Option<(usize, Vec<String>)> = if !word_start {
            None
        } else if rest.starts_with("crate::") {
            Some(("crate::".len(), Vec::new()))
        } else if rest.starts_with("super::") {
            let mut len = 0;
            let mut up = module.to_vec();
            while rest[len..].starts_with("super::") {
                len += "super::".len();
                up.pop();
            }
            Some((len, up))
        } else {
            None
        };
        let Some((len, base)) = base else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let tail = &rest[len..];
        let firsts: Vec<String> = if let Some(group) = tail.strip_prefix('{') {
            // `crate::{a::b, c}`: each item's first segment.
            let mut depth = 0;
            let mut items = vec![String::new()];
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => items.push(String::new()),
                    _ => {}
                }
                if depth == 0 && ch != ',' && ch != '{' {
                    items.last_mut().unwrap().push(ch);
                }
            }
            items
                .iter()
                .map(|item| segment(item.trim()))
                .filter(|s| !s.is_empty())
                .collect()
        } else {
            vec![segment(tail)]
        };
        for first in firsts {
            let mut path = base.clone();
            path.push(first);
            reached.push(path[0].clone());
        }
        at += len;
    }
    reached
}

fn segment(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

fn layer_of(top: &str) -> Option<&'static str> {
    LAYERS
        .iter()
        .map(|(layer, _)| *layer)
        .find(|layer| *layer == top)
        .or_else(|| {
            ROOT_ITEMS
                .iter()
                .find(|(item, _)| *item == top)
                .map(|(_, layer)| *layer)
        })
}

#[test]
fn layers_point_only_down() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut upward = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root).unwrap().to_path_buf();
        let module = module_path(&relative);
        let Some(own) = module.first().and_then(|top| layer_of(top)) else {
            continue; // lib.rs and main.rs: the crate's root
        };
        let allowed = LAYERS.iter().find(|(layer, _)| *layer == own).unwrap().1;
        let text = std::fs::read_to_string(&file).unwrap();
        for (index, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for reached in reached_modules(code, &module) {
                // `super::` inside an inline module (tests) stays in its file.
                let Some(layer) = layer_of(&reached) else {
                    continue;
                };
                if !allowed.contains(&layer) {
                    upward.push(format!(
                        "{}:{}: {own} reaches {layer}: {}",
                        relative.display(),
                        index + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "these paths break the layers (domain ← effects ← ops ← faces; see AGENTS.md, \"Layers\"): \
         move what they need down, or call an operation:\n{}",
        upward.join("\n")
    );
}

/// What the domain may not do outside its unit tests: it is rules and types, so it reads no
/// file, environment or clock and starts nothing.
const IMPURE: &[&str] = &[
    "std::fs",
    "std::process",
    "std::env",
    "std::net",
    "SystemTime::now",
    "Instant::now",
    "Command::new",
    "libc::",
];

/// Where the domain may, and why.
const DOMAIN_MAY: &[(&str, &str)] = &[(
    "src/domain/adapter/",
    "each adapter's auth probe (`Adapter::auth_probe`) reads its agent's own login files and \
     variables, without running the agent: the probe is the adapter's knowledge of where its \
     agent keeps credentials",
)];

#[test]
fn the_domain_touches_nothing() {
    let impure = lines_naming("src/domain", IMPURE, DOMAIN_MAY);
    assert!(
        impure.is_empty(),
        "the domain is pure (AGENTS.md, \"Layers\"): move these to src/effects/ and pass what \
         they found in:\n{}",
        impure.join("\n")
    );
}

/// Where a face turns its own words into a `SubmitRequest` (or back): each names every field,
/// so a new submit option fails the build until every face says what it does with it.
const SUBMIT_CONVERSIONS: &[(&str, &str)] = &[
    ("src/cli/submit.rs", "the command line's flags"),
    ("src/mcp/tools.rs", "the MCP tool's parameters"),
    ("src/ops/team.rs", "a team spec's member"),
    ("src/ops/remote/submit.rs", "the words a host is sent"),
    ("src/web/routes.rs", "the web page's form"),
];

/// The fields of `SubmitRequest`, read from its definition.
fn submit_fields(root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root.join("src/ops/submit/request.rs")).unwrap();
    let body = text
        .split("pub struct SubmitRequest {")
        .nth(1)
        .and_then(|rest| rest.split("\n}").next())
        .expect("SubmitRequest is defined in src/ops/submit/request.rs");
    body.lines()
        .filter_map(|line| line.trim().strip_prefix("pub "))
        .filter_map(|line| line.split(':').next())
        .map(str::to_string)
        .collect()
}

/// Each `SubmitRequest {…}` written in `code`, braces balanced.
fn submit_literals(code: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("SubmitRequest {") {
        let open = at + "SubmitRequest ".len();
        let mut depth = 0;
        for (offset, ch) in code[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        found.push(&code[open..open + offset + 1]);
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    found
}

/// What a face's code leaves unsaid of `fields` in its `SubmitRequest` conversions.
fn unnamed_submit_fields(code: &str, fields: &[String]) -> Vec<String> {
    // Copies of a request already made (`..member.clone()`) are not conversions.
    let copies = |literal: &str| {
        literal.lines().any(|line| {
            let line = line.trim();
            line.starts_with("..") && !line.contains("default()")
        })
    };
    let conversions: Vec<&str> = submit_literals(code)
        .into_iter()
        .filter(|literal| !copies(literal))
        .collect();
    if conversions.is_empty() {
        return vec!["no SubmitRequest conversion found".to_string()];
    }
    let mut missing = Vec::new();
    for literal in conversions {
        // The literal's own lines, not those of a struct nested in it (a `Scheduling {…}` may
        // take the rest of its own fields from a default).
        let mut depth = 0;
        let own: String = literal
            .chars()
            .filter(|ch| {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                depth == 1
            })
            .collect();
        let from_default = own.lines().any(|line| {
            let line = line.trim();
            line.starts_with("..") && line.contains("default()")
        });
        if from_default {
            missing.push("fills fields from a default".to_string());
        }
        for field in fields {
            let named =
                literal.contains(&format!("{field}:")) || literal.contains(&format!("{field},"));
            if !named {
                missing.push(format!("`{field}` is not named"));
            }
        }
    }
    missing
}

#[test]
fn every_face_names_every_submit_option() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fields = submit_fields(root);
    assert!(fields.len() > 20, "{fields:?}");
    let mut missing = Vec::new();
    for (file, what) in SUBMIT_CONVERSIONS {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for gap in unnamed_submit_fields(code, &fields) {
            missing.push(format!("{file} ({what}): {gap}"));
        }
    }
    assert!(
        missing.is_empty(),
        "every face converts a submit request once, naming every field (say `field: None` with \
         why, rather than `..default()`):\n{}",
        missing.join("\n")
    );
}

/// The check above catches what it is for: a conversion that fills the rest from a default (as
/// the web face's did) and one that leaves a field out.
#[test]
fn a_seeded_submit_conversion_with_a_default_or_a_missing_field_is_caught() {
    let fields = vec!["agent".to_string(), "objective".to_string()];
    let defaulted =
        "let r = ops::SubmitRequest {\n    agent,\n    ..ops::SubmitRequest::default()\n};";
    assert_eq!(
        unnamed_submit_fields(defaulted, &fields),
        ["fills fields from a default", "`objective` is not named"]
    );
    let whole = "let r = SubmitRequest {\n    agent,\n    objective: text,\n};";
    assert!(unnamed_submit_fields(whole, &fields).is_empty());
}

/// What starts a process: a `std::process::Command` made, spawned or exec'd, or given a
/// `pre_exec`.
const STARTS: &[&str] = &[
    "Command::new",
    "process::Command",
    ".spawn()",
    ".exec()",
    "CommandExt",
];

/// The files that may start a process, and why. Every other start goes through the bounded
/// runner (`crate::effects::bounded::Bounded`: deadline, bounded output, its group killed
/// before the reap) or `crate::effects::spawn`.
const MAY_START: &[(&str, &str)] = &[
    (
        "src/effects/bounded.rs",
        "the bounded runner: every program cuekit starts and waits for",
    ),
    (
        "src/effects/spawn.rs",
        "the starts that are not waited for within a deadline: a detached worker, exec, the \
         user's pager, a supervised child handed descriptors (the sandbox's network)",
    ),
    (
        "src/effects/tmux/mod.rs",
        "the only place that runs tmux: a local server's answer, started and collected apart \
         (`Pending`)",
    ),
    (
        "src/effects/acp/client.rs",
        "the ACP agent: a long-lived child of the client in the pane, killed with it \
         (PR_SET_PDEATHSIG)",
    ),
    (
        "src/ops/attach.rs",
        "`attach` hands this terminal to tmux until the person detaches",
    ),
];

/// What calls the C library directly.
const LIBC: &[&str] = &["libc::"];

/// The files that may call libc, and why.
const MAY_CALL_LIBC: &[(&str, &str)] = &[
    (
        "src/effects/clock.rs",
        "the local time of day (time, localtime_r: the C library's time zone)",
    ),
    (
        "src/effects/bounded.rs",
        "waitid(WNOWAIT) and killpg: a group killed before its leader is reaped",
    ),
    (
        "src/effects/spawn.rs",
        "descriptors handed to a supervised child (fcntl, dup2 in pre_exec)",
    ),
    (
        "src/effects/process.rs",
        "signals to process trees and groups, a namespace's owner (ioctl)",
    ),
    (
        "src/effects/scope.rs",
        "landlock's abstract-socket scope (syscall, prctl)",
    ),
    (
        "src/effects/project/",
        "open flags (O_NOFOLLOW, O_NONBLOCK, O_NOCTTY) and the owner check (geteuid)",
    ),
    (
        "src/effects/store/",
        "open flags of cuekit's own files (O_NOFOLLOW, O_NONBLOCK, O_NOCTTY)",
    ),
    (
        "src/effects/git/include.rs",
        "open flags of a file copied from a checkout (O_NOFOLLOW, O_NONBLOCK)",
    ),
    (
        "src/effects/tmux/",
        "the user's id, in tmux's socket folder",
    ),
    (
        "src/effects/acp/",
        "the client's terminal and process group, its signals, its peer's credentials",
    ),
    (
        "src/ops/sandbox/net.rs",
        "the network supervisor: pipes, pidfds, poll, a signal raised again (issue 45 edits it)",
    ),
    (
        "src/ops/background/",
        "a worker's own session (setsid) and SIGPIPE",
    ),
    (
        "src/ops/judge/stop.rs",
        "this process's group, never signalled with a task's",
    ),
    ("src/ops/reap.rs", "a killed submit's leftover git ended"),
    ("src/cli/mod.rs", "SIGPIPE, a named file's open flags"),
    ("src/top/mod.rs", "SIGPIPE while a pager reads"),
];

#[test]
fn only_the_runner_and_named_modules_start_processes() {
    let unexplained = lines_naming("src", STARTS, MAY_START);
    assert!(
        unexplained.is_empty(),
        "these start a process outside the runner; run it through \
         crate::effects::bounded::Bounded (or crate::effects::spawn for a start that is not \
         waited for), or add the file to MAY_START with why:\n{}",
        unexplained.join("\n")
    );
}

#[test]
fn only_named_modules_call_libc() {
    let unexplained = lines_naming("src", LIBC, MAY_CALL_LIBC);
    assert!(
        unexplained.is_empty(),
        "these call libc outside the files named; move the call into src/effects/, or add the \
         file to MAY_CALL_LIBC with why:\n{}",
        unexplained.join("\n")
    );
}

#[test]
fn every_file_named_still_starts_a_process_or_calls_libc() {
    // A stale entry would let a later change start processes or call libc there unseen.
    still_named(MAY_START, STARTS, "starts no process any more");
    still_named(MAY_CALL_LIBC, LIBC, "calls libc no more");
}

#[test]
fn a_seeded_process_start_or_libc_call_is_caught() {
    let tree = tempfile::tempdir().unwrap();
    let write = |relative: &str, text: &str| {
        let path = tree.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let sneaky = "pub fn go() {\n    let _ = std::process::Command::new(\"sh\").output();\n    \
                  unsafe { libc::kill(1, 0) };\n}\n";
    write("src/ops/sneaky.rs", sneaky);
    write("src/effects/bounded.rs", sneaky);
    write(
        "src/ops/tested.rs",
        "#[cfg(test)]\nmod tests {\n    fn t() { std::process::Command::new(\"sh\"); }\n}\n",
    );
    let started = lines_naming_under(tree.path(), "src", STARTS, MAY_START);
    assert_eq!(
        started,
        ["src/ops/sneaky.rs:2: let _ = std::process::Command::new(\"sh\").output();"]
    );
    let called = lines_naming_under(tree.path(), "src", LIBC, MAY_CALL_LIBC);
    assert_eq!(
        called,
        ["src/ops/sneaky.rs:3: unsafe { libc::kill(1, 0) };"]
    );
}
