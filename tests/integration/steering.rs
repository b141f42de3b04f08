//! Steering a running child: delivery, receipts, and knowing when it needs a human. Against
//! the real Gemini CLI (offline, canned replies) where it can show the case, the fake
//! otherwise.

use crate::harness::limits;
use std::time::Duration;

use crate::harness::canned_texts;
use crate::harness::sh_task;
use crate::harness::{Harness, MODEL, canned_text, poll};

/// How often `text` shows in the pane's whole history as tmux rendered it.
fn occurrences(h: &Harness, id: &str, text: &str) -> usize {
    let (pane, _) = h.pane(id);
    let history = h.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", &pane]);
    String::from_utf8_lossy(&history.stdout)
        .matches(text)
        .count()
}

#[test]
fn single_and_multi_line_messages_each_arrive_as_one_turn() {
    let h = Harness::new().with_real_gemini(&canned_texts(&[
        "Answer one.",
        "Answer two.",
        "Answer three.",
        "Answer four.",
    ]));
    let id = h.submit(&["--model", MODEL, "First question"]);
    let task = h.wait_input_required(&id, limits::AGENT);
    assert_eq!(
        (task["status"].as_str(), task["reason"].as_str()),
        (Some("input_required"), Some("idle_at_prompt"))
    );
    assert_eq!(occurrences(&h, &id, "Answer one."), 1);

    let (receipt, code) = h.json(&["steer", &id, "Second question, one line"]);
    assert_eq!(
        (receipt["receipt"].as_str(), code),
        (Some("submitted"), 0),
        "{receipt}"
    );
    assert_eq!(receipt["delivery"], "typed");
    h.wait_input_required(&id, limits::AGENT);
    assert_eq!(
        occurrences(&h, &id, "Answer two."),
        1,
        "{}",
        h.ok(&["logs", &id])
    );

    let (receipt, code) = h.json(&[
        "steer",
        &id,
        "Third question\nspans three lines\nand is one message",
    ]);
    assert_eq!(
        (receipt["receipt"].as_str(), code),
        (Some("submitted"), 0),
        "{receipt}"
    );
    assert_eq!(receipt["delivery"], "pasted");
    h.wait_input_required(&id, limits::AGENT);
    assert_eq!(
        occurrences(&h, &id, "Answer three."),
        1,
        "{}",
        h.ok(&["logs", &id])
    );
    assert_eq!(
        occurrences(&h, &id, "Answer four."),
        0,
        "a multi-line message was split into turns"
    );

    let (receipt, _) = h.json(&["steer", &id, "/quit"]);
    assert_eq!(receipt["receipt"], "submitted");
    let (waited, code) = h.json(&[
        "wait",
        &id,
        "--until",
        "ended",
        "--timeout",
        &limits::arg(limits::TASK),
    ]);
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    assert_eq!(h.status(&id)["status"], "completed");
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    // The steers' lines (the monitor's transitions are in the same log).
    let receipts: Vec<String> = events
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["type"] == "steer")
        .map(|event| event["receipt"]["receipt"].to_string())
        .collect();
    assert_eq!(receipts, ["\"submitted\""; 3]);
}

#[test]
fn a_child_on_its_login_screen_is_input_required_and_steering_is_blocked() {
    let h = Harness::new().with_real_gemini(&canned_texts(&["unused"]));
    std::fs::remove_file(h.home.join(".gemini/settings.json")).unwrap();
    let h = h.env("GEMINI_API_KEY", "");
    let id = h.submit(&["--model", MODEL, "hello"]);
    let task = h.wait_input_required(&id, limits::AGENT);
    assert_eq!(
        (task["status"].as_str(), task["reason"].as_str()),
        (Some("input_required"), Some("auth_required"))
    );
    // Gemini's own hint: the personal login it shows no longer works, and what does.
    let hint = task["hint"].as_str().unwrap();
    assert!(
        hint.contains("GEMINI_API_KEY") && hint.contains("--agent antigravity"),
        "{hint}"
    );
    let (receipt, code) = h.json(&["steer", &id, "1"]);
    assert_eq!(
        (receipt["receipt"].as_str(), code),
        (Some("blocked"), 23),
        "{receipt}"
    );
    assert_eq!(receipt["blocked_by"], "auth_required");
    // The dialog is still there (a look taken while the CLI redraws may miss it once: looked
    // at again; a key typed into it would have taken it away for good).
    assert!(
        poll(limits::SHORT, || h
            .screen(&id)
            .contains("How would you like to authenticate")),
        "nothing may be typed into the dialog:\n{}",
        h.screen(&id)
    );
}

#[test]
fn a_tool_approval_menu_is_a_permission_prompt() {
    let tool_call = serde_json::json!({"method": "generateContentStream", "response": [{
        "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {
            "name": "run_shell_command", "args": {"command": "echo hi > f.txt", "description": "write f.txt"}}}]},
            "finishReason": "STOP", "index": 0}]}]})
    .to_string();
    let h = Harness::new().with_real_gemini(&[tool_call, canned_text("Done.")]);
    let id = h.submit(&[
        "--model",
        MODEL,
        "--no-skip-permissions",
        "--sandbox=none",
        "Create f.txt",
    ]);
    let task = h.wait_input_required(&id, limits::AGENT);
    assert_eq!(task["reason"], "permission_prompt", "{}", h.screen(&id));
    assert!(!h.project.join("f.txt").exists());
    let (receipt, code) = h.json(&["steer", &id, "go on"]);
    assert_eq!((receipt["receipt"].as_str(), code), (Some("blocked"), 23));
}

#[test]
fn text_that_stays_in_the_input_is_typed_not_submitted() {
    let h = Harness::new()
        .with_fake_gemini()
        .env("FAKE_GEMINI_SWALLOW_ENTER", "1");
    let id = h.submit(&["hello"]);
    h.wait_until(&id, "the prompt", limits::SHORT, || {
        h.screen(&id).contains("Type your message")
    });
    let (receipt, code) = h.json(&["steer", &id, "this never submits"]);
    assert_eq!(
        (receipt["receipt"].as_str(), code),
        (Some("typed_not_submitted"), 22),
        "{receipt}"
    );
    assert_eq!(receipt["enter_retried"], true);
}

#[test]
fn parallel_steers_never_interleave_and_copy_mode_is_left_first() {
    let h = Harness::new().with_fake_gemini();
    let id = h.submit(&["hello"]);
    h.wait_until(&id, "the prompt", limits::SHORT, || {
        h.screen(&id).contains("Type your message")
    });
    let (pane, _) = h.pane(&id);
    assert!(h.tmux(&["copy-mode", "-t", &pane]).status.success());
    let messages: Vec<String> = ["a", "b", "c", "d"].iter().map(|c| c.repeat(150)).collect();
    let steers: Vec<_> = messages
        .iter()
        .map(|message| {
            h.cuekit()
                .args(["--json", "steer", &id, message])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for steer in steers {
        let output = steer.wait_with_output().unwrap();
        let receipt: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(receipt["receipt"], "submitted", "{receipt}");
    }
    let logs = h.ok(&["logs", &id]);
    for message in &messages {
        assert_eq!(
            logs.matches(&format!("reply to: {message}")).count(),
            1,
            "{logs}"
        );
    }
}

#[test]
fn steering_rejections_have_stable_codes() {
    let h = Harness::new().with_fake_gemini();
    let id = h.submit(&["hello"]);
    let (error, code) = h.json(&["steer", &id, "  "]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("invalid_input"), 3)
    );
    let (error, code) = h.json(&["steer", "t_0123456789ab", "x"]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("task_not_found"), 4)
    );
    // The message from stdin and from a file.
    let file = h.root().join("message.txt");
    std::fs::write(&file, "from a file\n").unwrap();
    h.wait_until(&id, "the prompt", limits::SHORT, || {
        h.screen(&id).contains("Type your message")
    });
    assert_eq!(
        h.run(&["steer", &id, "--file", file.to_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
    h.wait_until(&id, "the reply", limits::SHORT, || {
        h.ok(&["logs", &id]).contains("reply to: from a file")
    });
}

/// A command task that appends every line it reads from its terminal to `got.txt`.
fn line_recorder(h: &Harness) -> (String, std::path::PathBuf) {
    let got = h.root().join("got.txt");
    let id = h.submit(&[
        "--agent",
        "command",
        "--",
        "sh",
        "-c",
        r#"printf 'ready\n> '; while IFS= read -r line; do printf '%s\n' "$line" >> "$0"; printf '> '; done"#,
        got.to_str().unwrap(),
    ]);
    h.wait_until(&id, "the prompt", limits::SHORT, || {
        h.screen(&id).contains("ready")
    });
    (id, got)
}

#[test]
fn a_steer_ending_in_a_semicolon_arrives_byte_exact() {
    // tmux reads an argv word ending in `;` as a command separator, and `\;` as a `;`.
    let h = Harness::new();
    let (id, got) = line_recorder(&h);
    let mut sent = String::new();
    for message in ["ls;", r"x\;", ";", "a;b;;"] {
        h.json(&["steer", &id, message]);
        sent.push_str(message);
        sent.push('\n');
        h.wait_until(&id, message, limits::SHORT, || {
            std::fs::read_to_string(&got)
                .is_ok_and(|text| text.lines().count() == sent.lines().count())
        });
    }
    assert_eq!(std::fs::read_to_string(&got).unwrap(), sent);
}

#[test]
fn a_task_whose_directory_ends_in_a_semicolon_starts_there() {
    let h = Harness::new();
    let dir = h.project.join("work;");
    std::fs::create_dir(&dir).unwrap();
    let (task, code) = h.json(
        &[
            &["submit"][..],
            &sh_task(
                "pwd > pwd.txt",
                &["--cwd", dir.to_str().unwrap(), "--mode", "batch"],
            ),
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{task}");
    let id = task["id"].as_str().unwrap();
    let (waited, code) = h.json(&["wait", id, "--timeout", &limits::arg(limits::TASK)]);
    assert_eq!(code, 0, "{waited}");
    assert_eq!(
        std::fs::read_to_string(dir.join("pwd.txt")).unwrap(),
        format!("{}\n", dir.display())
    );
}

#[test]
fn a_steers_flags_count_anywhere_and_text_starting_with_a_dash_goes_after_a_double_dash() {
    let h = Harness::new();
    let (id, got) = line_recorder(&h);
    let lines = || std::fs::read_to_string(&got).unwrap_or_default();
    // `--json` after the message is the flag, not words of it.
    let output = h.run(&["steer", &id, "hello", "--json"]);
    let receipt: serde_json::Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("not JSON: {output:?}"));
    assert_eq!(receipt["task_id"], id.as_str(), "{receipt}");
    h.wait_until(&id, "hello", limits::SHORT, || lines() == "hello\n");
    // A misspelt flag is refused, and nothing is typed.
    let (error, code) = h.json(&["steer", &id, "oops", "--jsn"]);
    assert_eq!((error["error"]["code"].as_str(), code), (Some("usage"), 2));
    h.json(&["steer", &id, "--", "-x", "--json"]);
    h.wait_until(&id, "-x", limits::SHORT, || lines().lines().count() == 2);
    assert_eq!(lines(), "hello\n-x --json\n");
}

/// On a loaded machine a child may read its keys late: the text and the Enter then arrive
/// together, and Gemini turns such an Enter into a newline. The steer waits until the text shows
/// before it presses Enter, and its receipt says `submitted` only for a message taken.
#[test]
fn a_child_that_reads_its_keys_late_still_takes_the_message_once() {
    let h = Harness::new().with_real_gemini(&canned_texts(&["Answer one."]));
    let id = h.submit(&["--model", MODEL, "First question"]);
    h.wait_input_required(&id, limits::AGENT);
    let frozen = crate::harness::processes_of(&id);
    let signal_all = |signal| {
        for pid in &frozen {
            // SAFETY: kill(2) on pids of this test's own task.
            unsafe { libc::kill(*pid as i32, signal) };
        }
    };
    signal_all(libc::SIGSTOP);
    let (receipt, code) = std::thread::scope(|scope| {
        let steer = scope.spawn(|| h.json(&["steer", &id, "/quit"]));
        std::thread::sleep(Duration::from_millis(400));
        signal_all(libc::SIGCONT);
        steer.join().unwrap()
    });
    assert_eq!(
        (receipt["receipt"].as_str(), code),
        (Some("submitted"), 0),
        "{receipt}"
    );
    let (waited, code) = h.json(&[
        "wait",
        &id,
        "--until",
        "ended",
        "--timeout",
        &limits::arg(limits::TASK),
    ]);
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    assert_eq!(h.status(&id)["status"], "completed");
}
