//! The Gemini CLI's headless event stream (`-o stream-json`): one JSON object a line, typed
//! here, folded into a [`Digest`] (live progress, then the task's result), and rendered as
//! text a person can read in the pane. Unknown event types and fields are kept; a line that is
//! not JSON is recorded with its line number and the stream goes on.

mod antigravity;

/// Where a task's progress (its stream folded so far) is kept, in its task directory.
pub const PROGRESS_FILE: &str = "progress.json";

use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    Init {
        session_id: Option<String>,
        model: Option<String>,
    },
    Message {
        role: String,
        content: String,
        /// An incremental chunk of the message rather than the whole of it.
        delta: bool,
    },
    ToolUse {
        tool_name: String,
        tool_id: String,
        parameters: Value,
    },
    ToolResult {
        tool_id: String,
        status: String,
        output: Option<String>,
        error: Option<Value>,
        /// The call's name, where a stream says it with the outcome (agy's does): a call first
        /// seen done is still named.
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_name: Option<String>,
    },
    Error {
        severity: String,
        message: String,
    },
    Result {
        status: String,
        error: Option<Value>,
        stats: Option<Value>,
        /// The final answer, where the stream states it (agy's does; Gemini's streams it only).
        #[serde(skip_serializing_if = "Option::is_none")]
        response: Option<String>,
    },
    /// A type this version of cuekit does not know; the whole object is kept.
    Unknown {
        event: Value,
    },
}

/// A parsed line: the typed event, its timestamp, and the fields the type does not name.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub event: Event,
    pub timestamp: Option<String>,
    pub extra: Map<String, Value>,
}

fn take_string(object: &mut Map<String, Value>, key: &str) -> Option<String> {
    match object.remove(key)? {
        Value::String(text) => Some(text),
        other => {
            object.insert(key.to_string(), other);
            None
        }
    }
}

/// Parses one line of the stream.
pub fn parse_line(line: &str) -> Result<Parsed, String> {
    let value: Value = serde_json::from_str(line).map_err(|err| err.to_string())?;
    let Value::Object(mut object) = value else {
        return Err("not a JSON object".to_string());
    };
    if !object.contains_key("type")
        && let Some(kind) = take_string(&mut object, "event")
    {
        let timestamp = take_string(&mut object, "timestamp");
        let event = antigravity::event(&kind, &mut object);
        return Ok(Parsed {
            event,
            timestamp,
            extra: object,
        });
    }
    let kind = take_string(&mut object, "type").unwrap_or_default();
    let timestamp = take_string(&mut object, "timestamp");
    let mut string = |key: &str| take_string(&mut object, key);
    let event = match kind.as_str() {
        "init" => Event::Init {
            session_id: string("session_id"),
            model: string("model"),
        },
        "message" => {
            let role = string("role").unwrap_or_default();
            let content = string("content").unwrap_or_default();
            let delta = object
                .remove("delta")
                .and_then(|d| d.as_bool())
                .unwrap_or(false);
            Event::Message {
                role,
                content,
                delta,
            }
        }
        "tool_use" => {
            let tool_name = string("tool_name").unwrap_or_default();
            let tool_id = string("tool_id").unwrap_or_default();
            Event::ToolUse {
                tool_name,
                tool_id,
                parameters: object.remove("parameters").unwrap_or(Value::Null),
            }
        }
        "tool_result" => {
            let tool_id = string("tool_id").unwrap_or_default();
            let status = string("status").unwrap_or_default();
            let output = string("output");
            Event::ToolResult {
                tool_id,
                status,
                output,
                error: object.remove("error"),
                tool_name: None,
            }
        }
        "error" => {
            let severity = string("severity").unwrap_or_else(|| "error".to_string());
            Event::Error {
                severity,
                message: string("message").unwrap_or_default(),
            }
        }
        "result" => {
            let status = string("status").unwrap_or_default();
            Event::Result {
                status,
                error: object.remove("error"),
                stats: object.remove("stats"),
                response: None,
            }
        }
        _ => {
            let mut event = object.clone();
            event.insert("type".to_string(), Value::String(kind));
            object.clear();
            Event::Unknown {
                event: Value::Object(event),
            }
        }
    };
    Ok(Parsed {
        event,
        timestamp,
        extra: object,
    })
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct ToolCall {
    pub tool_id: String,
    pub name: String,
    pub parameters: Value,
    /// `running` until its result arrives, then the result's status (`success` / `error`).
    pub status: String,
    pub output_excerpt: Option<String>,
    pub error: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ParseError {
    pub line: u64,
    pub error: String,
    pub text: String,
}

/// Everything learnt from a stream so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Digest {
    pub session_id: Option<String>,
    pub model: Option<String>,
    /// Model turns: each run of assistant text after the prompt or a tool result.
    pub turns: u32,
    /// The assistant text of the last turn (its deltas joined).
    pub final_text: String,
    pub tool_calls: Vec<ToolCall>,
    pub errors: Vec<Value>,
    pub warnings: Vec<Value>,
    /// The `result` event's status, error and stats; `None` if the run never finished.
    pub result: Option<Value>,
    pub parse_errors: Vec<ParseError>,
    pub unknown_events: Vec<Value>,
    /// Fields of known events that cuekit does not model, by event type.
    pub unknown_fields: Map<String, Value>,
    pub lines: u64,
    pub last_activity: Option<String>,
    /// Tokens of the runs before the last `result` in one stream: a checked batch task's fix
    /// rounds run again in the same pane, and their usage adds up.
    #[serde(skip)]
    earlier_tokens: u64,
    #[serde(skip)]
    in_assistant_turn: bool,
}

/// Tool output kept in a result: enough to see what happened, not the whole of it.
const EXCERPT_CHARS: usize = 2000;

fn excerpt(text: &str) -> String {
    if text.chars().count() <= EXCERPT_CHARS {
        text.to_string()
    } else {
        let cut: String = text.chars().take(EXCERPT_CHARS).collect();
        format!("{cut}…")
    }
}

/// Whether a line of `events.jsonl` is cuekit's own (a transition, a hook's outcome, a
/// notification: `"type":"cuekit_…"`) rather than the agent's stream.
fn is_cuekit_record(line: &str) -> bool {
    line.contains("\"cuekit_")
        && serde_json::from_str::<Value>(line)
            .is_ok_and(|v| v["type"].as_str().is_some_and(|t| t.starts_with("cuekit_")))
}

impl Digest {
    /// Folds one raw line in; returns the parsed line, or `None` for a line that is not an event.
    pub fn push_line(&mut self, line: &str) -> Option<Parsed> {
        self.lines += 1;
        if line.trim().is_empty() || is_cuekit_record(line) {
            return None;
        }
        match parse_line(line) {
            Ok(parsed) => {
                self.push(&parsed);
                Some(parsed)
            }
            Err(error) => {
                self.parse_errors.push(ParseError {
                    line: self.lines,
                    error,
                    text: excerpt(line),
                });
                None
            }
        }
    }

    fn push(&mut self, parsed: &Parsed) {
        if parsed.timestamp.is_some() {
            self.last_activity = parsed.timestamp.clone();
        }
        if !parsed.extra.is_empty() {
            let kind = serde_json::to_value(&parsed.event)
                .ok()
                .and_then(|v| v["type"].as_str().map(String::from));
            let slot = self
                .unknown_fields
                .entry(kind.unwrap_or_default())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(fields) = slot {
                fields.extend(parsed.extra.clone());
            }
        }
        match &parsed.event {
            Event::Init { session_id, model } => {
                self.session_id = session_id.clone().or(self.session_id.take());
                self.model = model.clone().or(self.model.take());
            }
            Event::Message {
                role,
                content,
                delta,
            } if role == "assistant" => {
                if !self.in_assistant_turn {
                    self.turns += 1;
                    self.final_text.clear();
                    self.in_assistant_turn = true;
                }
                if *delta {
                    self.final_text.push_str(content);
                } else {
                    self.final_text = content.clone();
                }
            }
            Event::Message { .. } => self.in_assistant_turn = false,
            Event::ToolUse {
                tool_name,
                tool_id,
                parameters,
            } => {
                self.in_assistant_turn = false;
                // A stream that updates a running call (agy's) names it again: one call.
                match self
                    .tool_calls
                    .iter_mut()
                    .rev()
                    .find(|call| &call.tool_id == tool_id && call.status == "running")
                {
                    Some(call) => call.parameters = parameters.clone(),
                    None => self.tool_calls.push(ToolCall {
                        tool_id: tool_id.clone(),
                        name: tool_name.clone(),
                        parameters: parameters.clone(),
                        status: "running".to_string(),
                        ..ToolCall::default()
                    }),
                }
            }
            Event::ToolResult {
                tool_id,
                status,
                output,
                error,
                tool_name,
            } => {
                self.in_assistant_turn = false;
                let known = self
                    .tool_calls
                    .iter()
                    .rposition(|call| &call.tool_id == tool_id);
                // A call first seen done (a stream that skipped its start) still counts.
                let at = known.unwrap_or_else(|| {
                    self.tool_calls.push(ToolCall {
                        tool_id: tool_id.clone(),
                        name: tool_name.clone().unwrap_or_default(),
                        parameters: Value::Null,
                        ..ToolCall::default()
                    });
                    self.tool_calls.len() - 1
                });
                let call = &mut self.tool_calls[at];
                call.status = status.clone();
                call.output_excerpt = output.as_deref().map(excerpt);
                call.error = error.clone();
            }
            Event::Error { severity, message } => {
                let entry = serde_json::json!({"severity": severity, "message": message});
                if severity == "warning" {
                    self.warnings.push(entry);
                } else {
                    self.errors.push(entry);
                }
            }
            Event::Result {
                status,
                error,
                stats,
                response,
            } => {
                self.earlier_tokens += self.last_run_tokens().unwrap_or(0);
                self.result =
                    Some(serde_json::json!({"status": status, "error": error, "stats": stats}));
                // The stream's own final answer beats the last streamed text (which may be a
                // remark before a tool call).
                if let Some(response) = response.as_ref().filter(|r| !r.is_empty()) {
                    self.final_text = response.clone();
                }
                // A failed run's own reason, when nothing else said what went wrong.
                if status != "success"
                    && self.errors.is_empty()
                    && let Some(message) = error.as_ref().and_then(|e| e.get("message"))
                {
                    self.errors
                        .push(serde_json::json!({"severity": "error", "message": message}));
                }
            }
            // A child's `cuekit report` shares the file with the stream; results list those apart.
            Event::Unknown { event } if crate::domain::report::is_report_event(event) => {}
            Event::Unknown { event } => self.unknown_events.push(event.clone()),
        }
    }

    /// Whether the run reported success in its own `result` event.
    pub fn succeeded(&self) -> bool {
        self.result
            .as_ref()
            .is_some_and(|r| r["status"] == "success")
    }

    /// Total tokens so far, from the results' stats (the stream reports usage only at a run's
    /// end): the last run's, and those of the runs before it in the same stream.
    pub fn total_tokens(&self) -> Option<u64> {
        Some(self.last_run_tokens()? + self.earlier_tokens)
    }

    fn last_run_tokens(&self) -> Option<u64> {
        self.result
            .as_ref()?
            .pointer("/stats/total_tokens")?
            .as_u64()
    }
}

/// Live progress of a running stream, as `status` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Progress {
    pub turns: u32,
    pub tool_calls: usize,
    pub tokens: Option<u64>,
    pub events: u64,
    pub last_activity: Option<String>,
    /// The run's `result` event arrived: it does no more work, only exits.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub finished: bool,
}

impl From<&Digest> for Progress {
    fn from(digest: &Digest) -> Self {
        Progress {
            turns: digest.turns,
            tool_calls: digest.tool_calls.len(),
            tokens: digest.total_tokens(),
            events: digest.lines,
            last_activity: digest.last_activity.clone(),
            finished: digest.result.is_some(),
        }
    }
}

/// Writes the readable form of events to the pane, keeping track of whether a streamed
/// message left the cursor mid-line.
pub struct Printer<W: Write> {
    out: W,
    mid_line: bool,
}

impl<W: Write> Printer<W> {
    pub fn new(out: W) -> Self {
        Printer {
            out,
            mid_line: false,
        }
    }

    fn line(&mut self, text: &str) -> io::Result<()> {
        if self.mid_line {
            writeln!(self.out)?;
            self.mid_line = false;
        }
        writeln!(self.out, "{text}")
    }

    pub fn print(&mut self, parsed: Option<&Parsed>, raw_line: &str) -> io::Result<()> {
        let Some(parsed) = parsed else {
            if !raw_line.trim().is_empty() {
                self.line(&format!("[not an event] {}", raw_line.trim_end()))?;
            }
            return self.out.flush();
        };
        match &parsed.event {
            Event::Init { session_id, model } => self.line(&format!(
                "[session {} · {}]",
                session_id.as_deref().unwrap_or("?"),
                model.as_deref().unwrap_or("model ?")
            ))?,
            Event::Message {
                role,
                content,
                delta,
            } if role == "assistant" => {
                write!(self.out, "{content}")?;
                self.mid_line = !content.ends_with('\n');
                if !delta && self.mid_line {
                    writeln!(self.out)?;
                    self.mid_line = false;
                }
            }
            Event::Message { role, content, .. } => {
                self.line(&format!("> [{role}] {}", first_line(content)))?
            }
            Event::ToolUse {
                tool_name,
                parameters,
                ..
            } => self.line(&format!(
                "→ {tool_name} {}",
                first_line(&parameters.to_string())
            ))?,
            Event::ToolResult {
                status,
                output,
                error,
                ..
            } => {
                let detail = match (output, error) {
                    (_, Some(error)) => error
                        .get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| error.to_string(), String::from),
                    (Some(output), None) => first_line(output),
                    (None, None) => String::new(),
                };
                let mark = if status == "success" { "✓" } else { "✗" };
                self.line(&format!("  {mark} {status} {detail}"))?
            }
            Event::Error { severity, message } => self.line(&format!("! {severity}: {message}"))?,
            Event::Result { status, stats, .. } => {
                let number = |key: &str| {
                    stats
                        .as_ref()
                        .and_then(|s| s.get(key))
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                };
                self.line(&format!(
                    "[result: {status} · {} tokens · {} tool calls · {} ms]",
                    number("total_tokens"),
                    number("tool_calls"),
                    number("duration_ms")
                ))?
            }
            Event::Unknown { event } => self.line(&format!(
                "[{} event]",
                event["type"].as_str().unwrap_or("?")
            ))?,
        }
        self.out.flush()
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let cut: String = line.chars().take(160).collect();
    if cut.len() < text.trim_end().len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run with a tool call, as the 0.61.0 CLI prints it (trimmed), plus a malformed line and
    /// an event type from the future.
    const STREAM: &str = r#"{"type":"init","timestamp":"2026-11-29T10:00:00.000Z","session_id":"s-1","model":"gemini-2.5-flash"}
{"type":"message","timestamp":"2026-11-29T10:00:00.100Z","role":"user","content":"Create f.txt"}
{"type":"tool_use","timestamp":"2026-11-29T10:00:01.000Z","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"echo hi > f.txt"}}
{"type":"tool_result","timestamp":"2026-11-29T10:00:01.500Z","tool_id":"t1","status":"success","output":"","novel_field":7}
this is not json
{"type":"thought","timestamp":"2026-11-29T10:00:01.600Z","text":"hmm"}
{"type":"message","timestamp":"2026-11-29T10:00:02.000Z","role":"assistant","content":"Created ","delta":true}
{"type":"message","timestamp":"2026-11-29T10:00:02.100Z","role":"assistant","content":"f.txt.","delta":true}
{"type":"error","timestamp":"2026-11-29T10:00:02.200Z","severity":"warning","message":"slow"}
{"type":"result","timestamp":"2026-11-29T10:00:03.000Z","status":"success","stats":{"total_tokens":15,"input_tokens":10,"output_tokens":5,"duration_ms":3000,"tool_calls":1}}
"#;

    fn digest(stream: &str) -> Digest {
        let mut digest = Digest::default();
        for line in stream.lines() {
            digest.push_line(line);
        }
        digest
    }

    #[test]
    fn folds_a_run_with_a_tool_call() {
        let d = digest(STREAM);
        assert_eq!(d.session_id.as_deref(), Some("s-1"));
        assert_eq!(d.model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(d.final_text, "Created f.txt.");
        assert_eq!(d.turns, 1);
        assert_eq!(d.tool_calls.len(), 1);
        assert_eq!(d.tool_calls[0].name, "run_shell_command");
        assert_eq!(d.tool_calls[0].status, "success");
        assert_eq!(d.warnings.len(), 1);
        assert!(d.succeeded());
        assert_eq!(d.total_tokens(), Some(15));
        assert_eq!(d.last_activity.as_deref(), Some("2026-11-29T10:00:03.000Z"));
    }

    #[test]
    fn folds_a_stream_recorded_from_the_real_cli() {
        // `gemini -o stream-json` 0.61.0 with tests/fixtures/gemini/tool-call.jsonl as replies.
        let recorded = include_str!("../../../tests/fixtures/gemini/stream-tool-call.jsonl");
        let d = digest(recorded);
        assert_eq!(d.session_id.as_deref(), Some("rec1"));
        assert_eq!(d.tool_calls.len(), 1);
        assert_eq!(d.tool_calls[0].parameters["command"], "echo hi > f.txt");
        assert_eq!(d.tool_calls[0].status, "success");
        assert_eq!(d.final_text, "Done: wrote f.txt.");
        assert_eq!(d.total_tokens(), Some(30));
        assert!(d.succeeded() && d.parse_errors.is_empty() && d.unknown_events.is_empty());
    }

    #[test]
    fn the_runs_of_one_stream_add_up_their_tokens() {
        let run = |tokens: u64| {
            format!(
                "{{\"type\":\"result\",\"status\":\"success\",\"stats\":{{\"total_tokens\":{tokens}}}}}\n"
            )
        };
        let d = digest(&(run(30) + &run(25)));
        assert_eq!(d.total_tokens(), Some(55));
    }

    #[test]
    fn keeps_what_it_does_not_understand() {
        let d = digest(STREAM);
        assert_eq!(d.parse_errors.len(), 1);
        assert_eq!(d.parse_errors[0].line, 5);
        assert_eq!(d.parse_errors[0].text, "this is not json");
        assert_eq!(
            d.unknown_events,
            vec![serde_json::json!({"type": "thought", "text": "hmm"})]
        );
        assert_eq!(d.unknown_fields["tool_result"]["novel_field"], 7);
    }

    #[test]
    fn a_childs_reports_in_the_same_file_are_not_unknown_events() {
        let report = crate::domain::report::Report {
            seq: 1,
            kind: crate::domain::report::ReportKind::Blocked,
            message: "need the API key".into(),
            data: None,
            at: "2026-11-29T10:00:01.700Z".into(),
        };
        let line = String::from_utf8(report.event_line()).unwrap();
        let with_report: String = STREAM
            .lines()
            .flat_map(|l| [l, line.as_str()])
            .collect::<Vec<_>>()
            .join("\n");
        let d = digest(&with_report);
        let plain = digest(STREAM);
        assert_eq!(d.unknown_events, plain.unknown_events);
        assert_eq!(d.final_text, plain.final_text);
        assert_eq!(d.tool_calls, plain.tool_calls);
        assert!(d.succeeded());
    }

    #[test]
    fn a_run_without_a_result_event_did_not_succeed() {
        let cut: String = STREAM.lines().take(8).collect::<Vec<_>>().join("\n");
        let d = digest(&cut);
        assert!(!d.succeeded());
        assert_eq!(d.result, None);
        let failed = digest(
            r#"{"type":"result","status":"error","error":{"type":"API","message":"quota"}}"#,
        );
        assert!(!failed.succeeded());
    }

    #[test]
    fn cuekits_own_lines_are_not_part_of_the_agents_stream() {
        let mut d = Digest::default();
        d.push_line(r#"{"transition":{"task_id":"t_1"},"type":"cuekit_transition"}"#);
        d.push_line(r#"{"type":"cuekit_hook","hook":"on_end","exit_code":0}"#);
        assert!(d.unknown_events.is_empty() && d.parse_errors.is_empty());
        assert_eq!(d.lines, 2);
    }

    #[test]
    fn a_complete_message_replaces_the_streamed_text_and_turns_count_across_tools() {
        let d = digest(
            r#"{"type":"message","role":"assistant","content":"Let me look."}
{"type":"tool_use","tool_name":"ls","tool_id":"a","parameters":{}}
{"type":"tool_result","tool_id":"a","status":"error","error":{"type":"x","message":"denied"}}
{"type":"message","role":"assistant","content":"Could ","delta":true}
{"type":"message","role":"assistant","content":"Could not list.","delta":false}"#,
        );
        assert_eq!(d.turns, 2);
        assert_eq!(d.final_text, "Could not list.");
        assert_eq!(d.tool_calls[0].status, "error");
    }

    #[test]
    fn prints_a_readable_pane() {
        let mut printer = Printer::new(Vec::new());
        let mut d = Digest::default();
        for line in STREAM.lines() {
            let parsed = d.push_line(line);
            printer.print(parsed.as_ref(), line).unwrap();
        }
        let text = String::from_utf8(printer.out).unwrap();
        assert_eq!(
            text,
            "[session s-1 · gemini-2.5-flash]\n> [user] Create f.txt\n→ run_shell_command {\"command\":\"echo hi > f.txt\"}\n  ✓ success \n\
             [not an event] this is not json\n[thought event]\nCreated f.txt.\n! warning: slow\n[result: success · 15 tokens · 1 tool calls · 3000 ms]\n"
        );
    }
}
