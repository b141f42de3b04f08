//! Prints what a removal's inventory (issue 43) costs: `cuekit rm` of one ended worktree task
//! (clean, so it goes: its inspection, the inventory of its git dir, reflogs and submodule,
//! then the removal), unsandboxed and sandboxed, and how long after its last candidate ended a
//! 3-way race was decided (each loser's work committed, kept, inventoried and its checkout
//! removed). Target: `rm` at most 100 ms a task. Asserts nothing about time. Run with
//! `cargo bench --bench figures -- removal` (release build): real git, real tmux on a private socket,
//! `--agent command` children.

use std::time::Duration;

use crate::support::harness::git::git;
use crate::support::{Sandbox, measure, median, ms};

const FILES: usize = 2000;
const TASKS: usize = 9;

/// A project of [`FILES`] files with a library at `vendor/lib` as a submodule (initialised in
/// every task's checkout, so each inventory reads one).
fn sandbox() -> Sandbox {
    let bench = Sandbox::new("removal", &["lib"]);
    crate::support::committed_repo(&bench.project, FILES, 40);
    let lib = bench.root.join("lib");
    crate::support::committed_repo(&lib, 200, 10);
    let lib = lib.to_string_lossy().into_owned();
    let add = ["-c", "protocol.file.allow=always", "submodule", "add", "-q"];
    let mut args = add.to_vec();
    args.extend([lib.as_str(), "vendor/lib"]);
    git(&bench.project, &args);
    git(&bench.project, &["commit", "-qm", "add lib"]);
    bench
}

/// `rm` of `count` ended tasks submitted with `flags`, one at a time: each one's time.
fn removals(bench: &Sandbox, flags: &[&str], count: usize) -> Vec<Duration> {
    let ids: Vec<String> = (0..count)
        .map(|_| {
            let mut args = vec!["submit"];
            args.extend(flags);
            args.extend(["--agent", "command", "--mode", "batch", "--", "true"]);
            bench.json(&args)["id"].as_str().unwrap().to_string()
        })
        .collect();
    let mut wait = vec!["wait"];
    wait.extend(ids.iter().map(String::as_str));
    wait.extend(["--timeout", "120s"]);
    bench.json(&wait);
    ids.iter()
        .map(|id| {
            let took = measure(bench.cuekit(&["rm", id]));
            let left = bench.json(&["list"]);
            assert!(
                !left.to_string().contains(id.as_str()),
                "{id} was kept: the benchmark measures removals; rm says: {}",
                String::from_utf8_lossy(&bench.cuekit(&["rm", id]).output().unwrap().stderr)
            );
            took
        })
        .collect()
}

/// Milliseconds from the last candidate's ending to the race's decision.
fn race_cleanup(bench: &Sandbox) -> Option<f64> {
    let task = [
        "submit",
        "--best-of",
        "3",
        "--check",
        "true",
        "--check-rounds",
        "0",
        "--agent",
        "command",
        "--mode",
        "batch",
        "--",
        "sh",
        "-c",
        "echo x > out.txt",
    ];
    let race = bench.json(&task)["race"].as_str()?.to_string();
    bench.json(&["wait", &race, "--timeout", "120s"]);
    let result = bench.json(&["result", &race]);
    let at = |text: &str| humantime::parse_rfc3339(text).ok();
    let decided = at(result["decided_at"].as_str()?)?;
    let ended = result["candidates"]
        .as_array()?
        .iter()
        .filter_map(|c| at(c["ended_at"].as_str()?))
        .max()?;
    let kept_checkouts = result.to_string().matches("its checkout is kept").count();
    assert_eq!(kept_checkouts, 0, "a loser's checkout was kept: {result}");
    Some(decided.duration_since(ended).ok()?.as_secs_f64() * 1000.0)
}

pub fn main() {
    let bench = sandbox();
    let plain = removals(&bench, &["--worktree"], TASKS);
    let sandboxed = removals(&bench, &["--worktree", "--sandbox"], TASKS);
    println!("removal ({FILES} tracked files and a submodule, median of {TASKS}):");
    println!(
        "  cuekit rm, a worktree task            {} (target: at most 100 ms)",
        ms(median(plain))
    );
    println!(
        "  cuekit rm, a sandboxed task           {} (its repository fetched first, in bubblewrap)",
        ms(median(sandboxed))
    );
    let mut races: Vec<f64> = (0..3).filter_map(|_| race_cleanup(&bench)).collect();
    races.sort_by(f64::total_cmp);
    match races.get(races.len() / 2) {
        Some(median) => println!(
            "  race of 3 decided after its last end  {median:.1} ms (median of {}; the monitor's \
             look, the pick, two losers committed, inventoried and removed)",
            races.len()
        ),
        None => println!("  race of 3: no decision read"),
    }
}
