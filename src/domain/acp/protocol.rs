//! ACP's wire: JSON-RPC 2.0, one message a line. What cuekit sends is built here; what it
//! receives is classified here and read into the few typed shapes the client acts on. Anything
//! else an agent sends is kept (in `events.jsonl`) but never acted on, so an agent newer than
//! this client still works.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::policy::ToolKind;

/// The protocol version this client speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// A message from the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to one of the client's requests.
    Response {
        id: u64,
        outcome: std::result::Result<Value, RpcError>,
    },
    /// The agent asks the client something (a permission, a file).
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// The agent tells the client something (a session update).
    Notification { method: String, params: Value },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// Reads one line the agent wrote; `Err` says what is wrong with it.
pub fn parse_line(line: &str) -> std::result::Result<Incoming, String> {
    let value: Value = serde_json::from_str(line).map_err(|err| format!("not JSON: {err}"))?;
    let object = value.as_object().ok_or("not a JSON-RPC object")?;
    let method = object.get("method").and_then(Value::as_str);
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    match (method, object.get("id")) {
        (Some(method), Some(id)) if !id.is_null() => Ok(Incoming::Request {
            id: id.clone(),
            method: method.to_string(),
            params,
        }),
        (Some(method), _) => Ok(Incoming::Notification {
            method: method.to_string(),
            params,
        }),
        (None, Some(id)) => {
            let id = id
                .as_u64()
                .ok_or("a response to an id this client never sent")?;
            let outcome = match object.get("error") {
                Some(error) => Err(serde_json::from_value(error.clone())
                    .map_err(|err| format!("an error object that does not parse: {err}"))?),
                None => Ok(object.get("result").cloned().unwrap_or(Value::Null)),
            };
            Ok(Incoming::Response { id, outcome })
        }
        (None, None) => Err("neither a request, a notification nor a response".into()),
    }
}

/// A request of the client's, as one line.
pub fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

pub fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

pub fn response(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

pub fn error_response(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// `initialize`: this client reads and writes no files and runs no terminals for the agent; the
/// agent uses its own tools.
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
        "clientInfo": {"name": "cuekit", "version": env!("CARGO_PKG_VERSION")},
    })
}

pub fn prompt_params(session_id: &str, text: &str) -> Value {
    json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
}

/// What `initialize` answered that the client needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Initialized {
    pub protocol_version: Option<u64>,
    pub load_session: bool,
    pub agent: Option<String>,
}

pub fn initialized(result: &Value) -> Initialized {
    Initialized {
        protocol_version: result.get("protocolVersion").and_then(Value::as_u64),
        load_session: result
            .pointer("/agentCapabilities/loadSession")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        agent: result
            .pointer("/agentInfo/name")
            .and_then(Value::as_str)
            .map(
                |name| match result.pointer("/agentInfo/version").and_then(Value::as_str) {
                    Some(version) => format!("{name} {version}"),
                    None => name.to_string(),
                },
            ),
    }
}

/// A session the agent made (`session/new`) or loaded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionInfo {
    pub session_id: Option<String>,
    pub modes: Vec<String>,
    pub current_mode: Option<String>,
    pub models: Vec<String>,
}

pub fn session_info(result: &Value) -> SessionInfo {
    let ids = |pointer: &str, key: &str| -> Vec<String> {
        result
            .pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.get(key)?.as_str().map(str::to_string))
            .collect()
    };
    SessionInfo {
        session_id: result
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_string),
        modes: ids("/modes/availableModes", "id"),
        current_mode: result
            .pointer("/modes/currentModeId")
            .and_then(Value::as_str)
            .map(str::to_string),
        models: ids("/models/availableModels", "modelId"),
    }
}

/// A tool call as the agent describes it (`tool_call`, `tool_call_update`, and the `toolCall`
/// of a permission request); an update carries only what changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Text of its content (output, a description), joined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Files it touches: its locations and the paths of its diffs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Its input as the agent gave it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
}

pub fn tool_call(value: &Value) -> ToolCall {
    let text_of = |content: &Value| -> Option<String> {
        let texts: Vec<&str> = content
            .as_array()?
            .iter()
            .filter_map(|block| {
                // `{type: content, content: {type: text, text}}`, or a bare text block.
                let inner = block.get("content").unwrap_or(block);
                inner.get("text")?.as_str()
            })
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    };
    let mut paths: Vec<String> = value
        .get("locations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|l| l.get("path")?.as_str().map(str::to_string))
        .collect();
    paths.extend(
        value
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("diff"))
            .filter_map(|block| block.get("path")?.as_str().map(str::to_string)),
    );
    paths.dedup();
    ToolCall {
        id: value
            .get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        kind: value
            .get("kind")
            .and_then(Value::as_str)
            .map(ToolKind::parse),
        title: value
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_string),
        status: value
            .get("status")
            .and_then(Value::as_str)
            .map(str::to_string),
        text: value.get("content").and_then(text_of),
        paths,
        input: value.get("rawInput").cloned(),
    }
}

/// One choice of a permission request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionOption {
    pub id: String,
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once`, `reject_always`.
    pub kind: String,
}

pub fn permission_options(params: &Value) -> Vec<PermissionOption> {
    params
        .get("options")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|option| {
            Some(PermissionOption {
                id: option.get("optionId")?.as_str()?.to_string(),
                name: option
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                kind: option
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            })
        })
        .collect()
}

/// The answer to a permission request: the option chosen, or none (the turn was cancelled).
pub fn permission_outcome(option: Option<&str>) -> Value {
    match option {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => json!({"outcome": {"outcome": "cancelled"}}),
    }
}

/// A `session/update` notification, as far as the client reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    AgentText(String),
    Thought(String),
    UserText(String),
    ToolCall(ToolCall),
    ToolCallUpdate(ToolCall),
    Plan(Vec<(String, String)>),
    ModeChanged(String),
    /// Anything else (available commands, a kind this client does not know).
    Other(String),
}

pub fn update(params: &Value) -> Option<Update> {
    let update = params.get("update")?;
    let kind = update.get("sessionUpdate")?.as_str()?;
    let text = || {
        update
            .pointer("/content/text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    Some(match kind {
        "agent_message_chunk" => Update::AgentText(text()),
        "agent_thought_chunk" => Update::Thought(text()),
        "user_message_chunk" => Update::UserText(text()),
        "tool_call" => Update::ToolCall(tool_call(update)),
        "tool_call_update" => Update::ToolCallUpdate(tool_call(update)),
        "plan" => Update::Plan(
            update
                .get("entries")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|entry| {
                    Some((
                        entry.get("status")?.as_str()?.to_string(),
                        entry.get("content")?.as_str()?.to_string(),
                    ))
                })
                .collect(),
        ),
        "current_mode_update" => Update::ModeChanged(
            update
                .get("currentModeId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        ),
        other => Update::Other(other.to_string()),
    })
}

/// Token counts a prompt's result reports (Gemini puts them in `_meta.quota.token_count`; the
/// protocol's own `usage` where an agent sends it).
pub fn usage(result: &Value) -> Option<(u64, u64)> {
    let counts = result
        .pointer("/_meta/quota/token_count")
        .or_else(|| result.get("usage"))?;
    let field = |names: &[&str]| {
        names
            .iter()
            .find_map(|name| counts.get(*name).and_then(Value::as_u64))
    };
    Some((
        field(&["input_tokens", "inputTokens"])?,
        field(&["output_tokens", "outputTokens"]).unwrap_or(0),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines the real `gemini --acp` (0.61.0) wrote in an offline turn with a canned tool call.
    const PERMISSION: &str = r#"{"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {"sessionId": "c56f", "options": [{"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"}, {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"}, {"optionId": "cancel", "name": "Reject", "kind": "reject_once"}], "toolCall": {"toolCallId": "run_shell_command_1", "status": "pending", "title": "echo hi > f.txt", "content": [{"type": "content", "content": {"type": "text", "text": "[current working directory /w] (write f)"}}], "locations": [], "kind": "execute"}}}"#;

    #[test]
    fn lines_are_classified_and_read() {
        let Incoming::Request { id, method, params } = parse_line(PERMISSION).unwrap() else {
            panic!("a request");
        };
        assert_eq!(
            (id, method.as_str()),
            (json!(0), "session/request_permission")
        );
        let call = tool_call(&params["toolCall"]);
        assert_eq!(call.kind, Some(ToolKind::Execute));
        assert_eq!(call.title.as_deref(), Some("echo hi > f.txt"));
        assert_eq!(
            call.text.as_deref(),
            Some("[current working directory /w] (write f)")
        );
        let options = permission_options(&params);
        assert_eq!(options[1].id, "proceed_once");
        assert_eq!(options[2].kind, "reject_once");

        let done = r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":20,"output_tokens":10}}}}}"#;
        let Incoming::Response {
            id: 3,
            outcome: Ok(result),
        } = parse_line(done).unwrap()
        else {
            panic!("a response");
        };
        assert_eq!(usage(&result), Some((20, 10)));
        let failed = r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Gemini API key is missing or not configured."}}"#;
        let Incoming::Response {
            outcome: Err(error),
            ..
        } = parse_line(failed).unwrap()
        else {
            panic!("an error");
        };
        assert_eq!(error.code, -32000);
        let chunk = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"c","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Done."}}}}"#;
        let Incoming::Notification { params, .. } = parse_line(chunk).unwrap() else {
            panic!("a notification");
        };
        assert_eq!(update(&params), Some(Update::AgentText("Done.".into())));
        for bad in [
            "",
            "[]",
            "{\"jsonrpc\":\"2.0\"}",
            "{\"id\":\"x\",\"result\":1}",
            "nope",
        ] {
            assert!(parse_line(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_new_session_tells_its_modes_and_models() {
        let result = json!({"sessionId": "s1", "modes": {"availableModes": [{"id": "default"}, {"id": "yolo"}], "currentModeId": "default"}, "models": {"availableModels": [{"modelId": "gemini-2.5-pro"}]}});
        let info = session_info(&result);
        assert_eq!(info.session_id.as_deref(), Some("s1"));
        assert_eq!(info.modes, ["default", "yolo"]);
        assert_eq!(info.models, ["gemini-2.5-pro"]);
        let init = initialized(
            &json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}, "agentInfo": {"name": "gemini-cli", "version": "0.61.0"}}),
        );
        assert_eq!(init.protocol_version, Some(1));
        assert!(init.load_session);
        assert_eq!(init.agent.as_deref(), Some("gemini-cli 0.61.0"));
    }
}
