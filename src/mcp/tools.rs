//! The MCP tools: each parses its arguments (the schema is derived from the same structs),
//! calls one operation from [`crate::ops`] on tokio's blocking pool, and returns its JSON as
//! structured content. An operation's error becomes a tool error (`isError: true`) carrying
//! the CLI's stable code: `{"error": {"code", "message", "hint"}}`. Arguments that do not fit
//! the schema are a protocol error (invalid params) from the SDK.
//!
//! Ids resolve only through cuekit's own registry (project records are shown, never believed):
//! nothing here accepts a tmux target, and a record the registry does not vouch for is never
//! acted on. Nothing here can trust a config file: that is a person's decision.

use std::path::PathBuf;
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::CuekitServer;
use super::brief::{self, Detail};
use super::changes;
use crate::domain::adapter::ADAPTERS;
use crate::domain::error::{Error, ErrorCode};
use crate::domain::spec::Mode;
use crate::domain::status::Status;
use crate::ops::MergeStrategy as Strategy;
use crate::ops::{self, SubmitRequest, WaitRequest, WaitUntil};

/// The longest one `wait` call blocks: MCP clients time requests out (often at 60 s), so a
/// longer wait is several calls.
pub const WAIT_CAP_SECS: f64 = 50.0;
const DEFAULT_SNAPSHOT_LINES: usize = 40;
const MAX_SNAPSHOT_LINES: usize = 2000;
const MAX_GRACE_SECS: f64 = 60.0;

/// How a child is isolated.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxArg {
    /// bubblewrap: the machine read-only, HOME hidden, writable only its work dir, a private
    /// /tmp and its own state; its own pid namespace; no unix socket of the outside.
    Bwrap,
    /// The agent's own sandbox flag (Gemini -s, agy --sandbox).
    Agent,
    /// No sandbox (only where the user's config sets none: an MCP argument never loosens it).
    None,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModeArg {
    /// The agent's own TUI in tmux: steerable with steer_task, reports input_required.
    Interactive,
    /// A single headless run that ends by itself; cannot be steered.
    Batch,
    /// The agent's Agent Client Protocol, driven by cuekit's client in the pane: steered
    /// exactly (receipts from the protocol), its permission requests answered with
    /// answer_permission when the bypass is off. Ends after its first turn unless once=false.
    Acp,
}

/// Seconds, or a duration such as "90s", "10m", "1h30m".
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DurationArg {
    Seconds(u64),
    Text(String),
}

/// A submit's `check`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckParams {
    /// The commands, run in order; all must pass.
    pub run: Vec<String>,
    /// Fix rounds after a failed check (default 2; 0: the first verdict is final).
    #[serde(default)]
    pub rounds: Option<u32>,
    /// The limit on each command, in seconds (default 600).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
    /// Path globs restored from the base before each check, in place of the defaults (the
    /// test folders and runner configuration of the project's ecosystem).
    #[serde(default)]
    pub protect: Vec<String>,
    /// Interactive: leave the child at its prompt once its check passed (else it is told to
    /// quit and the task completes).
    #[serde(default)]
    pub keep_open: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitTaskParams {
    /// What the child agent should do, in plain words. Required, non-empty.
    pub objective: String,
    /// Which agent runs the task (see `list` with kind=adapters). Default: the configured
    /// `defaults.agent`, else "gemini".
    #[serde(default)]
    pub agent_kind: Option<String>,
    /// Model name passed to the agent, e.g. "gemini-2.5-flash". Default: the configured model,
    /// else the agent's own default.
    #[serde(default)]
    pub model: Option<String>,
    /// "interactive" (default; steerable, stays at its prompt after each turn until cancelled
    /// or told to quit) or "batch" (one headless run that ends by itself).
    #[serde(default)]
    pub mode: Option<ModeArg>,
    /// The agent's approval mode (Gemini: default, auto_edit, yolo, plan); replaces the
    /// permission-bypass flag. An unknown value is ignored with a warning on the task.
    #[serde(default)]
    pub approval_mode: Option<String>,
    /// true: pass the agent's permission-bypass flag (e.g. Gemini `-y`) so it never stops to
    /// ask; false: leave it out (an unattended child may then wait on a permission prompt).
    /// Default: the configuration (`adapters.<kind>.permissions`), else true.
    #[serde(default)]
    pub dangerously_skip_permissions: Option<bool>,
    /// Directory the agent works in; relative paths are taken from the server's directory.
    /// The task's files go under `<cwd>/.cuekit/tasks/<id>/`. Default: the server's directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Run the task on this configured host, over SSH (`cuekit hosts` lists them); `cwd` is
    /// then a directory on that host (default: the host's configured `cwd`). The returned task
    /// carries `host`; get_status, list, wait, steer_task, cancel_tasks, get_task_result,
    /// get_task_snapshot, get_task_diff and remove_tasks reach it on the host.
    #[serde(default)]
    pub host: Option<String>,
    /// Stop the task and mark it timed_out after this long: seconds, or "90s", "10m", "1h30m".
    #[serde(default)]
    pub timeout: Option<DurationArg>,
    /// Background the agent should know, added to its prompt.
    #[serde(default)]
    pub context: Option<String>,
    /// Rules the agent must respect, each added to its prompt.
    #[serde(default)]
    pub constraints: Vec<String>,
    /// Continue the agent session of this earlier task (Gemini): the child sees that
    /// conversation. Its directory is the default cwd.
    #[serde(default)]
    #[schemars(regex(pattern = r"^t_[0-9a-f]{12}$"))]
    pub resume_from: Option<String>,
    /// mode=acp only: end the session after its first turn (default true); false keeps it open
    /// for steer_task, until cancel_tasks or a steer with end=true.
    #[serde(default)]
    pub once: Option<bool>,
    /// The new task's id, chosen by you (t_ and 12 lowercase hex digits), so a retry after a
    /// lost answer is safe: the same request again answers with the task it started, and
    /// another request under that id is refused. Default: a fresh id.
    #[serde(default)]
    #[schemars(regex(pattern = r"^t_[0-9a-f]{12}$"))]
    pub id: Option<String>,
    /// Batch only: false runs the agent with plain-text output instead of its event stream
    /// (the result then has no tool calls or token stats). Default true.
    #[serde(default)]
    pub stream_events: Option<bool>,
    /// jcode only: the provider profile to run with (`--provider-profile`).
    #[serde(default)]
    pub provider_profile: Option<String>,
    /// A role (agent profile): "worker", "reviewer", "tester", "planner", or one defined in
    /// `.cuekit/agents/NAME.md`. Its defaults (agent, model, mode, approval mode) apply where
    /// this call sets none; its instructions go into the child's prompt.
    #[serde(default)]
    pub role: Option<String>,
    /// Tag the task with a team name, to follow all members together with the `team`
    /// parameter of get_status, list, wait, steer_task, cancel_tasks and get_task_result.
    #[serde(default)]
    pub team: Option<String>,
    /// true: run the task in its own git worktree on a new branch (cwd must be in a git
    /// repository), so parallel children never touch each other's files; review it with
    /// get_task_diff, take it with merge_task, clean up with remove_tasks. Default: the
    /// configured `defaults.worktree`, else false.
    #[serde(default)]
    pub worktree: Option<bool>,
    /// With worktree: the branch, tag or commit the worktree starts from. Default: the
    /// current branch of cwd's checkout.
    #[serde(default)]
    pub base: Option<String>,
    /// With worktree: the new branch's name (must not exist). Default: "cuekit/<task id>".
    #[serde(default)]
    pub branch: Option<String>,
    /// Start only once these tasks completed: the task waits `queued` (its `queue.waiting_for`
    /// names them) and ends cancelled with reason dependency_failed if one fails or is
    /// cancelled. Without a mode it runs in batch mode (ACP: once), so a pipeline ends by
    /// itself.
    #[serde(default)]
    pub after: Vec<String>,
    /// With after: start once they ended, whatever their status.
    #[serde(default)]
    pub after_ended: bool,
    /// A task whose answer (its final text) goes into this one's prompt, so a reviewer reads
    /// what the implementer said; one not ended yet is waited for, as with after.
    #[serde(default)]
    #[schemars(regex(pattern = r"^t_[0-9a-f]{12}$"))]
    pub context_from: Option<String>,
    /// A worktree task whose branch tip (its uncommitted work committed first) this task's
    /// own worktree starts from, made when this task starts, so a tester sees the
    /// implementer's changes. Implies worktree=true; waits for that task, as with after.
    #[serde(default)]
    #[schemars(regex(pattern = r"^t_[0-9a-f]{12}$"))]
    pub base_from: Option<String>,
    /// Higher starts first when tasks wait for a slot under the user's limits. Default 0.
    #[serde(default)]
    pub priority: i32,
    /// Start now even at the user's limits (dependencies still hold).
    #[serde(default)]
    pub now: bool,
    /// When the task ends or waits on a human, type one line into your own tmux pane as a new
    /// message ("[cuekit] t_… completed (exit 0): call get_task_result"), once you sit idle at
    /// an empty prompt: end your turn instead of calling wait. Only for a client that runs in
    /// a tmux pane (error no_parent_agent otherwise).
    #[serde(default)]
    pub wake_parent: bool,
    /// Commands (`/bin/sh -c`) run on the child's work when it is done, in a scratch checkout
    /// whose tests and test-runner configuration are restored from the base: a failure goes
    /// back to the child for a fix round; the task completes only when the last check passed,
    /// else fails with reason check_failed. Needs worktree=true.
    #[serde(default)]
    pub check: Option<CheckParams>,
    /// Race this many candidates of the task (2 to 16), each in a worktree of its own, and
    /// pick the one whose check passed (then fewer fix rounds, the smaller diff, fewer
    /// tokens, the earlier ending). Needs check (here or configured). Use it for a task where
    /// agents often fail and a check can tell right from wrong; each candidate costs a full
    /// run. Returns the race id, which get_status, wait, cancel_tasks, get_task_result,
    /// merge_task and remove_tasks take.
    #[serde(default)]
    pub best_of: Option<u32>,
    /// With best_of: the agents the candidates take in turn.
    #[serde(default)]
    pub agents: Vec<String>,
    /// With best_of: the models the candidates take in turn.
    #[serde(default)]
    pub models: Vec<String>,
    /// With best_of: decide at the first candidate that passes (the others are cancelled).
    #[serde(default)]
    pub first: bool,
    /// With best_of: merge the winner as soon as the race is decided, when it merges cleanly.
    #[serde(default)]
    pub merge_winner: bool,
    /// Run the child in a sandbox (error sandbox_unavailable where none can be made). May only
    /// tighten the user's `sandbox` config.
    #[serde(default)]
    pub sandbox: Option<SandboxArg>,
    /// With sandbox bwrap: false takes the child's network away.
    #[serde(default)]
    pub network: Option<bool>,
    /// Stop the task (failed, reason budget_exceeded) once its agent reports more tokens
    /// than this: batch (with its event stream) and acp tasks only.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Stop the task once its agent reports more turns than this: batch and acp only.
    #[serde(default)]
    pub max_turns: Option<u32>,
    /// Start the task again, continuing its agent session, when an attempt ends
    /// rate_limited, transient or pane_disappeared: at most this many more times (0: never).
    /// Default: the user's `retry` config.
    #[serde(default)]
    pub retry: Option<u32>,
    /// Agents ("K" or "K:MODEL") the task goes on with, in order, when an attempt ends
    /// rate_limited and its retries on its agent are spent (or its reset is further off than
    /// the user's `retry.fallback_after`): the next runs in the same work dir, told a recap.
    /// Default: the user's `retry.fallback`.
    #[serde(default)]
    pub fallback: Option<Vec<String>>,
    /// "brief" (default): what a parent acts on — id, status, reason, hint, exit code, team,
    /// a pending permission request, the queue place and attempts, the start of an ended
    /// task's answer. "full": the whole view (paths, launch command, capabilities, attach
    /// hint, progress).
    #[serde(default)]
    pub detail: Detail,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetryParams {
    /// Task id of an ended task (`t_` and 12 hex digits).
    #[schemars(regex(pattern = r"^t_[0-9a-f]{12}$"))]
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffParams {
    /// Task id of a running task (`t_` and 12 hex digits).
    #[schemars(regex(pattern = r"^t_[0-9a-f]{12}$"))]
    pub id: String,
    /// The agent that takes the task over ("codex", "claude-code", …).
    pub agent: String,
    /// Its model (else its default).
    #[serde(default)]
    pub model: Option<String>,
    /// Words for the next agent, after the recap of the work so far.
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffParams {
    /// Task id of a task submitted with worktree=true.
    #[schemars(regex(pattern = r"^t_[0-9a-f]{12}$"))]
    pub id: String,
    /// false: only the files and line counts, without the patch. Default true.
    #[serde(default)]
    pub patch: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConflictsParams {
    /// Only this team's members (default: every worktree task of this project).
    #[serde(default)]
    pub team: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StrategyArg {
    /// A merge commit on the target.
    #[default]
    Merge,
    /// One commit on the target with the task's whole change.
    Squash,
    /// The task's commits replayed onto the target, then fast-forwarded.
    Rebase,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerArg {
    /// Allow this once.
    #[default]
    Allow,
    /// Allow this tool for the rest of the session.
    AllowAlways,
    /// Refuse it.
    Reject,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerParams {
    /// The ACP task whose request waits.
    #[schemars(regex(pattern = r"^t_[0-9a-f]{12}$"))]
    pub id: String,
    #[serde(default)]
    pub answer: AnswerArg,
    /// One of the request's options by its id (beats `answer`).
    #[serde(default)]
    pub option: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeParams {
    /// Task id of an ended task submitted with worktree=true, or a decided race's id (`r_…`):
    /// its winner.
    #[schemars(regex(pattern = r"^[tr]_[0-9a-f]{12}$"))]
    pub id: String,
    /// With a race's id: merge this candidate instead of the winner.
    #[serde(default)]
    #[schemars(regex(pattern = r"^t_[0-9a-f]{12}$"))]
    pub candidate: Option<String>,
    /// "merge" (default), "squash" or "rebase".
    #[serde(default)]
    pub strategy: StrategyArg,
    /// The branch to merge into. Default: the branch checked out where the task was submitted.
    #[serde(default)]
    pub into: Option<String>,
    /// You read the work's changes to files that run code or set policy (.gitattributes,
    /// CI workflows, build scripts, .cuekit files…); without it such a merge fails with
    /// merge_review and lists them.
    #[serde(default)]
    pub reviewed: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveParams {
    /// Ended tasks to remove (record, transcript, worktree, branch), or a race (`r_…`: its
    /// candidates and the refs it kept). At least one.
    #[schemars(length(min = 1), inner(regex(pattern = r"^[tr]_[0-9a-f]{12}$")))]
    pub ids: Vec<String>,
    /// true: also remove worktrees holding uncommitted or unmerged work; that work is lost.
    #[serde(default)]
    pub force: bool,
    /// true: report what would be removed and kept, change nothing.
    #[serde(default)]
    pub dry_run: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdsParams {
    /// Task ids (`t_` and 12 hex digits), as returned by submit_task or list, or a race's id
    /// (`r_…`: its candidates). Give ids or team.
    #[serde(default)]
    #[schemars(inner(regex(pattern = r"^[tr]_[0-9a-f]{12}$")))]
    pub ids: Vec<String>,
    /// A team name (set with submit_task's `team`) instead of ids: every member of the team.
    #[serde(default)]
    pub team: Option<String>,
    /// "brief" (default): what a parent acts on — id, status, reason, hint, exit code, team,
    /// a pending permission request, the start of an ended task's answer. "full": the whole
    /// view (paths, launch command, capabilities, attach hint, progress).
    #[serde(default)]
    pub detail: Detail,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResultParams {
    /// Task id (`t_` and 12 hex digits), as returned by submit_task or list; or a race's id
    /// (`r_…`): a row per candidate, the winner and why. Give id or team.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[tr]_[0-9a-f]{12}$"))]
    pub id: Option<String>,
    /// A team name instead of an id: every member's result, in one document.
    #[serde(default)]
    pub team: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ListKind {
    /// Tasks with their current status.
    #[default]
    Tasks,
    /// The agents cuekit can run, with capabilities and known models.
    Adapters,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// "tasks" (default) or "adapters".
    #[serde(default)]
    pub kind: ListKind,
    /// For tasks: every task cuekit knows, from any project, instead of only the project of
    /// the server's directory (nearest `.cuekit/tasks` above it).
    #[serde(default)]
    pub all: bool,
    /// For tasks: only the members of this team, whichever project they work in.
    #[serde(default)]
    pub team: Option<String>,
    /// "brief" (default): what a parent acts on — id, status, reason, hint, exit code, team,
    /// a pending permission request, the start of an ended task's answer. "full": the whole
    /// view (paths, launch command, capabilities, attach hint, progress).
    #[serde(default)]
    pub detail: Detail,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SteerParams {
    /// Task id of a running interactive task. Give id or team.
    #[serde(default)]
    #[schemars(regex(pattern = r"^t_[0-9a-f]{12}$"))]
    pub id: Option<String>,
    /// A team name instead of an id: the message goes to every running interactive member,
    /// with one receipt each.
    #[serde(default)]
    pub team: Option<String>,
    /// The message, as a person would type it at the child's prompt. Multi-line text is pasted
    /// as one message.
    pub message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelParams {
    /// Task ids to cancel, or a race's id (`r_…`: its candidates). Give ids or team.
    #[serde(default)]
    #[schemars(inner(regex(pattern = r"^[tr]_[0-9a-f]{12}$")))]
    pub ids: Vec<String>,
    /// A team name (set with submit_task's `team`) instead of ids: every member of the team.
    #[serde(default)]
    pub team: Option<String>,

    /// Seconds the agent gets to exit on SIGTERM before SIGKILL (default 3, at most 60).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 60.0))]
    pub grace_seconds: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaitMode {
    /// Return when every task is done.
    #[default]
    All,
    /// Return as soon as one task is done.
    Any,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UntilArg {
    /// Done means ended (completed, failed, cancelled, timed_out).
    #[default]
    Ended,
    /// Done also when an interactive child waits on a human: idle at its prompt after a turn,
    /// or a login, trust or permission screen (status input_required, with a reason).
    InputRequired,
    /// Done also when a child makes a report (`cuekit report`) after the wait began; its
    /// `last_report` says what (`blocked`, `progress`, `done`, `failed`).
    Report,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitParams {
    /// Task ids to wait on, or a race's id (`r_…`: its candidates; decided before the wait
    /// returns). Give ids or team.
    #[serde(default)]
    #[schemars(inner(regex(pattern = r"^[tr]_[0-9a-f]{12}$")))]
    pub ids: Vec<String>,
    /// A team name (set with submit_task's `team`) instead of ids: every member of the team.
    #[serde(default)]
    pub team: Option<String>,

    /// "all" (default) or "any".
    #[serde(default)]
    pub mode: WaitMode,
    /// How long this call may block, in seconds: default and maximum 50. When it runs out the
    /// result says `timed_out: true`: call wait again.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 50.0))]
    pub timeout_seconds: Option<f64>,
    /// "ended" (default), "input_required" or "report".
    #[serde(default)]
    pub until: UntilArg,
    /// "brief" (default): what a parent acts on — id, status, reason, hint, exit code, team,
    /// a pending permission request, the start of an ended task's answer. "full": the whole
    /// view (paths, launch command, capabilities, attach hint, progress).
    #[serde(default)]
    pub detail: Detail,
    /// The `cursor` of the previous wait answer: `tasks` then holds only the tasks whose state
    /// changed since that answer. Without one, every task that is not plain running. `counts`
    /// always covers all of them.
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NextEventParams {
    /// Where to continue: the `cursor` of the previous call. Without it, only transitions that
    /// happen from now on are returned.
    #[serde(default)]
    pub cursor: Option<u64>,
    /// How long this call may block, in seconds: default and maximum 50.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 50.0))]
    pub timeout_seconds: Option<f64>,
    /// Every task's transitions, not only this project's.
    #[serde(default)]
    pub all: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotParams {
    /// Task id.
    #[schemars(regex(pattern = r"^t_[0-9a-f]{12}$"))]
    pub id: String,
    /// How many of the last lines of the readable transcript to return (default 40, at most
    /// 2000). Trailing blank lines are left out.
    #[serde(default)]
    #[schemars(range(min = 1, max = 2000))]
    pub lines: Option<usize>,
}

#[tool_router(router = tool_router, vis = "pub(super)")]
impl CuekitServer {
    #[tool(
        name = "submit_task",
        description = "Start a child coding agent (Gemini CLI by default) on a task in its own tmux session. Returns the task in brief (id, status \"running\", …; detail=\"full\" adds the transcript path and attach command). Then use wait, get_task_result, get_task_snapshot, steer_task (interactive only) and cancel_tasks with the returned id.",
        annotations(
            title = "Submit a task to a child agent",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn submit_task(
        &self,
        Parameters(params): Parameters<SubmitTaskParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let server_cwd = self.cwd.clone();
        blocking(move || {
            let timeout = params.timeout.as_ref().map(parse_duration).transpose()?;
            let request = SubmitRequest {
                agent: params.agent_kind,
                objective: params.objective,
                context: params.context,
                constraints: params.constraints,
                model: params.model,
                mode: params.mode.map(|mode| match mode {
                    ModeArg::Interactive => Mode::Interactive,
                    ModeArg::Batch => Mode::Batch,
                    ModeArg::Acp => Mode::Acp,
                }),
                // An AI parent that waits for the result wants the session to end with its
                // turn; it may keep it open to steer it on.
                once: matches!(params.mode, Some(ModeArg::Acp))
                    .then(|| params.once.unwrap_or(true)),
                approval_mode: params.approval_mode,
                dangerously_skip_permissions: params.dangerously_skip_permissions,
                cwd: params.cwd.map(PathBuf::from),
                timeout,
                resume_from: params.resume_from,
                stream_events: params.stream_events,
                provider_profile: params.provider_profile,
                role: params.role,
                team: params.team,
                // Set by `ops::race` for each candidate of a `best_of` submit.
                race: None,
                worktree: params.worktree,
                base: params.base,
                branch: params.branch,
                id: params.id,
                // An MCP client asks on the user's behalf: its permission choices may tighten
                // the user's policy, never loosen it.
                asked_by: ops::Asker::Delegate,
                host: params.host,
                wake_parent: params.wake_parent,
                // The parent's own check: the trust of the flags a user types.
                check: params.check.map(|check| ops::CheckRequest {
                    run: check.run,
                    rounds: check.rounds,
                    timeout: check.timeout_secs.map(std::time::Duration::from_secs),
                    protect: check.protect,
                    keep_open: check.keep_open,
                }),
                // The command agent runs the words it is given as you: a parent over MCP
                // names an agent, never a program; a dry run is the command line's.
                argv: Vec::new(),
                dry_run: false,
                sandbox: ops::SandboxRequest {
                    mode: params.sandbox.map(|arg| match arg {
                        SandboxArg::Bwrap => crate::domain::sandbox::SandboxMode::Bwrap,
                        SandboxArg::Agent => crate::domain::sandbox::SandboxMode::Agent,
                        SandboxArg::None => crate::domain::sandbox::SandboxMode::None,
                    }),
                    network: params.network.map(|on| {
                        if on {
                            crate::domain::sandbox::Network::On
                        } else {
                            crate::domain::sandbox::Network::Off
                        }
                    }),
                },
                budget: (params.max_tokens.is_some() || params.max_turns.is_some()).then_some({
                    crate::ops::Budget {
                        tokens: params.max_tokens,
                        turns: params.max_turns,
                        team_tokens: None,
                    }
                }),
                scheduling: ops::Scheduling {
                    after: params.after,
                    after_ended: params.after_ended,
                    priority: params.priority,
                    now: params.now,
                    retry: params.retry,
                    team_max: None,
                    context_from: params.context_from,
                    base_from: params.base_from,
                    fallback: params
                        .fallback
                        .map(|list| ops::parse_fallback(&list.join(",")))
                        .transpose()?,
                },
            };
            if let Some(best_of) = params.best_of {
                let race = ops::submit_race(
                    ops::RaceRequest {
                        task: request,
                        best_of,
                        agents: params.agents,
                        models: params.models,
                        first: params.first,
                        merge: params.merge_winner,
                    },
                    &server_cwd,
                )?;
                let candidates: Vec<Value> = race
                    .candidates
                    .into_iter()
                    .filter_map(|outcome| match outcome {
                        ops::SubmitOutcome::Submitted(view) => {
                            Some(brief::task(*view, params.detail))
                        }
                        ops::SubmitOutcome::DryRun { .. } => None,
                    })
                    .collect();
                return Ok(json!({ "race": race.race, "candidates": candidates }));
            } else if !(params.agents.is_empty() && params.models.is_empty())
                || params.first
                || params.merge_winner
            {
                return Err(Error::invalid_input(
                    "agents, models, first and merge_winner belong to a race",
                )
                .with_hint("add best_of: N, or drop them"));
            }
            Ok(match ops::submit(request, &server_cwd)? {
                ops::SubmitOutcome::Submitted(view) => {
                    json!({ "task": brief::task(*view, params.detail) })
                }
                dry_run => json!({ "task": dry_run }),
            })
        })
        .await
    }

    #[tool(
        name = "get_status",
        description = "Status of one or more tasks: running, input_required (an interactive child waits on a human; `reason` says why: idle_at_prompt, permission_prompt, trust_required, auth_required), completed, failed, cancelled or timed_out, with reason, hint and exit code (detail=\"full\": also capabilities, paths, progress).",
        annotations(title = "Task status", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_status(
        &self,
        Parameters(params): Parameters<IdsParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            if let Some(team) = team_only(&params.ids, params.team.as_deref())? {
                let summary = ops::team_status(team, &cwd)?;
                return Ok(serde_json::to_value(summary).expect("summaries serialize"));
            }
            let views = ops::status(&params.ids, &cwd)?;
            Ok(json!({ "tasks": brief::tasks(views, params.detail) }))
        })
        .await
    }

    #[tool(
        name = "list",
        description = "List tasks (this project's, or every task with all=true) with their status, or the agents (kind=adapters) cuekit can run with their capabilities and models.",
        annotations(
            title = "List tasks or agents",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn list(
        &self,
        Parameters(params): Parameters<ListParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            Ok(match params.kind {
                ListKind::Tasks => {
                    let views = match &params.team {
                        Some(team) => ops::team_list(team, &cwd)?,
                        None => ops::list(params.all, &cwd)?,
                    };
                    json!({ "tasks": brief::tasks(views, params.detail) })
                }
                ListKind::Adapters => {
                    let infos: Vec<_> = ADAPTERS.iter().map(|adapter| adapter.info()).collect();
                    json!({"adapters": infos})
                }
            })
        })
        .await
    }

    #[tool(
        name = "steer_task",
        description = "Send a message to a running interactive task, as if typed at its prompt, and report the delivery receipt: \"submitted\" (the child took it), \"typed_not_submitted\" (the text sits in its input), \"blocked\" (a login, trust or permission screen; nothing typed; see blocked_by) or \"not_running\". Errors: steering_unsupported for a batch task, invalid_state for a task that has ended.",
        annotations(
            title = "Steer an interactive task",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn steer_task(
        &self,
        Parameters(params): Parameters<SteerParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || match (params.id, params.team) {
            (Some(id), None) => {
                let receipt = ops::steer(&id, &cwd, &params.message)?;
                Ok(serde_json::to_value(receipt).expect("receipts serialize"))
            }
            (None, Some(team)) => {
                let receipts = ops::team_steer(&team, &cwd, &params.message)?;
                Ok(json!({"team": team, "receipts": receipts}))
            }
            _ => Err(Error::invalid_input("give either id or team").with_hint(ID_OR_TEAM)),
        })
        .await
    }

    #[tool(
        name = "answer_permission",
        description = "Answer the permission request an ACP task waits on, or an interactive Gemini child's permission dialog (its digit typed only while its screen still shows it) (its status is input_required with reason permission_prompt; `request` shows the tool call and the options). answer: \"allow\" (once), \"allow_always\", \"reject\", or option with an option id. Refused (inside_task) when asked from inside the task's own pane: a child never answers its own requests.",
        annotations(
            title = "Answer a permission request",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn answer_permission(
        &self,
        Parameters(params): Parameters<AnswerParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            use crate::domain::acp::control::Answer;
            let answer = match (params.answer, params.option) {
                (_, Some(option)) => Answer::Option(option),
                (AnswerArg::Allow, None) => Answer::Allow,
                (AnswerArg::AllowAlways, None) => Answer::AllowAlways,
                (AnswerArg::Reject, None) => Answer::Reject,
            };
            let approval = ops::approve(&params.id, &cwd, answer)?;
            Ok(serde_json::to_value(approval).expect("approvals serialize"))
        })
        .await
    }

    #[tool(
        name = "cancel_tasks",
        description = "Cancel tasks: the cancel is recorded first, then the task's whole process tree is ended (SIGTERM, SIGKILL after the grace period) with its tmux session. For a task that has already ended it only removes the leftover session. Returns each task's final status.",
        annotations(
            title = "Cancel tasks",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn cancel_tasks(
        &self,
        Parameters(params): Parameters<CancelParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            let ids = ids_or_team(params.ids, params.team.as_deref())?;
            let grace = match params.grace_seconds {
                None => ops::DEFAULT_GRACE,
                Some(secs) if (0.0..=MAX_GRACE_SECS).contains(&secs) => {
                    Duration::from_secs_f64(secs)
                }
                Some(secs) => {
                    return Err(Error::invalid_input(format!(
                        "grace_seconds must be between 0 and {MAX_GRACE_SECS}, not {secs}"
                    )));
                }
            };
            Ok(json!({"tasks": ops::cancel(&ids, &cwd, grace)?}))
        })
        .await
    }

    #[tool(
        name = "wait",
        description = "Block until the tasks are done (mode all, or any), or until an interactive child waits on a human too (until=input_required), for at most timeout_seconds (default and maximum 50). If `timed_out` is true nothing is wrong: call wait again with the same ids. `tasks` holds the tasks not plain running, or with the previous answer's `cursor` only those that changed since it; `counts` covers all. `all_completed` tells whether every ended task completed successfully.",
        annotations(
            title = "Wait for tasks",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn wait(
        &self,
        Parameters(params): Parameters<WaitParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            let ids = ids_or_team(params.ids, params.team.as_deref())?;
            let secs = params.timeout_seconds.unwrap_or(WAIT_CAP_SECS);
            if !(0.0..=WAIT_CAP_SECS).contains(&secs) {
                return Err(Error::invalid_input(format!(
                    "timeout_seconds must be between 0 and {WAIT_CAP_SECS}, not {secs}"
                ))
                .with_hint("call wait again to wait longer"));
            }
            let request = WaitRequest {
                task_ids: ids,
                any: params.mode == WaitMode::Any,
                timeout: Some(Duration::from_secs_f64(secs)),
                until: match params.until {
                    UntilArg::Ended => WaitUntil::Ended,
                    UntilArg::InputRequired => WaitUntil::InputRequired,
                    UntilArg::Report => WaitUntil::Report,
                },
            };
            let outcome = ops::wait(&request, &cwd)?;
            let all_completed = outcome
                .tasks
                .iter()
                .filter(|task| task.status.is_terminal())
                .all(|task| task.status == Status::Completed);
            let changes = changes::since(outcome.tasks, params.cursor.as_deref())?;
            let mut result = json!({
                "timed_out": outcome.timed_out,
                "all_completed": all_completed,
                "tasks": brief::tasks(changes.tasks, params.detail),
                "counts": changes.counts,
                "cursor": changes.cursor,
            });
            if outcome.timed_out {
                result["hint"] = json!(format!(
                    "not done after {secs} s; call wait again with the same ids (and this cursor, to hear only of changes) to keep waiting"
                ));
            }
            Ok(result)
        })
        .await
    }

    #[tool(
        name = "next_event",
        description = "Block until any task of this project (or of all projects, with all=true) makes a transition — starts, waits on a human (input_required with its reason), returns to work, or ends, or (reason conflict, with a `conflict` object naming the other task or target and the files) its work starts conflicting with another worktree task's or its target branch's — for at most timeout_seconds (default and maximum 50). Returns the transitions and a `cursor`: pass it to the next call so none is missed or repeated. An empty list means nothing happened in time: call again with the same cursor.",
        annotations(
            title = "Next transition",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn next_event(
        &self,
        Parameters(params): Parameters<NextEventParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            let secs = params.timeout_seconds.unwrap_or(WAIT_CAP_SECS);
            if !(0.0..=WAIT_CAP_SECS).contains(&secs) {
                return Err(Error::invalid_input(format!(
                    "timeout_seconds must be between 0 and {WAIT_CAP_SECS}, not {secs}"
                )));
            }
            let scope = ops::EventScope::new(params.all, &cwd);
            let (events, cursor) =
                ops::next_events(&scope, params.cursor, Duration::from_secs_f64(secs))?;
            Ok(json!({"events": events, "cursor": cursor}))
        })
        .await
    }

    #[tool(
        name = "get_task_result",
        description = "What a task did, for a parent that will not read a terminal: status, reason, exit code, the agent's final text, its tool calls, errors and warnings, token stats, files changed (in a git work tree), and for a task without an event stream the end of its readable transcript. For a task still running it reports status \"running\" and what is known so far: wait first.",
        annotations(title = "Task result", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_task_result(
        &self,
        Parameters(params): Parameters<ResultParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || match (params.id, params.team) {
            (Some(id), None) if crate::domain::race::is_race_id(&id) => {
                Ok(json!({"race": ops::race_result(&id, &cwd)?}))
            }
            (Some(id), None) => Ok(json!({"result": ops::result(&id, &cwd)?})),
            (None, Some(team)) => {
                let results = ops::team_result(&team, &cwd)?;
                Ok(serde_json::to_value(results).expect("results serialize"))
            }
            _ => Err(Error::invalid_input("give either id or team").with_hint(ID_OR_TEAM)),
        })
        .await
    }

    #[tool(
        name = "retry_task",
        description = "Start an ended task (failed, cancelled, timed out) again: a new attempt under the same id, continuing its agent session where the agent can (told to go on where it left off, never given its prompt again). It waits `queued` for a slot under the user's limits. Returns the task.",
        annotations(
            title = "Retry a task",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn retry_task(
        &self,
        Parameters(params): Parameters<RetryParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            let view = ops::retry(&params.id, &cwd)?;
            Ok(json!({"task": brief::task(view, Detail::Brief)}))
        })
        .await
    }

    #[tool(
        name = "handoff_task",
        description = "Hand a running task to another agent: its current attempt ends (its uncommitted work stays in the work dir) and the next attempt runs on `agent` in the same work dir, told a recap of the work so far (the objective, the last answer, reports, the last check, the files git says changed, the end of the log) and `message`. The task keeps its id, check, budget and dependents. Returns the task, queued for that attempt.",
        annotations(
            title = "Hand a task off",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn handoff_task(
        &self,
        Parameters(params): Parameters<HandoffParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            let view = ops::handoff(
                &ops::HandoffRequest {
                    id: params.id,
                    agent: params.agent,
                    model: params.model,
                    message: params.message,
                },
                &cwd,
            )?;
            Ok(json!({"task": brief::task(view, Detail::Brief)}))
        })
        .await
    }

    #[tool(
        name = "get_task_snapshot",
        description = "The task's current status plus the last `lines` lines (default 40) of its readable transcript: what its terminal shows, with escape sequences and redraws rendered away. Use it to see what a child is doing or asking.",
        annotations(
            title = "Task snapshot",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_task_snapshot(
        &self,
        Parameters(params): Parameters<SnapshotParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            let lines = params.lines.unwrap_or(DEFAULT_SNAPSHOT_LINES);
            if !(1..=MAX_SNAPSHOT_LINES).contains(&lines) {
                return Err(Error::invalid_input(format!(
                    "lines must be between 1 and {MAX_SNAPSHOT_LINES}, not {lines}"
                )));
            }
            let task = ops::status(std::slice::from_ref(&params.id), &cwd)?
                .pop()
                .expect("one view per id");
            let tail = ops::tail_logs(&params.id, &cwd, lines)?;
            Ok(json!({"task": task, "lines": tail.len(), "transcript_tail": tail.join("\n")}))
        })
        .await
    }
}

#[tool_router(router = worktree_router, vis = "pub(super)")]
impl CuekitServer {
    #[tool(
        name = "get_task_diff",
        description = "The work of a task submitted with worktree=true, against its base commit: the commits on its branch plus uncommitted and untracked changes in its worktree. Returns the files with line counts, a stat, and the unified patch (unless patch=false).",
        annotations(title = "Task diff", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_task_diff(
        &self,
        Parameters(params): Parameters<DiffParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            Ok(json!({"diff": ops::diff(&params.id, &cwd, params.patch.unwrap_or(true))?}))
        })
        .await
    }

    #[tool(
        name = "get_conflicts",
        description = "Whose work would conflict before any merge: every pair of this project's worktree tasks (a team's, with team) whose current work — commits, uncommitted and untracked changes — would not merge cleanly, and each task whose work would not merge into its target branch as that branch is now. Touches no worktree, index or branch. Returns `checked` (the task ids) and `conflicts`: each with a, b (another task) or target (a branch), the files with a short reason (content, add/add, modify/delete, …).",
        annotations(title = "Conflicts", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_conflicts(
        &self,
        Parameters(params): Parameters<ConflictsParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            let found = ops::conflicts(params.team.as_deref(), &cwd)?;
            Ok(serde_json::to_value(found).expect("conflicts serialize"))
        })
        .await
    }

    #[tool(
        name = "merge_task",
        description = "Merge an ended worktree task's branch into a target branch, in the worktree where that branch is checked out (never by switching branches). The task's uncommitted work is first committed on its branch. Refused (invalid_state) while the task runs or when the target worktree has uncommitted changes. A conflict changes nothing and is the error merge_conflict, listing the files.",
        annotations(
            title = "Merge a task's work",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn merge_task(
        &self,
        Parameters(params): Parameters<MergeParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            let strategy = match params.strategy {
                StrategyArg::Merge => Strategy::Merge,
                StrategyArg::Squash => Strategy::Squash,
                StrategyArg::Rebase => Strategy::Rebase,
            };
            let merged = if crate::domain::race::is_race_id(&params.id) {
                ops::merge_race(
                    &params.id,
                    params.candidate.as_deref(),
                    &cwd,
                    strategy,
                    params.into.as_deref(),
                    params.reviewed,
                )?
            } else if params.candidate.is_some() {
                return Err(Error::invalid_input(
                    "candidate names a candidate of a race: give the race's id (r_…) as id",
                ));
            } else {
                ops::merge(
                    &params.id,
                    &cwd,
                    strategy,
                    params.into.as_deref(),
                    params.reviewed,
                )?
            };
            Ok(json!({ "merged": merged }))
        })
        .await
    }

    #[tool(
        name = "remove_tasks",
        description = "Remove ended tasks: record, transcript, worktree and branch. A running task is refused (invalid_state: cancel it first). A worktree with uncommitted or untracked changes, commits not merged into its base, or a live process inside is kept with its task, and the reasons are returned, unless force=true. dry_run=true reports without changing anything.",
        annotations(
            title = "Remove ended tasks",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn remove_tasks(
        &self,
        Parameters(params): Parameters<RemoveParams>,
    ) -> Result<CallToolResult, ErrorData> {
        let cwd = self.cwd.clone();
        blocking(move || {
            if params.ids.is_empty() {
                return Err(Error::invalid_input("ids must name at least one task"));
            }
            let removed = ops::remove(&params.ids, &cwd, params.force, params.dry_run)?;
            Ok(json!({ "removed": removed }))
        })
        .await
    }
}

/// Runs an operation on the blocking pool and turns its outcome into a tool result.
async fn blocking<T, F>(operation: F) -> Result<CallToolResult, ErrorData>
where
    T: Serialize + Send + 'static,
    F: FnOnce() -> Result<T, Error> + Send + 'static,
{
    Ok(match tokio::task::spawn_blocking(operation).await {
        Ok(Ok(value)) => {
            CallToolResult::structured(serde_json::to_value(value).expect("tool results serialize"))
        }
        Ok(Err(err)) => tool_error(&err),
        Err(join) => tool_error(&Error::new(
            ErrorCode::Internal,
            format!("the operation failed: {join}"),
        )),
    })
}

/// The CLI's `--json` error shape, as a tool error.
fn tool_error(err: &Error) -> CallToolResult {
    let error: Value = json!({
        "code": err.code.as_str(),
        "message": err.message,
        "hint": err.hint,
    });
    CallToolResult::structured_error(json!({"error": error}))
}

const ID_OR_TEAM: &str = "name tasks by id (from submit_task or list), or a team by the name \
    given to submit_task's `team`, not both";

/// The ids named directly, or every member of the team.
fn ids_or_team(ids: Vec<String>, team: Option<&str>) -> Result<Vec<String>, Error> {
    match team_only(&ids, team)? {
        Some(team) => ops::team_ids(team),
        None => Ok(ids),
    }
}

/// `Some(team)` when the call names a team, `None` when it names ids; neither or both is an
/// error.
fn team_only<'a>(ids: &[String], team: Option<&'a str>) -> Result<Option<&'a str>, Error> {
    match (ids.is_empty(), team) {
        (false, None) => Ok(None),
        (true, Some(team)) => Ok(Some(team)),
        (true, None) => {
            Err(Error::invalid_input("ids must name at least one task").with_hint(ID_OR_TEAM))
        }
        (false, Some(_)) => {
            Err(Error::invalid_input("give either ids or team, not both").with_hint(ID_OR_TEAM))
        }
    }
}

/// The SDK reports arguments that do not deserialize as a tool error with only a text; give
/// it the same shape and code (`invalid_input`) as every other error.
pub(super) fn with_error_code(result: CallToolResult) -> CallToolResult {
    if result.is_error != Some(true) || result.structured_content.is_some() {
        return result;
    }
    let message = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    tool_error(
        &Error::invalid_input(message)
            .with_hint("check the arguments against the tool's inputSchema"),
    )
}

fn parse_duration(value: &DurationArg) -> Result<Duration, Error> {
    match value {
        DurationArg::Seconds(secs) => Ok(Duration::from_secs(*secs)),
        DurationArg::Text(text) => match text.trim().parse::<u64>() {
            Ok(secs) => Ok(Duration::from_secs(secs)),
            Err(_) => humantime::parse_duration(text.trim()).map_err(|err| {
                Error::invalid_input(format!("timeout '{text}': {err}"))
                    .with_hint("give seconds, or a duration such as 90s, 10m, 1h30m")
            }),
        },
    }
}
