//! A task as cuekit records it (`task.json`): everything needed to explain it after the fact.
//! Reading and writing it is the store's ([`crate::effects::store`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::pane::Socket;
use super::report::Report;
use super::spec::{Mode, TaskSpec};

/// Where a task's pane lives. The pane itself is found in a snapshot by its session (the
/// session's first pane), so the record is complete before tmux has answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TmuxPlacement {
    pub socket: Socket,
    pub session: String,
    /// Rows of the pane: the readable transcript is rendered on a screen this tall.
    pub height: u16,
}

/// `task.json`: everything needed to explain a task after the fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub id: String,
    pub spec: TaskSpec,
    pub mode: Mode,
    pub cwd: PathBuf,
    pub task_dir: PathBuf,
    pub launch_command: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux: Option<TmuxPlacement>,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// When the scheduler started its latest attempt (absent: it started at submit). Its
    /// timeout runs from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// The agent's stdout is an event stream, folded into progress and `result.json`.
    #[serde(default)]
    pub event_stream: bool,
    /// The agent's own session id, when cuekit chose it (or resumed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_from: Option<String>,
    /// The tmux pane of the submitter, when it ran inside tmux: where notifications go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_from: Option<SubmittedFrom>,
    /// The task's sandbox, for people to read (the registry's is the one applied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::domain::sandbox::Policy>,
    /// The team the task was submitted into: a label, so there is no team record to lose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// The child's latest `cuekit report` (all of them are in `events.jsonl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_report: Option<Report>,
    /// The task's own git worktree, for tasks submitted with `--worktree`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeRecord>,
    /// Where the task's check (`--check`) stands, for people to read (the registry's is the
    /// one believed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<super::check::CheckState>,
}

/// Where a `--worktree` task works and what its work is measured against: for people reading
/// `task.json`. What cuekit acts on is the registry's copy ([`crate::effects::store::WorktreePlacement`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeRecord {
    /// The checkout the task was submitted from (its `.cuekit/` holds the task's files).
    pub repo_root: PathBuf,
    pub path: PathBuf,
    pub branch: String,
    /// The base as named (`--base`, else the submitter's branch, else `HEAD`).
    pub base_ref: String,
    pub base_commit: String,
}

impl TaskRecord {
    pub fn deadline(&self) -> Option<std::time::SystemTime> {
        let started = self.started_at.as_deref().unwrap_or(&self.created_at);
        let created = humantime::parse_rfc3339(started).ok()?;
        Some(created + std::time::Duration::from_secs(self.timeout_secs?))
    }
}

/// The tmux pane a task was submitted from (the submitter's `TMUX` and `TMUX_PANE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmittedFrom {
    /// The user's own tmux server socket.
    pub socket: String,
    pub pane: String,
}

/// Ids are used as file names, so anything but the documented shape is rejected up front.
pub fn is_task_id(id: &str) -> bool {
    id.strip_prefix("t_").is_some_and(|hex| {
        hex.len() == 12
            && hex
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Waits for a slot under the limits, a dependency, or a retry's backoff: nothing of it
    /// runs yet. Stored: the scheduler starts it.
    Queued,
    Running,
    Completed,
    Failed,
    Cancelled,
    TimedOut,
    /// Running, but the child waits on a human (its `reason` says why). Only ever shown in a
    /// view, never stored: it is read off the screen at the time of asking.
    InputRequired,
    /// A record cuekit did not write (or that was changed): shown, never acted on. View only.
    Untrusted,
    /// Cannot be told now: the record is unreadable, or tmux could not be asked. View only.
    Unknown,
}

impl Status {
    /// Every status, in the order people read them (a filter's choices, a table's rows).
    pub const ALL: [Status; 9] = [
        Status::Queued,
        Status::Running,
        Status::Completed,
        Status::Failed,
        Status::Cancelled,
        Status::TimedOut,
        Status::InputRequired,
        Status::Untrusted,
        Status::Unknown,
    ];

    /// Whether the task has ended. An untrusted or unknown task has not ended as far as
    /// anyone can tell.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Status::Completed | Status::Failed | Status::Cancelled | Status::TimedOut
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
            Status::TimedOut => "timed_out",
            Status::InputRequired => "input_required",
            Status::Untrusted => "untrusted",
            Status::Unknown => "unknown",
        }
    }
}
