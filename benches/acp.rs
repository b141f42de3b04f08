//! The ACP run mode with the real Gemini CLI (offline, canned model replies), printed as figures:
//!
//! - steer -> receipt: the whole `cuekit steer` command against an idle ACP session, until its
//!   `submitted` receipt (the prompt went out as `session/prompt`); target <= 20 ms;
//! - status of an ACP task (read from the client's state file: no tmux call);
//! - permission request -> status: from the agent's `session/request_permission` reaching
//!   the client (its line in `events.jsonl`) to `status` showing `permission_prompt`; target
//!   <= 100 ms;
//! - approve: `cuekit approve --allow` against a waiting permission request, until its answer;
//! - submit: `--mode acp` against `--mode interactive` of the same agent (the command's wall);
//! - the first turn: submit -> `idle_at_prompt`, the real agent's start-up included;
//! - peak RSS of cuekit's client (`cuekit __acp`) after those turns (target <= 10240 KiB).
//!
//! Needs the Gemini CLI: `CUEKIT_TEST_GEMINI`, else `.tools/node_modules/.bin/gemini` (what
//! `scripts/test` installs), else `gemini` on PATH. Without one it says so and measures nothing.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::support::{Sandbox, median, ms, peak_rss_kib};
use serde_json::{Value, json};

const MODEL: &str = "gemini-2.5-flash";
const STEERS: usize = 10;

fn real_gemini() -> Option<PathBuf> {
    let installed =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/node_modules/.bin/gemini");
    std::env::var_os("CUEKIT_TEST_GEMINI")
        .map(PathBuf::from)
        .or_else(|| installed.is_file().then_some(installed))
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|dir| dir.join("gemini"))
                .find(|path| path.is_file())
        })
}

fn canned_text(text: &str) -> String {
    json!({"method": "generateContentStream", "response": [{
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}]})
    .to_string()
}

fn shell_call(command: &str) -> String {
    json!({"method": "generateContentStream", "response": [{
        "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {
            "name": "run_shell_command", "args": {"command": command, "description": "a step"}}}]},
            "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}]})
    .to_string()
}

/// bin/gemini runs the real CLI with the canned replies `CUEKIT_BENCH_CANNED` names (it reaches
/// the pane with the submitter's environment).
fn install_gemini(bench: &Sandbox, real: &std::path::Path) {
    bench.executable(
        "bin/gemini",
        &format!(
            "#!/bin/sh\nexec '{}' --fake-responses-non-strict \"$CUEKIT_BENCH_CANNED\" \"$@\"\n",
            real.display()
        ),
    );
    let settings = bench.root.join("home/.gemini");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("settings.json"),
        r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#,
    )
    .unwrap();
}

fn submit(bench: &Sandbox, canned: &[String], extra: &[&str]) -> String {
    submit_in(bench, canned, "acp", extra)
}

fn submit_in(bench: &Sandbox, canned: &[String], mode: &str, extra: &[&str]) -> String {
    let file = bench.root.join(format!("canned-{}.jsonl", next_file()));
    std::fs::write(&file, canned.join("\n") + "\n").unwrap();
    let mut args = vec!["--json", "submit", "--mode", mode, "--model", MODEL];
    args.extend_from_slice(extra);
    let mut command = bench.cuekit(&args);
    command
        .env("CUEKIT_BENCH_CANNED", &file)
        .env("GEMINI_API_KEY", "offline-bench-key");
    let output = command.output().unwrap();
    let value: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("submit: {err}: {}", String::from_utf8_lossy(&output.stderr)));
    value["id"].as_str().expect("a task id").to_string()
}

fn next_file() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn status(bench: &Sandbox, id: &str) -> Value {
    bench.json(&["status", id])
}

/// Polls until the task's reason is `reason`; how long that took.
fn until_reason(bench: &Sandbox, id: &str, reason: &str) -> Duration {
    let started = Instant::now();
    loop {
        let view = status(bench, id);
        if view["reason"] == reason {
            return started.elapsed();
        }
        assert!(
            view["status"] == "running" || view["status"] == "input_required",
            "{id} ended while waiting for {reason}: {view}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "{id} never reached {reason}: {view}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn timed_json(bench: &Sandbox, args: &[&str]) -> (Duration, Value) {
    let started = Instant::now();
    let value = bench.json(args);
    (started.elapsed(), value)
}

/// The pid of the task's `cuekit __acp` client.
fn client_pid(id: &str) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            let is_client = cmdline.split(|b| *b == 0).any(|word| word == b"__acp");
            let ours = environ
                .split(|b| *b == 0)
                .any(|var| var == format!("CUEKIT_TASK_ID={id}").as_bytes());
            (is_client && ours).then_some(pid)
        })
}

pub fn main() {
    let Some(real) = real_gemini() else {
        println!(
            "acp: skipped: no Gemini CLI (set CUEKIT_TEST_GEMINI, or run scripts/test once to install it)"
        );
        return;
    };
    let bench = Sandbox::new("acp", &[]);
    install_gemini(&bench, &real);

    let replies: Vec<String> = (0..=STEERS)
        .map(|turn| canned_text(&format!("Answer {turn}.")))
        .collect();
    let started = Instant::now();
    let id = submit(&bench, &replies, &["Say hello"]);
    let submitted = started.elapsed();
    let first_turn = submitted + until_reason(&bench, &id, "idle_at_prompt");

    let mut receipts = Vec::new();
    let mut turns = Vec::new();
    for n in 0..STEERS {
        let (wall, receipt) = timed_json(&bench, &["steer", &id, &format!("steer {n}")]);
        assert_eq!(receipt["receipt"], "submitted", "{receipt}");
        receipts.push(wall);
        turns.push(wall + until_reason(&bench, &id, "idle_at_prompt"));
    }
    let statuses: Vec<Duration> = (0..STEERS)
        .map(|_| timed_json(&bench, &["status", &id]).0)
        .collect();
    let client_rss =
        client_pid(&id).map_or_else(|| "n/a".to_string(), |pid| peak_rss_kib(pid).to_string());

    let asking = submit(
        &bench,
        &[shell_call("touch ran.txt"), canned_text("Ran it.")],
        &["--no-skip-permissions", "--once", "Touch ran.txt"],
    );
    let events = bench
        .project
        .join(".cuekit/tasks")
        .join(&asking)
        .join("events.jsonl");
    let arrived = std::thread::spawn(move || {
        let started = Instant::now();
        loop {
            let seen = std::fs::read_to_string(&events)
                .is_ok_and(|text| text.contains("session/request_permission"));
            if seen || started.elapsed() > Duration::from_secs(90) {
                return Instant::now();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    until_reason(&bench, &asking, "permission_prompt");
    let shown = Instant::now();
    let request_to_status = shown.saturating_duration_since(arrived.join().unwrap());
    let (approve, answer) = timed_json(&bench, &["approve", &asking, "--allow"]);
    assert!(answer.get("error").is_none(), "{answer}");

    println!(
        "acp steer -> receipt (submitted): median {}, max {} over {STEERS} (target <= 20 ms)",
        ms(median(receipts.clone())),
        ms(*receipts.iter().max().unwrap())
    );
    println!(
        "acp turn (steer -> idle_at_prompt again, canned reply): median {}",
        ms(median(turns))
    );
    println!(
        "acp status (no tmux call): median {} over {STEERS}",
        ms(median(statuses))
    );
    println!(
        "acp permission request -> status shows it: {} (target <= 100 ms; status polled back to back)",
        ms(request_to_status)
    );
    println!("acp approve --allow -> answered: {}", ms(approve));
    println!(
        "acp first turn: submit {} -> idle_at_prompt {} (the real Gemini CLI's start-up included)",
        ms(submitted),
        ms(first_turn)
    );
    println!(
        "acp client peak RSS after {} turns: {client_rss} KiB (target <= 10240)",
        STEERS + 1
    );
    for task in [&id, &asking] {
        let _ = bench.cuekit(&["cancel", "--grace", "0s", task]).output();
    }
    let (acp, interactive) = submit_walls(&bench);
    println!(
        "submit wall, same agent: --mode acp median {}, --mode interactive median {} over 5 ({:.2}x)",
        ms(acp),
        ms(interactive),
        acp.as_secs_f64() / interactive.as_secs_f64()
    );
}

/// The submit command's wall for an ACP and an interactive task of the real Gemini CLI, each
/// cancelled at once.
fn submit_walls(bench: &Sandbox) -> (Duration, Duration) {
    let replies = [canned_text("x")];
    let walls = |mode: &str| {
        let times: Vec<Duration> = (0..5)
            .map(|_| {
                let started = Instant::now();
                let id = submit_in(bench, &replies, mode, &["Say x"]);
                let wall = started.elapsed();
                let _ = bench.cuekit(&["cancel", "--grace", "0s", &id]).output();
                wall
            })
            .collect();
        median(times)
    };
    (walls("acp"), walls("interactive"))
}
