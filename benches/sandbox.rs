//! Prints what `--sandbox` costs: `submit` with and without it, and the time from the start of
//! `submit` to the child's first output in its transcript (bubblewrap's namespaces and mounts
//! are made in the pane, after `submit` returned); then, in a 500-file repository, a sandboxed
//! task's repository of its own against a plain git worktree: `submit --sandbox --worktree`
//! next to `submit --worktree`, and `diff` of each; last, the monitor's tick while a sandboxed
//! child floods its report drop, and how late its `--timeout` is recorded. Asserts nothing
//! about time. Run with
//! `cargo bench --bench figures -- sandbox`: real tmux on a private socket, real bubblewrap, `--agent
//! command` children that print one line and sleep.

use std::time::{Duration, Instant};

use crate::support::harness::sh_task;
use crate::support::{Sandbox, measure, median, ms};

const RUNS: usize = 15;

/// Submits `extra` + a child that prints a marker; (submit's time, time to the marker).
fn run(bench: &Sandbox, extra: &[&str], marker: &str) -> (Duration, Duration) {
    let script = format!("echo {marker}; sleep 600");
    let mut args = vec!["--json", "submit"];
    args.extend_from_slice(extra);
    args.extend(sh_task(&script, &["--mode", "batch"]));
    let started = Instant::now();
    let output = bench.cuekit(&args).output().unwrap();
    let submitted = started.elapsed();
    let view: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&output.stderr)));
    let transcript = std::path::PathBuf::from(view["transcript"].as_str().expect("a transcript"));
    loop {
        let text = std::fs::read(&transcript).unwrap_or_default();
        if String::from_utf8_lossy(&text).contains(marker) {
            return (submitted, started.elapsed());
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no output from {view}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

pub fn main() {
    // Fails loudly without it: scripts/test installs bubblewrap.
    crate::support::which("bwrap");
    let bench = Sandbox::new("sandbox", &[]);
    let (mut plain, mut boxed) = (Vec::new(), Vec::new());
    // Interleaved, so a slow moment of the machine hits both alike.
    for i in 0..RUNS {
        plain.push(run(&bench, &[], &format!("PLAIN-{i}")));
        boxed.push(run(&bench, &["--sandbox"], &format!("BOXED-{i}")));
    }
    let probe = median((0..RUNS).map(|_| measure(probe_command())).collect());
    let column = |runs: &[(Duration, Duration)], pick: fn(&(Duration, Duration)) -> Duration| {
        median(runs.iter().map(pick).collect())
    };
    let (submit_plain, submit_boxed) = (column(&plain, |r| r.0), column(&boxed, |r| r.0));
    let (first_plain, first_boxed) = (column(&plain, |r| r.1), column(&boxed, |r| r.1));
    println!("sandbox (bubblewrap, median of {RUNS}):");
    println!("  submit                         {}", ms(submit_plain));
    println!(
        "  submit --sandbox               {} (+{}; of it the probe `bwrap … /bin/true`: {})",
        ms(submit_boxed),
        ms(submit_boxed.saturating_sub(submit_plain)),
        ms(probe)
    );
    println!("  submit → first output          {}", ms(first_plain));
    println!(
        "  submit --sandbox → first output {} (+{})",
        ms(first_boxed),
        ms(first_boxed.saturating_sub(first_plain))
    );
    own_repository();
    drop_flood();
}

/// Tracked files of the repository the task-repository figures are taken in.
const REPO_FILES: usize = 500;

/// `submit --worktree` against `submit --sandbox --worktree` (a repository of its own), and
/// `diff` of a task of each kind with committed and uncommitted work.
fn own_repository() {
    let bench = Sandbox::new("sandbox-repo", &[]);
    crate::support::committed_repo(&bench.project, REPO_FILES, 20);
    let work = "echo changed >> src/m1/f1.rs && git -c user.name=b -c user.email=b@x commit -qam one \
                && echo new > new.txt && echo ready; sleep 600";
    let submit = |extra: &[&str]| {
        let mut args = vec!["--json", "submit", "--worktree"];
        args.extend_from_slice(extra);
        args.extend(sh_task(work, &["--mode", "batch"]));
        let started = Instant::now();
        let output = bench.cuekit(&args).output().unwrap();
        let took = started.elapsed();
        let view: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&output.stderr)));
        (took, view["id"].as_str().expect("an id").to_string())
    };
    let (mut plain, mut boxed) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        plain.push(submit(&[]));
        boxed.push(submit(&["--sandbox"]));
    }
    let ready = |id: &str| {
        let transcript = bench
            .root
            .join("project/.cuekit/tasks")
            .join(id)
            .join("transcript.txt");
        let started = Instant::now();
        while !String::from_utf8_lossy(&std::fs::read(&transcript).unwrap_or_default())
            .contains("ready")
        {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{id} never got ready"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let diff = |id: &str| {
        ready(id);
        median(
            (0..5)
                .map(|_| measure(bench.cuekit(&["diff", id, "--stat"])))
                .collect(),
        )
    };
    let diff_plain = diff(&plain[0].1);
    let diff_boxed = diff(&boxed[0].1);
    let submit_plain = median(plain.iter().map(|r| r.0).collect());
    let submit_boxed = median(boxed.iter().map(|r| r.0).collect());
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    println!("a repository of its own ({REPO_FILES} tracked files, median of {RUNS}):");
    println!("  submit --worktree              {}", ms(submit_plain));
    println!(
        "  submit --sandbox --worktree    {} ({:.2}× the worktree's; target ≤ 2×)",
        ms(submit_boxed),
        ratio(submit_boxed, submit_plain)
    );
    println!("  diff of a worktree task        {}", ms(diff_plain));
    println!(
        "  diff of a sandboxed task       {} ({:.2}× the worktree's)",
        ms(diff_boxed),
        ratio(diff_boxed, diff_plain)
    );
}

/// What `submit --sandbox` runs once to know a sandbox can be made.
fn probe_command() -> std::process::Command {
    let mut command = std::process::Command::new("bwrap");
    command.args(cuekit::domain::sandbox::PROBE);
    command
}

/// Reports a flooding child drops: far more than looks take before its timeout.
const FLOOD: usize = 5000;

/// Its `--timeout`: long enough for the flood to be written first on a loaded machine.
const FLOOD_TIMEOUT: Duration = Duration::from_secs(20);

/// A sandboxed child's drop flooded with reports: the monitor's ticks while the flood waits
/// (each takes a bounded batch), how late the child's `--timeout` is recorded, how many reports
/// were taken by then, and what a `list` costs meanwhile.
fn drop_flood() {
    let bench = Sandbox::new("flood", &[]);
    let h = &bench.harness;
    let id = h.submit_sh(
        "sleep 600",
        &["--sandbox", "--mode", "batch", "--timeout", "20s"],
    );
    let started = Instant::now();
    let drop = h.data_dir().join("drop").join(&id);
    for i in 0..FLOOD {
        std::fs::write(
            drop.join(format!("{i:020}-1.json")),
            format!("{{\"kind\":\"progress\",\"message\":\"flood {i}\"}}"),
        )
        .unwrap();
    }
    let flooded = started.elapsed();
    let list = measure(bench.cuekit(&["list"]));
    let record = h.task_dir(&id).join("task.json");
    let (mut ticks, mut last) = (Vec::new(), h.monitor_ticks());
    let mut at = Instant::now();
    let ended = loop {
        let now = h.monitor_ticks();
        if now > last {
            ticks.push(at.elapsed() / (now - last) as u32);
            (last, at) = (now, Instant::now());
        }
        let text = std::fs::read_to_string(&record).unwrap_or_default();
        if text.contains("\"timed_out\"") {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "never timed out"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let left = std::fs::read_dir(&drop).map_or(0, |entries| entries.count());
    let longest = ticks.iter().max().copied().unwrap_or_default();
    println!(
        "report drop flooded with {FLOOD} reports (written in {}):",
        ms(flooded)
    );
    println!(
        "  monitor tick under the flood     {} median, {} longest ({} ticks)",
        ms(if ticks.is_empty() {
            Duration::ZERO
        } else {
            median(ticks.clone())
        }),
        ms(longest),
        ticks.len()
    );
    println!("  `list` under the flood           {}", ms(list));
    println!(
        "  20 s --timeout recorded          {} late ({} reports taken, {left} left)",
        ms(ended.saturating_sub(FLOOD_TIMEOUT)),
        FLOOD - left
    );
}
