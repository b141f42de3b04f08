//! An interactive child's own session record, as its agent keeps it: the Gemini CLI's chat file
//! (`~/.gemini/tmp/<project>/chats/session-<start>-<first 8 of id>.jsonl`, 0.61). Pure: lines
//! in, the child's answer, tool calls and tokens out. The file is the child's to write, so every
//! line is data: a line that is not a record is counted and skipped, text is cut to a bound.
//!
//! The format, as the real CLI writes it (tests/fixtures/gemini/chat-session-tool-call.jsonl):
//! the first line is the session's header `{"sessionId", "projectHash", "startTime", …}`; then
//! one message a line `{"id", "timestamp", "type": "user"|"gemini"|…, "content", "toolCalls"?,
//! "tokens"?, "model"?}`, a message written again under the same id as it grows (the last
//! wins, in its first place); and `{"$set": {…}}` updates of the header, whose `messages`
//! replaces every message before it.

use std::collections::HashMap;

use serde_json::Value;

use super::events::ToolCall;

/// Text kept of one answer or one tool's output: enough to read, not a whole log.
const TEXT_LIMIT: usize = 64 * 1024;
/// Tool output kept per call in a result.
const OUTPUT_LIMIT: usize = 2000;
/// Messages kept: a longer chat keeps its last ones (the answer is at the end).
const MESSAGE_LIMIT: usize = 100_000;

/// The name Gemini gives a session's chat file ends with this: `-<first 8 of id>.jsonl`.
pub fn gemini_chat_file_matches(name: &str, session_id: &str) -> bool {
    let prefix: String = session_id.chars().take(8).collect();
    !prefix.is_empty()
        && name.starts_with("session-")
        && name
            .strip_suffix(".jsonl")
            .and_then(|stem| stem.strip_suffix(prefix.as_str()))
            .is_some_and(|stem| stem.ends_with('-'))
}

/// The session id a chat file's first line names (two ids may share the 8 characters of the
/// file's name: only this line tells which session it holds).
pub fn gemini_chat_session(first_line: &[u8]) -> Option<String> {
    let header: Value = serde_json::from_slice(first_line).ok()?;
    header["sessionId"].as_str().map(String::from)
}

/// The short name `~/.gemini/projects.json` gives the project at `cwd` (its folder under
/// `~/.gemini/tmp/`), if it names one that is a plain folder name.
pub fn gemini_project_short_name(projects_json: &[u8], cwd: &str) -> Option<String> {
    let projects: Value = serde_json::from_slice(projects_json).ok()?;
    let name = projects["projects"][cwd].as_str()?;
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains('/')
        && !name.contains('\0');
    plain.then(|| name.to_string())
}

/// Tokens as the chat counts them, summed over the model's messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChatTokens {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
    pub thoughts: u64,
    pub tool: u64,
    pub total: u64,
}

/// What a chat file says the child did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatDigest {
    pub session_id: Option<String>,
    /// The model of the latest answer.
    pub model: Option<String>,
    /// The child's answer to the last prompt: the model's text since the last message a
    /// person (or a steer) typed; empty while it has not answered.
    pub final_text: String,
    /// Every tool call of the session, in order.
    pub tool_calls: Vec<ToolCall>,
    pub tokens: ChatTokens,
    /// Messages in the chat (after every rewrite).
    pub messages: usize,
    /// Lines that were not a record cuekit could read.
    pub unreadable_lines: usize,
}

impl ChatDigest {
    /// The tokens as a result's `stats` (the keys a stream's `result` event uses).
    pub fn stats(&self) -> Value {
        let t = self.tokens;
        serde_json::json!({
            "total_tokens": t.total,
            "input_tokens": t.input,
            "output_tokens": t.output,
            "cached": t.cached,
            "thoughts_tokens": t.thoughts,
            "tool_tokens": t.tool,
            "tool_calls": self.tool_calls.len(),
            "messages": self.messages,
        })
    }
}

/// The tool calls of a session record whose results come apart from their calls (Claude's
/// `tool_result` blocks, Qwen's `tool_result` lines), matched by the call's id; bounded (the
/// oldest go first).
#[derive(Debug, Default)]
pub(crate) struct Calls {
    calls: Vec<ToolCall>,
    by_id: HashMap<String, usize>,
}

impl Calls {
    /// A call as the model made it, `running` until its result.
    pub(crate) fn call(&mut self, id: &str, name: &str, parameters: Value) {
        if self.calls.len() >= MESSAGE_LIMIT {
            self.calls.drain(..MESSAGE_LIMIT / 2);
            self.by_id = self
                .calls
                .iter()
                .enumerate()
                .map(|(at, call)| (call.tool_id.clone(), at))
                .collect();
        }
        let id = cut(id, 200);
        self.by_id.insert(id.clone(), self.calls.len());
        self.calls.push(ToolCall {
            tool_id: id,
            name: cut(name, 200),
            parameters,
            status: "running".to_string(),
            output_excerpt: None,
            error: None,
        });
    }

    /// The result of call `id` (a result for no call cuekit saw is dropped).
    pub(crate) fn result(&mut self, id: &str, failed: bool, output: &str) {
        let Some(call) = self.by_id.get(id).and_then(|at| self.calls.get_mut(*at)) else {
            return;
        };
        call.status = if failed { "error" } else { "success" }.to_string();
        call.output_excerpt = (!output.is_empty()).then(|| cut(output, OUTPUT_LIMIT));
        call.error = failed.then(|| Value::String(cut(output, OUTPUT_LIMIT)));
    }

    pub(crate) fn into_vec(self) -> Vec<ToolCall> {
        self.calls
    }
}

/// The answer to the last prompt, gathered as a record is read: a prompt starts it over.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    parts: Vec<String>,
    bytes: usize,
}

impl Answer {
    pub(crate) fn prompt(&mut self) {
        self.parts.clear();
        self.bytes = 0;
    }

    /// More of the answer; past the bound its first parts go (the end is kept).
    pub(crate) fn say(&mut self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        let text = cut(text, TEXT_LIMIT);
        self.bytes += text.len();
        self.parts.push(text);
        while self.bytes > TEXT_LIMIT && self.parts.len() > 1 {
            self.bytes -= self.parts.remove(0).len();
        }
    }

    pub(crate) fn text(&self) -> String {
        cut(&self.parts.join("\n\n"), TEXT_LIMIT)
    }
}

/// What the readers of Claude's, Qwen's and Codex's records gather alike as they fold a record
/// line by line, and the digest it makes. (Gemini's keeps whole messages instead: they are
/// written again under their id.)
#[derive(Debug, Default)]
pub(crate) struct Folded {
    pub(crate) session_id: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) answer: Answer,
    pub(crate) calls: Calls,
    pub(crate) tokens: ChatTokens,
    pub(crate) messages: usize,
    pub(crate) unreadable: usize,
}

impl Folded {
    /// A line's JSON object: none for a blank line, and none (counted unreadable) for anything
    /// else that is not one.
    pub(crate) fn object(&mut self, line: &[u8]) -> Option<Value> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(record @ Value::Object(_)) => Some(record),
            _ => {
                self.unreadable += 1;
                None
            }
        }
    }

    pub(crate) fn digest(self) -> ChatDigest {
        ChatDigest {
            session_id: self.session_id,
            model: self.model,
            final_text: self.answer.text(),
            tool_calls: self.calls.into_vec(),
            tokens: self.tokens,
            messages: self.messages,
            unreadable_lines: self.unreadable,
        }
    }
}

/// A chat file folded line by line (streamed: the file may be long).
#[derive(Debug, Default)]
pub struct GeminiChat {
    session_id: Option<String>,
    header_seen: bool,
    messages: Vec<Value>,
    by_id: HashMap<String, usize>,
    unreadable: usize,
}

impl GeminiChat {
    pub fn push_line(&mut self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Ok(Value::Object(mut record)) = serde_json::from_slice::<Value>(line) else {
            self.unreadable += 1;
            return;
        };
        if !self.header_seen {
            self.header_seen = true;
            if let Some(Value::String(id)) = record.get("sessionId") {
                self.session_id = Some(id.clone());
                return;
            }
        }
        if let Some(update) = record.remove("$set") {
            if let Some(Value::Array(messages)) = update.get("messages") {
                self.messages.clear();
                self.by_id.clear();
                for message in messages {
                    self.put(message.clone());
                }
            }
            return;
        }
        if record.contains_key("type") {
            self.put(Value::Object(record));
        } else {
            self.unreadable += 1;
        }
    }

    /// A message, or a message written again under its id (in its first place).
    fn put(&mut self, message: Value) {
        let id = message["id"].as_str().map(String::from);
        if let Some(at) = id.as_ref().and_then(|id| self.by_id.get(id)) {
            self.messages[*at] = message;
            return;
        }
        if self.messages.len() >= MESSAGE_LIMIT {
            // The oldest go: the answer is at the end. Indices shift, so rebuild them.
            self.messages.drain(..MESSAGE_LIMIT / 2);
            self.by_id = self
                .messages
                .iter()
                .enumerate()
                .filter_map(|(at, m)| Some((m["id"].as_str()?.to_string(), at)))
                .collect();
        }
        if let Some(id) = id {
            self.by_id.insert(id, self.messages.len());
        }
        self.messages.push(message);
    }

    pub fn finish(self) -> ChatDigest {
        let mut digest = ChatDigest {
            session_id: self.session_id,
            messages: self.messages.len(),
            unreadable_lines: self.unreadable,
            ..ChatDigest::default()
        };
        let last_prompt = self.messages.iter().rposition(is_prompt);
        let mut answer: Vec<String> = Vec::new();
        for (at, message) in self.messages.iter().enumerate() {
            if message["type"] != "gemini" {
                continue;
            }
            add_tokens(&mut digest.tokens, &message["tokens"]);
            if let Some(model) = message["model"].as_str() {
                digest.model = Some(cut(model, 200));
            }
            if let Some(calls) = message["toolCalls"].as_array() {
                digest.tool_calls.extend(calls.iter().map(tool_call));
            }
            let text = content_text(&message["content"]);
            if last_prompt.is_none_or(|prompt| at > prompt) && !text.trim().is_empty() {
                answer.push(text);
            }
        }
        digest.final_text = cut(&answer.join("\n\n"), TEXT_LIMIT);
        digest
    }
}

/// A message someone typed (not a tool's answer going back to the model).
fn is_prompt(message: &Value) -> bool {
    message["type"] == "user"
        && match &message["content"] {
            Value::String(text) => !text.is_empty(),
            Value::Array(parts) => parts.iter().any(|part| part.get("text").is_some()),
            _ => false,
        }
}

/// A message's text: a string, or the `text` of its parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => cut(text, TEXT_LIMIT),
        Value::Array(parts) => cut(
            &parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            TEXT_LIMIT,
        ),
        _ => String::new(),
    }
}

fn add_tokens(sum: &mut ChatTokens, tokens: &Value) {
    let n = |key: &str| tokens[key].as_u64().unwrap_or(0);
    sum.input = sum.input.saturating_add(n("input"));
    sum.output = sum.output.saturating_add(n("output"));
    sum.cached = sum.cached.saturating_add(n("cached"));
    sum.thoughts = sum.thoughts.saturating_add(n("thoughts"));
    sum.tool = sum.tool.saturating_add(n("tool"));
    sum.total = sum.total.saturating_add(n("total"));
}

fn tool_call(call: &Value) -> ToolCall {
    let output = call["result"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| {
            let response = &part["functionResponse"]["response"];
            response["output"]
                .as_str()
                .or_else(|| response["error"].as_str())
        })
        .collect::<Vec<_>>()
        .join("\n");
    let status = call["status"].as_str().unwrap_or("unknown");
    ToolCall {
        tool_id: cut(call["id"].as_str().unwrap_or_default(), 200),
        name: cut(call["name"].as_str().unwrap_or_default(), 200),
        parameters: call.get("args").cloned().unwrap_or(Value::Null),
        status: cut(status, 40),
        output_excerpt: (!output.is_empty()).then(|| cut(&output, OUTPUT_LIMIT)),
        error: (status == "error").then(|| Value::String(cut(&output, OUTPUT_LIMIT))),
    }
}

/// At most `limit` bytes of `text`, cut at a character boundary, marked when cut.
pub(crate) fn cut(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from the real Gemini CLI 0.61 (interactive, `--session-id t_0123456789ab`,
    /// offline with tests/fixtures/gemini/tool-call.jsonl: a shell call, then an answer).
    const CAPTURED: &str = include_str!("../../tests/fixtures/gemini/chat-session-tool-call.jsonl");

    fn fold(text: &str) -> ChatDigest {
        let mut chat = GeminiChat::default();
        for line in text.lines() {
            chat.push_line(line.as_bytes());
        }
        chat.finish()
    }

    #[test]
    fn the_captured_chat_gives_the_answer_the_tool_call_and_the_tokens() {
        let digest = fold(CAPTURED);
        assert_eq!(digest.session_id.as_deref(), Some("t_0123456789ab"));
        assert_eq!(digest.final_text, "Done: wrote f.txt.");
        assert_eq!(digest.model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(digest.tool_calls.len(), 1, "the call rewritten is one call");
        let call = &digest.tool_calls[0];
        assert_eq!(call.name, "run_shell_command");
        assert_eq!(call.parameters["command"], "echo hi > f.txt");
        assert_eq!(call.status, "success");
        assert!(
            call.output_excerpt
                .as_deref()
                .unwrap()
                .contains("Output: (empty)")
        );
        assert_eq!(
            digest.tokens,
            ChatTokens {
                input: 20,
                output: 10,
                total: 30,
                ..ChatTokens::default()
            },
            "two model messages of 15, the rewritten one counted once"
        );
        assert_eq!(digest.messages, 5);
        assert_eq!(digest.unreadable_lines, 0);
    }

    #[test]
    fn the_answer_is_the_last_prompts_and_a_rewrite_wins_in_place() {
        let text = [
            r#"{"sessionId":"s1"}"#,
            r#"{"id":"u1","type":"user","content":[{"text":"first"}]}"#,
            r#"{"id":"g1","type":"gemini","content":"old answer","tokens":{"total":5}}"#,
            r#"{"id":"u2","type":"user","content":[{"text":"second"}]}"#,
            r#"{"id":"g2","type":"gemini","content":"draft"}"#,
            r#"{"id":"g2","type":"gemini","content":"new answer","tokens":{"total":7}}"#,
            "not json",
            r#"{"$set":{"lastUpdated":"x"}}"#,
        ]
        .join("\n");
        let digest = fold(&text);
        assert_eq!(digest.final_text, "new answer");
        assert_eq!(digest.tokens.total, 12);
        assert_eq!(digest.unreadable_lines, 1);
        assert_eq!(digest.messages, 4);
    }

    #[test]
    fn a_turn_not_answered_yet_has_no_answer_and_set_messages_replaces_all() {
        let text = [
            r#"{"sessionId":"s1"}"#,
            r#"{"id":"g0","type":"gemini","content":"gone"}"#,
            r#"{"$set":{"messages":[{"id":"u1","type":"user","content":[{"text":"hi"}]}]}}"#,
        ]
        .join("\n");
        let digest = fold(&text);
        assert_eq!(digest.final_text, "");
        assert_eq!(digest.messages, 1);
    }

    #[test]
    fn hostile_text_is_cut() {
        let long = "x".repeat(TEXT_LIMIT * 2);
        let line = serde_json::json!({"id": "g", "type": "gemini", "content": long}).to_string();
        let digest = fold(&format!("{{\"sessionId\":\"s\"}}\n{line}"));
        assert!(digest.final_text.len() <= TEXT_LIMIT + '…'.len_utf8());
    }

    #[test]
    fn chat_file_names_and_headers() {
        assert!(gemini_chat_file_matches(
            "session-2026-12-06T05-30-t_012345.jsonl",
            "t_0123456789ab"
        ));
        assert!(!gemini_chat_file_matches(
            "session-2026-12-06T05-30-t_099999.jsonl",
            "t_0123456789ab"
        ));
        assert!(!gemini_chat_file_matches("logs.json", "t_0123456789ab"));
        assert!(!gemini_chat_file_matches("session-x-t_012345.jsonl", ""));
        let first = CAPTURED.lines().next().unwrap();
        assert_eq!(
            gemini_chat_session(first.as_bytes()).as_deref(),
            Some("t_0123456789ab")
        );
        let projects = br#"{"projects":{"/tmp/p":"proj","/tmp/q":"../x"}}"#;
        assert_eq!(
            gemini_project_short_name(projects, "/tmp/p").as_deref(),
            Some("proj")
        );
        assert_eq!(gemini_project_short_name(projects, "/tmp/q"), None);
        assert_eq!(gemini_project_short_name(projects, "/tmp/r"), None);
    }
}
