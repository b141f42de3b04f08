//! Prints what a conflict check costs at 20 worktree tasks: a full check (no stored result), a
//! recheck when nothing changed (its git processes counted: the aim is none), and a recheck
//! after one child's edit. Asserts nothing about time. Run with `cargo bench --bench figures -- conflicts`:
//! real git, real tmux on a private socket, `--agent command` children that edit and end.

use std::process::Stdio;
use std::time::Duration;

use crate::support::harness::sh_task;
use crate::support::{Sandbox, measure, median, ms, which};

/// Tracked files in the benchmark repository.
const FILES: usize = 500;
const TASKS: usize = 20;
const RUNS: usize = 9;

fn sandbox() -> Sandbox {
    let bench = Sandbox::new("conflicts", &[]);
    let project = &bench.project;
    crate::support::committed_repo(project, FILES, 25);
    // A `git` that counts its runs when GIT_RUNS names a file, then runs the real one.
    let real = which("git");
    bench.executable(
        "bin/git",
        &format!(
            "#!/bin/sh\n[ -n \"$GIT_RUNS\" ] && echo run >> \"$GIT_RUNS\"\nexec '{}' \"$@\"\n",
            real.display()
        ),
    );
    bench
}

/// `cuekit conflicts` timed, and the git processes it ran.
fn check(bench: &Sandbox) -> (Duration, usize) {
    let runs = bench.root.join("git-runs");
    let _ = std::fs::remove_file(&runs);
    let mut command = bench.cuekit(&["--json", "conflicts"]);
    command.env("GIT_RUNS", &runs).stdout(Stdio::null());
    let took = measure(command);
    let count = std::fs::read_to_string(&runs)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    (took, count)
}

pub fn main() {
    let bench = sandbox();
    let mut ids = Vec::new();
    for i in 0..TASKS {
        // Two children edit one file in one place; the others each a file of their own.
        let file = format!("src/m{}/f{}.rs", (i.max(1)) % 25, i.max(1));
        let script = format!("echo 'fn child_{i}() {{}}' > {file}; echo new > new-{i}.txt");
        let value = bench.json(
            &[
                &["submit"][..],
                &sh_task(&script, &["--worktree", "--mode", "batch"]),
            ]
            .concat(),
        );
        ids.push(value["id"].as_str().unwrap().to_string());
    }
    let mut wait = vec!["wait", "--timeout", "120s"];
    wait.extend(ids.iter().map(String::as_str));
    bench.ok(&wait);
    // Let the monitor see the endings and stop (it checks too, and would share the machine).
    std::thread::sleep(Duration::from_secs(3));
    let stored = bench.root.join("home/.local/share/cuekit/tasks");
    let mut full = Vec::new();
    let mut full_git = 0;
    let mut still = Vec::new();
    let mut still_git = Vec::new();
    let mut one = Vec::new();
    let mut one_git = 0;
    for run in 0..RUNS {
        for id in &ids {
            let _ = std::fs::remove_file(stored.join(format!("{id}.conflicts")));
        }
        let (took, count) = check(&bench);
        full.push(took);
        full_git = count;
        let (took, count) = check(&bench);
        still.push(took);
        still_git.push(count);
        let worktree = bench.root.join(format!("project.worktrees/{}", ids[5]));
        std::fs::write(worktree.join("edit.txt"), format!("run {run}\n")).unwrap();
        let (took, count) = check(&bench);
        one.push(took);
        one_git = count;
    }
    let pairs = TASKS * (TASKS - 1) / 2;
    println!("conflicts ({TASKS} worktree tasks of {FILES} tracked files, median of {RUNS}):");
    println!(
        "  full check            {} ({full_git} git processes: a tree per task, {pairs} pairs, each task against main)",
        ms(median(full))
    );
    println!(
        "  recheck, no change    {} (git processes: {:?})",
        ms(median(still)),
        still_git
    );
    println!(
        "  recheck, one edit     {} ({one_git} git processes)",
        ms(median(one))
    );
    let list: Vec<Duration> = (0..5).map(|_| measure(bench.cuekit(&["list"]))).collect();
    println!(
        "  cuekit list           {} (marks read from the stored results)",
        ms(median(list))
    );
}
