//! What a parent asks of `submit`, and what it answers: one request type for every face (the
//! command line, MCP, a team member, a host's words), each converting to it once.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::domain::spec::Mode;
use crate::effects::store;
use crate::ops::task::view::TaskView;

/// What a parent asks for. Every `None` is filled from the configuration, then the adapter.
#[derive(Debug, Clone, Default)]
pub struct SubmitRequest {
    pub agent: Option<String>,
    pub objective: String,
    pub context: Option<String>,
    pub constraints: Vec<String>,
    pub model: Option<String>,
    pub mode: Option<Mode>,
    pub approval_mode: Option<String>,
    pub dangerously_skip_permissions: Option<bool>,
    /// Where the agent works; by default the resumed task's directory, else the caller's.
    pub cwd: Option<PathBuf>,
    pub timeout: Option<Duration>,
    /// `Some(false)` runs a batch task with plain-text output instead of the event stream.
    pub stream_events: Option<bool>,
    /// An earlier task whose agent session this one continues.
    pub resume_from: Option<String>,
    /// jcode's provider profile (else `adapters.jcode.provider_profile`).
    pub provider_profile: Option<String>,
    /// For the `command` agent: the program and its arguments (the objective names the task).
    pub argv: Vec<String>,
    /// A role (agent profile): its defaults fill what the request leaves open, its
    /// instructions go into the prompt.
    pub role: Option<String>,
    /// A team label: the task can then be listed, waited on, steered and cancelled with its team.
    pub team: Option<String>,
    /// The race the task is a candidate of: set only by `ops::race`, which made the race.
    pub race: Option<String>,
    pub dry_run: bool,
    /// Run in a new git worktree on a new branch (else `defaults.worktree`, else no).
    pub worktree: Option<bool>,
    /// The worktree's base (default: the caller's current branch, or `HEAD`).
    pub base: Option<String>,
    /// The worktree's branch (default: `worktree.branch_prefix` and the task id).
    pub branch: Option<String>,
    /// The task's id, chosen by the caller: a cuekit on another machine registers a host's task
    /// before asking the host, so a reply lost on the way never leaves a task it does not know.
    /// Else a fresh one.
    pub id: Option<String>,
    /// Who chose the permission settings above: a delegate's may tighten the user's policy,
    /// never loosen it.
    pub asked_by: Asker,
    /// ACP: end the session after the first turn that ends with `end_turn`.
    pub once: Option<bool>,
    /// Run the task on this configured host (its `cwd` is then a directory there).
    pub host: Option<String>,
    /// Dependencies, priority, retries, `--now`: what the scheduler is asked.
    pub scheduling: crate::ops::schedule::Scheduling,
    /// `--max-tokens`, `--max-turns`: the usage past which the task is stopped.
    pub budget: Option<store::Budget>,
    /// `--sandbox`, `--no-network` (MCP `sandbox`, `network`).
    pub sandbox: crate::ops::sandbox::SandboxRequest,
    /// `--wake-parent`: type a line into the submitting agent's pane when the task ends or
    /// waits on a human (an error when the submitter is no such agent).
    pub wake_parent: bool,
    /// `--check` and its options (MCP `check`): commands run on the task's work, in a scratch
    /// checkout with its protected paths restored, before it may complete.
    pub check: Option<CheckRequest>,
}

/// A check as asked for: defined with the checks (`ops::check`), which read it.
pub use crate::ops::check::CheckRequest;

/// Who asks for a task, as far as its permissions go.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Asker {
    /// The user at the command line: their flags set the policy.
    #[default]
    User,
    /// An MCP client or a team spec (a file of the project's): may ask for less autonomy than
    /// the user's policy, never for more.
    Delegate,
}

/// Untagged; read back from a host's JSON too (`ops::remote` tells the two apart by `id`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum SubmitOutcome {
    Submitted(Box<TaskView>),
    DryRun {
        agent_kind: String,
        mode: Mode,
        launch_command: String,
        warnings: Vec<String>,
    },
}
