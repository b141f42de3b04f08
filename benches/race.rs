//! Prints what `submit --best-of 3` costs next to one checked `submit --worktree` of the same
//! task (issue 34's target: a 3-way race's submit at most 3× one submit). Asserts nothing about
//! time. Run with `cargo bench --bench figures -- race` (release build): real git, real tmux on a private
//! socket, and `--agent command` children that sleep, so the figures are cuekit's, git's and
//! tmux's.

use std::time::Duration;

use crate::support::{Sandbox, measure, median, ms};

const FILES: usize = 2000;
const RUNS: usize = 9;

pub fn main() {
    let bench = Sandbox::new("race", &[]);
    crate::support::committed_repo(&bench.project, FILES, 40);
    let task = [
        "--agent",
        "command",
        "--mode",
        "batch",
        "--check",
        "true",
        "--check-rounds",
        "0",
        "--",
        "sleep",
        "600",
    ];
    let (mut one, mut race) = (Vec::new(), Vec::new());
    // Interleaved, so a slow moment of the machine hits both alike.
    for _ in 0..RUNS {
        let mut args = vec!["submit", "--worktree"];
        args.extend(task);
        one.push(measure(bench.cuekit(&args)));
        let mut args = vec!["submit", "--best-of", "3"];
        args.extend(task);
        race.push(measure(bench.cuekit(&args)));
    }
    let ratios: Vec<f64> = (0..RUNS)
        .map(|i| race[i].as_secs_f64() / one[i].as_secs_f64())
        .collect();
    let (one, race): (Duration, Duration) = (median(one), median(race));
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    println!("race ({FILES} tracked files, median of {RUNS}):");
    println!("  cuekit submit --worktree --check   {}", ms(one));
    println!("  cuekit submit --best-of 3 --check  {}", ms(race));
    println!(
        "  ratio {:.2}x (median of the per-run ratios: {:.2}x; target: at most 3x)",
        race.as_secs_f64() / one.as_secs_f64(),
        sorted[RUNS / 2]
    );
}
