use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::domain::adapter::{self, Capabilities};
use crate::domain::error::Error;
use crate::domain::events::Progress;
use crate::domain::report::{Report, ReportKind};
use crate::domain::spec::Mode;
use crate::domain::status::Status;
use crate::effects::git::diff::DiffStat;
use crate::effects::store::{Placement, TaskRecord};

/// What `status`, `list`, `submit` and `wait` report about a task. Read back from a host's
/// cuekit too (same version, by the handshake), so it deserializes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskView {
    pub id: String,
    pub agent_kind: String,
    /// `None` only for a row whose record could not be read.
    pub mode: Option<Mode>,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub warnings: Vec<String>,
    pub objective: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Filled from this build's adapter table when read from a host (`&'static` data).
    #[serde(skip_deserializing)]
    pub capabilities: Option<Capabilities>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attach_hint: Option<String>,
    pub transcript: PathBuf,
    pub task_dir: PathBuf,
    pub launch_command: String,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// For a running task with an event stream, in `status`: turns, tool calls, tokens, last
    /// activity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<Progress>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// For a task whose pane is gone: the pids of its processes still alive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub survivors: Option<Vec<u32>>,
    /// Its ending is on record (a cancel or timeout) but its processes are still being ended.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopping: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The child's latest `cuekit report`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_report: Option<Box<Report>>,
    /// The latest report says the child is blocked: it waits on the parent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocked: bool,
    /// Its sandbox: `bwrap` (`bwrap, no network`) or `agent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// For a task in its own worktree: its branch, folder and base.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_ref: Option<String>,
    /// Its work against the base commit (`status` and `list`; `cuekit diff` for the files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_stat: Option<DiffStat>,
    /// Whose work it would conflict with, from the last conflict check (`t_…`, `target <branch>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    /// The configured host the task runs on; absent for a task on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// An ACP task's permission request that waits for an answer (`cuekit approve`): the tool
    /// call and the options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Box<crate::domain::acp::session::Pending>>,
    /// What a queued task waits for, and a task's attempts under its retry policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<Box<QueueView>>,
    /// `checking` while a running task's check runs (its status stays `running`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Where the task's check (`--check`) stands: round k of N, every verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Box<CheckView>>,
}

/// A task's check as views show it: a line for people, then the state as recorded.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CheckView {
    pub summary: String,
    /// The work moved on since its passing check: what passed is the checked commit
    /// (`merge` takes that one), not the checkout as it is now.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub changed_since_check: bool,
    #[serde(flatten)]
    pub state: crate::domain::check::CheckState,
}

impl TaskView {
    /// A row for a record cuekit will not act on: what it says, marked `untrusted`.
    pub(crate) fn untrusted(
        id: &str,
        task_dir: &std::path::Path,
        record: Option<&TaskRecord>,
        why: &str,
    ) -> TaskView {
        let mut view = match record {
            Some(record) => TaskView::from(record),
            None => TaskView::bare(id, task_dir),
        };
        view.id = id.to_string();
        view.task_dir = task_dir.to_path_buf();
        view.status = Status::Untrusted;
        view.reason = Some("untrusted".into());
        view.hint = Some(format!("{why}; {}", crate::ops::task::UNTRUSTED_HINT));
        view.attach_hint = None;
        view.capabilities = None;
        view
    }

    /// A row for a registered task whose record cannot be read.
    pub(crate) fn unreadable(placement: &Placement, error: &Error) -> TaskView {
        let mut view = TaskView::bare(&placement.id, &placement.task_dir);
        view.status = Status::Unknown;
        view.reason = Some(error.code.as_str().to_string());
        view.hint = Some(match &error.hint {
            Some(hint) => format!("{}; {hint}", error.message),
            None => error.message.clone(),
        });
        view.created_at = placement.created_at.clone();
        view
    }

    /// A host's task whose host did not answer: the registry's placement, status `unknown`.
    pub(crate) fn host_unreachable(placement: &Placement, host: &str, error: &Error) -> TaskView {
        let mut view = TaskView::bare(&placement.id, &placement.task_dir);
        view.reason = Some("host_unreachable".into());
        view.hint = Some(error.message.clone());
        view.created_at = placement.created_at.clone();
        view.host = Some(host.to_string());
        view
    }

    /// A view read back from a host: capabilities from this build's table, the host named.
    pub(crate) fn on_host(mut self, host: &str) -> TaskView {
        self.capabilities = adapter::lookup(&self.agent_kind)
            .ok()
            .zip(self.mode)
            .map(|(adapter, mode)| adapter.task_capabilities(mode));
        self.host = Some(host.to_string());
        // The host's tmux command means nothing here: `cuekit attach` goes through ssh.
        self.attach_hint = None;
        self
    }

    /// A view that knows only the task's id and directory: the start of every other.
    pub(crate) fn bare(id: &str, task_dir: &std::path::Path) -> TaskView {
        TaskView {
            id: id.to_string(),
            agent_kind: String::new(),
            mode: None,
            status: Status::Unknown,
            reason: None,
            hint: None,
            exit_code: None,
            warnings: Vec::new(),
            objective: String::new(),
            model: None,
            capabilities: None,
            attach_hint: None,
            transcript: task_dir.join(crate::effects::store::TRANSCRIPT_FILE),
            task_dir: task_dir.to_path_buf(),
            launch_command: String::new(),
            created_at: String::new(),
            ended_at: None,
            progress: None,
            agent_session_id: None,
            survivors: None,
            stopping: false,
            team: None,
            role: None,
            last_report: None,
            blocked: false,
            sandbox: None,
            branch: None,
            worktree: None,
            base_ref: None,
            diff_stat: None,
            conflicts: Vec::new(),
            host: None,
            request: None,
            queue: None,
            phase: None,
            check: None,
        }
    }
}

impl From<&TaskRecord> for TaskView {
    fn from(record: &TaskRecord) -> Self {
        let capabilities = adapter::lookup(&record.spec.agent_kind)
            .ok()
            .map(|adapter| {
                let mut capabilities = adapter.task_capabilities(record.mode);
                // An event stream is what makes progress visible while the task runs.
                capabilities.supports_live_progress |= record.event_stream;
                capabilities
            });
        TaskView {
            id: record.id.clone(),
            agent_kind: record.spec.agent_kind.clone(),
            mode: Some(record.mode),
            status: record.status,
            reason: record.reason.clone(),
            hint: record.hint.clone(),
            exit_code: record.exit_code,
            warnings: record.warnings.clone(),
            objective: record.spec.objective.clone(),
            model: record.spec.model.clone(),
            capabilities,
            attach_hint: record
                .tmux
                .as_ref()
                .map(|tmux| tmux.socket.attach_command(&tmux.session)),
            transcript: crate::effects::store::transcript_path(record),
            task_dir: record.task_dir.clone(),
            launch_command: record.launch_command.clone(),
            created_at: record.created_at.clone(),
            ended_at: record.ended_at.clone(),
            progress: None,
            agent_session_id: record.agent_session_id.clone(),
            survivors: None,
            stopping: false,
            team: record.team.clone(),
            role: record.spec.role.clone(),
            last_report: record.last_report.clone().map(Box::new),
            blocked: record
                .last_report
                .as_ref()
                .is_some_and(|r| r.kind == ReportKind::Blocked),
            sandbox: record.sandbox.as_ref().map(|policy| match policy.network {
                crate::domain::sandbox::Network::Off => {
                    format!("{}, no network", policy.mode.as_str())
                }
                crate::domain::sandbox::Network::On => policy.mode.as_str().to_string(),
            }),
            branch: record.worktree.as_ref().map(|w| w.branch.clone()),
            worktree: record.worktree.as_ref().map(|w| w.path.clone()),
            base_ref: record.worktree.as_ref().map(|w| w.base_ref.clone()),
            diff_stat: None,
            conflicts: Vec::new(),
            host: None,
            request: None,
            queue: None,
            phase: record
                .check
                .as_ref()
                .filter(|check| {
                    record.status == Status::Running
                        && check.phase == crate::domain::check::Phase::Checking
                })
                .map(|_| "checking".to_string()),
            check: record.check.as_ref().map(|state| {
                Box::new(CheckView {
                    summary: state.summary(),
                    changed_since_check: false,
                    state: state.clone(),
                })
            }),
        }
    }
}

/// What a queued task waits for, as `status`, `list` and MCP show it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueView {
    /// 1 is next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<usize>,
    /// Dependencies that have not completed yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waiting_for: Vec<String>,
    /// The cap that holds it back, with its count (`agents.gemini 4/4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<String>,
    #[serde(default)]
    pub priority: i32,
    /// Attempts started so far, and the most there may be.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts_max: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<crate::effects::store::schedule::Attempt>,
    /// The attempt as a line: `attempt 3 of 4: codex, after gemini rate_limited, resets 02:40`
    /// (for a queued task, the attempt it waits to start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
