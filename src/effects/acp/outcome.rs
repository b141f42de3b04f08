//! An ACP task's `result.json`: the session's turns folded into the result every task has
//! (final text, tool calls, token counts, files changed), with each turn's stop reason.

use serde_json::{Value, json};

use crate::domain::acp::session::{Session, Turn};
use crate::domain::events::ToolCall;
use crate::domain::result::TaskResult;
use crate::domain::status::Status;

/// Tool output kept in a result: enough to see what happened, not the whole of it.
const EXCERPT_CHARS: usize = 2000;

/// The result of `session`, which ended with `exit_code` (`None`: it goes on); `files_changed`
/// from the git snapshots taken when the client started and now.
pub fn result(
    session: &Session,
    exit_code: Option<i32>,
    files_changed: Option<Vec<crate::effects::git::changes::ChangedFile>>,
) -> TaskResult {
    let task_id = std::env::var(crate::effects::process::TASK_ID_VARIABLE).unwrap_or_default();
    let turns = &session.turns;
    let ended = turns.iter().any(|turn| turn.stop_reason.is_some());
    TaskResult {
        task_id,
        status: match exit_code {
            None => Status::Running,
            Some(0) if ended => Status::Completed,
            Some(_) => Status::Failed,
        },
        reason: None,
        exit_code,
        agent_session_id: session.session_id().map(str::to_string),
        model: None,
        result_event: ended,
        final_text: turns
            .iter()
            .rev()
            .find(|t| !t.text.is_empty())
            .map(|t| t.text.clone())
            .unwrap_or_default(),
        tool_calls: turns.iter().flat_map(tool_calls).collect(),
        errors: turns
            .iter()
            .filter_map(|turn| turn.error.as_ref())
            .map(|error| json!({"message": crate::domain::acp::render::shortened(error, EXCERPT_CHARS)}))
            .collect(),
        warnings: Vec::new(),
        stats: session
            .usage
            .map(|(input, output)| json!({"input_tokens": input, "output_tokens": output, "turns": turns.len()})),
        files_changed,
        submodules_changed: Vec::new(),
        parse_errors: Vec::new(),
        unknown_events: Vec::new(),
        unknown_fields: serde_json::Map::new(),
        transcript_tail: None,
        session_record: None,
        reports: Vec::new(),
        turns: turns.clone(),
        attempts: Vec::new(),
        check: None,
    }
}

fn tool_calls(turn: &Turn) -> Vec<ToolCall> {
    turn.tool_calls
        .iter()
        .map(|call| ToolCall {
            tool_id: call.id.clone(),
            name: call.title.clone().unwrap_or_default(),
            parameters: call.input.clone().unwrap_or(Value::Null),
            status: call.status.clone().unwrap_or_else(|| "pending".into()),
            output_excerpt: call
                .text
                .as_ref()
                .map(|text| text.chars().take(EXCERPT_CHARS).collect()),
            error: None,
        })
        .collect()
}
