//! Typed errors with stable codes. The code string and the process exit status of each
//! code are public API (docs/reference.md "Exit codes"): scripts and AI parents branch on them.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    Internal,
    Usage,
    InvalidInput,
    TaskNotFound,
    InvalidState,
    SteeringUnsupported,
    AgentNotFound,
    TmuxUnavailable,
    TmuxFailed,
    StoreCorrupt,
    Io,
    ConfigInvalid,
    Untrusted,
    ConfigUntrusted,
    TaskFailed,
    WaitTimeout,
    NotTaskPane,
    MergeConflict,
    /// A command that draws on or hands over a terminal (`top`, `submit --attach`) has none.
    NotATerminal,
    /// A configured host did not answer over SSH within the deadline (or refused the login).
    HostUnreachable,
    /// The host's cuekit is another version: its replies cannot be read safely.
    HostVersionMismatch,
    /// Project data cuekit will not read or pass on: a file that is a link out of the project
    /// or not a regular file of this user's, or a name of an unsafe shape (`.gitmodules`).
    UnsafeProjectData,
    /// A command that must come from outside a task (steering an ACP task, answering its
    /// permission request) was run inside that task's own pane.
    InsideTask,
    /// `--wake-parent` from a submitter that is not an agent in the foreground of a tmux pane.
    NoParentAgent,
    /// `--sandbox` where no sandbox can be made (no bubblewrap, no user namespaces, an agent
    /// without a sandbox of its own): nothing was started.
    SandboxUnavailable,
    /// A git call on a task's tree or repository outlived its deadline and was killed: the
    /// work there is unknown (a FIFO where git expects a file, a huge tree).
    GitTimedOut,
    /// `cuekit merge` of work that changes files which run code or set policy, without `--yes`:
    /// nothing was changed.
    MergeReview,
    /// `cuekit check` ran a task's check and it failed (the verdict is recorded).
    CheckFailed,
    /// `rm`/`prune` kept a task because its checkout, git dir or submodules hold work nothing
    /// else keeps (or that could not be inspected); what was removable was removed.
    WorkKept,
    /// `cuekit merge` of work that changed submodules (their commits or files): a merge cannot
    /// carry them yet; nothing was changed.
    SubmoduleWork,
    /// A program cuekit ran (a probe, a notifier, a hook's shell) outlived its deadline and
    /// was killed with its process group (`effects::bounded`).
    ProcessTimedOut,
    /// A program cuekit ran printed more than the output it keeps, and its whole output was
    /// needed (`effects::bounded`).
    ProcessOutputTooLarge,
    /// `cuekit serve`'s port is held by another process on an address it names (for
    /// `localhost`, 127.0.0.1 or ::1): nothing was served.
    PortTaken,
    /// `cuekit serve` refused a state-changing request (or an event stream's start) that the
    /// session's device key did not sign over a fresh nonce of this run: a cookie alone acts
    /// on nothing.
    UnsignedRequest,
}

impl ErrorCode {
    /// Every code, for reading one back from its string (a host's cuekit's JSON error).
    pub const ALL: [ErrorCode; 34] = [
        ErrorCode::Internal,
        ErrorCode::Usage,
        ErrorCode::InvalidInput,
        ErrorCode::TaskNotFound,
        ErrorCode::InvalidState,
        ErrorCode::SteeringUnsupported,
        ErrorCode::AgentNotFound,
        ErrorCode::TmuxUnavailable,
        ErrorCode::TmuxFailed,
        ErrorCode::StoreCorrupt,
        ErrorCode::Io,
        ErrorCode::ConfigInvalid,
        ErrorCode::Untrusted,
        ErrorCode::ConfigUntrusted,
        ErrorCode::TaskFailed,
        ErrorCode::WaitTimeout,
        ErrorCode::NotTaskPane,
        ErrorCode::MergeConflict,
        ErrorCode::NotATerminal,
        ErrorCode::HostUnreachable,
        ErrorCode::HostVersionMismatch,
        ErrorCode::UnsafeProjectData,
        ErrorCode::InsideTask,
        ErrorCode::NoParentAgent,
        ErrorCode::SandboxUnavailable,
        ErrorCode::GitTimedOut,
        ErrorCode::MergeReview,
        ErrorCode::CheckFailed,
        ErrorCode::WorkKept,
        ErrorCode::SubmoduleWork,
        ErrorCode::ProcessTimedOut,
        ErrorCode::ProcessOutputTooLarge,
        ErrorCode::PortTaken,
        ErrorCode::UnsignedRequest,
    ];

    pub fn parse(code: &str) -> Option<ErrorCode> {
        ErrorCode::ALL
            .into_iter()
            .find(|known| known.as_str() == code)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Internal => "internal",
            ErrorCode::Usage => "usage",
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::TaskNotFound => "task_not_found",
            ErrorCode::InvalidState => "invalid_state",
            ErrorCode::SteeringUnsupported => "steering_unsupported",
            ErrorCode::AgentNotFound => "agent_not_found",
            ErrorCode::TmuxUnavailable => "tmux_unavailable",
            ErrorCode::TmuxFailed => "tmux_failed",
            ErrorCode::StoreCorrupt => "store_corrupt",
            ErrorCode::Io => "io",
            ErrorCode::ConfigInvalid => "config_invalid",
            ErrorCode::Untrusted => "untrusted",
            ErrorCode::ConfigUntrusted => "config_untrusted",
            ErrorCode::TaskFailed => "task_failed",
            ErrorCode::WaitTimeout => "wait_timeout",
            ErrorCode::NotTaskPane => "not_task_pane",
            ErrorCode::MergeConflict => "merge_conflict",
            ErrorCode::NotATerminal => "not_a_terminal",
            ErrorCode::HostUnreachable => "host_unreachable",
            ErrorCode::HostVersionMismatch => "host_version_mismatch",
            ErrorCode::UnsafeProjectData => "unsafe_project_data",
            ErrorCode::InsideTask => "inside_task",
            ErrorCode::NoParentAgent => "no_parent_agent",
            ErrorCode::SandboxUnavailable => "sandbox_unavailable",
            ErrorCode::GitTimedOut => "git_timed_out",
            ErrorCode::MergeReview => "merge_review",
            ErrorCode::CheckFailed => "check_failed",
            ErrorCode::WorkKept => "work_kept",
            ErrorCode::SubmoduleWork => "submodule_work",
            ErrorCode::ProcessTimedOut => "process_timed_out",
            ErrorCode::ProcessOutputTooLarge => "process_output_too_large",
            ErrorCode::PortTaken => "port_taken",
            ErrorCode::UnsignedRequest => "unsigned_request",
        }
    }

    /// Process exit status for this code. Never reuse or renumber: documented in the README.
    pub fn exit_status(self) -> i32 {
        match self {
            ErrorCode::Internal => 1,
            ErrorCode::Usage => 2,
            ErrorCode::InvalidInput => 3,
            ErrorCode::TaskNotFound => 4,
            ErrorCode::InvalidState => 5,
            ErrorCode::SteeringUnsupported => 6,
            ErrorCode::AgentNotFound => 7,
            ErrorCode::TmuxUnavailable => 8,
            ErrorCode::TmuxFailed => 9,
            ErrorCode::StoreCorrupt => 10,
            ErrorCode::Io => 11,
            ErrorCode::ConfigInvalid => 12,
            ErrorCode::Untrusted => 13,
            ErrorCode::ConfigUntrusted => 14,
            ErrorCode::NotTaskPane => 17,
            ErrorCode::TaskFailed => 20,
            ErrorCode::WaitTimeout => 21,
            ErrorCode::MergeConflict => 15,
            ErrorCode::NotATerminal => 25,
            ErrorCode::HostUnreachable => 26,
            ErrorCode::HostVersionMismatch => 27,
            ErrorCode::UnsafeProjectData => 29,
            ErrorCode::InsideTask => 30,
            ErrorCode::NoParentAgent => 31,
            ErrorCode::SandboxUnavailable => 32,
            ErrorCode::GitTimedOut => 33,
            ErrorCode::MergeReview => 34,
            ErrorCode::CheckFailed => 35,
            ErrorCode::WorkKept => 36,
            ErrorCode::SubmoduleWork => 37,
            ErrorCode::ProcessTimedOut => 38,
            ErrorCode::ProcessOutputTooLarge => 39,
            ErrorCode::PortTaken => 40,
            ErrorCode::UnsignedRequest => 41,
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
    /// What the user can do about it; shown under the message and in JSON errors.
    pub hint: Option<String>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn invalid_input(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidInput, message)
    }

    pub fn task_not_found(id: &str) -> Self {
        Error::new(ErrorCode::TaskNotFound, format!("no task with id '{id}'"))
            .with_hint("run `cuekit list --all` to see known task ids")
    }

    /// An I/O failure on a named path: the path is what the user needs to act on it.
    pub fn io(action: &str, path: &std::path::Path, err: std::io::Error) -> Self {
        Error::new(
            ErrorCode::Io,
            format!("cannot {action} {}: {err}", path.display()),
        )
    }
}
