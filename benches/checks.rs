//! `--check` (issue 34) with the real Gemini CLI (offline, canned model replies) whose first
//! answer fails the check and whose second passes it, printed as figures (never asserted):
//!
//! - child end -> check start, batch: the agent process's exit (its `gemini` wrapper notes the
//!   time) to the check's `started_at`; target <= 100 ms;
//! - child end -> check start, ACP: the agent's `end_turn` reply reaching the client (its line
//!   in `events.jsonl`, looked at every millisecond) to the check's `started_at`; target <= 100 ms;
//! - failed check -> fix message delivered: the failed verdict's `at` to the resumed agent's
//!   start (batch), to the fix prompt's `session/prompt` line (ACP; target <= 20 ms) and to the
//!   steer's receipt of the message typed into the TUI (interactive, by screen; target <= 300 ms);
//!
//! Needs the Gemini CLI (`CUEKIT_TEST_GEMINI`, `.tools/node_modules/.bin/gemini` or PATH).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::support::harness::git::{commit_all, project_repo};
use crate::support::harness::{canned_shell_call, canned_text};
use crate::support::{Sandbox, median, ms};
use serde_json::Value;

const MODEL: &str = "gemini-2.5-flash";
const SAMPLES: usize = 3;

fn real_gemini() -> Option<PathBuf> {
    let installed =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/node_modules/.bin/gemini");
    std::env::var_os("CUEKIT_TEST_GEMINI")
        .map(PathBuf::from)
        .or_else(|| installed.is_file().then_some(installed))
}

/// `gemini` on PATH: the real CLI with the replies `$CUEKIT_BENCH_RUNS/canned-<n>.jsonl` (the
/// last for later runs), noting each run's start and end (seconds since the epoch) there.
fn install_gemini(bench: &Sandbox, real: &Path) {
    bench.executable(
        "bin/gemini",
        &format!(
            "#!/bin/sh\nruns=\"$CUEKIT_BENCH_RUNS\"\n\
             n=$(ls \"$runs\" | grep -c '^start-'); n=$((n + 1))\n\
             date +%s.%N > \"$runs/start-$n\"\n\
             canned=\"$runs/canned-$n.jsonl\"; [ -f \"$canned\" ] || canned=\"$runs/canned-last.jsonl\"\n\
             '{}' --fake-responses-non-strict \"$canned\" \"$@\"\n\
             code=$?\ndate +%s.%N > \"$runs/end-$n\"\nexit $code\n",
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

fn answer(value: &str) -> Vec<String> {
    vec![
        canned_shell_call(&format!("echo answer={value} > answer.txt")),
        canned_text("Done."),
    ]
}

/// A folder of runs with the replies of each, for one task.
fn runs(bench: &Sandbox, replies: &[Vec<String>]) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = bench.root.join(format!("runs-{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, lines) in replies.iter().enumerate() {
        std::fs::write(
            dir.join(format!("canned-{}.jsonl", i + 1)),
            lines.join("\n") + "\n",
        )
        .unwrap();
    }
    std::fs::write(
        dir.join("canned-last.jsonl"),
        replies.last().unwrap().join("\n") + "\n",
    )
    .unwrap();
    dir
}

fn submit(bench: &Sandbox, runs: &Path, mode: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "--json",
        "submit",
        "--worktree",
        "--mode",
        mode,
        "--model",
        MODEL,
        "--check",
        "sh tests/check.sh",
    ];
    args.extend_from_slice(extra);
    args.push("Write the answer into answer.txt");
    let output = bench
        .cuekit(&args)
        .env("CUEKIT_BENCH_RUNS", runs)
        .env("GEMINI_API_KEY", "offline-bench-key")
        .output()
        .unwrap();
    let value: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("submit: {err}: {}", String::from_utf8_lossy(&output.stderr)));
    value["id"].as_str().expect("a task id").to_string()
}

fn wait(bench: &Sandbox, id: &str) -> Value {
    let waited = bench.json(&["wait", id, "--timeout", "180s"]);
    let status = bench.json(&["status", id]);
    assert_eq!(status["status"], "completed", "{waited}\n{status}");
    status
}

fn epoch(rfc3339: &str) -> f64 {
    humantime::parse_rfc3339(rfc3339)
        .unwrap()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn noted(runs: &Path, what: &str) -> f64 {
    std::fs::read_to_string(runs.join(what))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn gap(from: f64, to: f64) -> Duration {
    Duration::from_secs_f64((to - from).max(0.0))
}

/// Watches `events.jsonl` every millisecond: when each line naming `needle` first showed.
fn watch(events: PathBuf, needle: &'static str, count: usize) -> std::thread::JoinHandle<Vec<f64>> {
    std::thread::spawn(move || {
        let started = Instant::now();
        let mut seen = Vec::new();
        while seen.len() < count && started.elapsed() < Duration::from_secs(180) {
            let text = std::fs::read_to_string(&events).unwrap_or_default();
            let n = text.lines().filter(|line| line.contains(needle)).count();
            while seen.len() < n.min(count) {
                seen.push(now());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        seen
    })
}

fn verdicts(status: &Value) -> Vec<Value> {
    status["check"]["verdicts"].as_array().unwrap().clone()
}

pub fn main() {
    let Some(real) = real_gemini() else {
        println!("checks: skipped: no Gemini CLI (set CUEKIT_TEST_GEMINI)");
        return;
    };
    let bench = Sandbox::new("checks", &[]);
    install_gemini(&bench, &real);
    project_repo(&bench.project, "shared\n");
    std::fs::create_dir_all(bench.project.join("tests")).unwrap();
    std::fs::write(
        bench.project.join("tests/check.sh"),
        "grep -qx 'answer=42' answer.txt 2>/dev/null && exit 0\necho \"FAIL: $(cat answer.txt)\"; exit 1\n",
    )
    .unwrap();
    commit_all(&bench.project, "a test");

    let (mut batch_start, mut batch_fix) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        let dir = runs(&bench, &[answer("41"), answer("42")]);
        let id = submit(&bench, &dir, "batch", &[]);
        let verdicts = verdicts(&wait(&bench, &id));
        batch_start.push(gap(
            noted(&dir, "end-1"),
            epoch(verdicts[0]["started_at"].as_str().unwrap()),
        ));
        batch_fix.push(gap(
            epoch(verdicts[0]["at"].as_str().unwrap()),
            noted(&dir, "start-2"),
        ));
    }

    let (mut acp_start, mut acp_fix) = (Vec::new(), Vec::new());
    for _ in 0..SAMPLES {
        let mut replies = answer("41");
        replies.extend(answer("42"));
        let dir = runs(&bench, &[replies]);
        let id = submit(&bench, &dir, "acp", &["--once"]);
        let events = bench
            .project
            .join(".cuekit/tasks")
            .join(&id)
            .join("events.jsonl");
        let turn_ends = watch(events.clone(), "\"stopReason\":\"end_turn\"", 1);
        let prompts = watch(events, "\"method\":\"session/prompt\"", 2);
        let verdicts = verdicts(&wait(&bench, &id));
        let (turn_ends, prompts) = (turn_ends.join().unwrap(), prompts.join().unwrap());
        acp_start.push(gap(
            turn_ends[0],
            epoch(verdicts[0]["started_at"].as_str().unwrap()),
        ));
        acp_fix.push(gap(epoch(verdicts[0]["at"].as_str().unwrap()), prompts[1]));
    }

    let mut replies = answer("41");
    replies.extend(answer("42"));
    replies.push(canned_text("Bye."));
    let dir = runs(&bench, &[replies]);
    let id = submit(&bench, &dir, "interactive", &[]);
    let status = wait(&bench, &id);
    let verdicts = verdicts(&status);
    let events = std::fs::read_to_string(
        bench
            .project
            .join(".cuekit/tasks")
            .join(&id)
            .join("events.jsonl"),
    )
    .unwrap();
    let sent: Vec<Value> = events
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "cuekit_check" && event["sent"] == "fix")
        .collect();
    let screen_fix = gap(
        epoch(verdicts[0]["at"].as_str().unwrap()),
        epoch(sent[0]["at"].as_str().unwrap()),
    );

    println!("checks (real Gemini CLI offline; medians of {SAMPLES}; figures, not assertions):");
    println!(
        "  batch: child end -> check start        {:>9}   (target <= 100 ms)",
        ms(median(batch_start))
    );
    println!(
        "  batch: failed check -> resumed child   {:>9}",
        ms(median(batch_fix))
    );
    println!(
        "  acp:   child end -> check start        {:>9}   (target <= 100 ms)",
        ms(median(acp_start))
    );
    println!(
        "  acp:   failed check -> fix prompt sent {:>9}   (target <= 20 ms)",
        ms(median(acp_fix))
    );
    println!(
        "  interactive: failed check -> fix typed and received (by screen) {:>9}   (target <= 300 ms)",
        ms(screen_fix)
    );
}
