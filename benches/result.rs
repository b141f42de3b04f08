//! Prints what `cuekit result` costs on an interactive Gemini task whose answer comes from the
//! child's own chat file, with a 1,000-message chat (target <= 50 ms); asserts nothing about
//! time. The agent is a stand-in that sleeps in its pane: the chat is written the way the real
//! CLI 0.61 writes one (tests/fixtures/gemini/chat-session-tool-call.jsonl: a header, a message
//! a line, a message rewritten under its id as it grows, `$set` updates).

mod support;

use std::fmt::Write;

use support::{Sandbox, measure, median, ms};

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

fn main() {
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
}
