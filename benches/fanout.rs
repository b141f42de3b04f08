//! Prints the figures behind fan-out; asserts nothing about time. Run with
//! `cargo bench --bench figures -- fanout`. Real tmux on a private socket, `--agent command` children.
//!
//! - report: what `cuekit report` costs the child (one `list-panes`, a `/proc` walk, a locked
//!   record update), and how long after a report `cuekit wait --until report` returns;
//! - team: `list`, `status` and `result` with `--team` over 20 members among 100 tasks.

use std::time::{Duration, SystemTime};

use crate::support::{Sandbox, measure, millis};

fn sandbox() -> Sandbox {
    let bench = Sandbox::new("fanout", &[]);
    // The children report with `cuekit report`.
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cuekit"), bench.root.join("bin/cuekit"))
        .unwrap();
    bench
}

fn submit(bench: &Sandbox, args: &[&str]) -> String {
    let mut all = vec!["submit", "--agent", "command", "--mode", "batch"];
    all.extend_from_slice(args);
    bench.json(&all)["id"].as_str().unwrap().to_string()
}

fn summary(label: &str, mut values: Vec<Duration>) {
    values.sort();
    println!(
        "{label:<44} median {:>7.1} ms   max {:>7.1} ms   (n={})",
        millis(values[values.len() / 2]),
        millis(*values.last().unwrap()),
        values.len()
    );
}

const REPORTS: usize = 20;

fn report_round_trip(bench: &Sandbox) {
    // The child times each of its own reports (ns) and spaces them out, so every wait below
    // starts before the report it returns on.
    let durations = bench.root.join("report-ns");
    let script = format!(
        "i=0; while [ $i -lt {REPORTS} ]; do sleep 0.3; s=$(date +%s%N); \
         cuekit report --progress step $i; e=$(date +%s%N); echo $((e - s)) >> '{}'; \
         i=$((i + 1)); done; sleep 600",
        durations.display()
    );
    let id = submit(bench, &["--", "sh", "-c", &script]);
    let mut latencies = Vec::new();
    while latencies.len() < REPORTS {
        let waited = bench.json(&["wait", &id, "--until", "report", "--timeout", "10s"]);
        let returned = SystemTime::now();
        let at = waited["tasks"][0]["last_report"]["at"].as_str().unwrap();
        let at = humantime::parse_rfc3339(at).unwrap();
        latencies.push(returned.duration_since(at).unwrap_or_default());
    }
    let own: Vec<Duration> = std::fs::read_to_string(&durations)
        .unwrap()
        .lines()
        .map(|ns| Duration::from_nanos(ns.parse().unwrap()))
        .collect();
    summary("cuekit report (as the child sees it)", own);
    summary("report -> wait --until report returns", latencies);
}

fn team_operations(bench: &Sandbox) {
    for n in 0..100 {
        let team = if n % 5 == 0 { "bench-team" } else { "" };
        let mut args = vec![];
        if !team.is_empty() {
            args.extend(["--team", team]);
        }
        args.extend(["--", "sleep", "600"]);
        submit(bench, &args);
    }
    for (label, args) in [
        (
            "list --team (20 of 100 tasks)",
            vec!["list", "--team", "bench-team"],
        ),
        (
            "status --team (20 of 100 tasks)",
            vec!["status", "--team", "bench-team"],
        ),
        (
            "result --team (20 of 100 tasks)",
            vec!["result", "--team", "bench-team"],
        ),
        (
            "list --all (100 tasks, for comparison)",
            vec!["list", "--all"],
        ),
    ] {
        let runs: Vec<Duration> = (0..10).map(|_| measure(bench.cuekit(&args))).collect();
        summary(label, runs);
    }
}

pub fn main() {
    // `cargo bench` passes --bench; nothing to filter.
    let bench = sandbox();
    report_round_trip(&bench);
    team_operations(&bench);
}
