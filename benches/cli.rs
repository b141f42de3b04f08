//! Prints the figures behind the README's performance targets; asserts nothing about time.
//! Run with `cargo bench` (release build). Uses real tmux on a private socket and a stand-in
//! agent that sleeps, so the numbers are cuekit's and tmux's, not a model's.
//!
//! - submit: `cuekit submit` against the one chained tmux invocation it makes, interleaved;
//! - status: `cuekit status` of one interactive task against a bare `tmux has-session`;
//! - list: `cuekit list` with 10 / 100 / 1000 running tasks, and how many tmux processes it runs;
//! - wait: from the child's exit to `cuekit wait` returning;
//! - steer: from `cuekit steer` starting to the child reading the message;
//! - the per-server monitor: CPU and peak RSS with 100 idle running tasks;
//! - peak RSS of each CLI call, including `logs` over a multi-megabyte transcript.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::{Sandbox, cpu_seconds, measure, median, ms, which};

fn sandbox() -> Sandbox {
    let bench = Sandbox::new("cli", &["shim"]);
    // The agent: records when it exits or reads a line, so latencies are measured from
    // the child's side.
    bench.executable(
        "bin/gemini",
        "#!/bin/sh\nif [ -n \"$BENCH_EXIT_AFTER\" ]; then sleep \"$BENCH_EXIT_AFTER\"; date +%s%N > \"$BENCH_STAMP\"; exit 0; fi\n\
         if [ -n \"$BENCH_READ\" ]; then printf ' > '; IFS= read -r line; date +%s%N > \"$BENCH_STAMP\"; printf 'ok\\n > '; exec sleep 600; fi\n\
         exec sleep 3600\n",
    );
    // A tmux that counts its invocations.
    let real_tmux = which("tmux");
    bench.executable(
        "shim/tmux",
        &format!(
            "#!/bin/sh\necho x >> '{}'\nexec '{}' \"$@\"\n",
            bench.root.join("tmux-calls").display(),
            real_tmux.display()
        ),
    );
    bench
}

fn submit(bench: &Sandbox, extra: &[&str]) -> String {
    let mut args = vec!["--json", "submit", "--mode", "batch"];
    args.extend_from_slice(extra);
    args.push("bench task");
    let value: serde_json::Value = serde_json::from_str(&bench.ok(&args)).unwrap();
    value["id"].as_str().unwrap().to_string()
}

/// How many tmux processes one `cuekit args` runs, through a tmux shim first on PATH.
fn tmux_calls(bench: &Sandbox, args: &[&str]) -> usize {
    let calls = bench.root.join("tmux-calls");
    let _ = std::fs::remove_file(&calls);
    let mut counted = bench.cuekit(args);
    counted.env(
        "PATH",
        format!(
            "{}:{}",
            bench.root.join("shim").display(),
            std::env::var("PATH").unwrap()
        ),
    );
    measure(counted);
    std::fs::read_to_string(&calls).map_or(0, |s| s.lines().count())
}

/// Peak RSS (KiB) of one run of `command`, measured by GNU time. (The rusage of a child
/// spawned from this process would count this process's own memory: the child shares it until
/// it execs.)
fn peak_rss(command: &Command) -> String {
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut timed = Command::new("/usr/bin/time");
    timed
        .args(["-f", "%M", "-o"])
        .arg(out.path())
        .arg(command.get_program())
        .args(command.get_args());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => timed.env(name, value),
            None => timed.env_remove(name),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        timed.current_dir(dir);
    }
    match timed.stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(status) if status.success() => std::fs::read_to_string(out.path())
            .unwrap()
            .trim()
            .to_string(),
        _ => "n/a (needs GNU time at /usr/bin/time)".to_string(),
    }
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// A nanosecond timestamp the agent wrote, once it is completely written.
fn read_stamp(path: &std::path::Path) -> u128 {
    loop {
        if let Some(stamp) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return stamp;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn raw_tmux_chain(bench: &Sandbox, i: usize) -> Command {
    let dir = bench.root.join(format!("raw/{i}"));
    std::fs::create_dir_all(&dir).unwrap();
    let session = format!("raw-{i}");
    let target = format!("={session}:");
    let mut command = bench.tmux_command(&[
        "set-option",
        "-g",
        "history-limit",
        "50000",
        ";",
        "new-session",
        "-d",
        "-s",
        &session,
    ]);
    command
        .args(["-x", "200", "-y", "50", "-c"])
        .arg(&bench.project);
    command.args([
        "-P",
        "-F",
        "#{pane_id} #{pane_pid}",
        "--",
        "/bin/sh",
        "-c",
        "exec sleep 3600",
        ";",
    ]);
    command.args([
        "set-option",
        "-p",
        "-t",
        &target,
        "remain-on-exit",
        "on",
        ";",
        "pipe-pane",
        "-o",
        "-t",
        &target,
    ]);
    command.arg(format!("exec cat >> '{}/transcript.txt'", dir.display()));
    command.stdout(Stdio::null());
    command
}

fn bench_submit(bench: &Sandbox) -> String {
    // Warm the server so neither side pays for starting it.
    submit(bench, &[]);
    let mut cuekit = Vec::new();
    let mut raw = Vec::new();
    for i in 0..30 {
        raw.push(measure(raw_tmux_chain(bench, i)));
        cuekit.push(measure(
            bench.cuekit(&["submit", "--mode", "batch", "bench"]),
        ));
    }
    let (c, r) = (median(cuekit), median(raw));
    println!(
        "submit: cuekit {} vs raw tmux invocation {} (median of 30, interleaved): ratio {:.2}x (target <= 1.5x)",
        ms(c),
        ms(r),
        c.as_secs_f64() / r.as_secs_f64()
    );
    peak_rss(&bench.cuekit(&["submit", "--mode", "batch", "bench"]))
}

/// `cuekit status` of one running interactive task (pane and screen in one tmux invocation)
/// against a bare `tmux has-session`, interleaved.
fn bench_status(bench: &Sandbox) {
    let id = bench.json(&["submit", "--mode", "interactive", "bench task"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    std::thread::sleep(Duration::from_millis(300));
    let session = format!("=cuekit-task-{id}");
    let mut cuekit = Vec::new();
    let mut raw = Vec::new();
    for _ in 0..30 {
        raw.push(measure(bench.tmux_command(&[
            "has-session",
            "-t",
            &session,
        ])));
        cuekit.push(measure(bench.cuekit(&["status", &id])));
    }
    let tmux_calls = tmux_calls(bench, &["status", &id]);
    let (c, r) = (median(cuekit), median(raw));
    println!(
        "status: cuekit {} vs tmux has-session {} (median of 30, interleaved): ratio {:.2}x, {tmux_calls} tmux process(es) (targets <= 1.5x, 1)",
        ms(c),
        ms(r),
        c.as_secs_f64() / r.as_secs_f64()
    );
}

/// The server's monitor with `target` idle running tasks: its CPU over 10 s (its own, and with
/// the tmux clients it ran) and its peak RSS.
fn bench_monitor(bench: &Sandbox, target: usize) {
    let running = || {
        bench
            .json(&["list"])
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["status"] != "completed" && t["status"] != "failed")
            .count()
    };
    let mut count = running();
    while count < target {
        submit(bench, &[]);
        count += 1;
    }
    std::thread::sleep(Duration::from_secs(3));
    let monitor = bench.harness.monitors().first().copied();
    let Some(pid) = monitor else {
        println!("monitor: none running (unexpected)");
        return;
    };
    let (own_before, reaped_before) = cpu_seconds(pid);
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(10));
    let (own_after, reaped_after) = cpu_seconds(pid);
    let secs = started.elapsed().as_secs_f64();
    let percent = |seconds: f64| seconds / secs * 100.0;
    let hwm = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:").map(|v| v.trim().to_string()))
        .unwrap_or_default();
    println!(
        "monitor with {count} idle running tasks: {:.2}% of one core (with the tmux clients it ran: {:.2}%), peak RSS {hwm} (targets <= 1%, <= 10 MiB)",
        percent(own_after - own_before),
        percent(own_after - own_before + reaped_after - reaped_before)
    );
}

fn bench_list(bench: &Sandbox) -> String {
    let mut count = bench.json(&["list"]).as_array().unwrap().len();
    for target in [10, 100, 300, 1000] {
        while count < target {
            submit(bench, &[]);
            count += 1;
        }
        let times: Vec<Duration> = (0..7).map(|_| measure(bench.cuekit(&["list"]))).collect();
        let tmux_calls = tmux_calls(bench, &["list"]);
        let tasks = bench.json(&["list"]);
        let running = tasks
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["status"] == "running")
            .count();
        println!(
            "list: {target:>4} tasks ({running} running): {} median of 7, {tmux_calls} tmux process(es) (targets: 300 tasks <= 35 ms, 1000 <= 100 ms; <= 2 calls)",
            ms(median(times))
        );
    }
    peak_rss(&bench.cuekit(&["list"]))
}

fn bench_wait(bench: &Sandbox) {
    let mut latencies = Vec::new();
    for i in 0..5 {
        let stamp = bench.root.join(format!("exit-stamp-{i}"));
        // The stand-in prints no event stream, so the batch task runs with plain output.
        let mut submit = bench.cuekit(&[
            "--json",
            "submit",
            "--mode",
            "batch",
            "--no-events",
            "exit soon",
        ]);
        submit
            .env("BENCH_EXIT_AFTER", "1")
            .env("BENCH_STAMP", &stamp);
        let value: serde_json::Value =
            serde_json::from_slice(&submit.output().unwrap().stdout).unwrap();
        let id = value["id"].as_str().unwrap();
        let output = bench
            .cuekit(&["wait", id, "--timeout", "30s"])
            .output()
            .unwrap();
        let returned = now_ns();
        assert!(output.status.success());
        let exited = read_stamp(&stamp);
        latencies.push(Duration::from_nanos((returned - exited) as u64));
    }
    let max = *latencies.iter().max().unwrap();
    println!(
        "wait: child exit -> wait returns: median {}, max {} over 5 (target <= 100 ms)",
        ms(median(latencies)),
        ms(max)
    );
}

/// Starts an interactive task whose agent reads one line; returns its id and stamp file.
fn steerable_task(bench: &Sandbox, i: usize) -> (String, PathBuf) {
    let stamp = bench.root.join(format!("read-stamp-{i}"));
    let mut submit = bench.cuekit(&["--json", "submit", "steer me"]);
    submit.env("BENCH_READ", "1").env("BENCH_STAMP", &stamp);
    let value: serde_json::Value =
        serde_json::from_slice(&submit.output().unwrap().stdout).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    (value["id"].as_str().unwrap().to_string(), stamp)
}

fn bench_steer(bench: &Sandbox) -> String {
    let mut latencies = Vec::new();
    let mut walls = Vec::new();
    for i in 0..5 {
        let (id, stamp) = steerable_task(bench, i);
        let started = now_ns();
        walls.push(measure(bench.cuekit(&["steer", &id, "the message"])));
        let read = read_stamp(&stamp);
        latencies.push(Duration::from_nanos((read - started) as u64));
        bench
            .cuekit(&["cancel", "--grace", "0s", &id])
            .output()
            .unwrap();
    }
    println!(
        "steer: send -> child reads it: median {}; steer command (send -> receipt) median {} over 5 (target <= 300 ms)",
        ms(median(latencies)),
        ms(median(walls))
    );
    let (id, _) = steerable_task(bench, 99);
    peak_rss(&bench.cuekit(&["steer", &id, "the message"]))
}

fn bench_logs(bench: &Sandbox) -> (String, String) {
    // A multi-megabyte transcript with escapes, rendered and raw.
    let id = submit(bench, &[]);
    let transcript = bench
        .project
        .join(".cuekit/tasks")
        .join(&id)
        .join("transcript.txt");
    let mut raw = Vec::new();
    for i in 0..120_000 {
        raw.extend_from_slice(
            format!("\x1b[32mline {i:08}\x1b[0m abcdefghijklmnopqrstuvwxyz0123456789\r\n")
                .as_bytes(),
        );
    }
    std::fs::write(&transcript, &raw).unwrap();
    let readable = measure(bench.cuekit(&["logs", &id]));
    let raw_time = measure(bench.cuekit(&["logs", "--raw", &id]));
    println!(
        "logs: {:.1} MB transcript: readable {}, raw {}",
        raw.len() as f64 / 1e6,
        ms(readable),
        ms(raw_time)
    );
    (
        peak_rss(&bench.cuekit(&["logs", &id])),
        peak_rss(&bench.cuekit(&["logs", "--raw", &id])),
    )
}

pub fn main() {
    // `cargo bench` passes --bench; nothing to parse.
    let bench = sandbox();
    println!(
        "cuekit benchmarks (tmux {})",
        String::from_utf8_lossy(&Command::new("tmux").arg("-V").output().unwrap().stdout).trim()
    );
    let submit_rss = bench_submit(&bench);
    bench_status(&bench);
    bench_wait(&bench);
    let steer_rss = bench_steer(&bench);
    let (logs_rss, raw_logs_rss) = bench_logs(&bench);
    bench_monitor(&bench, 100);
    let list_rss = bench_list(&bench);
    println!(
        "peak RSS (KiB): submit {submit_rss}, steer {steer_rss}, logs {logs_rss}, logs --raw {raw_logs_rss}, list with 1000 tasks {list_rss} (target <= 10240)"
    );
}
