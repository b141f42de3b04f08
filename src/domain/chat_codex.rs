//! An interactive Codex child's own session record, its "rollout"
//! (`~/.codex/sessions/YYYY/MM/DD/rollout-<local time>-<session id>.jsonl`, 0.171.0). Pure: lines
//! in, the child's answer, tool calls and tokens out; and how cuekit knows which rollout is a
//! task's. The file is the child's to write, so every line is data: a line that is not a record
//! is counted and skipped, text is cut to a bound.
//!
//! Codex takes no session id (0.171.0 has no `--session-id`: it makes a time-ordered UUID of its
//! own), so a task's rollout is the one whose first line, the `session_meta`, names the task's
//! folder as its `cwd` and a `timestamp` within [`START_WINDOW_SECS`] of the task's start, and whose
//! first typed message is the task's prompt; exactly one such file, or none is taken.
//!
//! The format, as the real CLI writes it (tests/fixtures/codex/rollout-tool-call.jsonl): one
//! record a line `{"timestamp", "type", "payload"}`: `session_meta` (`id`, `cwd`, `timestamp`,
//! `originator`, `cli_version`), `turn_context` (`model`), `response_item` (`message` with a
//! `role` — `developer` and the harness's own `user` context too — and `input_text` /
//! `output_text` parts; `function_call` {call_id, name, arguments: a JSON text};
//! `function_call_output` {call_id, output}; `custom_tool_call` {call_id, name, input}), and
//! `event_msg` (`item_completed` with a `UserMessage` — what was typed — or a
//! `CommandExecution` with its `exit_code`; `user_message` in older versions; `token_count` with
//! the session's running `total_token_usage`).

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::chat::{ChatDigest, ChatTokens, Folded, cut};

/// How long after a task's start its Codex session may begin (a loaded machine starts the TUI
/// late), and how long before (clocks of the pane and of cuekit are one, but times are rounded).
pub const START_WINDOW_SECS: u64 = 120;
const EARLY_SECS: u64 = 5;

/// What a rollout's first line says of its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutMeta {
    pub id: String,
    pub cwd: String,
    pub started: SystemTime,
}

/// The `session_meta` of a rollout's first line.
pub fn codex_rollout_meta(first_line: &[u8]) -> Option<RolloutMeta> {
    let record: Value = serde_json::from_slice(first_line).ok()?;
    if record["type"] != "session_meta" {
        return None;
    }
    let meta = &record["payload"];
    Some(RolloutMeta {
        id: meta["id"].as_str()?.to_string(),
        cwd: meta["cwd"].as_str()?.to_string(),
        started: humantime::parse_rfc3339_weak(meta["timestamp"].as_str()?).ok()?,
    })
}

/// Whether a session started at `session` may be the one of a task started at `task` (RFC 3339).
pub fn started_with(task: &str, session: SystemTime) -> bool {
    let Ok(task) = humantime::parse_rfc3339_weak(task) else {
        return false;
    };
    session + Duration::from_secs(EARLY_SECS) >= task
        && session <= task + Duration::from_secs(START_WINDOW_SECS)
}

/// The day folders (`YYYY/MM/DD`) a session started with a task at `task` (RFC 3339) may be
/// kept in: Codex names them in local time, so the day before and after too.
pub fn codex_day_folders(task: &str) -> Vec<String> {
    let Ok(at) = humantime::parse_rfc3339_weak(task) else {
        return Vec::new();
    };
    let day = Duration::from_secs(24 * 60 * 60);
    [at - day, at, at + day]
        .into_iter()
        .map(|t| {
            let text = humantime::format_rfc3339_seconds(t).to_string();
            text.get(..10).unwrap_or_default().replace('-', "/")
        })
        .collect()
}

/// The first message a person typed in a rollout, read line by line until it shows.
#[derive(Debug, Default)]
pub struct FirstPrompt {
    pub text: Option<String>,
}

impl FirstPrompt {
    pub fn push_line(&mut self, line: &[u8]) {
        if self.text.is_none()
            && let Ok(record) = serde_json::from_slice::<Value>(line)
        {
            self.text = typed(&record);
        }
    }
}

/// What a person typed, if this record says so.
fn typed(record: &Value) -> Option<String> {
    let payload = &record["payload"];
    if record["type"] != "event_msg" {
        return None;
    }
    match payload["type"].as_str()? {
        "user_message" => payload["message"].as_str().map(String::from),
        "item_completed" if payload["item"]["type"] == "UserMessage" => Some(
            payload["item"]["content"]
                .as_array()?
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
        ),
        _ => None,
    }
}

/// A rollout folded line by line (streamed: the file may be long).
#[derive(Debug, Default)]
pub struct CodexRollout {
    fold: Folded,
    failed: HashSet<String>,
}

impl CodexRollout {
    pub fn push_line(&mut self, line: &[u8]) {
        let Some(record) = self.fold.object(line) else {
            return;
        };
        let payload = &record["payload"];
        match record["type"].as_str() {
            Some("session_meta") => {
                self.fold.session_id = payload["id"].as_str().map(|id| cut(id, 200));
            }
            Some("turn_context") => {
                if let Some(model) = payload["model"].as_str() {
                    self.fold.model = Some(cut(model, 200));
                }
            }
            Some("response_item") => self.item(payload),
            Some("event_msg") => self.event(&record),
            Some(_) => {}
            None => self.fold.unreadable += 1,
        }
    }

    fn item(&mut self, item: &Value) {
        let id = item["call_id"].as_str().unwrap_or_default();
        match item["type"].as_str() {
            Some("message") if item["role"] == "assistant" => {
                self.fold.messages += 1;
                for part in item["content"].as_array().into_iter().flatten() {
                    if let Some(text) = part["text"].as_str() {
                        self.fold.answer.say(text);
                    }
                }
            }
            Some("function_call") => {
                let arguments = item["arguments"].as_str().unwrap_or_default();
                let parameters = serde_json::from_str(arguments)
                    .unwrap_or_else(|_| Value::String(cut(arguments, 2000)));
                self.fold
                    .calls
                    .call(id, item["name"].as_str().unwrap_or_default(), parameters);
            }
            Some("custom_tool_call") => self.fold.calls.call(
                id,
                item["name"].as_str().unwrap_or_default(),
                item.get("input").cloned().unwrap_or(Value::Null),
            ),
            Some("function_call_output" | "custom_tool_call_output") => {
                let output = match &item["output"] {
                    Value::String(text) => text.clone(),
                    other => other["content"].as_str().unwrap_or_default().to_string(),
                };
                let failed = self.failed.contains(id) || item["output"]["success"] == false;
                self.fold.calls.result(id, failed, &output);
            }
            _ => {}
        }
    }

    fn event(&mut self, record: &Value) {
        let payload = &record["payload"];
        if typed(record).is_some() {
            self.fold.messages += 1;
            self.fold.answer.prompt();
            return;
        }
        match payload["type"].as_str() {
            Some("token_count") => {
                let usage = &payload["info"]["total_token_usage"];
                let n = |key: &str| usage[key].as_u64().unwrap_or(0);
                if usage.is_object() {
                    self.fold.tokens = ChatTokens {
                        input: n("input_tokens"),
                        output: n("output_tokens"),
                        cached: n("cached_input_tokens"),
                        thoughts: n("reasoning_output_tokens"),
                        tool: 0,
                        total: n("total_tokens"),
                    };
                }
            }
            Some("item_completed") => {
                let item = &payload["item"];
                let failed = item["type"] == "CommandExecution"
                    && (item["exit_code"].as_i64().is_some_and(|code| code != 0)
                        || item["status"] == "failed");
                if failed && self.failed.len() < 100_000 {
                    self.failed
                        .insert(item["id"].as_str().unwrap_or_default().to_string());
                }
            }
            _ => {}
        }
    }

    pub fn finish(self) -> ChatDigest {
        self.fold.digest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from the real Codex 0.171.0 (interactive in tmux, `--no-daemon
    /// --dangerously-bypass-approvals-and-sandbox`, offline against a stand-in of the Responses
    /// API that answered an `exec_command` call, then a text).
    const CAPTURED: &str = include_str!("../../tests/fixtures/codex/rollout-tool-call.jsonl");

    fn fold(text: &str) -> ChatDigest {
        let mut rollout = CodexRollout::default();
        for line in text.lines() {
            rollout.push_line(line.as_bytes());
        }
        rollout.finish()
    }

    #[test]
    fn the_captured_rollout_gives_the_answer_the_tool_call_and_the_tokens() {
        let digest = fold(CAPTURED);
        assert_eq!(
            digest.session_id.as_deref(),
            Some("01a24b0f-454e-77b1-9ae7-d55d2d5ae793")
        );
        assert_eq!(digest.final_text, "Done: wrote f.txt.");
        assert_eq!(digest.model.as_deref(), Some("mock-model"));
        assert_eq!(digest.tool_calls.len(), 1);
        let call = &digest.tool_calls[0];
        assert_eq!(
            (call.tool_id.as_str(), call.name.as_str()),
            ("call_1", "exec_command")
        );
        assert_eq!(call.parameters["cmd"], "echo hi > f.txt");
        assert_eq!(call.status, "success");
        assert!(
            call.output_excerpt
                .as_deref()
                .unwrap()
                .contains("Process exited with code 0")
        );
        assert_eq!(
            digest.tokens,
            ChatTokens {
                input: 24,
                output: 14,
                cached: 6,
                total: 38,
                ..ChatTokens::default()
            },
            "the last running total"
        );
        assert_eq!(digest.messages, 2, "the prompt and the answer");
        assert_eq!(digest.unreadable_lines, 0);
    }

    #[test]
    fn the_captured_rollout_says_whose_it_is() {
        let first = CAPTURED.lines().next().unwrap();
        let meta = codex_rollout_meta(first.as_bytes()).unwrap();
        assert_eq!(meta.cwd, "/tmp/cap49/xproj");
        assert_eq!(meta.id, "01a24b0f-454e-77b1-9ae7-d55d2d5ae793");
        assert!(started_with("2026-12-06T11:13:40.000Z", meta.started));
        assert!(!started_with("2026-12-06T11:20:00.000Z", meta.started));
        assert!(!started_with("2026-12-06T11:05:00.000Z", meta.started));
        let mut prompt = FirstPrompt::default();
        for line in CAPTURED.lines() {
            prompt.push_line(line.as_bytes());
        }
        assert_eq!(prompt.text.as_deref(), Some("Write hi to f.txt"));
        assert_eq!(
            codex_day_folders("2026-12-01T00:30:00Z"),
            ["2026/11/30", "2026/12/01", "2026/12/02"]
        );
    }

    #[test]
    fn a_failed_command_and_a_later_prompt() {
        let text = [
            r#"{"type":"event_msg","payload":{"type":"user_message","message":"first"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"old"}]}}"#,
            r#"{"type":"event_msg","payload":{"type":"user_message","message":"second"}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"not json"}}"#,
            r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"c1","exit_code":2}}}"#,
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"boom"}}"#,
            r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"new"}]}}"#,
            "{",
        ]
        .join("\n");
        let digest = fold(&text);
        assert_eq!(digest.final_text, "new");
        assert_eq!(digest.tool_calls[0].status, "error");
        assert_eq!(digest.tool_calls[0].parameters, "not json");
        assert_eq!(digest.unreadable_lines, 1);
    }
}
