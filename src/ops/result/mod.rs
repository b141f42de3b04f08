//! `result.json`: what a task did, for a parent that will not read a terminal transcript.
//! Written by the event filter when an event stream ends; built on demand from the record,
//! the events and the transcript otherwise (a killed run, or a task without a stream).

mod chat;
pub(crate) mod outcome;

use std::path::Path;

use crate::domain::error::Result;
use crate::domain::events::Digest;
use crate::domain::status::Status;
use crate::effects::git::changes::ChangedFile;
use crate::effects::store::TaskRecord;
use crate::ops::result::outcome::{TaskResult, from_digest, read_events, read_written};
use crate::ops::task::route::{Route, route_one};

/// The transcript's last lines searched for the agent's resume hint.
const SESSION_HINT_LINES: usize = 200;

/// Readable transcript lines kept in the result of a task without an event stream.
const TRANSCRIPT_TAIL_LINES: usize = 40;

/// The task's result: `result.json` when the filter wrote one, else built from what is on disk.
/// The record's ending wins over the stream's: a cancelled run reads as cancelled. A host's
/// task's result is its host's.
pub fn result(task_id: &str, cwd: &Path) -> Result<TaskResult> {
    if let Route::Host(host) = route_one(task_id)? {
        let words = ["--json", "result", task_id].map(String::from);
        return crate::ops::remote::reply(&host, &words, None, cwd);
    }
    let task = crate::ops::task::open(task_id, cwd)?;
    let mut refreshed = crate::ops::judge::refresh(vec![task])?;
    // How it stands now, its screen read: a child idle at its prompt is `input_required`.
    let now = refreshed.views().remove(0);
    let task = refreshed.tasks.remove(0);
    let record = &task.record;
    let mut result = match read_written(record) {
        Some(result) => result,
        None if record.event_stream => {
            from_digest(&record.id, read_events(record)?, record.exit_code, None)
        }
        None => match chat::from_session_record(record) {
            Some(result) => result,
            None => plain_result(record)?,
        },
    };
    if record.status.is_terminal() {
        result.status = record.status;
        result.reason = record.reason.clone();
        result.exit_code = record.exit_code.or(result.exit_code);
    } else if now.status == Status::InputRequired {
        result.status = now.status;
        result.reason = now.reason;
    } else {
        result.status = Status::Running;
    }
    result.agent_session_id = result.agent_session_id.or(record.agent_session_id.clone());
    result.reports = crate::ops::report::read_reports(&record.task_dir)?;
    result.attempts = crate::effects::store::schedule::plan(&record.id)
        .map(|plan| plan.attempts)
        .filter(|attempts| attempts.len() > 1)
        .unwrap_or_default();
    result.check = record.check.clone();
    // What its sandboxed child left in your folders and cuekit made harmless at its end.
    result.warnings.extend(
        record
            .warnings
            .iter()
            .filter(|warning| warning.starts_with(crate::domain::sandbox::LEFT_NOTE))
            .map(|warning| serde_json::Value::String(warning.clone())),
    );
    if task.worktree().is_some() {
        // The branch's commits count too, which a before/after `git status` cannot see.
        result.files_changed = crate::ops::work::diff::changed_files(&task).map(|files| {
            files
                .into_iter()
                .map(|file| ChangedFile {
                    path: file.path,
                    status: file.status,
                })
                .collect()
        });
        result.submodules_changed =
            crate::ops::work::submodules::changed_of(&task).unwrap_or_default();
    }
    Ok(result)
}

/// The child's latest answer, read from files only (no tmux): its `result.json`, its event
/// stream, or its agent's own session record. `None` when it said nothing cuekit can read.
pub fn latest_answer(record: &TaskRecord) -> Option<String> {
    let result = read_written(record)
        .or_else(|| {
            record
                .event_stream
                .then(|| read_events(record).ok())
                .flatten()
                .map(|digest| from_digest(&record.id, digest, record.exit_code, None))
        })
        .or_else(|| chat::from_session_record(record))?;
    let answer = result.final_text.trim();
    (!answer.is_empty()).then(|| answer.to_string())
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
        // What the agent printed as it exited beats what the task asked for: a resumed agy
        // opens a new conversation when the id is unknown, and `/clear` or `/fork` change it.
        .or_else(|| session_in_transcript(record))
        .or_else(|| record.agent_session_id.clone())
}

/// The session id the agent printed in its exit hint (its adapter's `resume_hint`), the last
/// one in the readable transcript; only a word of letters, digits, `-` and `_` counts.
fn session_in_transcript(record: &TaskRecord) -> Option<String> {
    let hint = crate::domain::adapter::lookup(&record.spec.agent_kind)
        .ok()?
        .resume_hint?;
    // Streamed: only the transcript's last lines are kept (the hint is printed at the exit).
    let mut tail = crate::domain::display::tail::Tail::new(SESSION_HINT_LINES);
    crate::ops::logs::read_logs_of(record, false, &mut tail).ok()?;
    let text = tail.finish().join("\n");
    let (_, after) = text.rsplit_once(hint)?;
    let id: String = after
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    (!id.is_empty()).then_some(id)
}

/// A task without an event stream: its ending and the end of what it printed.
fn plain_result(record: &TaskRecord) -> Result<TaskResult> {
    // Streamed: memory holds the last lines only, whatever the transcript's size.
    let mut kept = crate::domain::display::tail::Tail::new(TRANSCRIPT_TAIL_LINES);
    crate::ops::logs::read_logs_of(record, false, &mut kept)?;
    let tail = kept.finish().join("\n");
    let mut result = from_digest(&record.id, Digest::default(), record.exit_code, None);
    result.transcript_tail = Some(tail);
    Ok(result)
}
