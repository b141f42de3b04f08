//! Prints what a failover costs (asserts nothing about time): the decision, from a
//! rate-limited agent's exit to the switch recorded in the task's plan (target <= 1 s; it
//! waits on the look that judges the ending: the monitor's tick, which the agent's exit
//! sentinel or a newly registered task wakes), and the recap's render time
//! on a 100 MB transcript (bounded: the renderer clips each input before it cleans it).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::{Sandbox, median, ms};
use cuekit::domain::recap::{self, RecapInput};

const RUNS: usize = 5;

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// One task whose `gemini` fails on quota after `after` seconds and whose fallback is a
/// stand-in opencode: the time from gemini's exit to the plan naming the switch.
fn decision(bench: &Sandbox, n: usize, after: u32) -> Duration {
    let stamp = bench.root.join(format!("exit-{n}"));
    bench.executable(
        "bin/gemini",
        &format!(
            "#!/bin/sh\nsleep {after}\necho '[API Error: {{\"error\":{{\"code\":429,\"message\":\"Resource has been exhausted (e.g. check quota). Please retry in 1s.\",\"status\":\"RESOURCE_EXHAUSTED\"}}}}]' >&2\ndate +%s%N > '{}'\nexit 1\n",
            stamp.display(),
        ),
    );
    let out = bench.json(&[
        "submit",
        "--mode",
        "batch",
        "--fallback",
        "opencode",
        &format!("Task {n}"),
    ]);
    let id = out["id"].as_str().expect("a task id").to_string();
    let plan = bench
        .harness
        .home
        .join(format!(".local/share/cuekit/tasks/{id}.plan"));
    let limit = Instant::now() + Duration::from_secs(60);
    let switched = loop {
        if std::fs::read_to_string(&plan).is_ok_and(|p| p.contains("\"fallback_used\": 1")) {
            break now_nanos();
        }
        assert!(Instant::now() < limit, "no failover of {id} in 60 s");
        std::thread::sleep(Duration::from_millis(2));
    };
    let exited: u128 = std::fs::read_to_string(&stamp)
        .expect("the agent's exit stamp")
        .trim()
        .parse()
        .unwrap();
    let _ = bench.cuekit(&["wait", &id, "--timeout", "60s"]).output();
    Duration::from_nanos(switched.saturating_sub(exited) as u64)
}

pub fn main() {
    let bench = Sandbox::new("failover", &[]);
    bench.executable(
        "bin/opencode",
        "#!/bin/sh\ncat > /dev/null\necho 'Took over.'\n",
    );
    // An agent that fails at once (its ending may come before the server's monitor watches
    // it), and one that worked a while first (the monitor already watching its sentinel).
    for (after, what) in [(0, "at once"), (2, "after 2 s of work")] {
        let decisions: Vec<Duration> = (0..RUNS)
            .map(|n| decision(&bench, n + after as usize * RUNS, after))
            .collect();
        println!(
            "failover decision (agent exit -> switch recorded), agent failing {what}, {RUNS} runs: median {}, max {} (target <= 1 s)",
            ms(median(decisions.clone())),
            ms(*decisions.iter().max().unwrap())
        );
    }

    // A 100 MB transcript: what the recap is handed whole (the worst case), and its last
    // 16 KiB (what cuekit reads of it).
    let line = "x".repeat(99) + "\n";
    let transcript = line.repeat(1_000_000);
    let tail = &transcript[transcript.len() - 16 * 1024..];
    for (what, log) in [
        ("whole 100 MB", transcript.as_str()),
        ("its 16 KiB tail", tail),
    ] {
        let times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let started = Instant::now();
                let text = recap::render(&RecapInput {
                    objective: "Fix the parser",
                    previous_agent: "gemini",
                    ended: "rate_limited",
                    last_answer: Some(log),
                    log_tail: log,
                    ..RecapInput::default()
                });
                assert!(text.len() <= recap::RECAP_LIMIT);
                started.elapsed()
            })
            .collect();
        println!(
            "recap render, transcript {what}: median {} ({} bytes out at most)",
            ms(median(times)),
            recap::RECAP_LIMIT
        );
    }
}
