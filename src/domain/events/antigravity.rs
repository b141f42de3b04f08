//! agy's stream (`--output-format stream-json`, CHANGELOG 1.1.8): one object a line wrapped as
//! `{"event": E, E: {…}}` — `init`, `step_update` (a step's state, a text delta, a tool's call
//! and output) and a closing `result`. Each is read as the [`Event`] of Gemini's stream that
//! means the same, so a task's digest, progress, result and readable pane are one thing
//! whichever CLI ran. Field names as peers captured them (agy 1.1.10-1.2.0); the docs give none.
//! `init` and `result` fields not read here are kept as the event's unknown fields
//! (`structured_output`, `denied_actions`, …); a step's are in its raw line in `events.jsonl`.

use serde_json::{Map, Value};

use super::Event;

/// Why a run that ended "successfully" with no answer is not a success: headless agy cannot
/// ask for approval, so it denies the tool calls that need it (CHANGELOG 1.1.3), and such a run
/// says SUCCESS with an empty response (1.1.10; 1.1.27 adds `denied_actions`).
const NO_ANSWER: &str = "agy ended without an answer; headless agy denies the tool calls that \
     need approval: resubmit with --skip-permissions, or allow the tools under \
     permissions.allow in ~/.gemini/antigravity-cli/settings.json";

/// The event of one agy line (its `event` already taken out of `object`); what it does not
/// read stays in `object`.
pub(super) fn event(kind: &str, object: &mut Map<String, Value>) -> Event {
    let mut body = match object.remove(kind) {
        Some(Value::Object(body)) => body,
        Some(other) => {
            object.insert(kind.to_string(), other);
            Map::new()
        }
        None => Map::new(),
    };
    let take = |body: &mut Map<String, Value>, key: &str| match body.remove(key) {
        Some(Value::String(text)) => Some(text),
        _ => None,
    };
    let event = match kind {
        "init" => Event::Init {
            session_id: take(object, "conversation_id")
                .or_else(|| take(&mut body, "conversation_id")),
            model: take(&mut body, "model"),
        },
        "step_update" => return step(body),
        "result" => {
            body.remove("conversation_id");
            let response = take(&mut body, "response").unwrap_or_default();
            let denied = body
                .get("denied_actions")
                .and_then(Value::as_array)
                .is_some_and(|actions| !actions.is_empty());
            let mut error = body.remove("error").map(message);
            let status = match take(&mut body, "status").as_deref() {
                Some("SUCCESS") if response.is_empty() => {
                    error = Some(serde_json::json!({ "message": NO_ANSWER }));
                    if denied { "denied" } else { "no_answer" }.to_string()
                }
                Some("CANCELED") => {
                    // 1.1.18 ends a headless run whose tools were denied so.
                    error = error.or(Some(serde_json::json!({ "message": NO_ANSWER })));
                    "cancelled".to_string()
                }
                Some(status) => status.to_ascii_lowercase(),
                None => String::new(),
            };
            Event::Result {
                status,
                error,
                stats: Some(stats(&mut body)),
                response: Some(response),
            }
        }
        _ => return unknown(kind, body),
    };
    if !body.is_empty() {
        object.insert(kind.to_string(), Value::Object(body));
    }
    event
}

/// An error as a JSON object with a `message`, however agy gave it.
fn message(error: Value) -> Value {
    match error {
        Value::String(message) => serde_json::json!({ "message": message }),
        other => other,
    }
}

/// Gemini's stats names for agy's `usage` and duration.
fn stats(body: &mut Map<String, Value>) -> Value {
    let mut stats = match body.remove("usage") {
        Some(Value::Object(usage)) => usage,
        _ => Map::new(),
    };
    if let Some(seconds) = body.remove("duration_seconds").and_then(|v| v.as_f64()) {
        stats.insert("duration_ms".into(), Value::from((seconds * 1000.0) as u64));
    }
    if let Some(turns) = body.remove("num_turns") {
        stats.insert("turns".into(), turns);
    }
    Value::Object(stats)
}

/// A step's update: assistant text, the user's turn, a tool's call or its outcome, an error.
fn step(body: Map<String, Value>) -> Event {
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(String::from);
    let delta = text("text_delta");
    let state = text("state").unwrap_or_default();
    let step_id = body
        .get("step_index")
        .map(|index| match index {
            Value::String(id) => id.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default();
    match text("step_type").as_deref() {
        Some("agent_response") => Event::Message {
            role: "assistant".into(),
            content: delta.unwrap_or_default(),
            delta: true,
        },
        Some("user_input") => Event::Message {
            role: "user".into(),
            content: delta.unwrap_or_default(),
            delta: false,
        },
        Some("system_message") => Event::Message {
            role: "system".into(),
            content: delta.unwrap_or_default(),
            delta: false,
        },
        Some("error_message") => Event::Error {
            severity: "error".into(),
            message: delta.or_else(|| text("error")).unwrap_or_default(),
        },
        Some("tool") => {
            let info = body.get("tool_info").and_then(Value::as_object);
            let field = |key: &str| info.and_then(|info| info.get(key)).cloned();
            let name = text("tool_name")
                .or_else(|| field("name").and_then(|v| v.as_str().map(String::from)))
                .unwrap_or_default();
            match state.as_str() {
                // Still going: the call (again, as its parameters fill in).
                "" | "ACTIVE" | "PENDING" | "RUNNING" => Event::ToolUse {
                    tool_name: name,
                    tool_id: step_id,
                    parameters: field("parameters").unwrap_or(Value::Null),
                },
                ended => Event::ToolResult {
                    tool_id: step_id,
                    status: match ended {
                        "DONE" => "success".to_string(),
                        "CANCELED" => "cancelled".to_string(),
                        other => other.to_ascii_lowercase(),
                    },
                    output: field("output").map(|output| match output {
                        Value::String(text) => text,
                        other => other.to_string(),
                    }),
                    error: field("error").map(message),
                    tool_name: Some(name),
                },
            }
        }
        _ => unknown("step_update", body),
    }
}

fn unknown(kind: &str, body: Map<String, Value>) -> Event {
    let mut event = Map::new();
    event.insert("type".into(), Value::String(format!("agy_{kind}")));
    event.insert(kind.into(), Value::Object(body));
    Event::Unknown {
        event: Value::Object(event),
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::events::{Digest, Event};

    /// A run as peers captured agy 1.1.18 printing it: a tool call, its output, streamed text.
    const STREAM: &str = r#"{"event":"init","conversation_id":"0d4c2a9e-1111-4c2b-9f00-5e1a2b3c4d5e","init":{"model":"gemini-3.5-flash-high","cwd":"/w","tools":["view_file","run_command"],"permission_mode":"always-proceed"}}
{"event":"step_update","step_update":{"conversation_id":"0d4c2a9e-1111-4c2b-9f00-5e1a2b3c4d5e","step_index":0,"state":"DONE","step_type":"user_input","text_delta":"list the files"}}
{"event":"step_update","step_update":{"step_index":1,"state":"ACTIVE","step_type":"tool","tool_name":"run_command","tool_info":{"name":"run_command","parameters":{"command":"ls"}}}}
{"event":"step_update","step_update":{"step_index":1,"state":"DONE","step_type":"tool","tool_name":"run_command","tool_info":{"name":"run_command","parameters":{"command":"ls"},"output":"a.txt\nb.txt"}}}
{"event":"step_update","step_update":{"step_index":2,"state":"ACTIVE","step_type":"agent_response","text_delta":"Two files: "}}
{"event":"step_update","step_update":{"step_index":2,"state":"DONE","step_type":"agent_response","text_delta":"a.txt and b.txt."}}
{"event":"result","result":{"conversation_id":"0d4c2a9e-1111-4c2b-9f00-5e1a2b3c4d5e","status":"SUCCESS","response":"Two files: a.txt and b.txt.","duration_seconds":2.5,"num_turns":2,"usage":{"input_tokens":100,"output_tokens":20,"total_tokens":120}}}
"#;

    #[test]
    fn a_run_reads_as_gemini_s_stream_would() {
        let mut digest = Digest::default();
        for line in STREAM.lines() {
            assert!(digest.push_line(line).is_some(), "{line}");
        }
        assert_eq!(
            digest.session_id.as_deref(),
            Some("0d4c2a9e-1111-4c2b-9f00-5e1a2b3c4d5e")
        );
        assert_eq!(digest.model.as_deref(), Some("gemini-3.5-flash-high"));
        assert_eq!(digest.turns, 1);
        assert_eq!(digest.final_text, "Two files: a.txt and b.txt.");
        assert_eq!(digest.tool_calls.len(), 1);
        let call = &digest.tool_calls[0];
        assert_eq!(
            (call.name.as_str(), call.status.as_str()),
            ("run_command", "success")
        );
        assert_eq!(call.output_excerpt.as_deref(), Some("a.txt\nb.txt"));
        assert!(digest.succeeded());
        assert_eq!(digest.total_tokens(), Some(120));
        assert!(digest.parse_errors.is_empty() && digest.unknown_events.is_empty());
    }

    #[test]
    fn a_run_whose_tools_were_all_denied_is_no_success() {
        let mut digest = Digest::default();
        digest.push_line(
            r#"{"event":"result","result":{"status":"SUCCESS","response":"","denied_actions":[{"tool":"run_command"}]}}"#,
        );
        assert!(!digest.succeeded());
        assert_eq!(digest.result.as_ref().unwrap()["status"], "denied");
        assert!(
            digest.errors[0]["message"]
                .as_str()
                .unwrap()
                .contains("--skip-permissions")
        );
        let mut cancelled = Digest::default();
        cancelled.push_line(r#"{"event":"result","result":{"status":"CANCELED"}}"#);
        assert_eq!(cancelled.result.as_ref().unwrap()["status"], "cancelled");
    }

    #[test]
    fn the_final_response_stands_when_no_text_was_streamed() {
        let mut digest = Digest::default();
        digest
            .push_line(r#"{"event":"result","result":{"status":"SUCCESS","response":"done it"}}"#);
        assert_eq!(digest.final_text, "done it");
    }

    #[test]
    fn the_stated_answer_beats_a_remark_streamed_before_a_tool() {
        let mut digest = Digest::default();
        for line in [
            r#"{"event":"step_update","step_update":{"step_index":0,"state":"DONE","step_type":"agent_response","text_delta":"Let me check."}}"#,
            r#"{"event":"step_update","step_update":{"step_index":1,"state":"DONE","step_type":"tool","tool_name":"view_file","tool_info":{"name":"view_file","parameters":{"path":"a"},"output":"x"}}}"#,
            r#"{"event":"result","result":{"status":"SUCCESS","response":"The real final answer.","structured_output":{"ok":true}}}"#,
        ] {
            digest.push_line(line);
        }
        assert_eq!(digest.final_text, "The real final answer.");
        // A call first seen done is named.
        assert_eq!(digest.tool_calls.len(), 1);
        assert_eq!(
            (
                digest.tool_calls[0].name.as_str(),
                digest.tool_calls[0].status.as_str()
            ),
            ("view_file", "success")
        );
        // What the result says beyond the digest is kept.
        assert_eq!(
            digest.unknown_fields["result"]["result"]["structured_output"]["ok"],
            true
        );
    }

    #[test]
    fn steps_running_side_by_side_are_one_call_each() {
        let mut digest = Digest::default();
        let step = |index: u32, state: &str| {
            format!(
                r#"{{"event":"step_update","step_update":{{"step_index":{index},"state":"{state}","step_type":"tool","tool_name":"run_command","tool_info":{{"error":"boom"}}}}}}"#
            )
        };
        for (index, state) in [
            (1, "ACTIVE"),
            (2, "ACTIVE"),
            (1, "ACTIVE"),
            (2, "CANCELED"),
            (1, "ERROR"),
        ] {
            digest.push_line(&step(index, state));
        }
        let calls: Vec<(&str, &str)> = digest
            .tool_calls
            .iter()
            .map(|call| (call.tool_id.as_str(), call.status.as_str()))
            .collect();
        assert_eq!(calls, [("1", "error"), ("2", "cancelled")]);
        assert_eq!(
            digest.tool_calls[0].error.as_ref().unwrap()["message"],
            "boom"
        );
    }

    #[test]
    fn an_empty_success_or_a_cancelled_run_is_no_success_and_says_why() {
        for line in [
            r#"{"event":"result","result":{"status":"SUCCESS","response":""}}"#,
            r#"{"event":"result","result":{"status":"CANCELED"}}"#,
        ] {
            let mut digest = Digest::default();
            digest.push_line(line);
            assert!(!digest.succeeded(), "{line}");
            assert!(
                digest.errors[0]["message"]
                    .as_str()
                    .unwrap()
                    .contains("--skip-permissions"),
                "{line}"
            );
        }
    }

    #[test]
    fn unknown_steps_and_events_are_kept_whole() {
        let parsed = crate::domain::events::parse_line(
            r#"{"event":"step_update","step_update":{"step_index":3,"step_type":"checkpoint","state":"DONE"}}"#,
        )
        .unwrap();
        let Event::Unknown { event } = parsed.event else {
            panic!("{parsed:?}")
        };
        assert_eq!(event["type"], "agy_step_update");
        assert_eq!(event["step_update"]["step_type"], "checkpoint");
    }
}
