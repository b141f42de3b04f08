//! Prints what the scheduler costs; asserts nothing about time. Run with `cargo bench --bench figures --
//! schedule` (release build). Real tmux on a private socket; the tasks are `--agent command`
//! children, so the figures are cuekit's and tmux's.
//!
//! - slot freed → next task running: under `limits.running: 1`, from the moment the running
//!   child's last command ran to the first command of the queued one (target: ~1 s);
//! - submit of a queued task, against a submit that starts its task (median of 15 each);
//! - the scheduler and the monitor idle with 300 queued and 100 running tasks: their CPU over
//!   10 s as a share of one core (aim: <= 1%), tmux calls per scheduler tick (aim: <= 2) and
//!   peak RSS (target: 10 MiB).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Sandbox, cpu_seconds, median, ms, peak_rss_kib, which};

fn stamp(path: &std::path::Path) -> Option<u128> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn slot_freed_to_next_start() {
    let sandbox = Sandbox::new("schedule-slot", &[]);
    sandbox.harness.user_config("limits:\n  running: 1\n");
    let mut latencies = Vec::new();
    for n in 0..10 {
        let (ended, started) = (
            sandbox.root.join(format!("ended-{n}")),
            sandbox.root.join(format!("started-{n}")),
        );
        sandbox
            .harness
            .submit_batch_sh(&format!("sleep 0.5; date +%s%N > '{}'", ended.display()));
        sandbox
            .harness
            .submit_batch_sh(&format!("date +%s%N > '{}'", started.display()));
        let deadline = Instant::now() + Duration::from_secs(30);
        while stamp(&started).is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let (Some(ended), Some(started)) = (stamp(&ended), stamp(&started)) else {
            panic!("round {n}: the queued task never started");
        };
        latencies.push(Duration::from_nanos((started - ended) as u64));
        // The next round starts on an empty queue.
        std::thread::sleep(Duration::from_millis(300));
    }
    let max = latencies.iter().max().copied().unwrap();
    println!(
        "slot freed -> next task running: median {}, max {} over 10 (target ~1 s)",
        ms(median(latencies)),
        ms(max)
    );
}

fn submit_costs() {
    let sandbox = Sandbox::new("schedule-submit", &[]);
    sandbox.harness.user_config("limits:\n  running: 200\n");
    let timed = |sandbox: &Sandbox| {
        let start = Instant::now();
        let status = sandbox
            .cuekit(&[
                "submit", "--agent", "command", "--mode", "batch", "--", "sleep", "3600",
            ])
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        start.elapsed()
    };
    let started: Vec<Duration> = (0..15).map(|_| timed(&sandbox)).collect();
    sandbox.harness.user_config("limits:\n  running: 1\n");
    let queued: Vec<Duration> = (0..15).map(|_| timed(&sandbox)).collect();
    println!(
        "submit: {} when it starts the task, {} when it queues it (medians of 15, under limits)",
        ms(median(started)),
        ms(median(queued))
    );
}

fn idle_cost() {
    let sandbox = Sandbox::new("schedule-idle", &["shim"]);
    // A tmux that counts its invocations, first on the PATH the scheduler inherits.
    let calls = sandbox.root.join("tmux-calls");
    sandbox.executable(
        "shim/tmux",
        &format!(
            "#!/bin/sh\necho $PPID >> '{}'\nexec '{}' \"$@\"\n",
            calls.display(),
            which("tmux").display()
        ),
    );
    sandbox.harness.user_config("limits:\n  running: 100\n");
    let shimmed = |args: &[&str]| {
        let mut command = sandbox.cuekit(args);
        command.env(
            "PATH",
            format!(
                "{}:{}",
                sandbox.root.join("shim").display(),
                std::env::var("PATH").unwrap()
            ),
        );
        command.stdout(Stdio::null());
        assert!(command.status().unwrap().success());
    };
    for _ in 0..400 {
        shimmed(&[
            "submit", "--agent", "command", "--mode", "batch", "--", "sleep", "3600",
        ]);
    }
    let listed = sandbox.json(&["list"]);
    let count = |status: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["status"] == status)
            .count()
    };
    let (running, queued) = (count("running"), count("queued"));
    let scheduler = sandbox
        .harness
        .processes("__scheduler")
        .first()
        .copied()
        .expect("a scheduler runs");
    let monitor = sandbox
        .harness
        .monitors()
        .first()
        .copied()
        .expect("a monitor runs");
    // Settled: the submits' own starts are over.
    std::thread::sleep(Duration::from_secs(3));
    let _ = std::fs::remove_file(&calls);
    let before = (cpu_seconds(scheduler), cpu_seconds(monitor));
    let window = Duration::from_secs(10);
    std::thread::sleep(window);
    let after = (cpu_seconds(scheduler), cpu_seconds(monitor));
    let share = |b: (f64, f64), a: (f64, f64)| {
        (
            100.0 * (a.0 - b.0) / window.as_secs_f64(),
            100.0 * (a.0 + a.1 - b.0 - b.1) / window.as_secs_f64(),
        )
    };
    let scheduler_share = share(before.0, after.0);
    let monitor_share = share(before.1, after.1);
    let calls = std::fs::read_to_string(&calls).unwrap_or_default();
    let calls_of = |pid: u32| calls.lines().filter(|l| *l == pid.to_string()).count();
    let (tmux_calls, monitor_calls) = (calls_of(scheduler), calls_of(monitor));
    let (ticks, monitor_ticks) = (window.as_millis() as f64 / 400.0, window.as_secs_f64());
    println!(
        "idle with {queued} queued and {running} running: scheduler {:.2}% of a core ({:.2}% with its tmux), {:.1} tmux calls per tick, peak RSS {} KiB; monitor {:.2}% ({:.2}% with its tmux), {:.1} tmux calls per tick, peak RSS {} KiB (aims: <= 1%, <= 2 calls, <= 10240 KiB)",
        scheduler_share.0,
        scheduler_share.1,
        tmux_calls as f64 / ticks,
        peak_rss_kib(scheduler),
        monitor_share.0,
        monitor_share.1,
        monitor_calls as f64 / monitor_ticks,
        peak_rss_kib(monitor),
    );
}

pub fn main() {
    slot_freed_to_next_start();
    submit_costs();
    idle_cost();
}
