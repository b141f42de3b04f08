//! Prints what notices beyond this machine (issue 53) cost: the time from a transition (the
//! `at` the monitor recorded) to its webhook request arriving at a local server, as a median
//! over several endings (the aim: at most 300 ms); and the monitor's pace while tasks end with
//! a dead endpoint configured (a server that never answers), beside the same with no channel
//! (the aim: unchanged within noise). Asserts nothing about time. Run with
//! `cargo bench --bench figures -- notify`: real tmux on a private socket, `--agent command` children.

use std::time::{Duration, Instant, SystemTime};

use crate::support::harness::http::{Answer, Server};
use crate::support::harness::{poll, sh_task};
use crate::support::{Sandbox, median, ms};

const ENDINGS: usize = 9;
const TASKS: usize = 10;
const WINDOW: Duration = Duration::from_secs(6);

fn submit(bench: &Sandbox, script: &str) -> String {
    let value = bench.json(&[&["submit"][..], &sh_task(script, &["--mode", "batch"])].concat());
    value["id"].as_str().expect("submitted").to_string()
}

/// The `at` of the task's ending transition, as recorded in its events.jsonl.
fn ending_at(bench: &Sandbox, id: &str) -> Option<SystemTime> {
    let text = std::fs::read_to_string(bench.harness.task_dir(id).join("events.jsonl")).ok()?;
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|e| e["type"] == "cuekit_transition" && e["transition"]["new_status"] == "completed")
        .and_then(|e| humantime::parse_rfc3339_weak(e["transition"]["at"].as_str()?).ok())
}

fn latency() -> Vec<Duration> {
    let server = Server::start(Answer::Ok);
    let bench = Sandbox::new("notify", &[]);
    bench.harness.user_config(&format!(
        "monitor:\n  interval: 250ms\nnotify:\n  channels:\n    hook:\n      webhook: {}/hook\n",
        server.origin
    ));
    let mut took = Vec::new();
    for n in 1..=ENDINGS {
        let id = submit(&bench, "exit 0");
        assert!(
            server.wait_for(n, Duration::from_secs(60)),
            "no request for {id}"
        );
        let request = server.requests().pop().unwrap();
        let at = ending_at(&bench, &id).expect("the ending is recorded");
        took.push(request.received.duration_since(at).unwrap_or_default());
    }
    took
}

/// Ticks per second of the monitor while `TASKS` tasks end, over [`WINDOW`].
fn pace(channel: Option<&Server>) -> f64 {
    let bench = Sandbox::new("notify-pace", &[]);
    let notify = channel
        .map(|server| {
            format!(
                "notify:\n  channels:\n    dead:\n      webhook: {}/dead\n",
                server.origin
            )
        })
        .unwrap_or_default();
    bench
        .harness
        .user_config(&format!("monitor:\n  interval: 100ms\n{notify}"));
    // One task that outlives the window keeps the monitor running.
    submit(&bench, "sleep 60");
    assert!(poll(Duration::from_secs(30), || bench
        .harness
        .monitor_ticks()
        > 0));
    let from = bench.harness.monitor_ticks();
    let started = Instant::now();
    for i in 0..TASKS {
        submit(&bench, &format!("sleep 0.{i}; exit 0"));
    }
    std::thread::sleep(WINDOW.saturating_sub(started.elapsed()));
    let ticks = bench.harness.monitor_ticks() - from;
    ticks as f64 / started.elapsed().as_secs_f64()
}

pub fn main() {
    let took = latency();
    let mut sorted = took.clone();
    sorted.sort();
    println!(
        "transition -> webhook request: median {} (min {}, max {}) over {ENDINGS} endings",
        ms(median(took)),
        ms(sorted[0]),
        ms(*sorted.last().unwrap())
    );
    let quiet = pace(None);
    let dead = Server::start(Answer::Hang(Duration::from_secs(30)));
    let with_dead = pace(Some(&dead));
    println!(
        "monitor ticks/s (interval 100ms) while {TASKS} tasks end: {quiet:.1} with no channel, \
         {with_dead:.1} with a dead endpoint ({} requests it never answered)",
        dead.requests().len()
    );
}
