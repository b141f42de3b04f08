//! Prints what `submit --worktree` costs next to its parts: `git worktree add` of the same
//! tree plus a plain `submit`. Asserts nothing about time. Run with
//! `cargo bench --bench figures -- worktree` (release build): real git, real tmux on a private socket, and
//! `--agent command` children that sleep, so the figures are cuekit's, git's and tmux's.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{Sandbox, measure, median, ms};

/// Tracked files in the benchmark repository, spread over folders like a mid-sized project.
const FILES: usize = 2000;
const RUNS: usize = 15;

/// A sandbox whose project is a git repository of [`FILES`] committed files.
fn sandbox() -> Sandbox {
    let bench = Sandbox::new("wt", &["plain-trees"]);
    let project = &bench.project;
    crate::support::committed_repo(project, FILES, 40);
    bench
}

pub fn main() {
    let bench = sandbox();
    let task = ["--agent", "command", "--mode", "batch", "sleep", "600"];
    let (mut add, mut plain, mut isolated) = (Vec::new(), Vec::new(), Vec::new());
    // Interleaved, so a slow moment of the machine hits all three alike.
    for i in 0..RUNS {
        let mut add_tree = Command::new("git");
        add_tree
            .arg("-C")
            .arg(&bench.project)
            .args(["worktree", "add", "--quiet", "--no-track", "-b"])
            .arg(format!("plain/{i}"))
            .arg(bench.root.join(format!("plain-trees/{i}")))
            .arg("HEAD")
            .stdin(Stdio::null());
        add.push(measure(add_tree));
        let mut args = vec!["submit"];
        args.extend(task);
        plain.push(measure(bench.cuekit(&args)));
        let mut args = vec!["submit", "--worktree"];
        args.extend(task);
        isolated.push(measure(bench.cuekit(&args)));
    }
    // Per run, so a machine busy with other work skews one run, not the comparison.
    let overheads: Vec<Duration> = (0..RUNS)
        .map(|i| isolated[i].saturating_sub(add[i] + plain[i]))
        .collect();
    let (add, plain, isolated) = (median(add), median(plain), median(isolated));
    let budget = add + plain + Duration::from_millis(20);
    println!("worktree ({FILES} tracked files, median of {RUNS}):");
    println!("  git worktree add           {}", ms(add));
    println!("  cuekit submit              {}", ms(plain));
    println!("  cuekit submit --worktree   {}", ms(isolated));
    println!(
        "  overhead over add + submit {} (median of the per-run overheads: {}; budget: 20 ms, \
         so at most {})",
        ms(isolated.saturating_sub(add + plain)),
        ms(median(overheads)),
        ms(budget)
    );
    // Each worktree task's diff stat is computed for `list`: what that costs.
    let lists: Vec<Duration> = (0..5).map(|_| measure(bench.cuekit(&["list"]))).collect();
    println!(
        "  cuekit list                {} ({RUNS} worktree tasks with a diff stat each, {RUNS} without)",
        ms(median(lists))
    );
}
