//! The real Gemini CLI (@google/gemini-cli 0.61.0, installed by scripts/test), run fully
//! offline with canned model replies, in real tmux.

use crate::harness::limits;

use crate::harness::canned_texts;
use crate::harness::{Harness, MODEL};

#[test]
fn interactive_task_shows_the_first_reply_and_quits_completed_even_under_ci() {
    // CI=true makes a positional prompt run headless; cuekit must keep it interactive.
    let h = Harness::new()
        .with_real_gemini(&canned_texts(&[
            "Hello from the canned model.",
            "Second canned answer.",
        ]))
        .env("CI", "true");
    let id = h.submit(&["--model", MODEL, "Say hello"]);
    // As a parent would: wait until the child needs it. (A slash command typed the moment the
    // TUI first draws can reach the model as chat text: its commands load a little later.)
    h.wait_input_required(&id, limits::AGENT);
    assert!(
        h.ok(&["logs", &id])
            .contains("Hello from the canned model.")
    );
    let status = h.status(&id);
    assert_eq!(
        status["status"], "input_required",
        "the child waits for the next message"
    );
    assert_eq!(status["reason"], "idle_at_prompt");
    // The TUI loads its slash commands after it first draws; under load a `/quit` that arrives
    // before then goes to the model as text (and is answered). Steer it again in that case.
    let mut attempts = 0;
    let (waited, code) = loop {
        attempts += 1;
        let receipt = h.ok(&["steer", &id, "/quit"]);
        assert!(receipt.contains("submitted"), "{receipt}");
        let (waited, code) = h.wait_all(&[&id], "20s");
        if code != 21 || attempts == 3 {
            break (waited, code);
        }
    };
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    let status = h.status(&id);
    assert_eq!(
        (status["status"].as_str(), status["exit_code"].as_i64()),
        (Some("completed"), Some(0))
    );
}

#[test]
fn batch_task_completes_with_the_canned_reply() {
    let h = Harness::new().with_real_gemini(&canned_texts(&["Batch canned answer."]));
    let id = h.submit(&["--mode", "batch", "--model", MODEL, "Summarise the repo"]);
    let (waited, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    assert!(h.ok(&["logs", &id]).contains("Batch canned answer."));
}

#[test]
fn prompt_starting_with_a_dash_reaches_the_model_instead_of_printing_help() {
    let h = Harness::new().with_real_gemini(&canned_texts(&["Dash prompt understood."]));
    let id = h.submit(&[
        "--mode",
        "batch",
        "--model",
        MODEL,
        "--",
        "-v is not a flag here",
    ]);
    let (_, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 0);
    let logs = h.ok(&["logs", &id]);
    assert!(logs.contains("Dash prompt understood."), "{logs}");
    assert!(!logs.contains("Usage: gemini"), "{logs}");
}

#[test]
fn missing_auth_fails_with_41_and_a_hint() {
    let h = Harness::new().with_real_gemini(&canned_texts(&["unused"]));
    std::fs::remove_file(h.home.join(".gemini/settings.json")).unwrap();
    let h = h.env("GEMINI_API_KEY", "");
    let id = h.submit(&["--mode", "batch", "--model", MODEL, "hello"]);
    let (_, code) = h.wait_all(&[&id], "60s");
    assert_eq!(code, 20);
    let status = h.status(&id);
    assert_eq!(status["exit_code"], 41, "{}", h.transcript(&id));
    assert_eq!(status["reason"], "auth_missing");
    // What works now that personal Google login no longer does.
    let hint = status["hint"].as_str().unwrap();
    assert!(
        hint.contains("GEMINI_API_KEY") && hint.contains("--agent antigravity"),
        "{hint}"
    );
}

#[test]
fn cancel_ends_the_whole_tree_and_is_never_read_as_success() {
    let h = Harness::new()
        .gemini_relaunches()
        .with_real_gemini(&canned_texts(&["Ready."]));
    let id = h.submit(&["--model", MODEL, "Wait for instructions"]);
    h.wait_until(&id, "the TUI", limits::AGENT, || {
        h.screen(&id).contains("Type your message")
    });
    let (_, pane_pid) = h.pane(&id);
    let tree = cuekit::effects::process::process_tree(pane_pid);
    assert!(
        tree.len() >= 3,
        "sh, the gemini launcher and its relaunched child: {tree:?}"
    );
    let (cancelled, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0, "{cancelled}");
    assert_eq!(cancelled[0]["status"], "cancelled");
    for pid in &tree {
        assert!(
            !cuekit::effects::process::is_alive(*pid),
            "pid {pid} of the task survived the cancel"
        );
    }
    let sessions = h.tmux(&["list-sessions", "-F", "#{session_name}"]);
    assert!(!String::from_utf8_lossy(&sessions.stdout).contains(&id));
    // Gemini exits 0 on SIGTERM; the recorded cancel stands.
    assert_eq!(h.status(&id)["status"], "cancelled");
    let (waited, code) = h.wait_all(&[&id], "5s");
    assert_eq!(code, 20, "{waited}");
}

#[test]
fn a_one_mebibyte_prompt_reaches_batch_gemini_whole() {
    // Far over the 128 KiB one argv word can carry: batch Gemini reads its prompt from stdin.
    let h = Harness::new().with_real_gemini(&[]);
    let mut prompt = String::from("BEGIN-OF-PROMPT ");
    while prompt.len() < 1024 * 1024 {
        prompt.push_str("filler text for a very large task description. ");
    }
    prompt.push_str(" END-OF-PROMPT-7f3a");
    let file = h.root().join("big-prompt.txt");
    std::fs::write(&file, &prompt).unwrap();
    // With no canned reply the CLI fails its model call and prints the request it made.
    let empty = h.root().join("no-replies.jsonl");
    std::fs::write(&empty, "").unwrap();
    let submitted = h
        .cuekit()
        .env("CUEKIT_TEST_CANNED", &empty)
        .args([
            "--json", "submit", "--mode", "batch", "--model", MODEL, "--file",
        ])
        .arg(&file)
        .output()
        .unwrap();
    let view: serde_json::Value = serde_json::from_slice(&submitted.stdout).unwrap();
    let id = view["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{view}"))
        .to_string();
    assert!(
        !view["launch_command"]
            .as_str()
            .unwrap()
            .contains("BEGIN-OF-PROMPT"),
        "the prompt is on the command line: {view}"
    );
    h.wait_all(&[&id], "60s");
    let request_log = h.transcript(&id);
    assert!(
        request_log.contains("got request"),
        "{}",
        &request_log[..2000.min(request_log.len())]
    );
    for marker in ["BEGIN-OF-PROMPT", "END-OF-PROMPT-7f3a"] {
        assert!(
            request_log.contains(marker),
            "{marker} did not reach the model"
        );
    }
}

/// The canned replies of tests/fixtures/gemini/tool-call.jsonl: a shell call that writes f.txt
/// (run, `-y`), then the answer "Done: wrote f.txt.".
fn tool_call_replies() -> Vec<String> {
    include_str!("../fixtures/gemini/tool-call.jsonl")
        .lines()
        .map(String::from)
        .collect()
}

/// The chat file the real CLI keeps for a session: under `~/.gemini/tmp/<project>/chats/`.
fn chat_files(h: &Harness) -> Vec<std::path::PathBuf> {
    let tmp = h.home.join(".gemini/tmp");
    let mut files = Vec::new();
    for project in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
        let chats = project.path().join("chats");
        for file in std::fs::read_dir(&chats).into_iter().flatten().flatten() {
            files.push(file.path());
        }
    }
    files
}

#[test]
fn an_interactive_result_is_the_childs_answer_from_its_own_chat_never_through_a_link() {
    let h = Harness::new().with_real_gemini(&tool_call_replies());
    let id = h.submit(&["--model", MODEL, "Write hi to f.txt"]);
    let (waited, code) = h.json(&["wait", &id, "--until", "input-required", "--timeout", "90s"]);
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    let (result, code) = h.json(&["result", &id]);
    assert_eq!(code, 0, "{result}");
    assert_eq!(result["final_text"], "Done: wrote f.txt.", "{result}");
    assert_eq!(result["status"], "input_required", "{result}");
    assert_eq!(result["reason"], "idle_at_prompt", "{result}");
    assert_eq!(result["agent_session_id"], id.as_str());
    assert_eq!(result["tool_calls"][0]["name"], "run_shell_command");
    assert_eq!(
        result["tool_calls"][0]["parameters"]["command"],
        "echo hi > f.txt"
    );
    assert_eq!(result["tool_calls"][0]["status"], "success");
    assert_eq!(result["stats"]["total_tokens"], 30, "{result}");
    assert_eq!(result["model"], MODEL);
    let record = result["session_record"].as_str().unwrap().to_string();
    assert!(record.ends_with(".jsonl"), "{record}");
    assert!(result.get("transcript_tail").is_none(), "{result}");
    let text = h.ok(&["result", &id]);
    assert!(
        text.contains("the child's answer:\nDone: wrote f.txt."),
        "{text}"
    );
    assert!(text.contains("tool:     run_shell_command"), "{text}");
    assert!(
        !text.contains("Tips for getting started"),
        "no TUI in the answer: {text}"
    );

    // A chat file that is a link is not followed: the readable log stands in.
    let (cancelled, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0, "{cancelled}");
    let files = chat_files(&h);
    assert_eq!(files.len(), 1, "{files:?}");
    let forged = h.root().join("forged.jsonl");
    let chat = std::fs::read_to_string(&files[0]).unwrap();
    std::fs::write(&forged, chat.replace("Done: wrote f.txt.", "FORGED ANSWER")).unwrap();
    std::fs::remove_file(&files[0]).unwrap();
    std::os::unix::fs::symlink(&forged, &files[0]).unwrap();
    let (result, code) = h.json(&["result", &id]);
    assert_eq!(code, 0, "{result}");
    assert!(!result.to_string().contains("FORGED ANSWER"), "{result}");
    assert!(result.get("session_record").is_none(), "{result}");
    assert!(result["transcript_tail"].is_string(), "{result}");
}

#[test]
fn the_readmes_quick_start_waits_for_the_answer_and_prints_it() {
    let h = Harness::new().with_real_gemini(&canned_texts(&["Quick start canned answer."]));
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cuekit"), h.bin.join("cuekit")).unwrap();
    let readme = include_str!("../../README.md");
    let line = readme
        .lines()
        .find(|line| line.starts_with("cuekit wait t_") && line.contains("&& cuekit result"))
        .expect("the README's quick start waits, then prints the result");
    let id = h.submit(&["--model", MODEL, "Say something"]);
    let written_id = line.split_whitespace().nth(2).unwrap();
    let command = line.replace(written_id, &id);
    // The lines as written (their comment included); a hang guard around them, nothing else.
    let output = h
        .program(std::path::Path::new("timeout"))
        .args(["120", "sh", "-c", &command])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "`{command}` exited {:?}\n{stdout}\n{}\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr),
        h.screen(&id)
    );
    assert!(
        stdout.contains("the child's answer:\nQuick start canned answer."),
        "{stdout}"
    );
    // `--until ended` keeps its meaning: the idle child has not ended.
    let (waited, code) = h.json(&["wait", &id, "--until", "ended", "--timeout", "2s"]);
    assert_eq!(code, 21, "{waited}");
}

#[test]
fn a_permission_prompt_is_said_by_status_and_by_a_wait_that_goes_on() {
    let h = Harness::new().with_real_gemini(&tool_call_replies());
    let id = h.submit(&[
        "--model",
        MODEL,
        "--no-skip-permissions",
        "--sandbox=none",
        "Write hi to f.txt",
    ]);
    let (waited, code) = h.json(&["wait", &id, "--until", "input-required", "--timeout", "90s"]);
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&id));
    assert_eq!(
        waited["tasks"][0]["reason"],
        "permission_prompt",
        "{}",
        h.screen(&id)
    );
    let status = h.ok(&["status", &id]);
    assert!(
        status
            .contains("it asks: Allow execution of [Shell]? (Shell echo hi > f.txt) 1. Allow once"),
        "{status}"
    );
    // The default wait is for the turn's end: a dialog does not end it, it is said.
    let output = h.run(&["wait", &id, "--timeout", "3s"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(21), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{id} waits on a human (permission_prompt): it asks: Allow execution"
        )),
        "{stderr}"
    );
    assert!(!h.project.join("f.txt").exists());
}
