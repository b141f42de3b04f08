//! The antigravity adapter through the real runtime (tmux, /bin/sh, transcript, sentinel,
//! steering, the event filter), with a stand-in for agy (tests/fixtures/fake-agy): agy installs
//! from Google's site and cannot run here.

use crate::harness::limits;
use std::path::Path;

use crate::harness::Harness;

/// The stand-in as `agy` on PATH, signed in unless `signed_in` is false.
fn with_fake_agy(signed_in: bool) -> Harness {
    let h = Harness::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-agy");
    crate::harness::install_executable(&fixture, &h.bin.join("agy"));
    if signed_in {
        let dir = h.home.join(".gemini/antigravity-cli");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("antigravity-oauth-token"), "{}").unwrap();
    }
    h
}

fn argv(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .split_terminator('\0')
        .map(String::from)
        .collect()
}

fn wait(h: &Harness, id: &str) -> i32 {
    let (waited, code) = h.json(&["wait", id, "--timeout", &limits::arg(limits::TASK)]);
    assert!(code == 0 || code == 20, "{waited}\n{}", h.transcript(id));
    code
}

#[test]
fn batch_reads_agys_stream_into_the_result_and_resumes_its_conversation() {
    let h = with_fake_agy(true);
    let argv_file = h.root().join("argv");
    let h = h.env("FAKE_AGY_ARGV", argv_file.to_str().unwrap());
    let prompt = "-v keeps 'quotes', \"double\", $(subshells) `ticks` and spaces";
    let id = h.submit(&[
        "--agent",
        "antigravity",
        "--mode",
        "batch",
        "--model",
        "Gemini 3.5 Flash",
        "--",
        prompt,
    ]);
    assert_eq!(wait(&h, &id), 0);
    h.assert_status(&id, "completed");
    assert_eq!(
        argv(&argv_file),
        [
            "--dangerously-skip-permissions",
            "--model",
            "Gemini 3.5 Flash",
            &format!("--add-dir={}", h.project.display()),
            "--output-format",
            "stream-json",
            "--print-timeout=2562047h",
            "--disable-slash-commands",
            &format!("-p={prompt}"),
        ]
    );
    let (result, code) = h.json(&["result", &id]);
    assert_eq!(code, 0, "{result}");
    let answer = format!("AGY-PRINT-REPLY mode=default model=Gemini 3.5 Flash: {prompt}");
    assert_eq!(result["final_text"], answer.as_str(), "{result}");
    let conversation = result["agent_session_id"].as_str().unwrap().to_string();
    assert!(conversation.starts_with("0d4c2a9e-"), "{result}");
    assert_eq!(result["model"], "Gemini 3.5 Flash");
    assert_eq!(result["stats"]["total_tokens"], 15);
    // The raw stream is kept as agy printed it; the pane shows it readable.
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    assert!(
        events.lines().any(|l| l.starts_with("{\"event\":\"init\"")),
        "{events}"
    );
    assert!(h.ok(&["logs", &id]).contains(&answer));

    let again = h.submit(&[
        "--resume-from",
        &id,
        "--mode",
        "batch",
        "--",
        "and once more",
    ]);
    assert_eq!(wait(&h, &again), 0);
    assert!(
        argv(&argv_file).contains(&format!("--conversation={conversation}")),
        "{:?}",
        argv(&argv_file)
    );
    let (result, _) = h.json(&["result", &again]);
    assert!(
        result["final_text"]
            .as_str()
            .unwrap()
            .starts_with(&format!("resumed {conversation}: ")),
        "{result}"
    );
}

#[test]
fn a_headless_run_whose_tools_were_denied_fails_and_says_why() {
    let h = with_fake_agy(true);
    let id = h.submit(&[
        "--agent",
        "antigravity",
        "--mode",
        "batch",
        "--no-skip-permissions",
        "RUN: the build",
    ]);
    assert_eq!(wait(&h, &id), 20);
    let status = h.status(&id);
    assert_eq!(
        (status["status"].as_str(), status["exit_code"].as_i64()),
        (Some("failed"), Some(0)),
        "{status}"
    );
    assert!(
        status.to_string().contains("--skip-permissions"),
        "{status}"
    );
}

#[test]
fn not_signed_in_fails_headless_and_shows_the_sign_in_screen_interactively() {
    let h = with_fake_agy(false);
    let batch = h.submit(&["--agent", "antigravity", "--mode", "batch", "hello"]);
    assert_eq!(wait(&h, &batch), 20);
    let status = h.status(&batch);
    assert_eq!(
        (status["exit_code"].as_i64(), status["reason"].as_str()),
        (Some(1), Some("agent_error")),
        "{status}"
    );
    assert!(h.ok(&["logs", &batch]).contains("authentication timed out"));

    let id = h.submit(&["--agent", "antigravity", "hello"]);
    h.wait_until(&id, "the sign-in screen", limits::TASK, || {
        h.status(&id)["reason"] == "auth_required"
    });
    let status = h.status(&id);
    assert_eq!(status["status"], "input_required");
    assert!(
        status["hint"].as_str().unwrap().contains("GEMINI_API_KEY"),
        "{status}"
    );
    let (cancelled, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0, "{cancelled}");
}

#[test]
fn interactive_asks_approval_takes_a_steer_with_receipt_and_exits_with_its_resume_hint() {
    let h = with_fake_agy(true);
    let argv_file = h.root().join("argv");
    let h = h.env("FAKE_AGY_ARGV", argv_file.to_str().unwrap());
    let id = h.submit(&[
        "--agent",
        "antigravity",
        "--no-skip-permissions",
        "--",
        "-first RUN: don't \"stop\" $HOME",
    ]);
    h.wait_until(&id, "the approval", limits::TASK, || {
        h.status(&id)["reason"] == "permission_prompt"
    });
    assert_eq!(h.status(&id)["status"], "input_required");
    assert_eq!(
        argv(&argv_file),
        [
            &format!("--add-dir={}", h.project.display()),
            "-i=-first RUN: don't \"stop\" $HOME",
        ]
    );
    // A steer would pick a menu item: refused while the question is up.
    let (refused, code) = h.json(&["steer", &id, "hello"]);
    assert_ne!(code, 0, "{refused}");
    // The user answers it (as after `cuekit attach`): one key.
    let (pane, _) = h.pane(&id);
    assert!(h.tmux(&["send-keys", "-t", &pane, "y"]).status.success());
    h.wait_until(&id, "the first answer", limits::TASK, || {
        h.status(&id)["reason"] == "idle_at_prompt"
    });
    assert!(h.screen(&id).contains("● Bash(echo ran)"));

    let (receipt, code) = h.json(&["steer", &id, "and a 'second' message"]);
    assert_eq!(
        (receipt["receipt"].as_str(), code),
        (Some("submitted"), 0),
        "{receipt}"
    );
    h.wait_until(&id, "the second answer", limits::TASK, || {
        h.screen(&id)
            .contains("AGY-REPLY 2: and a 'second' message")
    });
    let (receipt, code) = h.json(&["steer", &id, "/exit"]);
    assert_eq!(code, 0, "{receipt}");
    assert_eq!(wait(&h, &id), 0);
    let status = h.status(&id);
    assert_eq!(
        (status["status"].as_str(), status["exit_code"].as_i64()),
        (Some("completed"), Some(0)),
        "{status}"
    );
    assert!(h.transcript(&id).contains("agy --conversation=0d4c2a9e-"));
    // The conversation it printed is the one a resumed task continues.
    let again = h.submit(&["--resume-from", &id, "--mode", "batch", "--", "go on"]);
    assert_eq!(wait(&h, &again), 0);
    let resumed = argv(&argv_file);
    let conversation = resumed
        .iter()
        .find_map(|arg| arg.strip_prefix("--conversation="))
        .unwrap_or_else(|| panic!("{resumed:?}"));
    assert!(
        h.transcript(&id)
            .contains(&format!("agy --conversation={conversation}")),
        "{resumed:?}"
    );
}

#[test]
fn a_busy_interactive_task_is_cancelled_with_its_processes() {
    let h = with_fake_agy(true).env("FAKE_AGY_SLEEP", "60");
    let id = h.submit(&["--agent", "antigravity", "work for a minute"]);
    h.wait_until(&id, "the busy screen", limits::TASK, || {
        h.screen(&id).contains("esc to cancel")
    });
    assert_eq!(h.status(&id)["status"], "running");
    assert!(!crate::harness::processes_of(&id).is_empty());
    let (cancelled, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0, "{cancelled}");
    assert_eq!(h.status(&id)["status"], "cancelled");
    crate::harness::assert_nothing_left(&id);
}

#[test]
fn approval_modes_replace_the_bypass_and_doctor_names_the_installer() {
    let h = with_fake_agy(true);
    let (dry, code) = h.json(&[
        "submit",
        "--agent",
        "antigravity",
        "--approval-mode",
        "accept-edits",
        "--dry-run",
        "x",
    ]);
    assert_eq!(code, 0, "{dry}");
    assert_eq!(
        dry["launch_command"],
        "AGY_CLI_DISABLE_AUTO_UPDATE=true agy --mode accept-edits --add-dir=\"$(pwd -P)\" -i='x'"
    );
    let h = Harness::new();
    let (checks, _) = h.json(&["doctor", "--all"]);
    let binary = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "antigravity binary")
        .unwrap();
    assert!(
        binary["next_step"]
            .as_str()
            .unwrap()
            .contains("https://antigravity.google/cli/install.sh"),
        "{binary}"
    );
}

#[test]
fn the_fake_rejects_what_agy_rejects() {
    let h = with_fake_agy(true);
    for args in [
        &["hello"][..],
        &["-p", "-hello"],
        &["-i", "--model"],
        &["--yolo", "-p=x"],
        &["-p=x", "-i=y"],
        &["--mode", "yolo", "-p=x"],
        &["-p=x", "trailing"],
    ] {
        let output = std::process::Command::new(h.bin.join("agy"))
            .args(args)
            .env("HOME", &h.home)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "agy {args:?} should fail");
    }
}

/// `agy_acp_server`'s stand-in as the bridge program on PATH, signed in unless told otherwise.
fn with_fake_acp_server(signed_in: bool) -> Harness {
    let h = Harness::new();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-agy-acp");
    crate::harness::install_executable(&fixture, &h.bin.join("agy_acp_server"));
    if signed_in {
        let dir = h.home.join(".gemini/antigravity-acp");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("oauth-token"), "{}").unwrap();
    }
    h
}

fn reason(h: &Harness, id: &str) -> Option<String> {
    h.status(id)["reason"].as_str().map(String::from)
}

#[test]
fn acp_mode_asks_the_parent_and_steers_over_the_protocol() {
    let h = with_fake_acp_server(true);
    let id = h.submit(&[
        "--agent",
        "antigravity",
        "--mode",
        "acp",
        "--no-skip-permissions",
        "RUN: the build",
    ]);
    h.wait_until(&id, "the permission request", limits::TASK, || {
        reason(&h, &id).as_deref() == Some("permission_prompt")
    });
    let asking = h.status(&id);
    assert_eq!(asking["request"]["tool"]["title"], "echo ran", "{asking}");
    let (approved, code) = h.json(&["approve", &id, "--allow"]);
    assert_eq!(code, 0, "{approved}");
    h.wait_until(&id, "the end of the turn", limits::TASK, || {
        reason(&h, &id).as_deref() == Some("idle_at_prompt")
    });
    let (receipt, code) = h.json(&["steer", &id, "and 'then'"]);
    assert_eq!(
        (
            receipt["receipt"].as_str(),
            receipt["delivery"].as_str(),
            code
        ),
        (Some("submitted"), Some("protocol"), 0),
        "{receipt}"
    );
    h.wait_until(&id, "the second answer", limits::TASK, || {
        h.ok(&["logs", &id]).contains("AGY-ACP-REPLY 2: and 'then'")
    });
    h.wait_until(&id, "the second turn's end", limits::TASK, || {
        reason(&h, &id).as_deref() == Some("idle_at_prompt")
    });
    let (result, _) = h.json(&["result", &id]);
    assert_eq!(result["turns"].as_array().unwrap().len(), 2, "{result}");
    assert_eq!(result["final_text"], "AGY-ACP-REPLY 2: and 'then'");
    assert_eq!(result["tool_calls"][0]["status"], "completed", "{result}");
    let (cancelled, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0, "{cancelled}");
    crate::harness::assert_nothing_left(&id);
}

#[test]
fn acp_mode_without_a_sign_in_ends_auth_missing() {
    let h = with_fake_acp_server(false);
    let id = h.submit(&["--agent", "antigravity", "--mode", "acp", "hello"]);
    assert_eq!(wait(&h, &id), 20);
    let status = h.status(&id);
    assert_eq!(
        (status["reason"].as_str(), status["exit_code"].as_i64()),
        (Some("auth_missing"), Some(41)),
        "{status}"
    );
}

#[test]
fn acp_once_completes_and_a_resumed_task_loads_its_session() {
    let h = with_fake_acp_server(true);
    let first = h.submit(&[
        "--agent",
        "antigravity",
        "--mode",
        "acp",
        "--approval-mode",
        "accept-edits",
        "--once",
        "remember tangerine",
    ]);
    assert_eq!(wait(&h, &first), 0);
    let (result, _) = h.json(&["result", &first]);
    assert_eq!(result["final_text"], "AGY-ACP-REPLY 1: remember tangerine");
    let session = result["agent_session_id"].as_str().unwrap().to_string();
    // The pane's accept-edits is the server's auto_edit.
    let events = std::fs::read_to_string(h.task_dir(&first).join("events.jsonl")).unwrap();
    assert!(events.contains(r#""modeId":"auto_edit""#), "{events}");

    let second = h.submit(&[
        "--agent",
        "antigravity",
        "--mode",
        "acp",
        "--once",
        "--resume-from",
        &first,
        "what was the word?",
    ]);
    assert_eq!(wait(&h, &second), 0);
    let events = std::fs::read_to_string(h.task_dir(&second).join("events.jsonl")).unwrap();
    assert!(
        events.contains("\"session/load\"") && events.contains(&session),
        "{events}"
    );
}
