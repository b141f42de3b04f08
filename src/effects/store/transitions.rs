//! The transitions log: one JSON line per transition of any task, appended by the monitors
//! (`~/.local/share/cuekit/transitions.jsonl`), read by `cuekit events` and MCP `next_event`.
//! Each line is one `write` on an `O_APPEND` file, so lines from several monitors never mix. A log
//! past its size limit is moved aside to `transitions.jsonl.1` (one generation kept).

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::domain::error::{Error, Result};
use crate::domain::status::Status;

const LOG_FILE: &str = "transitions.jsonl";
const ROTATE_AT: u64 = 8 * 1024 * 1024;

/// One transition, as announced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransitionEvent {
    pub at: String,
    pub task_id: String,
    pub agent: String,
    pub old_status: Option<Status>,
    pub new_status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub task_dir: PathBuf,
    /// The first 200 characters.
    pub objective: String,
    /// A `conflict` transition (reason `conflict`, the status unchanged): the monitor found
    /// this task's work conflicting with another's or its target branch's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict: Option<ConflictNote>,
}

/// What a `conflict` transition found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictNote {
    /// The other task's id, or `target <branch>`.
    pub with: String,
    pub files: Vec<crate::effects::git::conflicts::ConflictFile>,
}

pub fn log_path() -> Option<PathBuf> {
    super::data_dir().map(|dir| dir.join(LOG_FILE))
}

pub fn append(event: &TransitionEvent) -> Result<()> {
    let path = log_path()
        .ok_or_else(|| Error::new(crate::domain::error::ErrorCode::Io, "no home directory"))?;
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > ROTATE_AT) {
        let _ = std::fs::rename(&path, path.with_extension("jsonl.1"));
    }
    super::append_line(&path, &serde_json::to_vec(event).expect("events serialize"))
}

/// The events after byte `offset` of the log, and the offset after them. An offset past the
/// end (the log was moved aside) starts over from the beginning.
pub fn read_from(offset: u64) -> Result<(Vec<TransitionEvent>, u64)> {
    let Some(path) = log_path() else {
        return Ok((Vec::new(), 0));
    };
    let mut file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(err) => return Err(Error::io("read", &path, err)),
    };
    let len = file
        .metadata()
        .map_err(|err| Error::io("read", &path, err))?
        .len();
    let start = if offset > len { 0 } else { offset };
    file.seek(SeekFrom::Start(start))
        .map_err(|err| Error::io("read", &path, err))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|err| Error::io("read", &path, err))?;
    // Only whole lines: a line being written is read next time.
    let whole = bytes
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let events = bytes[..whole]
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect();
    Ok((events, start + whole as u64))
}

/// The log's current end: where a reader that wants only new events starts.
pub fn end() -> u64 {
    log_path()
        .and_then(|path| std::fs::metadata(path).ok())
        .map_or(0, |m| m.len())
}
