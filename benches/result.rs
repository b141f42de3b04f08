//! Prints what `cuekit result` costs on an interactive Gemini task whose answer comes from the
//! child's own chat file, with a 1,000-message chat (target <= 50 ms), and the same for a Claude
//! Code task's session record (2.1.185's format: tests/fixtures/claude/session-tool-call.jsonl);
//! asserts nothing about time. The agent is a stand-in that sleeps in its pane: the chat is written the way the real
//! CLI 0.61 writes one (tests/fixtures/gemini/chat-session-tool-call.jsonl: a header, a message
//! a line, a message rewritten under its id as it grows, `$set` updates).

use std::fmt::Write;

use crate::support::{Sandbox, measure, median, ms};

const MESSAGES: usize = 1000;

/// A chat of `MESSAGES` messages: prompts and answers in turn, every answer first written
/// empty with a tool call, then again whole under its id.
fn chat(session: &str) -> String {
    let mut text = format!(
        "{{\"sessionId\":\"{session}\",\"projectHash\":\"x\",\"startTime\":\"2026-01-01T00:00:00.000Z\",\"kind\":\"main\"}}\n"
    );
    for turn in 0..MESSAGES / 2 {
        let _ = writeln!(
            text,
            "{{\"id\":\"u{turn}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"type\":\"user\",\"content\":[{{\"text\":\"Step {turn}: change the code and run the tests\"}}]}}"
        );
        let call = format!(
            "\"toolCalls\":[{{\"id\":\"c{turn}\",\"name\":\"run_shell_command\",\"args\":{{\"command\":\"cargo test {turn}\"}},\"result\":[{{\"functionResponse\":{{\"id\":\"c{turn}\",\"name\":\"run_shell_command\",\"response\":{{\"output\":\"{}\"}}}}}}],\"status\":\"success\"}}]",
            "test result: ok. ".repeat(20)
        );
        let tokens = "\"tokens\":{\"input\":900,\"output\":100,\"cached\":0,\"thoughts\":0,\"tool\":0,\"total\":1000},\"model\":\"gemini-2.5-flash\"";
        let _ = writeln!(
            text,
            "{{\"id\":\"g{turn}\",\"type\":\"gemini\",\"content\":\"\",{tokens},{call}}}"
        );
        let _ = writeln!(
            text,
            "{{\"id\":\"g{turn}\",\"type\":\"gemini\",\"content\":\"{}\",{tokens},{call}}}",
            format!("Answer {turn}: the change is made and the tests pass. ").repeat(10)
        );
        let _ = writeln!(
            text,
            "{{\"$set\":{{\"lastUpdated\":\"2026-01-01T00:00:00.000Z\"}}}}"
        );
    }
    text
}

/// A Claude Code session record of `MESSAGES` messages: prompts and model messages in turn, each
/// model message two lines (a text block, a tool_use block) under one id, then its tool result.
fn claude_record(session: &str) -> String {
    let mut text =
        format!("{{\"type\":\"mode\",\"mode\":\"normal\",\"sessionId\":\"{session}\"}}\n");
    let usage = "\"usage\":{\"input_tokens\":900,\"cache_read_input_tokens\":0,\"cache_creation_input_tokens\":0,\"output_tokens\":100}";
    for turn in 0..MESSAGES / 2 {
        let _ = writeln!(
            text,
            "{{\"type\":\"user\",\"sessionId\":\"{session}\",\"message\":{{\"role\":\"user\",\"content\":\"Step {turn}: change the code and run the tests\"}}}}"
        );
        let _ = writeln!(
            text,
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"m{turn}\",\"model\":\"claude-sonnet\",\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}],{usage}}}}}",
            format!("Answer {turn}: the change is made and the tests pass. ").repeat(10)
        );
        let _ = writeln!(
            text,
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"m{turn}\",\"model\":\"claude-sonnet\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"c{turn}\",\"name\":\"Bash\",\"input\":{{\"command\":\"cargo test {turn}\"}}}}],{usage}}}}}"
        );
        let _ = writeln!(
            text,
            "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"c{turn}\",\"content\":\"{}\",\"is_error\":false}}]}}}}",
            "test result: ok. ".repeat(20)
        );
    }
    text
}

/// `result` of an interactive Claude Code task whose record has `MESSAGES` messages.
fn claude(bench: &Sandbox) {
    bench.executable("bin/claude", "#!/bin/sh\nexec sleep 3600\n");
    let submitted = bench.json(&["submit", "--agent", "claude-code", "bench record"]);
    let id = submitted["id"].as_str().unwrap().to_string();
    let session = bench.json(&["status", &id])["agent_session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let folder: String = bench
        .harness
        .project
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = bench.harness.home.join(".claude/projects").join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    let text = claude_record(&session);
    std::fs::write(dir.join(format!("{session}.jsonl")), &text).unwrap();
    let answer = bench.ok(&["result", &id]);
    assert!(
        answer.contains("the child's answer:\nAnswer 499:"),
        "the answer comes from the record: {answer}"
    );
    let runs = |args: &[&str]| median((0..15).map(|_| measure(bench.cuekit(args))).collect());
    println!(
        "result of an interactive Claude Code task, {MESSAGES}-message record ({} KiB): {} (target <= 50 ms); --json {}",
        text.len() / 1024,
        ms(runs(&["result", &id])),
        ms(runs(&["--json", "result", &id]))
    );
}

pub fn main() {
    let bench = Sandbox::new("result", &[]);
    bench.executable("bin/gemini", "#!/bin/sh\nexec sleep 3600\n");
    let submitted = bench.json(&["submit", "--model", "gemini-2.5-flash", "bench chat"]);
    let id = submitted["id"].as_str().unwrap().to_string();
    let chats = bench.harness.home.join(".gemini/tmp/project/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let text = chat(&id);
    let file = chats.join(format!("session-2026-01-01T00-00-{}.jsonl", &id[..8]));
    std::fs::write(&file, &text).unwrap();
    let answer = bench.ok(&["result", &id]);
    assert!(
        answer.contains("the child's answer:\nAnswer 499:"),
        "the answer comes from the chat: {answer}"
    );
    let runs = |args: &[&str]| median((0..15).map(|_| measure(bench.cuekit(args))).collect());
    println!(
        "result of an interactive task, {MESSAGES}-message chat ({} KiB): {} (target <= 50 ms); --json {}",
        text.len() / 1024,
        ms(runs(&["result", &id])),
        ms(runs(&["--json", "result", &id]))
    );
    println!(
        "status of the same task (the screen read, for comparison): {}",
        ms(runs(&["status", &id]))
    );
    claude(&bench);
}
