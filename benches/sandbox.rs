//! Prints what `--sandbox` costs: `submit` with and without it, and the time from the start of
//! `submit` to the child's first output in its transcript (bubblewrap's namespaces and mounts
//! are made in the pane, after `submit` returned). Asserts nothing about time. Run with
//! `cargo bench --bench sandbox`: real tmux on a private socket, real bubblewrap, `--agent
//! command` children that print one line and sleep.

mod support;

use std::time::{Duration, Instant};

use support::{Sandbox, measure, median, ms};

const RUNS: usize = 15;

/// Submits `extra` + a child that prints a marker; (submit's time, time to the marker).
fn run(bench: &Sandbox, extra: &[&str], marker: &str) -> (Duration, Duration) {
    let script = format!("echo {marker}; sleep 600");
    let mut args = vec!["--json", "submit"];
    args.extend_from_slice(extra);
    args.extend([
        "--agent", "command", "--mode", "batch", "--", "sh", "-c", &script,
    ]);
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

fn main() {
    // Fails loudly without it: scripts/test installs bubblewrap.
    support::which("bwrap");
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
}

/// What `submit --sandbox` runs once to know a sandbox can be made.
fn probe_command() -> std::process::Command {
    let mut command = std::process::Command::new("bwrap");
    command.args(cuekit::sandbox::PROBE);
    command
}
