//! The trust boundary as structure: project data (what a cloned repository or a child may have
//! written) enters through one door, `src/project/`. This test keeps it so: a module that opens
//! or lists files must be one of those below, each with the reason it may. A new capability
//! that wants a project file asks `crate::project` for it (a file proven inside its root, a
//! name of a checked shape) instead of opening it on its own.

use std::path::{Path, PathBuf};

/// Modules that may open or list files, and what they open.
const MAY_OPEN: &[(&str, &str)] = &[
    ("src/project/", "the one door for project data"),
    (
        "src/store/",
        "cuekit's own records, registry and logs (opened without following links)",
    ),
    ("src/process.rs", "the kernel's /proc"),
    (
        "src/git/cleanup.rs",
        "the kernel's /proc (processes inside a worktree)",
    ),
    (
        "src/git/include.rs",
        "names in a folder of untracked files being copied (each entry checked before it is)",
    ),
    (
        "src/git/checkout.rs",
        "cuekit's own index of a task's checkout, in the task directory (copied per process; \
         never the child's index)",
    ),
    (
        "src/git/fingerprint.rs",
        "the names and `lstat` of a task worktree's entries (never their contents), for the \
         conflict recheck's fingerprint",
    ),
    (
        "src/ops/task.rs",
        "the names in a project's tasks folder (records go through the store)",
    ),
    (
        "src/doctor.rs",
        "the names in a project's tasks folder (records go through the store)",
    ),
    ("src/config/mod.rs", "the user's own config file"),
    ("src/role/mod.rs", "the user's own role profiles"),
    (
        "src/trust.rs",
        "the user's trust entries and the file the user trusts",
    ),
    (
        "src/cli/mod.rs",
        "a file the user names on the command line",
    ),
    (
        "src/adapter/",
        "the agents' own settings in the user's HOME (auth probes)",
    ),
    (
        "src/remote/",
        "cuekit's own files in the user's data directory",
    ),
    (
        "src/ops/remote/hosts.rs",
        "cuekit's own binary, copied to a host",
    ),
    (
        "src/ops/report_drop.rs",
        "a sandboxed child's report drop in cuekit's data dir: regular files only, size-limited, parsed typed",
    ),
    (
        "src/ops/sandbox.rs",
        "the names in the agents' settings folders in the user's HOME, the `.git` file git wrote in a task's worktree (only a folder in `worktrees/` counts), a program's `#!` line",
    ),
    (
        "src/cli/mcp.rs",
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

#[test]
fn only_the_door_and_named_modules_open_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut unexplained = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        // Unit tests make their own files.
        let code = text.split("#[cfg(test)]").next().unwrap();
        let opens: Vec<(usize, &str)> = code
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim_start().starts_with("//"))
            .filter(|(_, line)| OPENERS.iter().any(|opener| line.contains(opener)))
            .map(|(index, line)| (index + 1, line.trim()))
            .collect();
        if opens.is_empty()
            || MAY_OPEN
                .iter()
                .any(|(prefix, _)| relative.starts_with(prefix))
        {
            continue;
        }
        for (line, text) in opens {
            unexplained.push(format!("{relative}:{line}: {text}"));
        }
    }
    assert!(
        unexplained.is_empty(),
        "these open files outside the door; read project data through crate::project (or \
         cuekit's own files through crate::store), or add the module to MAY_OPEN with why:\n{}",
        unexplained.join("\n")
    );
}

#[test]
fn every_module_named_still_opens_files() {
    // A stale entry would let a later change open files there unseen.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (prefix, why) in MAY_OPEN {
        let path = root.join(prefix);
        let mut files = Vec::new();
        if path.is_dir() {
            rust_files(&path, &mut files);
        } else {
            files.push(path.clone());
        }
        let opens = files.iter().any(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap().to_string();
            OPENERS.iter().any(|opener| code.contains(opener))
        });
        assert!(opens, "{prefix} ({why}) opens no file any more: drop it");
    }
}
