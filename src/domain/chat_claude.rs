//! An interactive Claude Code child's own session record
//! (`~/.claude/projects/<the folder's path, each character not a letter or digit made '-'>/
//! <session id>.jsonl`, 2.1.185). Pure: lines in, the child's answer, tool calls and tokens
//! out. The file is the child's to write, so every line is data: a line that is not a record
//! is counted and skipped, text is cut to a bound.
//!
//! The format, as the real CLI writes it (tests/fixtures/claude/session-tool-call.jsonl): one
//! record a line, each with a `type`; `mode`, `permission-mode`, `file-history-snapshot`,
//! `attachment` and `system` lines say nothing of the answer. A `user` line's `message.content`
//! is what was typed (a string, or `text` blocks) or the results of tool calls
//! (`tool_result` blocks: `tool_use_id`, `content`, `is_error`). An `assistant` line holds
//! **one** content block (`text`, `tool_use` {id, name, input}, `thinking`) of a model message:
//! a message of several blocks is several lines under one `message.id`, each repeating the
//! message's `usage` (counted once). `isSidechain` lines are a sub-agent's own conversation;
//! `isMeta` user lines are the CLI's, not a person's.

use serde_json::Value;

use super::chat::{ChatDigest, ChatTokens, Folded, cut};

/// A Claude Code session record folded line by line (streamed: the file may be long).
#[derive(Debug, Default)]
pub struct ClaudeSession {
    fold: Folded,
    /// The model message whose blocks are being read, and its usage (counted when the next
    /// message starts, or at the end).
    message: Option<(String, ChatTokens)>,
}

/// The session id a record's line names (the first line that names one tells whose it is).
pub fn claude_session_of(line: &[u8]) -> Option<String> {
    let record: Value = serde_json::from_slice(line).ok()?;
    record["sessionId"].as_str().map(String::from)
}

impl ClaudeSession {
    pub fn push_line(&mut self, line: &[u8]) {
        let Some(record) = self.fold.object(line) else {
            return;
        };
        if self.fold.session_id.is_none()
            && let Some(id) = record["sessionId"].as_str()
        {
            self.fold.session_id = Some(cut(id, 200));
        }
        if record["isSidechain"] == true {
            return;
        }
        match record["type"].as_str() {
            Some("user") => self.user(&record),
            Some("assistant") => self.assistant(&record),
            Some(_) => {}
            None => self.fold.unreadable += 1,
        }
    }

    fn user(&mut self, record: &Value) {
        let content = &record["message"]["content"];
        let mut typed = match content {
            Value::String(text) => !text.trim().is_empty(),
            _ => false,
        };
        for block in content.as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("tool_result") => {
                    let output = block_text(&block["content"]);
                    self.fold.calls.result(
                        block["tool_use_id"].as_str().unwrap_or_default(),
                        block["is_error"] == true,
                        &output,
                    );
                }
                Some("text") => typed = true,
                _ => {}
            }
        }
        if typed && record["isMeta"] != true {
            self.fold.messages += 1;
            self.fold.answer.prompt();
        }
    }

    fn assistant(&mut self, record: &Value) {
        let message = &record["message"];
        let id = message["id"].as_str().unwrap_or_default();
        if self
            .message
            .as_ref()
            .is_none_or(|(current, _)| current != id)
        {
            self.flush();
            self.fold.messages += 1;
        }
        self.message = Some((cut(id, 200), usage(&message["usage"])));
        if let Some(model) = message["model"].as_str()
            && model != "<synthetic>"
        {
            self.fold.model = Some(cut(model, 200));
        }
        for block in message["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => self
                    .fold
                    .answer
                    .say(block["text"].as_str().unwrap_or_default()),
                Some("tool_use") => self.fold.calls.call(
                    block["id"].as_str().unwrap_or_default(),
                    block["name"].as_str().unwrap_or_default(),
                    block.get("input").cloned().unwrap_or(Value::Null),
                ),
                _ => {}
            }
        }
    }

    /// The message read so far counted in the tokens.
    fn flush(&mut self) {
        if let Some((_, t)) = self.message.take() {
            let sum = &mut self.fold.tokens;
            sum.input = sum.input.saturating_add(t.input);
            sum.output = sum.output.saturating_add(t.output);
            sum.cached = sum.cached.saturating_add(t.cached);
            sum.total = sum.total.saturating_add(t.total);
        }
    }

    pub fn finish(mut self) -> ChatDigest {
        self.flush();
        self.fold.digest()
    }
}

/// A message's usage as the chat's tokens: input counts every prompt token (cache reads and
/// writes too, as Gemini's does), cached the cache reads.
fn usage(usage: &Value) -> ChatTokens {
    let n = |key: &str| usage[key].as_u64().unwrap_or(0);
    let cached = n("cache_read_input_tokens");
    let input = n("input_tokens")
        .saturating_add(n("cache_creation_input_tokens"))
        .saturating_add(cached);
    let output = n("output_tokens");
    ChatTokens {
        input,
        output,
        cached,
        total: input.saturating_add(output),
        ..ChatTokens::default()
    }
}

/// A tool result's content: a string, or the `text` of its blocks.
fn block_text(content: &Value) -> String {
    match content {
        Value::String(text) => cut(text, 64 * 1024),
        Value::Array(blocks) => cut(
            &blocks
                .iter()
                .filter_map(|block| block["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            64 * 1024,
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from the real Claude Code 2.1.185 (interactive in tmux, `--session-id`,
    /// `--dangerously-skip-permissions`, offline against a stand-in of the Anthropic API that
    /// answered a Bash call, then a text).
    const CAPTURED: &str = include_str!("../../tests/fixtures/claude/session-tool-call.jsonl");

    fn fold(text: &str) -> ChatDigest {
        let mut session = ClaudeSession::default();
        for line in text.lines() {
            session.push_line(line.as_bytes());
        }
        session.finish()
    }

    #[test]
    fn the_captured_session_gives_the_answer_the_tool_call_and_the_tokens() {
        let digest = fold(CAPTURED);
        assert_eq!(
            digest.session_id.as_deref(),
            Some("0b5e2c1a-49c0-4d49-8a49-0123456789ab")
        );
        assert_eq!(
            digest.final_text,
            "I will write the file.\n\nDone: wrote f.txt."
        );
        assert_eq!(digest.model.as_deref(), Some("claude-opus-4-8"));
        assert_eq!(digest.tool_calls.len(), 1);
        let call = &digest.tool_calls[0];
        assert_eq!(
            (call.tool_id.as_str(), call.name.as_str()),
            ("toolu_01", "Bash")
        );
        assert_eq!(call.parameters["command"], "echo hi > f.txt");
        assert_eq!(call.status, "success");
        assert_eq!(
            call.output_excerpt.as_deref(),
            Some("(Bash completed with no output)")
        );
        assert_eq!(
            digest.tokens,
            ChatTokens {
                input: 30,
                output: 14,
                cached: 6,
                total: 44,
                ..ChatTokens::default()
            },
            "two model messages of 15 in (3 from the cache) and 7 out; the first one's two \
             lines (text, tool_use) counted once"
        );
        assert_eq!(digest.messages, 3, "the prompt and two model messages");
        assert_eq!(digest.unreadable_lines, 0);
    }

    #[test]
    fn the_answer_is_the_last_prompts_and_side_talk_is_not_the_childs() {
        let text = [
            r#"{"type":"user","sessionId":"s1","message":{"role":"user","content":"first"}}"#,
            r#"{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"old answer"}],"usage":{"input_tokens":5,"output_tokens":1}}}"#,
            r#"{"type":"user","isMeta":true,"message":{"role":"user","content":"<local-command-stdout>x</local-command-stdout>"}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"second"}]}}"#,
            r#"{"type":"assistant","isSidechain":true,"message":{"id":"m9","content":[{"type":"text","text":"a sub-agent's"}]}}"#,
            r#"{"type":"assistant","message":{"id":"m2","model":"<synthetic>","content":[{"type":"tool_use","id":"c1","name":"Read","input":{"file_path":"x"}}],"usage":{"input_tokens":5,"output_tokens":1}}}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":true,"content":[{"type":"text","text":"no such file"}]}]}}"#,
            r#"{"type":"assistant","message":{"id":"m3","content":[{"type":"text","text":"new answer"}]}}"#,
            "not json",
        ]
        .join("\n");
        let digest = fold(&text);
        assert_eq!(digest.session_id.as_deref(), Some("s1"));
        assert_eq!(digest.final_text, "new answer");
        assert_eq!(digest.model.as_deref(), Some("claude-x"));
        assert_eq!(digest.tool_calls[0].status, "error");
        assert_eq!(
            digest.tool_calls[0].error,
            Some(Value::String("no such file".into()))
        );
        assert_eq!(digest.tokens.total, 12);
        assert_eq!(digest.unreadable_lines, 1);
    }

    #[test]
    fn a_turn_not_answered_yet_has_no_answer_and_hostile_text_is_cut() {
        let digest = fold(r#"{"type":"user","message":{"role":"user","content":"hi"}}"#);
        assert_eq!(digest.final_text, "");
        let long = "x".repeat(200 * 1024);
        let line = serde_json::json!({"type": "assistant", "message": {"id": "m",
            "content": [{"type": "text", "text": long}]}})
        .to_string();
        let digest = fold(&line);
        assert!(digest.final_text.len() <= 64 * 1024 + '…'.len_utf8());
    }
}
