//! What a parent does with cuekit, end to end: the real binary, real tmux on a private
//! socket, real /bin/sh, and the fake Gemini CLI for exit codes and output the real CLI
//! cannot produce on demand.

use crate::harness::limits;

use crate::harness::Harness;
use crate::harness::{HANG_GUARD, within};

fn wait_json(h: &Harness, args: &[&str]) -> (serde_json::Value, i32) {
    let mut all = vec!["wait"];
    all.extend_from_slice(args);
    h.json(&all)
}

#[test]
fn batch_task_completes_with_exit_zero_and_is_not_steerable() {
    let h = Harness::new().with_fake_gemini();
    let id = h.submit(&["--mode", "batch", "say hello"]);
    let (waited, code) = wait_json(&h, &[&id, "--timeout", "20s"]);
    assert_eq!(code, 0, "{waited}");
    let status = h.status(&id);
    assert_eq!(status["status"], "completed");
    assert_eq!(status["exit_code"], 0);
    assert_eq!(status["mode"], "batch");
    assert_eq!(status["capabilities"]["supports_steering"], false);
    assert_eq!(
        status["launch_command"],
        format!(
            "gemini --skip-trust -y -o stream-json --session-id '{id}' {}",
            crate::harness::STDIN_PROMPT
        )
    );
    assert!(h.transcript(&id).contains("reply to: say hello"));
    let (error, code) = h.json(&["steer", &id, "more"]);
    assert_eq!(error["error"]["code"], "steering_unsupported");
    assert_eq!(code, 6);
}

#[test]
fn nonzero_exits_are_failures_with_the_agents_reason() {
    for (exit, reason) in [
        ("1", "agent_error"),
        ("41", "auth_missing"),
        ("53", "turn_limit"),
        ("7", "nonzero_exit"),
    ] {
        let h = Harness::new()
            .with_fake_gemini()
            .env("FAKE_GEMINI_EXIT", exit);
        let id = h.submit(&["--mode", "batch", "x"]);
        let (waited, code) = wait_json(&h, &[&id, "--timeout", "20s"]);
        assert_eq!(code, 20, "wait reports a failed task: {waited}");
        let status = h.status(&id);
        assert_eq!(status["status"], "failed");
        assert_eq!(status["exit_code"], exit.parse::<i32>().unwrap());
        assert_eq!(status["reason"], reason);
        assert!(status["hint"].as_str().is_some_and(|h| !h.is_empty()));
    }
}

#[test]
fn an_agent_killed_by_sigkill_fails_with_137() {
    let h = Harness::new()
        .with_fake_gemini()
        .env("FAKE_GEMINI_SIGKILL", "1");
    let id = h.submit(&["--mode", "batch", "x"]);
    let (_, code) = wait_json(&h, &[&id, "--timeout", "20s"]);
    assert_eq!(code, 20);
    let status = h.status(&id);
    assert_eq!(
        (status["status"].as_str(), status["exit_code"].as_i64()),
        (Some("failed"), Some(137))
    );
    assert_eq!(status["reason"], "killed");
}

#[test]
fn interactive_task_is_steered_and_quits() {
    let h = Harness::new().with_fake_gemini();
    let id = h.submit(&["first question"]);
    h.wait_until(&id, "the first reply", limits::SHORT, || {
        h.transcript(&id).contains("Type your message")
    });
    assert!(h.transcript(&id).contains("mode=interactive"));
    let (receipt, code) = h.json(&["steer", &id, "second -question with 'quotes' and $(dollar)"]);
    assert_eq!(code, 0, "{receipt}");
    h.wait_until(&id, "the steered reply", limits::SHORT, || {
        h.transcript(&id)
            .contains("reply to: second -question with 'quotes' and $(dollar)")
    });
    h.ok(&["steer", &id, "/quit"]);
    let (_, code) = wait_json(&h, &[&id, "--timeout", "10s"]);
    assert_eq!(code, 0);
    assert_eq!(h.status(&id)["status"], "completed");
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    // Both steers are logged; the monitor's transitions share the log, so only steers count.
    let steers = events
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["type"] == "steer")
        .count();
    assert_eq!(steers, 2, "{events}");
    let (error, code) = h.json(&["steer", &id, "too late"]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("invalid_state"), 5)
    );
}

#[test]
fn interactive_stays_interactive_under_ci_true() {
    // CI=true makes the Gemini CLI run a positional prompt headless; launch.sh clears it.
    let h = Harness::new().with_fake_gemini().env("CI", "true");
    let id = h.submit(&["hello"]);
    h.wait_until(&id, "start", limits::SHORT, || {
        h.transcript(&id).contains("FAKE-GEMINI-START")
    });
    assert!(
        h.transcript(&id).contains("mode=interactive"),
        "{}",
        h.transcript(&id)
    );
    // A batch task keeps the caller's environment untouched.
    let batch = h.submit(&["--mode", "batch", "hello"]);
    wait_json(&h, &[&batch, "--timeout", "10s"]);
    assert!(h.transcript(&batch).contains("mode=headless"));
}

#[test]
fn timeout_stops_the_task_and_marks_it_timed_out() {
    let h = Harness::new()
        .with_fake_gemini()
        .env("FAKE_GEMINI_SLEEP", "60");
    let id = h.submit(&["--mode", "batch", "--timeout", "1s", "slow"]);
    // Nobody waits: the watchdog alone must enforce the deadline. The agent would run 60 s:
    // within 30 s only the deadline can have ended it (a hang guard, not a clock).
    h.wait_until(&id, "timed_out", limits::TASK, || {
        let record = std::fs::read_to_string(h.task_dir(&id).join("task.json")).unwrap();
        record.contains("\"timed_out\"")
    });
    let status = h.status(&id);
    assert_eq!(status["status"], "timed_out");
    assert_eq!(status["reason"], "timeout");
    // The ending is recorded first; the process tree and the session go right after.
    h.wait_until(&id, "the session to be cleaned up", limits::SHORT, || {
        let panes = h.tmux(&["list-panes", "-a", "-F", "#{session_name}"]);
        !String::from_utf8_lossy(&panes.stdout).contains(&id)
    });
}

#[test]
fn transcript_holds_the_first_line_and_a_multi_megabyte_burst() {
    let lines = 120_000; // 120k lines x 51 bytes: about 6 MB
    let h = Harness::new()
        .with_fake_gemini()
        .env("FAKE_GEMINI_BURST_LINES", &lines.to_string());
    let id = h.submit(&["--mode", "batch", "--no-events", "burst"]);
    let (_, code) = wait_json(&h, &[&id, "--timeout", "60s"]);
    assert_eq!(code, 0);
    // No waiting for the pipe to drain: once the exit code is visible, every byte is in.
    let raw = std::fs::read(h.task_dir(&id).join("transcript.txt")).unwrap();
    let text = String::from_utf8(raw).unwrap().replace("\r\n", "\n");
    assert!(
        text.starts_with("FAKE-GEMINI-START"),
        "first line missing: {:?}",
        &text[..80.min(text.len())]
    );
    let burst: Vec<&str> = text.lines().filter(|l| l.starts_with("burst ")).collect();
    assert_eq!(burst.len(), lines);
    for (i, line) in burst.iter().enumerate() {
        assert_eq!(
            *line,
            format!("burst {:08} abcdefghijklmnopqrstuvwxyz0123456789", i + 1)
        );
    }
    // The readable view renders the same lines.
    let readable = h.ok(&["logs", &id]);
    assert_eq!(
        readable.lines().filter(|l| l.starts_with("burst ")).count(),
        lines
    );
    let raw_out = h.cuekit().args(["logs", "--raw", &id]).output().unwrap();
    assert_eq!(
        raw_out.stdout,
        std::fs::read(h.task_dir(&id).join("transcript.txt")).unwrap()
    );
}

#[test]
fn parallel_submits_keep_every_record() {
    let h = Harness::new().with_fake_gemini();
    let children: Vec<_> = (0..12)
        .map(|i| {
            h.cuekit()
                .args(["--json", "submit", "--mode", "batch", &format!("task {i}")])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ids: Vec<String> = children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success());
            let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            value["id"].as_str().unwrap().to_string()
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 12);
    let mut args = vec!["--timeout", "30s"];
    args.extend(ids.iter().map(String::as_str));
    let (_, code) = wait_json(&h, &args);
    assert_eq!(code, 0);
    let (list, _) = h.json(&["list"]);
    assert_eq!(list.as_array().unwrap().len(), 12);
    let (all, _) = h.json(&["list", "--all"]);
    assert_eq!(all.as_array().unwrap().len(), 12);
}

/// A tmux server left with no session answers a look at its panes "no current target" (it
/// exits just after its last session ends, and a look can come between; one told `exit-empty
/// off` stays so): the task's pane is gone, not the server unreachable. A status racing a
/// cancel (the test below) once read `unknown`, "tmux failed: no current target", so.
#[test]
fn a_server_left_with_no_session_has_no_panes_not_an_unknown_state() {
    let h = Harness::new()
        .with_fake_gemini()
        .env("FAKE_GEMINI_SLEEP", "60");
    let id = h.submit(&["--mode", "batch", "long"]);
    let (pane, _) = h.pane(&id);
    assert!(h.tmux(&["set", "-g", "exit-empty", "off"]).status.success());
    assert!(h.tmux(&["kill-pane", "-t", &pane]).status.success());
    let left = h.tmux(&["list-panes", "-a"]);
    assert!(
        String::from_utf8_lossy(&left.stderr).contains("no current target"),
        "the server is not the one this test needs: {left:?}"
    );
    let status = h.status(&id);
    assert_ne!(status["status"], "unknown", "{status}");
    assert_ne!(status["status"], "running", "{status}");
    let (list, code) = h.json(&["list", "--all"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list[0]["status"], status["status"], "{list}");
}

#[test]
fn cancel_racing_status_refreshes_never_corrupts_the_record() {
    let h = Harness::new()
        .with_fake_gemini()
        .env("FAKE_GEMINI_SLEEP", "60");
    let id = h.submit(&["--mode", "batch", "long"]);
    let pollers: Vec<_> = (0..4)
        .map(|_| {
            let mut command = h.cuekit();
            command.args(["--json", "status", &id]);
            std::thread::spawn(move || {
                for _ in 0..15 {
                    let output = command.output().unwrap();
                    let value: serde_json::Value =
                        serde_json::from_slice(&output.stdout).expect("status is valid JSON");
                    assert!(
                        value["status"] == "running" || value["status"] == "cancelled",
                        "{value}"
                    );
                }
            })
        })
        .collect();
    let (cancelled, code) = h.json(&["cancel", "--grace", "1s", &id]);
    assert_eq!(code, 0, "{cancelled}");
    for poller in pollers {
        poller.join().unwrap();
    }
    let status = h.status(&id);
    assert_eq!(status["status"], "cancelled");
    // Exactly one ending was recorded, and it stays.
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(h.task_dir(&id).join("task.json")).unwrap()).unwrap();
    assert_eq!(record["status"], "cancelled");
    assert!(record["ended_at"].is_string());
}

#[test]
fn unknown_and_malformed_ids_are_task_not_found() {
    let h = Harness::new();
    for id in ["t_000000000000", "../../etc", "nope"] {
        for command in [
            &["status", id][..],
            &["wait", id],
            &["cancel", id],
            &["logs", id],
            &["steer", id, "x"],
        ] {
            let (error, code) = h.json(command);
            assert_eq!(
                error["error"]["code"], "task_not_found",
                "{command:?}: {error}"
            );
            assert_eq!(code, 4);
        }
    }
    let output = h.run(&["status", "t_000000000000"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error[task_not_found]: no task with id 't_000000000000'"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: "));
}

#[test]
fn bad_submissions_are_rejected_before_anything_runs() {
    let h = Harness::new().with_fake_gemini();
    let cases: [(&[&str], &str, i32); 5] = [
        (&["submit", "   "], "invalid_input", 3),
        (&["submit", "--agent", "nope", "x"], "invalid_input", 3),
        (&["submit", "--model=-x", "x"], "invalid_input", 3),
        (
            &["submit", "--cwd", "/does/not/exist", "x"],
            "invalid_input",
            3,
        ),
        (&["submit", "--mode", "sideways", "x"], "usage", 2),
    ];
    for (args, code_name, status) in cases {
        let (error, code) = h.json(args);
        assert_eq!(error["error"]["code"], code_name, "{args:?}: {error}");
        assert_eq!(code, status, "{args:?}");
    }
    assert!(
        !h.project.join(".cuekit").exists(),
        "nothing may be recorded for a rejected submit"
    );
    let empty = Harness::new();
    let (error, code) = empty.json(&["submit", "x"]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("agent_not_found"), 7)
    );
}

#[test]
fn dry_run_prints_the_launch_command_and_runs_nothing() {
    let h = Harness::new();
    let out = h.ok(&[
        "submit",
        "--dry-run",
        "--model",
        "gemini-2.5-flash",
        "--mode",
        "batch",
        "--",
        "-fix it",
    ]);
    assert_eq!(
        out.trim(),
        format!(
            "gemini --skip-trust -y -m 'gemini-2.5-flash' -o stream-json {}",
            crate::harness::STDIN_PROMPT
        )
    );
    let (value, _) = h.json(&["submit", "--dry-run", "--approval-mode", "bogus", "x"]);
    // An approval mode it cannot take never leaves the bypass on: it fails closed.
    assert_eq!(value["launch_command"], "gemini --skip-trust 'x'");
    assert!(value["warnings"][0].as_str().unwrap().contains("bogus"));
    // The audit's codex, opencode and copilot: a stricter mode they have no word for.
    for agent in ["codex", "opencode", "copilot"] {
        let (value, _) = h.json(&[
            "submit",
            "--dry-run",
            "--agent",
            agent,
            "--approval-mode",
            "plan",
            "x",
        ]);
        let launch = value["launch_command"]
            .as_str()
            .unwrap_or_default()
            .to_string()
            + &value["env"].to_string();
        for bypass in ["--dangerously-bypass", "--auto", "--yolo", "ALLOW_ALL"] {
            assert!(!launch.contains(bypass), "{agent}: {value}");
        }
        assert!(value["warnings"].to_string().contains("plan"), "{value}");
    }
    assert!(!h.project.join(".cuekit").exists());
}

#[test]
fn objective_from_stdin_and_file_with_context_and_constraints() {
    let h = Harness::new();
    let file = h.root().join("objective.txt");
    std::fs::write(&file, "from a file\n").unwrap();
    let out = h.ok(&[
        "submit",
        "--dry-run",
        "--file",
        file.to_str().unwrap(),
        "--context",
        "ctx",
        "--constraint",
        "c1",
    ]);
    assert_eq!(
        out.trim(),
        "gemini --skip-trust -y 'from a file\n\nContext:\nctx\n\nConstraints:\n- c1'"
    );
    let mut child = h
        .cuekit()
        .args(["submit", "--dry-run", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"from stdin")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "gemini --skip-trust -y 'from stdin'"
    );
}

#[test]
fn the_pane_gets_the_submitters_environment_without_secrets_on_argv() {
    let h = Harness::new()
        .with_fake_gemini()
        .env("GEMINI_API_KEY", "sekrit-value");
    // A wrapper that reports what the agent saw.
    crate::harness::write_executable(
        &h.bin.join("gemini"),
        "#!/bin/sh\necho \"key=$GEMINI_API_KEY task=$CUEKIT_TASK_ID\"\n",
    );
    let id = h.submit(&["--mode", "batch", "x"]);
    wait_json(&h, &[&id, "--timeout", "10s"]);
    assert!(
        h.transcript(&id)
            .contains(&format!("key=sekrit-value task={id}"))
    );
    assert!(
        !h.data_dir().join(format!("tasks/{id}.env.sh")).exists(),
        "the env file is deleted once read"
    );
    assert!(!h.task_dir(&id).join("env.sh").exists());
    let launch = std::fs::read_to_string(h.task_dir(&id).join("launch.sh")).unwrap();
    assert!(!launch.contains("sekrit"));
}

#[test]
fn logs_follow_streams_until_the_task_ends() {
    let h = Harness::new();
    let id = h.submit_batch_sh("for i in 1 2 3; do echo tick $i; sleep 0.3; done");
    // A hang guard: follow must return once the task (about 1 s long) ends.
    let mut follow = h.cuekit();
    follow.args(["logs", "--follow", &id]);
    let output = within(follow, HANG_GUARD);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("tick "))
            .collect::<Vec<_>>(),
        ["tick 1", "tick 2", "tick 3"],
        "{text}"
    );
    let raw = h
        .cuekit()
        .args(["logs", "--follow", "--raw", &id])
        .output()
        .unwrap();
    assert_eq!(
        raw.stdout,
        std::fs::read(h.task_dir(&id).join("transcript.txt")).unwrap()
    );
}

#[test]
fn attach_refuses_a_task_whose_session_is_gone() {
    let h = Harness::new();
    let id = h.submit(&["--agent", "command", "--mode", "batch", "--", "true"]);
    h.json(&["wait", &id, "--timeout", "10s"]);
    h.ok(&["cancel", &id]); // removes the ended task's leftover session
    let (error, code) = h.json(&["attach", &id]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("invalid_state"), 5),
        "{error}"
    );
    assert_eq!(
        h.status(&id)["status"],
        "completed",
        "cleaning up a session keeps the ending"
    );
}

#[test]
fn wait_any_returns_when_the_first_task_ends() {
    let h = Harness::new();
    let slow = h.submit(&["--agent", "command", "--mode", "batch", "--", "sleep", "30"]);
    let fast = h.submit(&["--agent", "command", "--mode", "batch", "--", "true"]);
    let (waited, code) = h.json(&["wait", "--any", "--timeout", "20s", &slow, &fast]);
    assert_eq!(code, 0, "{waited}");
    assert_eq!(waited["timed_out"], false);
    let statuses: Vec<&str> = waited["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["running", "completed"]);
    let (timed_out, code) = h.json(&["wait", "--timeout", "1s", &slow]);
    assert_eq!((timed_out["timed_out"].as_bool(), code), (Some(true), 21));
    h.ok(&["cancel", "--grace", "1s", &slow]);
}
