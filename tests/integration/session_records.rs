//! `result` of an interactive child read from its agent's own session record, with the real
//! CLIs offline: Claude Code (the binary the Agent SDK ships) against a stand-in of the
//! Anthropic Messages API, Qwen Code against a stand-in of the OpenAI chat-completions API,
//! Codex against a stand-in of the OpenAI Responses API.
//! The stand-in, a small HTTP server here, answers the first turn with a shell call and, once
//! the call's result comes back, with the answer; any side request (a title) gets a short text.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::harness::*;

const ANSWER: &str = "Done: wrote f.txt.";

/// Starts the stand-in on 127.0.0.1; its port.
fn stand_in() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    });
    port
}

/// One request read: its first line and its body as JSON (null when none).
fn read_request(stream: &TcpStream) -> Option<(String, Value)> {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((
        request_line,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    ))
}

fn answer(mut stream: TcpStream) {
    let Some((request_line, request)) = read_request(&stream) else {
        return;
    };
    let reply = |stream: &mut TcpStream, kind: &str, body: &str| {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    };
    if request_line.starts_with("GET") {
        let models = json!({"object": "list", "data": [{"id": "mock-model", "object": "model",
            "type": "model", "display_name": "mock"}], "has_more": false});
        return reply(&mut stream, "application/json", &models.to_string());
    }
    if request_line.contains("count_tokens") {
        return reply(&mut stream, "application/json", r#"{"input_tokens":10}"#);
    }
    let events = if request_line.contains("/chat/completions") {
        openai_events(&request)
    } else if request_line.contains("/responses") {
        responses_events(&request)
    } else {
        anthropic_events(&request)
    };
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n{events}"
    );
}

/// What to answer: the shell call (when `shell` is offered and no result came back yet), the
/// answer (a result came back), or a side text.
enum Turn {
    Call,
    Answer,
    Aside,
}

fn turn(offered: bool, result_back: bool) -> Turn {
    match (offered, result_back) {
        (_, true) => Turn::Answer,
        (true, false) => Turn::Call,
        (false, false) => Turn::Aside,
    }
}

/// The Anthropic Messages API's stream: a Bash call, then the answer.
fn anthropic_events(request: &Value) -> String {
    let last = request["messages"].as_array().and_then(|m| m.last());
    let result_back = last
        .and_then(|m| m["content"].as_array())
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"));
    let offered = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "Bash"));
    let (blocks, stop) = match turn(offered, result_back) {
        Turn::Call => (
            vec![json!({"type": "tool_use", "id": "toolu_01", "name": "Bash",
                "input": {"command": "echo hi > f.txt", "description": "Write f.txt"}})],
            "tool_use",
        ),
        Turn::Answer => (vec![json!({"type": "text", "text": ANSWER})], "end_turn"),
        Turn::Aside => (vec![json!({"type": "text", "text": "Aside."})], "end_turn"),
    };
    let event = |kind: &str, data: Value| format!("event: {kind}\ndata: {data}\n\n");
    let mut out = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": format!("msg_{stop}"), "type": "message",
            "role": "assistant", "model": request["model"], "content": [], "stop_reason": null,
            "usage": {"input_tokens": 12, "output_tokens": 1, "cache_read_input_tokens": 3,
                      "cache_creation_input_tokens": 0}}}),
    );
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = if block["type"] == "text" {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        } else {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        };
        out += &event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        );
        out += &event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
        out += &event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    out += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": 7}}),
    );
    out + &event("message_stop", json!({"type": "message_stop"}))
}

/// The OpenAI chat-completions stream: a `run_shell_command` call, then the answer.
fn openai_events(request: &Value) -> String {
    let result_back = request["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    let offered = request["tools"].as_array().is_some_and(|tools| {
        tools
            .iter()
            .any(|t| t["function"]["name"] == "run_shell_command")
    });
    let (delta, finish) = match turn(offered, result_back) {
        Turn::Call => (
            json!({"role": "assistant", "content": "", "tool_calls": [{"index": 0, "id": "call_1",
                "type": "function", "function": {"name": "run_shell_command",
                "arguments": json!({"command": "echo hi > f.txt"}).to_string()}}]}),
            "tool_calls",
        ),
        Turn::Answer => (json!({"role": "assistant", "content": ANSWER}), "stop"),
        Turn::Aside => (json!({"role": "assistant", "content": "Aside."}), "stop"),
    };
    let chunk = |delta: Value, finish: Value, usage: Value| {
        json!({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "mock-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": usage})
    };
    format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(delta, Value::Null, Value::Null),
        chunk(
            json!({}),
            json!(finish),
            json!({"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19})
        )
    )
}

/// The OpenAI Responses API's stream (Codex): an `exec_command` call, then the answer.
fn responses_events(request: &Value) -> String {
    let result_back = request["input"]
        .as_array()
        .is_some_and(|items| items.iter().any(|i| i["type"] == "function_call_output"));
    let offered = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "exec_command"));
    let item = match turn(offered, result_back) {
        Turn::Call => json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
            "name": "exec_command", "arguments": json!({"cmd": "echo hi > f.txt"}).to_string(),
            "status": "completed"}),
        Turn::Answer | Turn::Aside => {
            let text = if result_back { ANSWER } else { "Aside." };
            json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]})
        }
    };
    let mut response = json!({"id": "resp_1", "object": "response", "created_at": 1,
        "status": "in_progress", "model": "mock-model", "output": []});
    let mut out = String::new();
    let mut event = |kind: &str, mut data: Value, sequence: usize| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(sequence);
        out += &format!("event: {kind}\ndata: {data}\n\n");
    };
    event("response.created", json!({"response": response.clone()}), 0);
    event(
        "response.output_item.added",
        json!({"output_index": 0, "item": item.clone()}),
        1,
    );
    event(
        "response.output_item.done",
        json!({"output_index": 0, "item": item.clone()}),
        2,
    );
    response["status"] = json!("completed");
    response["output"] = json!([item]);
    response["usage"] = json!({"input_tokens": 12, "input_tokens_details": {"cached_tokens": 3},
        "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 19});
    event("response.completed", json!({"response": response}), 3);
    out
}

/// Waits until the interactive child's turn has ended, then reads `result --json`, checking
/// what every agent's record gives alike: the answer, the shell call (its name and the
/// parameter holding the command), the file, the tokens.
fn answered(h: &Harness, id: &str, (shell, command): (&str, &str)) -> Value {
    let (waited, code) = h.json(&["wait", id, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}\n{}", h.screen(id));
    // Codex draws its idle prompt a moment before it takes the first prompt from its command
    // line, and `wait` may return on that screen (seen once in two runs): the answer is
    // awaited here, not taken from the first look — and the idle screen after it, which the
    // record is written a moment before (a loaded run once read `running` in between).
    let mut result = Value::Null;
    poll(limits::AGENT, || {
        let (now, code) = h.json(&["result", id]);
        assert_eq!(code, 0, "{now}");
        result = now;
        result["final_text"]
            .as_str()
            .is_some_and(|text| text.ends_with(ANSWER))
            && result["status"] == "input_required"
    });
    assert!(
        result["final_text"]
            .as_str()
            .is_some_and(|text| text.ends_with(ANSWER)),
        "{result}\n{}",
        h.screen(id)
    );
    assert_eq!(result["status"], "input_required", "{result}");
    let call = &result["tool_calls"][0];
    assert_eq!(call["name"], shell, "{result}");
    assert_eq!(call["parameters"][command], "echo hi > f.txt", "{result}");
    assert_eq!(call["status"], "success", "{result}");
    assert_eq!(
        std::fs::read_to_string(h.project.join("f.txt")).unwrap(),
        "hi\n"
    );
    assert!(
        result["stats"]["total_tokens"].as_u64() > Some(0),
        "{result}"
    );
    assert!(result.get("transcript_tail").is_none(), "{result}");
    // The session: its record is named after it.
    let session = result["agent_session_id"].as_str().unwrap().to_string();
    let record = result["session_record"].as_str().unwrap();
    assert!(record.ends_with(&format!("{session}.jsonl")), "{record}");
    let text = h.ok(&["result", id]);
    assert!(
        text.contains("the child's answer:\n") && text.contains(ANSWER),
        "{text}"
    );
    result
}

/// The record a link points to is not read: the readable log stands in.
fn a_linked_record_is_not_followed(h: &Harness, id: &str, record: &str) {
    let (cancelled, code) = h.json(&["cancel", id]);
    assert_eq!(code, 0, "{cancelled}");
    let record = PathBuf::from(record);
    let forged = h.root().join("forged.jsonl");
    let text = std::fs::read_to_string(&record).unwrap();
    std::fs::write(&forged, text.replace(ANSWER, "FORGED ANSWER")).unwrap();
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink(&forged, &record).unwrap();
    let (result, code) = h.json(&["result", id]);
    assert_eq!(code, 0, "{result}");
    assert!(!result.to_string().contains("FORGED ANSWER"), "{result}");
    assert!(result.get("session_record").is_none(), "{result}");
}

#[test]
fn an_interactive_claude_codes_result_is_its_answer_from_its_own_session_record() {
    // The Claude Code binary the Agent SDK ships (scripts/test installs it with the ACP bridge).
    let claude = tools_bin()
        .parent()
        .unwrap()
        .join("@anthropic-ai/claude-agent-sdk-linux-x64/claude");
    assert!(claude.exists(), "no Claude Code at {}", claude.display());
    let port = stand_in();
    const KEY: &str = "sk-ant-offline-test-key-0000000000";
    let h = Harness::new()
        .env("ANTHROPIC_BASE_URL", &format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", KEY);
    std::os::unix::fs::symlink(&claude, h.bin.join("claude")).unwrap();
    // What a person answers once on the first run: the folder trusted, the key approved (by
    // its last 20 characters), onboarding done.
    let settings = json!({
        "hasCompletedOnboarding": true,
        "bypassPermissionsModeAccepted": true,
        "customApiKeyResponses": {"approved": [&KEY[KEY.len() - 20..]], "rejected": []},
        "projects": {h.project.to_str().unwrap(): {"hasTrustDialogAccepted": true,
            "hasCompletedProjectOnboarding": true}}
    });
    std::fs::write(h.home.join(".claude.json"), settings.to_string()).unwrap();
    let id = h.submit(&["--agent", "claude-code", "Write hi to f.txt"]);
    let result = answered(&h, &id, ("Bash", "command"));
    // The session cuekit chose: a UUID ending in the task's 12 digits.
    assert!(
        result["agent_session_id"]
            .as_str()
            .is_some_and(|s| s.len() == 36 && s.ends_with(&id[2..])),
        "{result}"
    );
    let record = result["session_record"].as_str().unwrap().to_string();
    assert!(
        record.starts_with(h.home.join(".claude/projects").to_str().unwrap()),
        "{record}"
    );
    a_linked_record_is_not_followed(&h, &id, &record);
}

#[test]
fn an_interactive_qwen_codes_result_is_its_answer_from_its_own_chat() {
    let qwen = installed_tool("qwen");
    let port = stand_in();
    let h = Harness::new()
        .env("OPENAI_BASE_URL", &format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", "offline-test-key");
    std::os::unix::fs::symlink(&qwen, h.bin.join("qwen")).unwrap();
    // API-key auth; and no auto-update: an interactive Qwen Code 0.15.10 otherwise runs
    // `npm install --global` of its newest version mid-task (NO_UPDATE_NOTIFIER does not stop it).
    std::fs::create_dir_all(h.home.join(".qwen")).unwrap();
    std::fs::write(
        h.home.join(".qwen/settings.json"),
        json!({"security": {"auth": {"selectedType": "openai"}},
               "general": {"enableAutoUpdate": false, "disableAutoUpdate": true}})
        .to_string(),
    )
    .unwrap();
    let id = h.submit(&[
        "--agent",
        "qwen",
        "--model",
        "mock-model",
        "Write hi to f.txt",
    ]);
    let result = answered(&h, &id, ("run_shell_command", "command"));
    assert!(
        result["agent_session_id"]
            .as_str()
            .is_some_and(|s| s.len() == 36 && s.ends_with(&id[2..])),
        "{result}"
    );
    let record = result["session_record"].as_str().unwrap().to_string();
    assert!(
        record.starts_with(h.home.join(".qwen/projects").to_str().unwrap()),
        "{record}"
    );
    a_linked_record_is_not_followed(&h, &id, &record);
}

#[test]
fn an_interactive_codexs_result_is_its_answer_from_its_own_rollout() {
    let codex = installed_tool("codex");
    let port = stand_in();
    let h = Harness::new().env("MOCK_KEY", "offline-test-key");
    std::os::unix::fs::symlink(&codex, h.bin.join("codex")).unwrap();
    // A model provider at the stand-in, and the folder trusted (what `codex` asks once).
    std::fs::create_dir_all(h.home.join(".codex")).unwrap();
    std::fs::write(
        h.home.join(".codex/config.toml"),
        format!(
            "model_provider = \"mock\"\nmodel = \"mock-model\"\n\
             [model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"MOCK_KEY\"\n\
             [projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            h.project.display()
        ),
    )
    .unwrap();
    // Another session of the same folder and prompt started long before: not the task's.
    let id = h.submit(&["--agent", "codex", "Write hi to f.txt"]);
    let result = answered(&h, &id, ("exec_command", "cmd"));
    let record = result["session_record"].as_str().unwrap().to_string();
    assert!(
        record.starts_with(h.home.join(".codex/sessions").to_str().unwrap()),
        "{record}"
    );
    // A second rollout of the same folder, start and prompt (a copy): two fit, neither is
    // taken, the readable log stands in.
    let twin = record.replace(".jsonl", "-twin.jsonl");
    std::fs::copy(&record, &twin).unwrap();
    let (result, code) = h.json(&["result", &id]);
    assert_eq!(code, 0, "{result}");
    assert!(result.get("session_record").is_none(), "{result}");
    std::fs::remove_file(&twin).unwrap();
    a_linked_record_is_not_followed(&h, &id, &record);
}

/// A retried Claude Code task that starts over gets a session of its own: Claude Code refuses an
/// id already used ("Session ID … is already in use", exit 1), which a `claude` here does as the
/// real one, logging each session id it is given.
#[test]
fn a_claude_code_attempt_that_starts_over_gets_a_session_of_its_own() {
    let h = Harness::new();
    let used = h.root().join("used");
    write_executable(
        &h.bin.join("claude"),
        &format!(
            "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --session-id ] && s=$2; shift; done\n\
             if grep -qx \"$s\" '{used}' 2>/dev/null; then echo \"Error: Session ID $s is already in use.\"; exit 1; fi\n\
             echo \"$s\" >> '{used}'\necho 'out of quota'; exit 1\n",
            used = used.display()
        ),
    );
    let id = h.submit(&["--agent", "claude-code", "Write hi to f.txt"]);
    h.wait_ended(&[&id], &limits::arg(limits::AGENT));
    let first = h.status(&id)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    h.ok(&["retry", &id]);
    h.wait_ended(&[&id], &limits::arg(limits::AGENT));
    let sessions = std::fs::read_to_string(&used).unwrap();
    let sessions: Vec<&str> = sessions.lines().collect();
    assert_eq!(
        sessions.len(),
        2,
        "each attempt ran with a session of its own: {sessions:?}\n{}",
        h.screen(&id)
    );
    assert_eq!(sessions[0], first);
    assert_ne!(sessions[0], sessions[1]);
    assert!(
        sessions.iter().all(|s| s.ends_with(&id[2..])),
        "{sessions:?}"
    );
    assert_eq!(
        h.status(&id)["agent_session_id"],
        sessions[1],
        "the task's session is the new one"
    );
}

/// `--resume-from` an interactive Claude Code task goes on in the session cuekit chose for it
/// (`--resume UUID`), where before it was refused (no known session).
#[test]
fn a_claude_code_task_resumed_from_goes_on_in_the_session_cuekit_chose() {
    let h = Harness::new();
    let log = h.root().join("argv.log");
    write_executable(
        &h.bin.join("claude"),
        &format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display()),
    );
    let first = h.submit(&["--agent", "claude-code", "Write hi to f.txt"]);
    h.wait_ended(&[&first], &limits::arg(limits::AGENT));
    let session = h.status(&first)["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let next = h.submit(&[
        "--agent",
        "claude-code",
        "--resume-from",
        &first,
        "And now f2.txt",
    ]);
    h.wait_ended(&[&next], &limits::arg(limits::AGENT));
    let runs = std::fs::read_to_string(&log).unwrap();
    let runs: Vec<&str> = runs.lines().collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(
        runs[0].contains(&format!("--session-id {session}")),
        "{runs:?}"
    );
    assert!(runs[1].contains(&format!("--resume {session}")), "{runs:?}");
    assert!(!runs[1].contains("--session-id"), "{runs:?}");
    assert_eq!(h.status(&next)["agent_session_id"], session.as_str());
}

/// A Claude Code task handed off to Claude Code again (a new attempt, a new session) gets a
/// session of its own: the task's first is refused as in use.
#[test]
fn a_claude_code_task_handed_to_claude_code_again_gets_a_session_of_its_own() {
    let h = Harness::new();
    let used = h.root().join("used");
    write_executable(
        &h.bin.join("claude"),
        &format!(
            "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = --session-id ] && s=$2; shift; done\n\
             if grep -qx \"$s\" '{used}' 2>/dev/null; then echo \"Error: Session ID $s is already in use.\"; exit 1; fi\n\
             echo \"$s\" >> '{used}'\nexec sleep 30\n",
            used = used.display()
        ),
    );
    let id = h.submit(&["--agent", "claude-code", "Write hi to f.txt"]);
    assert!(poll(limits::AGENT, || used.exists()), "{}", h.screen(&id));
    let (view, code) = h.json(&["handoff", &id, "--agent", "claude-code", "--", "Go on."]);
    assert_eq!(code, 0, "{view}");
    let two = || {
        std::fs::read_to_string(&used)
            .unwrap_or_default()
            .lines()
            .count()
            == 2
    };
    assert!(poll(limits::AGENT, two), "{}", h.screen(&id));
    let sessions = std::fs::read_to_string(&used).unwrap();
    let sessions: Vec<&str> = sessions.lines().collect();
    assert_ne!(sessions[0], sessions[1]);
    assert_eq!(h.status(&id)["agent_session_id"], sessions[1]);
    h.ok(&["cancel", &id]);
}
