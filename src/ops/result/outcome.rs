//! `result.json` and the event stream as files: the result type, how a stream's events fold
//! into it, and what a finished stream reported. Read by the judge (is an exit 0 a success?),
//! written by the event filter, served by `result`.

use std::path::Path;

use serde_json::Value;

use crate::domain::error::{Error, Result};
use crate::domain::events::Digest;
pub use crate::domain::result::{RESULT_FILE, TaskResult};
use crate::domain::status::{Status, StreamReport};
use crate::effects::git::changes::ChangedFile;
use crate::effects::store::{self, TaskRecord};

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
        submodules_changed: Vec::new(),
        parse_errors: digest.parse_errors,
        unknown_events: digest.unknown_events,
        unknown_fields: digest.unknown_fields,
        transcript_tail: None,
        session_record: None,
        reports: Vec::new(),
        turns: Vec::new(),
        attempts: Vec::new(),
        check: None,
    }
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

/// The final text of the result written in `task_dir`, if one was written (an event stream's
/// or an ACP task's).
pub fn written_final_text(task_dir: &Path) -> Option<String> {
    let bytes = store::read_small(&task_dir.join(RESULT_FILE)).ok()?;
    let result: TaskResult = serde_json::from_slice(&bytes).ok()?;
    Some(result.final_text).filter(|text| !text.is_empty())
}

/// `result.json` as the event filter wrote it.
pub(crate) fn read_written(record: &TaskRecord) -> Option<TaskResult> {
    serde_json::from_slice(&store::read_small(&record.task_dir.join(RESULT_FILE)).ok()?).ok()
}

/// Folds the task's `events.jsonl` (the raw stream) into a digest.
pub(crate) fn read_events(record: &TaskRecord) -> Result<Digest> {
    let path = record.task_dir.join(store::EVENTS_FILE);
    let mut digest = Digest::default();
    let file = match store::open_own(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(digest),
        Err(err) => return Err(Error::io("read", &path, err)),
    };
    // Streamed, each line bounded: the log is the child's to write.
    store::for_each_line(file, |line| {
        digest.push_line(&String::from_utf8_lossy(line));
    })
    .map_err(|err| Error::io("read", &path, err))?;
    Ok(digest)
}
