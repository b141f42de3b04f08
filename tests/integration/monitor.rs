//! The per-server monitor: transitions announced once each (hooks, the transitions log,
//! notifications), timeouts with nobody waiting, and its cost per tick. Real tmux on a private
//! socket, real /bin/sh, the real Gemini CLI where the screen matters.

use crate::harness::limits;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::harness::{Harness, MODEL, canned_text, poll};
use serde_json::Value;

/// Hooks that append one line per call to `hooks.log`: `<hook> <id> <old> <new> <reason>`.
fn logging_hooks(h: &Harness, extra: &str) -> PathBuf {
    let log = h.root().join("hooks.log");
    let line = |hook: &str| {
        format!(
            "echo \"{hook} $CUEKIT_TASK_ID ${{CUEKIT_OLD_STATUS:--}} $CUEKIT_NEW_STATUS ${{CUEKIT_REASON:--}}\" >> '{}'",
            log.display()
        )
    };
    h.user_config(&format!(
        "hooks:\n  on_start: {:?}\n  on_end: {:?}\n  on_input_required: {:?}\n{extra}",
        line("start"),
        line("end"),
        line("input")
    ));
    log
}

fn lines_of(log: &Path, id: &str) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(id))
        .map(String::from)
        .collect()
}

fn record_status(h: &Harness, id: &str) -> String {
    let record: Value =
        serde_json::from_slice(&std::fs::read(h.task_dir(id).join("task.json")).unwrap()).unwrap();
    record["status"].as_str().unwrap().to_string()
}

#[test]
fn every_kind_of_ending_fires_on_end_exactly_once() {
    let h = Harness::new();
    let log = logging_hooks(&h, "");
    let completed = h.submit_sh("exit 0", &[]);
    let failed = h.submit_sh("exit 3", &[]);
    let cancelled = h.submit_sh("sleep 600", &[]);
    // Nobody waits on this one and no process of its own enforces the timeout.
    let timed_out = h.submit_sh("sleep 600", &["--timeout", "2s"]);
    h.json(&["cancel", &cancelled]);
    let expected = [
        (&completed, "completed"),
        (&failed, "failed"),
        (&cancelled, "cancelled"),
        (&timed_out, "timed_out"),
    ];
    assert!(
        poll(limits::TASK, || expected.iter().all(|(id, _)| lines_of(
            &log, id
        )
        .iter()
        .any(|l| l.starts_with("end")))),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    // Three more ticks (or the monitor's end): nothing fires twice.
    h.monitor_ticks_pass(3);
    for (id, status) in expected {
        let ends: Vec<String> = lines_of(&log, id)
            .into_iter()
            .filter(|l| l.starts_with("end"))
            .collect();
        assert_eq!(ends.len(), 1, "{id}: {ends:?}");
        assert!(ends[0].contains(&format!(" {status} ")), "{ends:?}");
        let starts = lines_of(&log, id)
            .into_iter()
            .filter(|l| l.starts_with("start"))
            .count();
        assert!(starts <= 1, "{id} started twice");
    }
    // The transitions are there for `cuekit events` too, one JSON line each with --json.
    let lines = h.ok(&["--json", "events"]);
    let events: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["task_id"] == timed_out.as_str() && e["new_status"] == "timed_out")
    );
    let listed = h.ok(&["events"]);
    assert!(
        listed.contains(&format!("{timed_out}  running -> timed_out")),
        "{listed}"
    );
    // Once nothing runs, the monitor ends itself.
    assert!(poll(limits::SHORT, || h.monitors().is_empty()));
}

#[test]
fn an_ending_while_no_monitor_ran_is_announced_once() {
    let h = Harness::new();
    let log = logging_hooks(&h, "");
    let id = h.submit_sh("sleep 2", &[]);
    assert!(poll(limits::SHORT, || !h.monitors().is_empty()));
    assert!(poll(limits::SHORT, || !lines_of(&log, &id).is_empty()));
    for pid in h.monitors() {
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    assert!(poll(Duration::from_secs(5), || h.monitors().is_empty()));
    // The task ends with no monitor running; the next cuekit call that meets it starts one.
    assert!(poll(limits::SHORT, || h
        .task_dir(&id)
        .join("exit-code")
        .exists()));
    // Its pane is dead too: the call below meets an ending, not a running task.
    let target = format!("=cuekit-task-{id}:");
    assert!(
        poll(limits::SHORT, || {
            let dead = h.tmux(&["list-panes", "-t", &target, "-F", "#{pane_dead}"]);
            !dead.status.success() || String::from_utf8_lossy(&dead.stdout).trim() == "1"
        }),
        "the pane of {id} never died"
    );
    h.status(&id);
    assert!(
        poll(limits::SHORT, || lines_of(&log, &id)
            .iter()
            .any(|l| l.starts_with("end"))),
        "{:?}",
        lines_of(&log, &id)
    );
    h.monitor_ticks_pass(2);
    h.status(&id);
    h.monitor_ticks_pass(2);
    let ends = lines_of(&log, &id)
        .into_iter()
        .filter(|l| l.starts_with("end"))
        .count();
    assert_eq!(ends, 1);
}

/// A `gemini` stand-in whose screen is Gemini's own permission dialog (captured from 0.61.0),
/// held still, or flickering with its busy screen every 300 ms.
fn dialog_gemini(h: &Harness, flicker: bool) {
    let screens = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/screens");
    let dialog = screens.join("gemini-permission.txt");
    let busy = screens.join("gemini-busy.txt");
    let body = if flicker {
        format!(
            "while true; do printf '\\033[H\\033[2J'; cat '{}'; sleep 0.3; printf '\\033[H\\033[2J'; cat '{}'; sleep 0.3; done",
            dialog.display(),
            busy.display()
        )
    } else {
        format!(
            "printf '\\033[H\\033[2J'; cat '{}'; exec sleep 600",
            dialog.display()
        )
    };
    crate::harness::write_executable(&h.bin.join("gemini"), &format!("#!/bin/sh\n{body}\n"));
}

#[test]
fn a_dialog_that_holds_fires_once_and_one_that_flickers_never_fires() {
    let steady = Harness::new();
    dialog_gemini(&steady, false);
    let steady_log = logging_hooks(&steady, "");
    let flicker = Harness::new();
    dialog_gemini(&flicker, true);
    let flicker_log = logging_hooks(&flicker, "");
    let held = steady.submit(&["x"]);
    let flickering = flicker.submit(&["x"]);
    assert!(
        poll(limits::TASK, || lines_of(&steady_log, &held)
            .iter()
            .any(|l| l.starts_with("input"))),
        "{:?}",
        lines_of(&steady_log, &held)
    );
    // Four more ticks of each monitor: far past the dwell for both.
    steady.monitor_ticks_pass(4);
    flicker.monitor_ticks_pass(4);
    let inputs: Vec<String> = lines_of(&steady_log, &held)
        .into_iter()
        .filter(|l| l.starts_with("input"))
        .collect();
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    assert!(
        inputs[0].ends_with("input_required permission_prompt"),
        "{inputs:?}"
    );
    // Far past the dwell, the flickering screen never counted as a wait.
    let fired: Vec<String> = lines_of(&flicker_log, &flickering)
        .into_iter()
        .filter(|l| l.starts_with("input"))
        .collect();
    assert!(fired.is_empty(), "{fired:?}");
    assert!(
        !lines_of(&flicker_log, &flickering).is_empty(),
        "the start was announced"
    );
}

#[test]
fn a_hook_that_hangs_or_fails_delays_nothing_and_is_logged() {
    let h = Harness::new();
    let log = h.root().join("order.log");
    h.user_config(&format!(
        "hooks:\n  on_start: \"sleep 60\"\n  on_end: \"echo end >> '{}'; exit 1\"\n  timeout: 4s\n",
        log.display()
    ));
    let id = h.submit_sh("sleep 1", &[]);
    let events = h.task_dir(&id).join("events.jsonl");
    let hooks = || -> Vec<Value> {
        std::fs::read_to_string(&events)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] == "cuekit_hook")
            .collect()
    };
    assert!(poll(limits::TASK, || hooks().len() == 2), "{:?}", hooks());
    let logged = hooks();
    // on_end ran and was logged while on_start still hung: the hang delayed nothing.
    assert_eq!(logged[0]["hook"], "on_end", "{logged:?}");
    assert_eq!(logged[0]["exit_code"], 1);
    assert_eq!(logged[1]["hook"], "on_start");
    assert_eq!(logged[1]["timed_out"], true);
    assert_eq!(record_status(&h, &id), "completed");
}

#[test]
fn timeouts_hold_with_nobody_waiting_and_one_monitor_for_the_server() {
    let h = Harness::new();
    let ids: Vec<String> = (0..3)
        .map(|_| h.submit_sh("sleep 600", &["--timeout", "2s"]))
        .collect();
    assert!(poll(Duration::from_secs(5), || !h.monitors().is_empty()));
    // A monitor another submit started leaves as soon as it finds the first one's lock: under
    // load it was counted once in that instant. One stays.
    assert!(
        poll(limits::SHORT, || h.monitors().len() == 1),
        "one monitor per server: {:?}",
        h.monitors()
    );
    // No process per task: nothing else of cuekit runs but the monitor.
    assert!(
        poll(limits::TASK, || ids
            .iter()
            .all(|id| record_status(&h, id) == "timed_out")),
        "{:?}",
        ids.iter()
            .map(|id| record_status(&h, id))
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_hundred_running_tasks_cost_the_monitor_at_most_two_tmux_calls_a_tick() {
    let h = Harness::new();
    // A tmux that logs who called it and in which tick: the monitor counts a tick once it is
    // over (one byte in monitors/<hash>.ticks), so every call of one tick sees the same count.
    let (shim_dir, calls) = h.tmux_shim(&format!(
        "$PPID $(cat '{}'/*.ticks 2>/dev/null | wc -c) $*",
        h.data_dir().join("monitors").display()
    ));
    let path = format!("{}:{}", shim_dir.display(), std::env::var("PATH").unwrap());
    let submit = |i: usize| {
        let out = h
            .cuekit()
            .env("PATH", format!("{}:{path}", h.bin.display()))
            .args([
                "--json", "submit", "--agent", "command", "--", "sleep", "600",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{i}: {out:?}");
    };
    for i in 0..100 {
        submit(i);
    }
    let monitor = *h.monitors().first().expect("a monitor runs");
    std::fs::write(&calls, "").unwrap();
    h.monitor_ticks_pass(5);
    let text = std::fs::read_to_string(&calls).unwrap();
    // The monitor's calls, split at each tick's first call (where the count changes).
    let mut ticks: std::collections::BTreeMap<u64, Vec<&str>> = Default::default();
    for (pid, rest) in text.lines().filter_map(|l| l.split_once(' ')) {
        if pid.parse::<u32>().ok() != Some(monitor) {
            continue;
        }
        let (tick, command) = rest.split_once(' ').unwrap_or((rest, ""));
        ticks
            .entry(tick.trim().parse().unwrap())
            .or_default()
            .push(command);
    }
    assert!(ticks.len() >= 3, "the monitor looked at the server: {text}");
    for (tick, commands) in &ticks {
        assert!(
            commands.len() <= 2,
            "{} tmux calls in tick {tick}: {commands:?}",
            commands.len()
        );
    }
}

#[test]
fn a_transition_is_announced_on_the_submitters_tmux_client() {
    let h = Harness::new();
    // The person's own tmux server, with a client attached to it inside a pane of the test's.
    let user_socket = h.root().join("user.sock");
    let user = |args: &[&str]| {
        Command::new("tmux")
            .arg("-S")
            .arg(&user_socket)
            .args(args)
            .output()
            .unwrap()
    };
    assert!(
        user(&[
            "new-session",
            "-d",
            "-s",
            "me",
            "-x",
            "120",
            "-y",
            "20",
            "sleep 600"
        ])
        .status
        .success()
    );
    let pane =
        String::from_utf8(user(&["display-message", "-p", "-t", "me:", "#{pane_id}"]).stdout)
            .unwrap();
    let attach = format!("tmux -S '{}' attach -t me", user_socket.display());
    h.tmux(&[
        "new-session",
        "-d",
        "-s",
        "viewer",
        "-x",
        "120",
        "-y",
        "20",
        &attach,
    ]);
    assert!(
        poll(limits::SHORT, || !user(&["list-clients"]).stdout.is_empty()),
        "the viewer never attached"
    );
    let out = h
        .cuekit()
        .env("TMUX", format!("{},1,0", user_socket.display()))
        .env("TMUX_PANE", pane.trim())
        .args([
            "--json",
            "submit",
            "--agent",
            "command",
            "--",
            "sh",
            "-c",
            "sleep 1; exit 0",
        ])
        .output()
        .unwrap();
    let id = serde_json::from_slice::<Value>(&out.stdout).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let screen = || {
        String::from_utf8_lossy(&h.tmux(&["capture-pane", "-p", "-t", "=viewer:"]).stdout)
            .into_owned()
    };
    assert!(
        poll(limits::TASK, || screen()
            .contains(&format!("cuekit {id}: completed"))),
        "{}",
        screen()
    );
    user(&["kill-server"]);
}

#[test]
fn a_real_gemini_login_screen_fires_on_input_required_once() {
    let h = Harness::new().with_real_gemini(&[canned_text("unused")]);
    std::fs::remove_file(h.home.join(".gemini/settings.json")).unwrap();
    let h = h.env("GEMINI_API_KEY", "");
    let log = logging_hooks(&h, "");
    let id = h.submit(&["--model", MODEL, "hello"]);
    assert!(
        poll(limits::AGENT, || lines_of(&log, &id)
            .iter()
            .any(|l| l.starts_with("input"))),
        "{:?}\n{}",
        lines_of(&log, &id),
        h.screen(&id)
    );
    h.monitor_ticks_pass(3);
    let inputs: Vec<String> = lines_of(&log, &id)
        .into_iter()
        .filter(|l| l.starts_with("input"))
        .collect();
    assert_eq!(inputs.len(), 1, "{inputs:?}");
    assert!(inputs[0].ends_with("auth_required"), "{inputs:?}");
}

#[test]
fn a_real_gemini_turn_fires_idle_and_again_after_a_steer() {
    let h = Harness::new().with_real_gemini(&[
        canned_text("First canned answer."),
        canned_text("Second canned answer."),
    ]);
    let log = logging_hooks(&h, "");
    let id = h.submit(&["--model", MODEL, "Say hello"]);
    let idles = || {
        lines_of(&log, &id)
            .into_iter()
            .filter(|l| l.starts_with("input") && l.ends_with("idle_at_prompt"))
            .count()
    };
    assert!(
        poll(limits::AGENT, || idles() == 1),
        "{:?}\n{}",
        lines_of(&log, &id),
        h.screen(&id)
    );
    let receipt = h.ok(&["steer", &id, "and once more"]);
    assert!(receipt.contains("submitted"), "{receipt}");
    assert!(
        poll(limits::AGENT, || idles() == 2),
        "{:?}\n{}",
        lines_of(&log, &id),
        h.screen(&id)
    );
    h.json(&["cancel", &id]);
}

/// A monitor never outlives what it serves: a task whose record was deleted (and that has no
/// deadline) leaves nothing to watch, and a removed data directory ends the monitor without
/// being made anew by it.
#[test]
fn a_monitor_whose_records_or_data_vanish_ends_itself() {
    let h = Harness::new();
    let id = h.submit_sh("sleep 600", &[]);
    assert!(poll(Duration::from_secs(5), || !h.monitors().is_empty()));
    // Again if the monitor wrote into the directory meanwhile (its first announcement).
    let dir = h.task_dir(&id);
    assert!(poll(Duration::from_secs(5), || {
        let _ = std::fs::remove_dir_all(&dir);
        !dir.exists()
    }));
    assert!(
        poll(limits::SHORT, || h.monitors().is_empty()),
        "the monitor stayed for a task it cannot judge: {:?}",
        h.monitors()
    );

    h.submit_sh("sleep 600", &[]);
    assert!(poll(Duration::from_secs(5), || !h.monitors().is_empty()));
    let data = h.home.join(".local/share/cuekit");
    // Again if the monitor wrote into it meanwhile (an announcement of the new task).
    assert!(poll(Duration::from_secs(5), || {
        let _ = std::fs::remove_dir_all(&data);
        !data.exists()
    }));
    assert!(
        poll(limits::SHORT, || h.monitors().is_empty()),
        "the monitor outlived its data directory: {:?}",
        h.monitors()
    );
    assert!(
        !data.exists(),
        "the monitor made its data directory anew: {:?}",
        walk(&data)
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(entry.path());
        if entry.path().is_dir() {
            out.extend(walk(&entry.path()));
        }
    }
    out
}

/// A task that ends before the monitor's first look still starts: one `running` transition and
/// one `on_start`, before its ending, for every task however short.
#[test]
fn a_task_shorter_than_the_monitors_first_look_still_gets_its_start() {
    let h = Harness::new();
    let log = logging_hooks(&h, "");
    let ids: Vec<String> = (0..10).map(|_| h.submit_sh("exit 0", &[])).collect();
    assert!(
        poll(limits::TASK, || ids.iter().all(|id| lines_of(&log, id)
            .iter()
            .any(|l| l.starts_with("end")))),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let lines = h.ok(&["--json", "events"]);
    let events: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for id in &ids {
        let hooks = lines_of(&log, id);
        let starts = hooks.iter().filter(|l| l.starts_with("start")).count();
        let ends = hooks.iter().filter(|l| l.starts_with("end")).count();
        assert_eq!((starts, ends), (1, 1), "{id}: {hooks:?}");
        let transitions: Vec<(Value, Value)> = events
            .iter()
            .filter(|e| e["task_id"] == id.as_str())
            .map(|e| (e["old_status"].clone(), e["new_status"].clone()))
            .collect();
        assert_eq!(
            transitions,
            [
                (Value::Null, Value::from("running")),
                (Value::from("running"), Value::from("completed"))
            ],
            "{id}"
        );
    }
}

/// An interactive child idle after its turn while its own check runs waits on cuekit, not on a
/// person: no `on_input_required` hook, no `input_required` in the transitions log, only its
/// start and its ending (the check still runs, and its pass ends the task).
#[test]
fn a_turn_waiting_on_its_own_check_is_announced_to_no_one() {
    let h = Harness::new().with_real_gemini(&[
        crate::harness::canned_shell_call("echo answer=42 > answer.txt"),
        canned_text("Done."),
    ]);
    crate::checks::checked_project(&h);
    let log = logging_hooks(&h, "");
    let id = h.submit(&[
        "--worktree",
        "--model",
        MODEL,
        "--check",
        "sleep 3; sh tests/check.sh",
        "Write the answer into answer.txt",
    ]);
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::LONG)]);
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    assert_eq!(waited["tasks"][0]["status"], "completed", "{waited}");
    let announced = || -> Vec<String> {
        h.ok(&["--json", "events"])
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|event| event["task_id"] == id.as_str())
            .map(|event| event["new_status"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert!(
        poll(limits::TASK, || announced().last().map(String::as_str)
            == Some("completed")),
        "{:?}",
        announced()
    );
    assert!(
        poll(limits::TASK, || lines_of(&log, &id)
            .iter()
            .any(|l| l.starts_with("end"))),
        "{:?}",
        lines_of(&log, &id)
    );
    assert_eq!(announced(), ["running", "completed"]);
    let hooks = lines_of(&log, &id);
    assert!(
        hooks.iter().all(|line| !line.starts_with("input")),
        "{hooks:?}"
    );
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    assert!(
        events.contains("\"type\":\"cuekit_check\""),
        "the check never ran after the turn:\n{events}"
    );
}
