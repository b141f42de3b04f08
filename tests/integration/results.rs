//! Structured results from the Gemini CLI's event stream: the real CLI, offline, with canned
//! replies; its tool calls really run.

use crate::harness::limits;

use crate::harness::git::git;
use crate::harness::{Harness, MODEL, canned_text};

fn fixture(name: &str) -> Vec<String> {
    let path = format!(
        "{}/tests/fixtures/gemini/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

fn result(h: &Harness, id: &str) -> serde_json::Value {
    let (value, code) = h.json(&["result", id]);
    assert_eq!(code, 0, "{value}");
    value
}

/// Sum of `totalTokenCount` over the canned replies.
fn canned_tokens(replies: &[String]) -> u64 {
    replies
        .iter()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .map(|v| {
            v["response"][0]["usageMetadata"]["totalTokenCount"]
                .as_u64()
                .unwrap_or(0)
        })
        .sum()
}

#[test]
fn a_run_with_a_tool_call_yields_a_full_result() {
    let replies = fixture("tool-call.jsonl");
    let h = Harness::new().with_real_gemini(&replies);
    git(&h.project, &["init", "-q"]);
    let id = h.submit(&["--mode", "batch", "--model", MODEL, "Create f.txt"]);
    let (waited, code) = h.json(&["wait", &id, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}\n{}", h.transcript(&id));
    assert_eq!(
        std::fs::read_to_string(h.project.join("f.txt")).unwrap(),
        "hi\n",
        "the tool really ran"
    );

    let result = result(&h, &id);
    assert_eq!(result["status"], "completed");
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["result_event"], true);
    assert_eq!(result["final_text"], "Done: wrote f.txt.");
    let call = &result["tool_calls"][0];
    assert_eq!(call["name"], "run_shell_command");
    assert_eq!(call["parameters"]["command"], "echo hi > f.txt");
    assert_eq!(call["status"], "success");
    assert_eq!(
        result["stats"]["total_tokens"].as_u64(),
        Some(canned_tokens(&replies))
    );
    let changed: Vec<&str> = result["files_changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(changed.contains(&"f.txt"), "{changed:?}");
    assert!(
        !changed.iter().any(|p| p.starts_with(".cuekit")),
        "cuekit's own files are not the task's changes: {changed:?}"
    );
    assert_eq!(
        result["agent_session_id"],
        h.status(&id)["agent_session_id"]
    );

    // The raw stream is kept line for line; the pane shows a readable rendering.
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    assert!(
        events
            .lines()
            .all(|line| serde_json::from_str::<serde_json::Value>(line).is_ok()),
        "{events}"
    );
    assert!(
        events
            .lines()
            .any(|line| line.contains("\"type\":\"tool_use\""))
    );
    let logs = h.ok(&["logs", &id]);
    assert!(logs.contains("→ run_shell_command"), "{logs}");
    assert!(logs.contains("Done: wrote f.txt."), "{logs}");
    let text = h.ok(&["result", &id]);
    assert!(text.contains("tool:     run_shell_command"), "{text}");
}

#[test]
fn a_model_error_fails_the_task_with_the_error() {
    // No canned reply: the CLI's model call fails.
    let h = Harness::new().with_real_gemini(&[]);
    let id = h.submit(&["--mode", "batch", "--model", MODEL, "Say hello"]);
    let (_, code) = h.json(&["wait", &id, "--timeout", "60s"]);
    assert_eq!(code, 20, "{}", h.transcript(&id));
    let result = result(&h, &id);
    assert_eq!(result["status"], "failed", "{result}");
    let errors = result["errors"].to_string() + &h.transcript(&id);
    assert!(errors.contains("No more mock responses"), "{result}");
}

#[test]
fn cancelling_mid_run_is_cancelled_never_success_and_progress_shows_the_tool_call() {
    let h = Harness::new().with_real_gemini(&fixture("slow-tool.jsonl"));
    let id = h.submit(&["--mode", "batch", "--model", MODEL, "Wait a while"]);
    h.wait_until(&id, "the slow tool call", limits::AGENT, || {
        h.status(&id)["progress"]["tool_calls"].as_u64() == Some(1)
    });
    let status = h.status(&id);
    assert_eq!(status["status"], "running");
    assert_eq!(status["capabilities"]["supports_live_progress"], true);
    assert!(status["progress"]["last_activity"].is_string());
    let (_, code) = h.json(&["cancel", &id]);
    assert_eq!(code, 0);
    let result = result(&h, &id);
    assert_eq!(result["status"], "cancelled");
    assert_eq!(h.status(&id)["status"], "cancelled");
}

#[test]
fn a_resumed_task_continues_the_earlier_conversation() {
    let h = Harness::new().with_real_gemini(&[canned_text("I will remember PINEAPPLE.")]);
    let first = h.submit(&[
        "--mode",
        "batch",
        "--model",
        MODEL,
        "Remember the word PINEAPPLE",
    ]);
    let (_, code) = h.json(&["wait", &first, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{}", h.transcript(&first));
    let session = result(&h, &first)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();

    // With no canned reply, the CLI fails its model call and prints the request it made: that
    // request log carries the earlier conversation.
    let empty = h.root().join("no-replies.jsonl");
    std::fs::write(&empty, "").unwrap();
    let submitted = h
        .cuekit()
        .env("CUEKIT_TEST_CANNED", &empty)
        .args([
            "--json",
            "submit",
            "--mode",
            "batch",
            "--model",
            MODEL,
            "--resume-from",
            &first,
            "Which word?",
        ])
        .output()
        .unwrap();
    let second: serde_json::Value = serde_json::from_slice(&submitted.stdout).unwrap();
    let second = second["id"].as_str().unwrap().to_string();
    let status = h.status(&second);
    assert!(
        status["launch_command"]
            .as_str()
            .unwrap()
            .contains(&format!("--resume '{session}'")),
        "{status}"
    );
    h.json(&["wait", &second, "--timeout", "60s"]);
    let request_log = h.transcript(&second);
    assert!(request_log.contains("got request"), "{request_log}");
    assert!(
        request_log.contains("PINEAPPLE"),
        "the resumed request lacks the earlier turn:\n{request_log}"
    );
}

#[test]
fn resuming_an_unknown_session_fails_with_a_hint() {
    let h = Harness::new().with_real_gemini(&[canned_text("ok")]);
    let first = h.submit(&["--mode", "batch", "--model", MODEL, "hello"]);
    h.json(&["wait", &first, "--timeout", "60s"]);
    // Make the earlier session unknown to the CLI.
    let result_path = h.task_dir(&first).join("result.json");
    let mut written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&result_path).unwrap()).unwrap();
    written["agent_session_id"] = "no-such-session".into();
    std::fs::write(&result_path, written.to_string()).unwrap();
    let second = h.submit(&[
        "--mode",
        "batch",
        "--model",
        MODEL,
        "--resume-from",
        &first,
        "again",
    ]);
    let (_, code) = h.json(&["wait", &second, "--timeout", "60s"]);
    assert_eq!(code, 20);
    let status = h.status(&second);
    assert_eq!(
        (status["exit_code"].as_i64(), status["reason"].as_str()),
        (Some(42), Some("input_error")),
        "{}",
        h.transcript(&second)
    );
    assert!(status["hint"].as_str().unwrap().contains("--resume"));
    let (error, code) = h.json(&["submit", "--resume-from", "t_0123456789ab", "x"]);
    assert_eq!(
        (error["error"]["code"].as_str(), code),
        (Some("task_not_found"), 4)
    );
}

#[test]
fn plain_batch_output_and_interactive_tasks_still_have_a_result() {
    let h = Harness::new().with_fake_gemini();
    let id = h.submit(&["--mode", "batch", "--no-events", "plain please"]);
    h.json(&["wait", &id, "--timeout", "20s"]);
    let result = result(&h, &id);
    assert_eq!(result["status"], "completed");
    assert!(
        result["transcript_tail"]
            .as_str()
            .unwrap()
            .contains("reply to: plain please")
    );
    let streamed = h.submit(&["--mode", "batch", "streamed please"]);
    h.json(&["wait", &streamed, "--timeout", "20s"]);
    let result = self::result(&h, &streamed);
    // The fake answers what it was given: the prompt (on stdin), then the `-p` note.
    assert_eq!(
        (result["status"].as_str(), result["final_text"].as_str()),
        (
            Some("completed"),
            Some(
                format!(
                    "reply to: streamed please  {}",
                    cuekit::domain::adapter::GEMINI_STDIN_PROMPT_NOTE
                )
                .as_str()
            )
        )
    );
    assert_eq!(
        result["agent_session_id"],
        streamed.as_str(),
        "the session is named after the task"
    );
}
