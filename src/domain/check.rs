//! A task's check (`--check`): what runs, which paths the child cannot change for it (restored
//! from the base before it runs), what the child is told when it fails, the verdict, and the
//! loop a batch task's `launch.sh` runs around its agent. Pure: the operation is `ops::check`.

use serde::{Deserialize, Serialize};

use crate::domain::error::Result;
use crate::domain::launch::single_quote;

/// Fix rounds when none are asked for (`--check-rounds`).
pub const DEFAULT_ROUNDS: u32 = 2;
/// How long one check command may run when no `--check-timeout` is given.
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;
/// At most this many bytes of a check's output are kept in its log; the rest is counted.
pub const LOG_LIMIT: u64 = 1024 * 1024;
/// The fix message carries at most this many of the output's last lines …
pub const TAIL_LINES: usize = 40;
/// … and at most this many bytes of them.
pub const TAIL_BYTES: usize = 4000;

/// What `cuekit __check --from-launch` exits with when the check failed and the child gets a
/// fix round (its message is in the task's fix file). Any other non-zero status is the
/// check's failure; 0 its pass.
pub const FIX_ROUND_EXIT: i32 = 75;
/// `launch.sh`'s status for a failed check (the verdict is the registry's: a child exiting
/// with this status alone is an ordinary failure).
pub const CHECK_FAILED_EXIT: i32 = 1;
/// The file, in the task directory, a fix round's message is read from (on the agent's stdin).
pub const FIX_FILE: &str = "checks/fix.txt";

/// What tells an interactive child of `agent_kind` to exit once its check decided (verified
/// against the real CLI: Gemini's `/quit` exits 0). `None`: no way known, so no interactive
/// check for that agent yet.
pub fn quit_words(agent_kind: &str) -> Option<&'static str> {
    match agent_kind {
        "gemini" => Some("/quit"),
        _ => None,
    }
}

/// Whether an interactive child idle at its prompt waits on its own check, not on a person:
/// its agent can be told to quit (so cuekit checks its turns), and the check has not left the
/// next move to the parent (a pass of a task kept open). Such a task reads `running`,
/// `checking`, from the end of its turn until the verdict: never `input_required`.
pub fn idle_waits_on_its_check(agent_kind: &str, keep_open: bool, phase: Option<Phase>) -> bool {
    quit_words(agent_kind).is_some() && !(keep_open && phase == Some(Phase::Passed))
}

/// The check as asked for at submit: kept in the registry, never read from the project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckPlan {
    /// Commands, each run with `/bin/sh -c` in the scratch checkout, in order; the first that
    /// fails decides.
    pub run: Vec<String>,
    /// Fix rounds after a failed check.
    pub rounds: u32,
    /// The limit on each command.
    pub timeout_secs: u64,
    /// Paths restored from the base before the check runs (globs, see [`glob_match`]).
    pub protect: Vec<String>,
    /// An interactive child whose check passed stays at its prompt (else it is told to quit).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_open: bool,
}

/// What a project is built with, as the names at its root tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ecosystem {
    Rust,
    Python,
    Node,
    Go,
    Make,
}

impl Ecosystem {
    /// The ecosystems whose marker files are among `names` (the entries of the base's root).
    pub fn detect<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<Ecosystem> {
        let mut found = Vec::new();
        for name in names {
            let ecosystem = match name {
                "Cargo.toml" => Ecosystem::Rust,
                "pyproject.toml" | "setup.py" | "setup.cfg" | "pytest.ini" | "tox.ini" => {
                    Ecosystem::Python
                }
                "package.json" => Ecosystem::Node,
                "go.mod" => Ecosystem::Go,
                "Makefile" | "makefile" | "GNUmakefile" => Ecosystem::Make,
                _ => continue,
            };
            if !found.contains(&ecosystem) {
                found.push(ecosystem);
            }
        }
        found
    }

    /// Its test folders and test-runner configuration.
    fn protected(self) -> &'static [&'static str] {
        match self {
            Ecosystem::Rust => &[
                "**/tests/**",
                "**/benches/**",
                "build.rs",
                ".cargo/config.toml",
                ".cargo/config",
                "rust-toolchain.toml",
                "rust-toolchain",
                ".config/nextest.toml",
            ],
            Ecosystem::Python => &[
                "**/tests/**",
                "**/test/**",
                "conftest.py",
                "pytest.ini",
                "tox.ini",
                "noxfile.py",
                ".pytest.ini",
                "pytest.toml",
                ".pytest.toml",
            ],
            Ecosystem::Node => &[
                "**/test/**",
                "**/tests/**",
                "**/__tests__/**",
                "jest.config.*",
                "vitest.config.*",
                ".mocharc*",
                ".yarnrc",
                ".yarnrc.yml",
                ".pnpmfile.cjs",
                "bunfig.toml",
            ],
            Ecosystem::Go => &["*_test.go", "**/testdata/**"],
            // Makefiles a `Makefile` includes (`include test.mk`) hold recipes as well.
            Ecosystem::Make => &["Makefile", "makefile", "GNUmakefile", "*.mk", "*.make"],
        }
    }
}

/// Files that steer an interpreter or a package manager wherever they stand, whatever the
/// ecosystems found: Python's startup hooks (`sitecustomize.py`, `usercustomize.py`, `*.pth`),
/// distributions' metadata (their entry points load pytest plugins), and npm's settings (`.npmrc`: `script-shell`, `node-options`, …).
pub const RUNNER_HOOKS: &[&str] = &[
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
    // A distribution's metadata on the path: its `entry_points.txt` names pytest plugins
    // (`[pytest11]`) that pytest loads by itself.
    "*.dist-info",
    "*.egg-info",
    "*.egg-link",
    ".npmrc",
];

/// The protected globs of a check without its own `protect`: the test folders and runner
/// configuration of every ecosystem found, and the `tests/` and `test/` folders at any depth
/// (a package's own, a workspace member's) and [`RUNNER_HOOKS`] whatever was found.
pub fn default_protect(ecosystems: &[Ecosystem]) -> Vec<String> {
    let mut globs: Vec<String> = vec!["**/tests/**".into(), "**/test/**".into()];
    globs.extend(RUNNER_HOOKS.iter().map(|glob| (*glob).to_string()));
    for ecosystem in ecosystems {
        for glob in ecosystem.protected() {
            if !globs.iter().any(|g| g == glob) {
                globs.push((*glob).to_string());
            }
        }
    }
    globs
}

/// Whether a `--check-protect` glob can match any path of a checkout ([`glob_match`] compares
/// repository-relative paths, a leading `/` meaning the root): not empty, no `.` or `..` part,
/// no empty part.
pub fn protect_glob_can_match(pattern: &str) -> bool {
    let pattern = pattern.trim();
    !pattern.is_empty()
        && !pattern.contains('\0')
        && pattern
            .trim_start_matches('/')
            .trim_end_matches('/')
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// Whether `path` (slash-separated, relative to the root) matches `pattern`: `*` matches
/// within one name, `**` any number of names, `?` one character. A pattern without `/`
/// matches a name at any depth (`conftest.py`, `*_test.go`); one with `/` from the root.
pub fn glob_match(pattern: &str, path: &str) -> bool {
    let pattern = pattern.trim_start_matches('/');
    let pattern = pattern
        .strip_suffix('/')
        .map_or_else(|| pattern.to_string(), |dir| format!("{dir}/**"));
    let parts: Vec<&str> = pattern.split('/').collect();
    let names: Vec<&str> = path.split('/').collect();
    if parts.len() == 1 {
        return names.iter().any(|name| name_match(parts[0], name));
    }
    parts_match(&parts, &names)
}

fn parts_match(parts: &[&str], names: &[&str]) -> bool {
    match parts.split_first() {
        None => names.is_empty(),
        Some((&"**", rest)) => (0..=names.len()).any(|skip| parts_match(rest, &names[skip..])),
        Some((part, rest)) => names
            .split_first()
            .is_some_and(|(name, others)| name_match(part, name) && parts_match(rest, others)),
    }
}

fn name_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|skip| go(rest, &n[skip..])),
            Some(('?', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    go(&p, &n)
}

/// Whether any of `globs` protects `path`.
pub fn is_protected(globs: &[String], path: &str) -> bool {
    globs.iter().any(|glob| glob_match(glob, path))
}

/// The protected part of a file the child may otherwise change: `package.json`'s `scripts`
/// (the test runner's words), whose dependencies are the child's to edit.
pub const SCRIPTS_FILE: &str = "package.json";

/// The child's `package.json` with the base's `scripts` put back, when they differ; `None`
/// when they are the same. A child's file that is no JSON object gets the base's whole.
pub fn with_base_scripts(base: &str, work: &str) -> Option<String> {
    let base: serde_json::Value = serde_json::from_str(base).ok()?;
    let Ok(serde_json::Value::Object(mut work)) = serde_json::from_str::<serde_json::Value>(work)
    else {
        return Some(base.to_string());
    };
    let scripts = base.get("scripts").cloned();
    if work.get("scripts") == scripts.as_ref() {
        return None;
    }
    match scripts {
        Some(scripts) => work.insert("scripts".into(), scripts),
        None => work.remove("scripts"),
    };
    Some(serde_json::to_string_pretty(&serde_json::Value::Object(work)).ok()? + "\n")
}

/// What the child did to a protected path (set aside for the check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditKind {
    Added,
    Changed,
    Removed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedEdit {
    pub path: String,
    pub edit: EditKind,
}

/// The edits among two listings of `(path, mode and object)`, both sorted by path, of the
/// protected paths only.
pub fn protected_edits(
    globs: &[String],
    base: &[(String, String)],
    work: &[(String, String)],
) -> Vec<ProtectedEdit> {
    let find = |list: &[(String, String)], path: &str| {
        list.binary_search_by(|(p, _)| p.as_str().cmp(path))
            .ok()
            .map(|i| list[i].1.clone())
    };
    let mut edits = Vec::new();
    for (path, id) in work.iter().filter(|(p, _)| is_protected(globs, p)) {
        match find(base, path) {
            None => edits.push((path.clone(), EditKind::Added)),
            Some(base_id) if &base_id != id => edits.push((path.clone(), EditKind::Changed)),
            Some(_) => {}
        }
    }
    for (path, _) in base.iter().filter(|(p, _)| is_protected(globs, p)) {
        if find(work, path).is_none() {
            edits.push((path.clone(), EditKind::Removed));
        }
    }
    edits.sort_by(|a, b| a.0.cmp(&b.0));
    edits
        .into_iter()
        .map(|(path, edit)| ProtectedEdit { path, edit })
        .collect()
}

/// Where a task's check stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The child works (first run or a fix round); no check runs now.
    Working,
    /// A check runs (the task stays `running`).
    Checking,
    Passed,
    Failed,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Working => "working",
            Phase::Checking => "checking",
            Phase::Passed => "passed",
            Phase::Failed => "failed",
        }
    }
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// 1 for the check of the child's first answer, k + 1 after fix round k.
    pub round: u32,
    pub passed: bool,
    /// The command that failed (or the last one, for a pass).
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// Why the check could not run at all (no checkout, git failed): a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `checks/<round>.log` in the task directory.
    pub log: String,
    /// When cuekit began this check (`at` is when it decided).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected_edits: Vec<ProtectedEdit>,
    /// The files the child changed that a merge asks to have reviewed (manifests, build
    /// scripts, dotfiles: `cuekit merge` takes them only with `--yes`); a pass may rest on them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub review_paths: Vec<String>,
    /// The tests the check's commands reported running (where a runner reports a count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests_ran: Option<u64>,
    /// The tests the same commands reported running on the base, measured once per base tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_tests_ran: Option<u64>,
    pub at: String,
    /// The commit this check ran on (the child's work as the check read it, kept at
    /// [`checked_ref`]): what `result`, `diff` and `merge` take once it passed. `None` for a
    /// verdict of an older cuekit, or one that could not read the work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// Where the commit check round `round` of task `task_id` ran on is kept, in the user's
/// repository (neither `gc` nor a branch's move takes it away).
pub fn checked_ref(task_id: &str, round: u32) -> String {
    format!("{}{round}", checked_refs(task_id))
}

/// The folder of refs [`checked_ref`] writes for `task_id`, every round's.
pub fn checked_refs(task_id: &str) -> String {
    format!("refs/cuekit/checked/{task_id}/")
}

impl Verdict {
    /// The protected paths the child edited, as the verdict lists them.
    pub fn protected_paths(&self) -> Vec<&str> {
        self.protected_edits
            .iter()
            .map(|e| e.path.as_str())
            .collect()
    }
}

/// A task's check: the rounds allowed, the phase and every verdict so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckState {
    pub rounds: u32,
    pub phase: Phase,
    /// Fix rounds given so far.
    #[serde(default)]
    pub fix_rounds: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<Verdict>,
}

impl CheckState {
    pub fn new(rounds: u32) -> CheckState {
        CheckState {
            rounds,
            phase: Phase::Working,
            fix_rounds: 0,
            verdicts: Vec::new(),
        }
    }

    /// The round the next check is.
    pub fn next_round(&self) -> u32 {
        self.verdicts.last().map_or(1, |v| v.round + 1)
    }

    /// The commit the task's passing check ran on: the last passing verdict's, while the
    /// check stands passed (a later failed check, or a fix round under way, names none).
    pub fn checked_commit(&self) -> Option<&str> {
        if self.phase != Phase::Passed {
            return None;
        }
        self.verdicts
            .iter()
            .rev()
            .find(|v| v.passed)
            .and_then(|v| v.commit.as_deref())
    }

    /// The last verdict that passed, whatever came after it (a failed re-check): what a plain
    /// `merge` or a `--base-from` may still take.
    pub fn last_pass(&self) -> Option<&Verdict> {
        self.verdicts.iter().rev().find(|v| v.passed)
    }

    /// Whether a failed check now leaves the child a fix round.
    pub fn may_fix(&self) -> bool {
        self.fix_rounds < self.rounds
    }

    /// `checking, round 2 of 3` and the like: rounds counted as checks (1 + fix rounds).
    pub fn summary(&self) -> String {
        let of = self.rounds + 1;
        match (self.phase, self.verdicts.last()) {
            (Phase::Checking, _) => format!("checking, round {} of {of}", self.next_round()),
            (Phase::Working, None) => format!("check pending, round 1 of {of}"),
            (Phase::Working, Some(last)) => {
                format!("fixing after check round {} of {of} failed", last.round)
            }
            (Phase::Passed, last) => format!(
                "check passed in round {} of {of}",
                last.map_or(0, |v| v.round)
            ),
            (Phase::Failed, last) => format!(
                "check failed in round {} of {of}",
                last.map_or(0, |v| v.round)
            ),
        }
    }
}

/// The last lines of a check's output for its fix message: at most [`TAIL_LINES`] lines and
/// [`TAIL_BYTES`] bytes, terminal escape sequences and other control characters removed.
pub fn output_tail(output: &[u8]) -> String {
    let text = strip_controls(&String::from_utf8_lossy(output));
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    let mut tail = lines[start..].join("\n");
    if tail.len() > TAIL_BYTES {
        let mut cut = tail.len() - TAIL_BYTES;
        while !tail.is_char_boundary(cut) {
            cut += 1;
        }
        tail = tail[cut..].to_string();
    }
    tail
}

/// `text` without escape sequences (CSI, OSC and two-byte ones) and control characters but
/// newline and tab; a carriage return ends a line.
pub fn strip_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters, then one final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, SOS, PM, APC: up to BEL or ST (ESC \).
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The message a child gets after a failed check: cuekit's fixed words, the command, its
/// status and the last lines of its output (already [`output_tail`]ed).
pub fn fix_message(plan: &CheckPlan, verdict: &Verdict, tail: &str) -> String {
    let status = match (verdict.timed_out, verdict.exit_code, &verdict.error) {
        (false, Some(0), Some(error)) => {
            format!("exit code 0, not counted: {}", strip_controls(error))
        }
        (_, _, Some(error)) => format!("it could not run: {}", strip_controls(error)),
        (true, _, _) => format!("it ran past its limit of {} s", plan.timeout_secs),
        (false, Some(code), _) => format!("exit code {code}"),
        (false, None, _) => "it was killed by a signal".to_string(),
    };
    let mut message = format!(
        "cuekit checked your work and the check failed (check round {} of {}). Fix the code so \
         the check passes, then finish as before. The test files and the test-runner \
         configuration are restored from the base before each check, so changing them does \
         not change the verdict; a new module named like a standard one is left out, a \
         manifest's changed test settings refuse the check, and a pass that runs fewer tests \
         than the base does not count.\n\nCommand: {}\nResult: {status}\n",
        verdict.round,
        plan.rounds + 1,
        strip_controls(&verdict.command),
    );
    if !verdict.protected_edits.is_empty() {
        let paths = verdict.protected_paths();
        message.push_str(&format!(
            "Set aside for the check (protected): {}\n",
            strip_controls(&paths.join(", "))
        ));
    }
    message.push_str("Last lines of its output:\n");
    message.push_str(tail);
    message.push('\n');
    message
}

/// The command a batch task's `launch.sh` runs in place of its agent's: the agent, then on
/// an exit of 0 the check (`cuekit __check --from-launch`); on a fix round the agent's
/// `continuation` (its session resumed, the fix message on stdin through `$cuekit_prompt`),
/// checked again. Its status is the agent's failure, the check's failure or 0 for a pass.
pub fn batch_loop(
    agent: &str,
    continuation: Option<&str>,
    cuekit: &str,
    task_id: &str,
    fix_file: &std::path::Path,
) -> Result<String> {
    let id = single_quote(task_id)?;
    let fix = single_quote(&fix_file.to_string_lossy())?;
    // `cuekit_by`: who gave the status, so that only the check's own fix-round code becomes a
    // failed check — an agent's 75 (EX_TEMPFAIL) is its exit code, kept.
    let mut script = format!(
        "{agent}\ncuekit_agent=$?\ncuekit_by=agent\n\
         while [ \"$cuekit_agent\" -eq 0 ]; do\n\
         {cuekit} __check --from-launch {id}\n\
         cuekit_agent=$?\ncuekit_by=check\n"
    );
    match continuation {
        Some(continuation) => script.push_str(&format!(
            "[ \"$cuekit_agent\" -eq {FIX_ROUND_EXIT} ] || break\n\
             cuekit_prompt={fix}\n\
             {continuation}\n\
             cuekit_agent=$?\ncuekit_by=agent\n"
        )),
        None => script.push_str("break\n"),
    }
    script.push_str(&format!(
        "done\n[ \"$cuekit_by\" = agent ] || [ \"$cuekit_agent\" -ne {FIX_ROUND_EXIT} ] || \
         cuekit_agent={CHECK_FAILED_EXIT}\n\
         exit \"$cuekit_agent\""
    ));
    Ok(script)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Audit 48 (work F7): an empty glob or one that can never match replaced the default
    /// protection silently.
    #[test]
    fn a_protect_glob_that_can_never_match_is_known() {
        for bad in [
            "",
            "  ",
            "/",
            "../../**",
            "tests/../x",
            "./tests/**",
            "a//b",
        ] {
            assert!(!protect_glob_can_match(bad), "{bad:?}");
        }
        for good in [
            "tests/**",
            "/tests/**",
            "conftest.py",
            "*.py",
            "tests/",
            "**/fixtures/*",
        ] {
            assert!(protect_glob_can_match(good), "{good:?}");
        }
    }

    #[test]
    fn globs_match_names_anywhere_and_paths_from_the_root() {
        assert!(glob_match("tests/**", "tests/a/b.py"));
        assert!(glob_match("tests/", "tests/a.py"));
        assert!(!glob_match("tests/**", "src/tests.rs"));
        assert!(glob_match("conftest.py", "pkg/sub/conftest.py"));
        assert!(glob_match("*_test.go", "cmd/x/main_test.go"));
        assert!(!glob_match("*_test.go", "cmd/x/main.go"));
        assert!(glob_match(".cargo/config.toml", ".cargo/config.toml"));
        assert!(!glob_match(".cargo/config.toml", "a/.cargo/config.toml"));
        assert!(glob_match("jest.config.*", "jest.config.js"));
        assert!(glob_match(
            "src/**/fixtures/*.json",
            "src/a/b/fixtures/x.json"
        ));
        assert!(glob_match("src/**/fixtures/*.json", "src/fixtures/x.json"));
        assert!(glob_match("a?c", "abc"));
    }

    #[test]
    fn default_globs_follow_the_ecosystems_found() {
        let found = Ecosystem::detect(["Cargo.toml", "src", "Makefile", "README.md"]);
        assert_eq!(found, vec![Ecosystem::Rust, Ecosystem::Make]);
        let globs = default_protect(&found);
        for path in [
            "tests/it.rs",
            "crates/core/tests/it.rs",
            "crates/core/benches/b.rs",
            "build.rs",
            ".cargo/config.toml",
            "Makefile",
            "test.mk",
            "build/rules.make",
        ] {
            assert!(is_protected(&globs, path), "{path}");
        }
        assert!(!is_protected(&globs, "src/lib.rs"));
        assert!(!is_protected(&globs, "src/tests.rs"));
        let python = default_protect(&Ecosystem::detect(["pyproject.toml"]));
        assert!(is_protected(&python, "conftest.py"));
        assert!(is_protected(&python, "pytest.ini"));
        // A package's own tests (Django's app/tests/), not only the root's.
        assert!(is_protected(&python, "app/tests/test_core.py"));
        assert!(!is_protected(&python, "pyproject.toml"));
        // Runner hooks whatever the ecosystems: npm's settings, Python's startup files.
        let none = default_protect(&[]);
        for path in [
            ".npmrc",
            "sitecustomize.py",
            "lib/x.pth",
            "usercustomize.py",
            "calc_helpers-1.0.dist-info/entry_points.txt",
            "old.egg-info/entry_points.txt",
            "pkg.egg-link",
        ] {
            assert!(is_protected(&none, path), "{path}");
        }
    }

    #[test]
    fn edits_to_protected_paths_are_listed() {
        let globs = vec!["tests/**".to_string()];
        let base = vec![
            ("src/a.py".into(), "1".into()),
            ("tests/gone.py".into(), "2".into()),
            ("tests/test_a.py".into(), "3".into()),
        ];
        let work = vec![
            ("src/a.py".into(), "9".into()),
            ("tests/new.py".into(), "4".into()),
            ("tests/test_a.py".into(), "5".into()),
        ];
        let edits = protected_edits(&globs, &base, &work);
        let seen: Vec<(&str, EditKind)> = edits.iter().map(|e| (e.path.as_str(), e.edit)).collect();
        assert_eq!(
            seen,
            vec![
                ("tests/gone.py", EditKind::Removed),
                ("tests/new.py", EditKind::Added),
                ("tests/test_a.py", EditKind::Changed),
            ]
        );
    }

    #[test]
    fn package_scripts_come_from_the_base_and_dependencies_from_the_child() {
        let base = r#"{"name":"p","scripts":{"test":"jest"},"dependencies":{"a":"1"}}"#;
        let same = r#"{"name":"p","scripts":{"test":"jest"},"dependencies":{"a":"2"}}"#;
        assert_eq!(with_base_scripts(base, same), None);
        let gamed = r#"{"name":"p","scripts":{"test":"exit 0"},"dependencies":{"a":"2"}}"#;
        let fixed: serde_json::Value =
            serde_json::from_str(&with_base_scripts(base, gamed).unwrap()).unwrap();
        assert_eq!(fixed["scripts"]["test"], "jest");
        assert_eq!(fixed["dependencies"]["a"], "2");
        let added = r#"{"name":"p","scripts":{"test":"true"}}"#;
        let no_scripts = r#"{"name":"p"}"#;
        let fixed: serde_json::Value =
            serde_json::from_str(&with_base_scripts(no_scripts, added).unwrap()).unwrap();
        assert!(fixed.get("scripts").is_none(), "{fixed}");
        assert_eq!(
            with_base_scripts(base, "not json").unwrap(),
            serde_json::from_str::<serde_json::Value>(base)
                .unwrap()
                .to_string()
        );
    }

    #[test]
    fn escapes_and_controls_are_removed_from_the_tail() {
        let text = "a\x1b[31mred\x1b[0m\x1b]0;title\x07b\x1b]52;c;x\x1b\\c\x00\x08d\r\ne\rf\n";
        assert_eq!(strip_controls(text), "aredbcd\ne\nf\n");
    }

    #[test]
    fn the_tail_is_bounded_in_lines_and_bytes() {
        let many: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let tail = output_tail(many.as_bytes());
        assert_eq!(tail.lines().count(), TAIL_LINES);
        assert!(tail.ends_with("line 999"));
        let wide = "é".repeat(10_000);
        let tail = output_tail(wide.as_bytes());
        assert!(tail.len() <= TAIL_BYTES && !tail.is_empty());
    }

    fn verdict() -> Verdict {
        Verdict {
            round: 1,
            passed: false,
            command: "pytest -q".into(),
            exit_code: Some(1),
            timed_out: false,
            error: None,
            log: "checks/1.log".into(),
            started_at: String::new(),
            commit: None,
            protected_edits: vec![ProtectedEdit {
                path: "tests/test_a.py".into(),
                edit: EditKind::Changed,
            }],
            review_paths: Vec::new(),
            tests_ran: None,
            base_tests_ran: None,
            at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn the_fix_message_names_command_status_edits_and_tail() {
        let plan = CheckPlan {
            run: vec!["pytest -q".into()],
            rounds: 2,
            timeout_secs: 60,
            protect: vec![],
            keep_open: false,
        };
        let message = fix_message(&plan, &verdict(), "E assert 1 == 2");
        assert!(
            message
                .starts_with("cuekit checked your work and the check failed (check round 1 of 3).")
        );
        assert!(message.contains("Command: pytest -q\nResult: exit code 1\n"));
        assert!(message.contains("Set aside for the check (protected): tests/test_a.py\n"));
        assert!(message.ends_with("Last lines of its output:\nE assert 1 == 2\n"));
        let timed_out = Verdict {
            timed_out: true,
            exit_code: None,
            ..verdict()
        };
        assert!(fix_message(&plan, &timed_out, "").contains("ran past its limit of 60 s"));
    }

    #[test]
    fn state_summaries_count_rounds_as_checks() {
        let mut state = CheckState::new(1);
        assert_eq!(state.summary(), "check pending, round 1 of 2");
        state.phase = Phase::Checking;
        assert_eq!(state.summary(), "checking, round 1 of 2");
        state.verdicts.push(verdict());
        state.phase = Phase::Working;
        assert_eq!(state.summary(), "fixing after check round 1 of 2 failed");
        assert!(state.may_fix());
        state.fix_rounds = 1;
        assert!(!state.may_fix());
        assert_eq!(state.next_round(), 2);
    }

    #[test]
    fn the_checked_commit_is_the_last_passing_verdicts_while_the_check_stands_passed() {
        let mut state = CheckState::new(1);
        let passed = |round, commit: &str| Verdict {
            round,
            passed: true,
            exit_code: Some(0),
            commit: Some(commit.into()),
            ..verdict()
        };
        state.verdicts.push(Verdict {
            commit: Some("c1".into()),
            ..verdict()
        });
        state.verdicts.push(passed(2, "c2"));
        assert_eq!(state.checked_commit(), None, "not passed yet");
        state.phase = Phase::Passed;
        assert_eq!(state.checked_commit(), Some("c2"));
        state.verdicts.push(passed(3, "c3"));
        assert_eq!(state.checked_commit(), Some("c3"));
        state.phase = Phase::Failed;
        assert_eq!(state.checked_commit(), None);
        assert_eq!(
            checked_ref("t_0123456789ab", 3),
            "refs/cuekit/checked/t_0123456789ab/3"
        );
    }

    /// Runs the loop for real with stand-ins: an agent that exits 0, a check that asks for one
    /// fix round and then passes, a continuation that reads the fix file on stdin.
    #[test]
    fn the_batch_loop_checks_fixes_and_ends_with_the_verdict() {
        let dir = tempfile::tempdir().unwrap();
        let fix = dir.path().join("fix.txt");
        std::fs::write(&fix, "the message").unwrap();
        let count = dir.path().join("count");
        let check = dir.path().join("check");
        std::fs::write(
            &check,
            format!(
                "#!/bin/sh\n[ \"$1 $2\" = '__check --from-launch' ] || exit 9\n\
                 echo x >> '{}'\n[ $(wc -l < '{}') -ge $PASS_AT ] && exit 0\nexit $FAIL_WITH\n",
                count.display(),
                count.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&check, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let script = batch_loop(
            "echo first",
            Some("cat \"$cuekit_prompt\"; echo"),
            &check.to_string_lossy(),
            "t_0123456789ab",
            &fix,
        )
        .unwrap();
        let run = |pass_at: &str, fail_with: &str| {
            let _ = std::fs::remove_file(&count);
            std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(&script)
                .env("PASS_AT", pass_at)
                .env("FAIL_WITH", fail_with)
                .output()
                .unwrap()
        };
        let out = run("2", "75");
        assert_eq!(out.status.code(), Some(0), "{script}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "first\nthe message\n");
        // A final failure; and a fix round the check asked for but the loop ended on.
        assert_eq!(run("99", "1").status.code(), Some(1));
        let no_fix = batch_loop("true", None, &check.to_string_lossy(), "t_0", &fix).unwrap();
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&no_fix)
            .env("PASS_AT", "99")
            .env("FAIL_WITH", "75")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(CHECK_FAILED_EXIT));
        // A failed agent is not checked.
        let _ = std::fs::remove_file(&count);
        let failed = batch_loop("exit 3", None, &check.to_string_lossy(), "t_0", &fix).unwrap();
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&failed)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert!(!count.exists());
        // An agent's own 75 (EX_TEMPFAIL) is its exit code, not the check's fix-round code:
        // kept, whether it is the first run or a fix round's (a process of its own, as an
        // agent is: a bare `exit` would end the loop's shell itself).
        let tempfail =
            batch_loop("(exit 75)", None, &check.to_string_lossy(), "t_0", &fix).unwrap();
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&tempfail)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(75), "{tempfail}");
        let fixing = batch_loop(
            "true",
            Some("(exit 75)"),
            &check.to_string_lossy(),
            "t_0",
            &fix,
        )
        .unwrap();
        let _ = std::fs::remove_file(&count);
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&fixing)
            .env("PASS_AT", "99")
            .env("FAIL_WITH", "75")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(75), "{fixing}");
    }

    #[test]
    fn an_idle_child_waits_on_its_check_until_a_kept_open_pass() {
        assert!(idle_waits_on_its_check("gemini", false, None));
        assert!(idle_waits_on_its_check(
            "gemini",
            false,
            Some(Phase::Working)
        ));
        assert!(idle_waits_on_its_check(
            "gemini",
            true,
            Some(Phase::Checking)
        ));
        assert!(idle_waits_on_its_check(
            "gemini",
            false,
            Some(Phase::Passed)
        ));
        assert!(!idle_waits_on_its_check(
            "gemini",
            true,
            Some(Phase::Passed)
        ));
        // An agent cuekit cannot tell to quit is not checked between turns.
        assert!(!idle_waits_on_its_check("claude-code", false, None));
    }
}
