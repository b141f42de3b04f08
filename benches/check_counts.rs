//! What the base's test count (issue 44) adds to a checked task, printed as figures (never
//! asserted). On a pass cuekit runs the check's commands once more on the base's tree to learn
//! how many tests they ran there, once per base tree: the first checked task on a base pays for
//! it, the next ones on the same base read the kept count.
//!
//! For a unittest project (python3) and a one-test crate (`cargo test --offline`, built in the
//! check's tree): the check of the first task on a fresh base (it measures the base) against the
//! check of a second task on the same base (it reads the kept count), the check's own
//! `started_at` to `at`, medians of 3 bases each; and the base run's own time as kept.

use std::time::Duration;

use crate::support::harness::git::{commit_all, project_repo};
use crate::support::{Sandbox, median, ms};
use serde_json::Value;

const SAMPLES: usize = 3;

fn python_project(bench: &Sandbox) {
    project_repo(&bench.project, "shared\n");
    std::fs::write(
        bench.project.join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::create_dir_all(bench.project.join("tests")).unwrap();
    std::fs::write(bench.project.join("tests/__init__.py"), "").unwrap();
    std::fs::write(
        bench.project.join("tests/test_calc.py"),
        "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    \
         def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
    )
    .unwrap();
    commit_all(&bench.project, "a python project");
}

fn rust_project(bench: &Sandbox) {
    project_repo(&bench.project, "shared\n");
    std::fs::write(
        bench.project.join("Cargo.toml"),
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(bench.project.join("src")).unwrap();
    std::fs::create_dir_all(bench.project.join("tests")).unwrap();
    std::fs::write(
        bench.project.join("src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    )
    .unwrap();
    std::fs::write(
        bench.project.join("tests/it.rs"),
        "#[test]\nfn adds() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n",
    )
    .unwrap();
    std::fs::write(bench.project.join(".gitignore"), ".cuekit/\ntarget/\n").unwrap();
    commit_all(&bench.project, "a rust project");
}

/// A checked batch task that runs `fix`, to its end: its last verdict.
fn checked(bench: &Sandbox, fix: &str, check: &str) -> Value {
    let h = &bench.harness;
    let id = h.submit_worktree_sh(&["--check", check, "--check-rounds", "0"], fix);
    h.wait_ok(&[&id], "300s");
    let status = h.status(&id);
    status["check"]["verdicts"]
        .as_array()
        .and_then(|v| v.last().cloned())
        .expect("a verdict")
}

fn took(verdict: &Value) -> Duration {
    let at = |key: &str| humantime::parse_rfc3339(verdict[key].as_str().unwrap()).unwrap();
    at("at")
        .duration_since(at("started_at"))
        .unwrap_or_default()
}

/// The base runs' own times as cuekit kept them.
fn base_runs(bench: &Sandbox) -> Vec<Duration> {
    let dir = bench.root.join("home/.local/share/cuekit/checks/base");
    let mut runs = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.path().extension().is_some_and(|e| e == "json") {
            let kept: Value =
                serde_json::from_slice(&std::fs::read(entry.path()).unwrap()).unwrap();
            runs.push(Duration::from_millis(kept["took_ms"].as_u64().unwrap_or(0)));
        }
    }
    runs
}

fn figures(label: &str, bench: &Sandbox, fix: &str, check: &str) {
    let (mut first, mut second) = (Vec::new(), Vec::new());
    let mut ran = (None, None);
    for sample in 0..SAMPLES {
        // A base of its own each time: its count is not kept yet.
        std::fs::write(bench.project.join("shared.txt"), format!("base {sample}\n")).unwrap();
        commit_all(&bench.project, "a new base");
        let measured = checked(bench, fix, check);
        ran = (
            measured["tests_ran"].as_u64(),
            measured["base_tests_ran"].as_u64(),
        );
        first.push(took(&measured));
        second.push(took(&checked(bench, fix, check)));
    }
    let (first, second) = (median(first), median(second));
    let count = |n: Option<u64>| n.map_or("no count".to_string(), |n| n.to_string());
    println!(
        "{label} (medians of {SAMPLES} bases; tests ran {}, on the base {}):",
        count(ran.0),
        count(ran.1)
    );
    println!(
        "  check of the first task on a base (measures it)  {}",
        ms(first)
    );
    println!(
        "  check of the next task on that base (kept)       {}",
        ms(second)
    );
    println!(
        "  added by the base count, once per base tree      {}",
        ms(first.saturating_sub(second))
    );
    println!(
        "  the base run itself, as kept                     {}",
        ms(median(base_runs(bench)))
    );
}

fn cargo_check() -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    let rustup = std::env::var("RUSTUP_HOME").unwrap_or_else(|_| format!("{home}/.rustup"));
    let cargo = std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{home}/.cargo"));
    format!(
        "RUSTUP_HOME='{rustup}' CARGO_HOME='{cargo}' CARGO_TARGET_DIR=target cargo test --offline -q"
    )
}

pub fn main() {
    let bench = Sandbox::new("check_counts", &[]);
    python_project(&bench);
    figures(
        "python3 -m unittest",
        &bench,
        "printf 'def add(a, b):\\n    return a + b\\n' > calc.py",
        "python3 -m unittest discover -s tests -t .",
    );
    let bench = Sandbox::new("check_counts_cargo", &[]);
    rust_project(&bench);
    figures(
        "cargo test --offline",
        &bench,
        "sed -i 's/a - b/a + b/' src/lib.rs",
        &cargo_check(),
    );
}
