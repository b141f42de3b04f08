//! What a task came to, as `result.json` holds it: written by the event filter or the ACP
//! client, read by `result`, the judge and the faces.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::events::{ParseError, ToolCall};
use super::report::Report;
use super::status::Status;

pub const RESULT_FILE: &str = "result.json";

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
    /// The submodules a worktree task changed (their commits or files), which a merge refuses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub submodules_changed: Vec<String>,
    pub parse_errors: Vec<ParseError>,
    pub unknown_events: Vec<Value>,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub unknown_fields: serde_json::Map<String, Value>,
    /// For tasks without an event stream: the end of the readable transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_tail: Option<String>,
    /// An interactive child's own session record (Gemini's chat file) that its answer, tool
    /// calls and tokens were read from: the child's words, not cuekit's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_record: Option<std::path::PathBuf>,
    /// Everything the child said with `cuekit report`, oldest first.
    #[serde(default)]
    pub reports: Vec<Report>,
    /// An ACP task's turns: each prompt, its answer, tool calls and stop reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<super::acp::session::Turn>,
    /// A task the scheduler started more than once: each attempt's start, end, reason and
    /// exit code (this result is the latest attempt's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// The task's check (`--check`): its rounds, phase and every verdict, as the registry
    /// holds them (never as a result file says).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<super::check::CheckState>,
}

/// A file the task changed, as git tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ChangedFile {
    /// Relative to the repository root.
    pub path: String,
    /// `git status --porcelain` code after the run (`??`, ` M`, `A `, …), or `  ` if the file is
    /// clean again.
    pub status: String,
}

/// One start of a task and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub started_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The agent (and model) this attempt ran, where a failover or a hand-off changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// When the agent said its limit resets (HH:MM UTC), for an attempt ended rate_limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resets: Option<String>,
    /// How long the task's transcript was when this attempt's pane started: its ending is
    /// judged on what it printed after (never on an earlier attempt's words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_from: Option<u64>,
}
