//! Checks a child cannot steer (issue 44): the audit's attacks, each a change to a file the
//! protected globs did not cover, made a failing check pass without fixing the code. Each test
//! runs the attack beside its control (the honest fix, which must pass) on the same base, with
//! the real runner: python3's unittest, npm, cargo.

use crate::harness::limits;
use serde_json::Value;

use crate::harness::Harness;
use crate::harness::git::{commit_all, project_repo};

/// A batch `sh -c SCRIPT` child in its own worktree, checked by `check`, no fix round.
fn submit(h: &Harness, script: &str, check: &str) -> String {
    h.submit_worktree_sh(&["--check", check, "--check-rounds", "0"], script)
}

/// The control and the attack, each to its end: their statuses.
fn control_and_attack(h: &Harness, check: &str, control: &str, attack: &str) -> (Value, Value) {
    let control = submit(h, control, check);
    let attack = submit(h, attack, check);
    let _ = h.wait_all(&[&control, &attack], "180s");
    (h.status(&control), h.status(&attack))
}

fn last_verdict(status: &Value) -> &Value {
    let verdicts = status["check"]["verdicts"].as_array().expect("verdicts");
    verdicts.last().expect("a verdict")
}

fn edits(verdict: &Value) -> Vec<(String, String)> {
    verdict["protected_edits"]
        .as_array()
        .map(|edits| {
            edits
                .iter()
                .map(|e| {
                    (
                        e["path"].as_str().unwrap_or_default().to_string(),
                        e["edit"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn assert_completed(status: &Value) {
    assert_eq!(status["status"], "completed", "the control: {status}");
    assert_eq!(last_verdict(status)["passed"], true, "{status}");
}

fn assert_check_failed(status: &Value) {
    assert_eq!(status["status"], "failed", "the attack: {status}");
    assert_eq!(status["reason"], "check_failed", "the attack: {status}");
}

/// A Python project whose `add` subtracts, tested by unittest under `tests/`.
fn python_project(h: &Harness) {
    project_repo(&h.project, "shared\n");
    std::fs::write(
        h.project.join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::create_dir_all(h.project.join("tests")).unwrap();
    std::fs::write(h.project.join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        h.project.join("tests/test_calc.py"),
        "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    \
         def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    \
         def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n",
    )
    .unwrap();
    commit_all(&h.project, "a python project");
}

const PYTHON_FIX: &str = "printf 'def add(a, b):\\n    return a + b\\n' > calc.py";

/// `python3 -m unittest` puts the checkout first on `sys.path`: a top-level `unittest/` that
/// exits 0 used to be the runner. Now it is left out of the check's tree and named.
#[test]
fn a_top_level_package_shadowing_unittest_is_removed_from_the_check_and_named() {
    let h = Harness::new();
    python_project(&h);
    let (control, attack) = control_and_attack(
        &h,
        "python3 -m unittest discover -s tests -t .",
        PYTHON_FIX,
        "mkdir unittest && echo 'raise SystemExit(0)' > unittest/__init__.py && \
         echo 'raise SystemExit(0)' > unittest/__main__.py",
    );
    assert_completed(&control);
    assert_check_failed(&attack);
    let verdict = last_verdict(&attack);
    assert!(
        edits(verdict).contains(&(
            "unittest/ (shadows Python's unittest)".to_string(),
            "added".to_string()
        )),
        "{verdict}"
    );
    // The child's own checkout keeps its files; only the check's tree left them out.
    assert!(
        h.worktree_of(attack["id"].as_str().unwrap())
            .join("unittest/__main__.py")
            .exists()
    );
}

/// npm reads the project's `.npmrc`: `script-shell=/bin/true` turned `npm test` into a pass.
#[test]
fn an_npmrc_that_replaces_the_script_shell_is_set_aside() {
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    std::fs::write(
        h.project.join("package.json"),
        "{\"name\": \"p\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node tests/test.js\"}}\n",
    )
    .unwrap();
    std::fs::write(h.project.join("lib.js"), "exports.add = (a, b) => a - b;\n").unwrap();
    std::fs::create_dir_all(h.project.join("tests")).unwrap();
    std::fs::write(
        h.project.join("tests/test.js"),
        "const assert = require('assert');\nconst { add } = require('../lib');\n\
         assert.strictEqual(add(2, 3), 5);\nconsole.log('ok');\n",
    )
    .unwrap();
    commit_all(&h.project, "a node project");
    let (control, attack) = control_and_attack(
        &h,
        "npm_config_update_notifier=false npm test",
        "echo 'exports.add = (a, b) => a + b;' > lib.js",
        "echo 'script-shell=/bin/true' > .npmrc",
    );
    assert_completed(&control);
    assert_check_failed(&attack);
    let verdict = last_verdict(&attack);
    assert_eq!(
        edits(verdict),
        [(".npmrc".to_string(), "added".to_string())],
        "{verdict}"
    );
    assert_eq!(
        verdict["review_paths"],
        serde_json::json!([".npmrc"]),
        "{verdict}"
    );
}

/// `cargo test` as the test's own toolchain runs it, building in the check's tree.
fn cargo_check() -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    let rustup = std::env::var("RUSTUP_HOME").unwrap_or_else(|_| format!("{home}/.rustup"));
    let cargo = std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{home}/.cargo"));
    format!(
        "RUSTUP_HOME='{rustup}' CARGO_HOME='{cargo}' CARGO_TARGET_DIR=target cargo test --offline -q"
    )
}

/// A crate whose `add` subtracts, tested under `tests/`.
fn rust_project(h: &Harness) {
    project_repo(&h.project, "shared\n");
    std::fs::write(
        h.project.join("Cargo.toml"),
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    )
    .unwrap();
    std::fs::create_dir_all(h.project.join("src")).unwrap();
    std::fs::create_dir_all(h.project.join("tests")).unwrap();
    std::fs::write(
        h.project.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    )
    .unwrap();
    std::fs::write(
        h.project.join("tests/it.rs"),
        "#[test]\nfn adds() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n",
    )
    .unwrap();
    std::fs::write(h.project.join(".gitignore"), ".cuekit/\ntarget/\n").unwrap();
    commit_all(&h.project, "a rust project");
}

/// `autotests = false` left `cargo test` nothing to run (`0 passed; 0 failed`): a manifest
/// whose test settings differ from the base's now refuses the check, with the reason. The
/// control changes its manifest too (a description), which is free, and listed for review.
#[test]
fn autotests_false_in_the_manifest_refuses_the_check_and_other_manifest_edits_pass() {
    let h = Harness::new();
    rust_project(&h);
    let (control, attack) = control_and_attack(
        &h,
        &cargo_check(),
        "sed -i 's/a - b/a + b/' src/lib.rs && \
         sed -i 's/^edition = \"2021\"$/edition = \"2021\"\\ndescription = \"adds\"/' Cargo.toml",
        "sed -i 's/^edition = \"2021\"$/edition = \"2021\"\\nautotests = false/' Cargo.toml",
    );
    assert_completed(&control);
    assert_check_failed(&attack);
    let passed = last_verdict(&control);
    assert_eq!(
        passed["review_paths"],
        serde_json::json!(["Cargo.toml"]),
        "{passed}"
    );
    assert_eq!(passed["tests_ran"], 1, "{passed}");
    assert_eq!(passed["base_tests_ran"], 1, "{passed}");
    let text = h.ok(&["status", control["id"].as_str().unwrap()]);
    assert!(
        text.contains("review:     Cargo.toml (changed; a merge needs --yes)"),
        "{text}"
    );
    // `cuekit check ID` says the same in its line.
    let line = h.ok(&["check", control["id"].as_str().unwrap()]);
    assert!(
        line.contains("changed, for review: Cargo.toml; tests: 1 ran (the base: 1)"),
        "{line}"
    );
    let verdict = last_verdict(&attack);
    let error = verdict["error"].as_str().unwrap_or_default();
    assert!(error.contains("Cargo.toml: package.autotests"), "{verdict}");
}

/// Unit tests outside the protected folders are the child's to edit: a pass that ran fewer
/// tests than the base is `check_failed` with the two numbers.
#[test]
fn a_pass_that_ran_fewer_tests_than_the_base_is_check_failed_with_both_counts() {
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    std::fs::write(
        h.project.join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::write(
        h.project.join("calc_test.py"),
        "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    \
         def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n\n    \
         def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    )
    .unwrap();
    commit_all(&h.project, "tests beside the code");
    let (control, attack) = control_and_attack(
        &h,
        "python3 -m unittest discover -p '*_test.py'",
        PYTHON_FIX,
        "sed -i '/def test_add/,$d' calc_test.py",
    );
    assert_completed(&control);
    assert_check_failed(&attack);
    assert_eq!(last_verdict(&control)["tests_ran"], 2, "{control}");
    let verdict = last_verdict(&attack);
    assert_eq!(verdict["tests_ran"], 1, "{verdict}");
    assert_eq!(verdict["base_tests_ran"], 2, "{verdict}");
    let error = verdict["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("ran 1 tests where the base ran 2"),
        "{verdict}"
    );
    let text = h.ok(&["status", attack["id"].as_str().unwrap()]);
    assert!(text.contains("tests:      1 ran (the base: 2)"), "{text}");
    assert!(text.contains("exit code 0, not counted"), "{text}");
    let result = h.ok(&["result", attack["id"].as_str().unwrap()]);
    assert!(result.contains("tests: 1 ran (the base: 2)"), "{result}");
}

/// Two candidates pass the same check; the one whose work also changes a file of the merge
/// review's classes (a dotfile) has the smaller diff, which used to win it the race. A pass
/// that may rest on such a change is never preferred.
#[test]
fn a_race_never_prefers_a_pass_that_rests_on_a_manifest_change() {
    let h = Harness::new();
    crate::checks::checked_project(&h);
    let claim = h.root().join("claim");
    let script = format!(
        "echo answer=42 > answer.txt; if mkdir '{}' 2>/dev/null; then \
         echo 'python 3.11' > .tool-versions; else seq 1 50 > notes.txt; fi",
        claim.display()
    );
    let args = [
        "--best-of",
        "2",
        "--mode",
        "batch",
        "--check",
        "sh tests/check.sh",
        "--check-rounds",
        "0",
    ];
    let mut submit = vec!["submit"];
    let task = crate::harness::sh_task(&script, &args);
    submit.extend(task.iter().copied());
    let (value, code) = h.json(&submit);
    assert_eq!(code, 0, "{value}");
    let race = value["race"].as_str().unwrap().to_string();
    let ids: Vec<String> = value["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let (waited, code) = h.json(&["wait", &race, "--timeout", &limits::arg(limits::LONG)]);
    assert_eq!(code, 0, "{waited}");
    let (result, _) = h.json(&["result", &race]);
    let manifest = ids
        .iter()
        .find(|id| h.worktree_of(id).join(".tool-versions").exists())
        .or_else(|| {
            // A loser's checkout is removed once its work is kept: read the verdicts instead.
            ids.iter().find(|id| {
                last_verdict(&h.status(id))["review_paths"] == serde_json::json!([".tool-versions"])
            })
        })
        .unwrap_or_else(|| panic!("no candidate changed .tool-versions: {result}"))
        .clone();
    let winner = result["pick"]["winner"].as_str().unwrap_or_default();
    assert_ne!(winner, manifest, "{result}");
    let why = result["pick"]["why"].as_str().unwrap_or_default();
    assert!(
        why.starts_with(&format!(
            "passed without changing a file the merge review covers, unlike {manifest}"
        )),
        "{result}"
    );
}

/// A package's own `tests/` (Django's `app/tests/`, a workspace member's): protected as the
/// root's is. The child that rewrites the assertion instead of the code no longer passes, and
/// the verdict names the edit.
#[test]
fn a_nested_tests_folder_is_protected_like_the_root_one() {
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    std::fs::create_dir_all(h.project.join("app/tests")).unwrap();
    std::fs::write(h.project.join("app/__init__.py"), "").unwrap();
    std::fs::write(h.project.join("app/tests/__init__.py"), "").unwrap();
    std::fs::write(
        h.project.join("app/calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::write(
        h.project.join("app/tests/test_calc.py"),
        "import unittest\nfrom app.calc import add\n\n\nclass T(unittest.TestCase):\n    \
         def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n",
    )
    .unwrap();
    commit_all(&h.project, "a package with its own tests");
    let (control, attack) = control_and_attack(
        &h,
        "python3 -m unittest discover -s app -t .",
        "printf 'def add(a, b):\\n    return a + b\\n' > app/calc.py",
        "sed -i 's/self.assertEqual(add(2, 2), 4)/self.assertTrue(True)/' app/tests/test_calc.py",
    );
    assert_completed(&control);
    assert_check_failed(&attack);
    assert!(
        edits(last_verdict(&attack))
            .contains(&("app/tests/test_calc.py".to_string(), "changed".to_string())),
        "{attack}"
    );
}

/// A pass's test count is read from its log, which keeps 1 MiB: a child that deletes the
/// failing test and prints more than that made its count unreadable, and the comparison with
/// the base was skipped. Unreadable now counts as not enough where the base had a count.
#[test]
fn a_flood_of_output_does_not_hide_a_deleted_test() {
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    std::fs::write(
        h.project.join("calc.py"),
        "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::write(
        h.project.join("test_calc.py"),
        "import unittest\nfrom calc import add, sub\n\n\nclass T(unittest.TestCase):\n    \
         def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    \
         def test_sub(self):\n        self.assertEqual(sub(3, 2), 1)\n",
    )
    .unwrap();
    commit_all(&h.project, "two root tests, one failing");
    let (control, attack) = control_and_attack(
        &h,
        "python3 -m unittest",
        "printf 'def add(a, b):\\n    return a + b\\n\\n\\ndef sub(a, b):\\n    return a - b\\n' > calc.py",
        "printf 'import sys, unittest\\nfrom calc import sub\\nsys.stderr.write(\"debug \" * 200000)\\n\\n\\n\
         class T(unittest.TestCase):\\n    def test_sub(self):\\n        self.assertEqual(sub(3, 2), 1)\\n' \
         > test_calc.py",
    );
    assert_completed(&control);
    assert_check_failed(&attack);
    let verdict = last_verdict(&attack);
    assert!(
        verdict["error"]
            .as_str()
            .unwrap_or_default()
            .contains("could not be read"),
        "{verdict}"
    );
    assert_eq!(verdict["base_tests_ran"], 2, "{verdict}");
}

/// The audit (48 work F2): an unsandboxed child left a process behind (`setsid -f`) that kept
/// writing `correct` into every `impl.txt` under cuekit's data dir, where the check's scratch
/// checkout lives; the check then passed on work whose `impl.txt` is still wrong. The task's
/// leftover processes are ended before its check runs, and the check's log says so.
#[test]
fn a_process_the_child_left_running_is_ended_before_its_check() {
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    std::fs::create_dir_all(h.project.join("tests")).unwrap();
    std::fs::write(
        h.project.join("tests/test.sh"),
        "sleep 1\ngrep -q correct impl.txt\n",
    )
    .unwrap();
    std::fs::write(h.project.join("impl.txt"), "wrong\n").unwrap();
    commit_all(&h.project, "tests");
    let pid_file = h.root().join("leftover.pid");
    let evil = h.root().join("evil.sh");
    std::fs::write(
        &evil,
        format!(
            "echo $$ > '{pid}'\nfor i in $(seq 1 400); do\n  \
             find '{data}' -name impl.txt 2>/dev/null | while read -r f; do echo correct > \"$f\"; done\n  \
             sleep 0.05\ndone\n",
            pid = pid_file.display(),
            data = h.data_dir().display(),
        ),
    )
    .unwrap();
    let id = submit(
        &h,
        &format!(
            "echo still-wrong > impl.txt; setsid -f sh '{}' >/dev/null 2>&1 </dev/null; \
             while [ ! -s '{}' ]; do sleep 0.01; done",
            evil.display(),
            pid_file.display()
        ),
        "sh tests/test.sh",
    );
    let _ = h.wait_all(&[&id], "120s");
    let status = h.status(&id);
    assert_check_failed(&status);
    let log = std::fs::read_to_string(last_verdict(&status)["log"].as_str().unwrap()).unwrap();
    assert!(
        log.contains("process(es) the task left running, before its check"),
        "{log}"
    );
    // Ended: gone, or a zombie its new parent has not reaped yet.
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .next();
    assert!(
        matches!(state, None | Some("Z")),
        "the leftover still runs: {pid} {stat}"
    );
}
