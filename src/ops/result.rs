//! `result.json`: what a task did, for a parent that will not read a terminal transcript.
//! Written by the event filter when an event stream ends; built on demand from the record,
//! the events and the transcript otherwise (a killed run, or a task without a stream).

use std::io::BufRead;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::events::{Digest, ParseError, ToolCall};
use crate::git::changes::ChangedFile;
use crate::status::{Status, StreamReport};
use crate::store::{self, TaskRecord};

pub const RESULT_FILE: &str = "result.json";
/// Readable transcript lines kept in the result of a task without an event stream.
const TRANSCRIPT_TAIL_LINES: usize = 40;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskResult {
    pub task_id: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub exit_code: Option<i32>,
    pub agent_session_id: Option<String>,
    pub model: Option<String>,
    /// Whether the agent reported the end of its run (Gemini's `result` event). A run that
    /// did not is never a success.
    pub result_event: bool,
    pub final_text: String,
    pub tool_calls: Vec<ToolCall>,
    pub errors: Vec<Value>,
    pub warnings: Vec<Value>,
    /// Token use per model and in total, duration, tool call count, as the agent reported them.
    pub stats: Option<Value>,
    /// `None` when the working directory is not a git work tree (or the run was killed).
    pub files_changed: Option<Vec<ChangedFile>>,
    pub parse_errors: Vec<ParseError>,
    pub unknown_events: Vec<Value>,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub unknown_fields: serde_json::Map<String, Value>,
    /// For tasks without an event stream: the end of the readable transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_tail: Option<String>,
}

/// The status a stream implies: success needs both exit 0 and the agent's own success report.
pub fn stream_status(digest: &Digest, exit_code: Option<i32>) -> Status {
    match exit_code {
        None => Status::Running,
        Some(0) if digest.succeeded() => Status::Completed,
        Some(_) => Status::Failed,
    }
}

pub fn from_digest(
    task_id: &str,
    digest: Digest,
    exit_code: Option<i32>,
    files_changed: Option<Vec<ChangedFile>>,
) -> TaskResult {
    let result = digest.result.clone().unwrap_or(Value::Null);
    TaskResult {
        task_id: task_id.to_string(),
        status: stream_status(&digest, exit_code),
        reason: None,
        exit_code,
        agent_session_id: digest.session_id.clone(),
        model: digest.model.clone(),
        result_event: digest.result.is_some(),
        stats: result.get("stats").filter(|s| !s.is_null()).cloned(),
        final_text: digest.final_text,
        tool_calls: digest.tool_calls,
        errors: digest.errors,
        warnings: digest.warnings,
        files_changed,
        parse_errors: digest.parse_errors,
        unknown_events: digest.unknown_events,
        unknown_fields: digest.unknown_fields,
        transcript_tail: None,
    }
}

/// The task's result: `result.json` when the filter wrote one, else built from what is on disk.
/// The record's ending wins over the stream's: a cancelled run reads as cancelled.
pub fn result(task_id: &str, cwd: &Path) -> Result<TaskResult> {
    let record = super::open(task_id, cwd)?;
    let record = super::refresh::refresh(vec![record])?.records.remove(0);
    let mut result = match read_written(&record) {
        Some(result) => result,
        None if record.event_stream => {
            from_digest(&record.id, read_events(&record)?, record.exit_code, None)
        }
        None => plain_result(&record)?,
    };
    if record.status.is_terminal() {
        result.status = record.status;
        result.reason = record.reason.clone();
        result.exit_code = record.exit_code.or(result.exit_code);
    } else {
        result.status = Status::Running;
    }
    result.agent_session_id = result.agent_session_id.or(record.agent_session_id.clone());
    if record.worktree.is_some() {
        // The branch's commits count too, which a before/after `git status` cannot see.
        result.files_changed = super::diff::changed_files(&record).map(|files| {
            files
                .into_iter()
                .map(|file| ChangedFile {
                    path: file.path,
                    status: file.status,
                })
                .collect()
        });
    }
    Ok(result)
}

/// What a finished event stream reported, for judging an exit 0.
pub(crate) fn stream_report(record: &TaskRecord) -> StreamReport {
    let Some(result) = read_written(record) else {
        return StreamReport::Unfinished;
    };
    let error_message = || {
        result
            .errors
            .last()
            .and_then(|e| e["message"].as_str())
            .map_or_else(|| "the agent reported an error".to_string(), String::from)
    };
    match (result.result_event, result.status) {
        (false, _) => StreamReport::Unfinished,
        (true, Status::Completed) => StreamReport::Succeeded,
        (true, _) => StreamReport::Failed(error_message()),
    }
}

/// The agent session a task ran in, as far as cuekit knows.
pub fn agent_session(record: &TaskRecord) -> Option<String> {
    read_written(record)
        .and_then(|result| result.agent_session_id)
        .or_else(|| {
            record
                .event_stream
                .then(|| read_events(record).ok()?.session_id)
                .flatten()
        })
        .or_else(|| record.agent_session_id.clone())
}

/// `result.json` as the event filter wrote it.
fn read_written(record: &TaskRecord) -> Option<TaskResult> {
    serde_json::from_slice(&std::fs::read(record.task_dir.join(RESULT_FILE)).ok()?).ok()
}

/// Folds the task's `events.jsonl` (the raw stream) into a digest.
pub(crate) fn read_events(record: &TaskRecord) -> Result<Digest> {
    let path = record.task_dir.join(store::EVENTS_FILE);
    let mut digest = Digest::default();
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(digest),
        Err(err) => return Err(Error::io("read", &path, err)),
    };
    for line in std::io::BufReader::new(file).split(b'\n') {
        let line = line.map_err(|err| Error::io("read", &path, err))?;
        digest.push_line(&String::from_utf8_lossy(&line));
    }
    Ok(digest)
}

/// A task without an event stream: its ending and the end of what it printed.
fn plain_result(record: &TaskRecord) -> Result<TaskResult> {
    let mut readable = Vec::new();
    super::logs::read_logs_of(record, false, &mut readable)?;
    let text = String::from_utf8_lossy(&readable);
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(TRANSCRIPT_TAIL_LINES)..].join("\n");
    let mut result = from_digest(&record.id, Digest::default(), record.exit_code, None);
    result.transcript_tail = Some(tail);
    Ok(result)
}
