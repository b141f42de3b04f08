//! The user's own registry: where cuekit put each task, written at submit into an owner-only
//! directory. It is the authority on a task's placement (task directory, absolute tmux socket,
//! session, the pane and its process group); a project's `task.json` is only data that must agree
//! with it. One small file per task id means parallel submits never contend on a shared index.
//!
//! Layout under `~/.local/share/cuekit` (or `XDG_DATA_HOME`):
//! - `tasks/<id>`: the [`Placement`], JSON (older versions wrote the bare task directory);
//! - `tasks/<id>.pane`: the [`PaneStart`] tmux reported, written once the pane exists;
//! - `tasks/<id>.state`: the task's [`Lifecycle`] (status, ending, reason, exit code): the
//!   authority on how it stands, which `task.json` only mirrors for people;
//! - `tasks/<id>.merge`: the [`MergeRecord`] of the task's last `cuekit merge`;
//! - `tasks/<id>.conflicts`: what the last conflict check found (`super::conflicts`);
//! - `pending/<id>`: a [`Pending`] submit, from before tmux is asked until the task is recorded,
//!   so a submit killed half-way is found and undone; `pending/` also holds the registry's
//!   temp files, named after their writer's pid.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::tmux::Socket;

/// Where cuekit placed a task, as it wrote it at submit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub id: String,
    pub task_dir: PathBuf,
    /// Absolute socket path.
    pub socket: Socket,
    pub session: String,
    pub created_at: String,
    /// Kept here too, so a timeout holds even when the task directory was deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// The configured host the task runs on (`task_dir`, `socket` and `session` are then the
    /// host's, never used here): every command on it goes to that host's cuekit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// What the task is and what cuekit acts on besides its pane (absent from entries written
    /// before it was recorded: such a task's worktree and submitter are never acted on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<Box<TaskFacts>>,
    /// Read from an older registry entry that held only the task directory.
    #[serde(skip)]
    pub legacy: bool,
}

/// What cuekit decided at submit, kept where only the user can write. A project's `task.json`
/// repeats some of it for people to read; a child can rewrite that copy, so every operation
/// takes these instead (see `ops::task`, which lays them over the record it reads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFacts {
    /// Where the agent was asked to work (the submit's directory; hooks run there).
    pub cwd: PathBuf,
    pub agent: String,
    pub mode: crate::domain::spec::Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// The race the task is a candidate of (`submit --best-of`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race: Option<String>,
    /// The agent's own session id, when cuekit chose it (or resumed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// Where notifications go: the submitter's tmux pane.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_from: Option<crate::effects::notify::SubmittedFrom>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreePlacement>,
    /// A digest of what was asked, so a retried submit of a caller-chosen id is recognised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_digest: Option<String>,
    /// An ACP task's control socket: where steer, approve and cancel reach its client (outside
    /// the project, which the child can write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acp_socket: Option<PathBuf>,
    /// The usage past which the task is stopped (`--max-tokens`, `--max-turns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// The agent that submitted, woken when the task ends or waits on a human
    /// (`--wake-parent`): recorded only here, never read from a project's record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_parent: Option<crate::effects::notify::ParentAgent>,
    /// The task's sandbox (`--sandbox`), re-applied to every start of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::domain::sandbox::Policy>,
    /// The agent's stdout is an event stream whose `result` an exit 0 must agree with (absent
    /// from entries written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_stream: Option<bool>,
    /// The task's check (`--check`): what runs on its work before it may complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<crate::domain::check::CheckPlan>,
}

/// How much of the agent's reported usage a task may spend.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u32>,
    /// A team spec's `budget.tokens`: what the team's members may spend together (the members
    /// are listed in the scheduler's `teams/<team>.budget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_tokens: Option<u64>,
}

/// A task's own checkout, as cuekit created it: a git worktree of the user's repository, or
/// (a sandboxed task's) a repository of the task's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreePlacement {
    /// The checkout the task was submitted from.
    pub repo_root: PathBuf,
    pub path: PathBuf,
    pub branch: String,
    /// The base as named (`--base`, else the submitter's branch, else `HEAD`).
    pub base_ref: String,
    /// The ref the base named, in full (`refs/remotes/origin/main`), when it named one: the
    /// task's own branch can never shadow it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_full_ref: Option<String>,
    pub base_commit: String,
    /// The repository's git common dir (its worktree lock lives there).
    pub common_dir: PathBuf,
    /// The checkout's git dir as cuekit made it: a worktree's admin dir, or the task's own
    /// repository. Every git call on the checkout names it; none reads the checkout's `.git`,
    /// which the child can rewrite. (`None` in records made before it was kept.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_dir: Option<PathBuf>,
    /// Set for a task in a repository of its own: the ref in the user's repository that its
    /// committed work is fetched into (`refs/cuekit/tasks/<id>`); its branch lives only in
    /// its own repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tip_ref: Option<String>,
}

impl WorktreePlacement {
    /// Whether the task works in a repository of its own (else a git worktree).
    pub fn own_repo(&self) -> bool {
        self.tip_ref.is_some()
    }

    /// What another task names as its base to start from this one (`--base-from`): the
    /// branch, or the ref its work is fetched into.
    pub fn base_name(&self) -> String {
        self.tip_ref.clone().unwrap_or_else(|| self.branch.clone())
    }

    /// The ref in the user's repository that holds the task's committed work.
    pub fn work_ref(&self) -> String {
        self.tip_ref
            .clone()
            .unwrap_or_else(|| format!("refs/heads/{}", self.branch))
    }
}

/// What `cuekit merge` put into a target (`tasks/<id>.merge`). Cleanup counts the task's work
/// as merged only while `head` is still reachable from `target_ref`: a merge undone on the
/// target (`git reset`) no longer counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeRecord {
    pub target_ref: String,
    /// The target's head right after the merge.
    pub head: String,
    /// The task branch's tip that went in.
    pub task_tip: String,
}

impl Placement {
    /// The sandbox the registry recorded for the task, re-applied to each start and check
    /// (none: the default policy, no sandbox).
    pub fn sandbox_policy(&self) -> crate::domain::sandbox::Policy {
        self.facts
            .as_ref()
            .and_then(|facts| facts.sandbox.clone())
            .unwrap_or_default()
    }

    /// Whether the registry put the task inside bubblewrap (its own repository, its agent and
    /// setup inside, approvals binding).
    pub fn in_bubblewrap(&self) -> bool {
        self.sandbox_policy().mode == crate::domain::sandbox::SandboxMode::Bwrap
    }

    pub fn deadline(&self) -> Option<std::time::SystemTime> {
        let created = humantime::parse_rfc3339(&self.created_at).ok()?;
        Some(created + std::time::Duration::from_secs(self.timeout_secs?))
    }
}

/// The task's pane as tmux reported it at creation: its id, and the pid of its first process,
/// which leads the pane's process group, with that process's start time so a reused pid is
/// never taken for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaneStart {
    pub pane_id: String,
    pub pane_pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ticks: Option<u64>,
}

/// Where a task stands, as cuekit recorded it (`tasks/<id>.state`): its status, and once it
/// ended, its reason, hint and exit code. `task.json` in the task directory repeats it for
/// people; a child can rewrite that copy, so every reader takes this one (see
/// [`Lifecycle::apply`]), and every write of the record writes this first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lifecycle {
    pub status: crate::domain::status::Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

impl Lifecycle {
    pub fn of(record: &super::TaskRecord) -> Lifecycle {
        Lifecycle {
            status: record.status,
            reason: record.reason.clone(),
            hint: record.hint.clone(),
            exit_code: record.exit_code,
            started_at: record.started_at.clone(),
            ended_at: record.ended_at.clone(),
        }
    }

    /// Lays the lifecycle over a record read from a task directory.
    pub fn apply(&self, record: &mut super::TaskRecord) {
        record.status = self.status;
        record.reason = self.reason.clone();
        record.hint = self.hint.clone();
        record.exit_code = self.exit_code;
        record.started_at = self.started_at.clone();
        record.ended_at = self.ended_at.clone();
    }
}

/// The lifecycle cuekit recorded for `task_id`; `None` for a task registered before it was
/// kept here (its record is then all there is).
pub fn lifecycle(task_id: &str) -> Option<Lifecycle> {
    fact_of(task_id, "state")
}

/// Records `task_id`'s lifecycle (replacing the last), synced before it is in place.
pub fn record_lifecycle(task_id: &str, lifecycle: &Lifecycle) -> Result<()> {
    // The registry exists since the task's submit: a write never makes a removed one anew.
    record_fact(task_id, "state", lifecycle)
}

/// A submit under way: written before tmux is asked, removed once the task is recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    pub placement: Placement,
    pub submitter_pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitter_start: Option<u64>,
}

/// `~/.local/share/cuekit` (or under `XDG_DATA_HOME`).
pub fn data_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "cuekit").map(|dirs| dirs.data_dir().to_path_buf())
}

/// A sandboxed task's report drop (`~/.local/share/cuekit/drop/<id>/`): the one place of
/// cuekit's its sandbox may write.
/// The folders a sandbox hides wherever they lie (`domain::sandbox::hidden_roots`): cuekit's
/// data (the registry, task repositories, control sockets, the web's secrets) and settings, and
/// the user's XDG folders (settings, data, state, cache, runtime: other programs' tokens live
/// there too); those that exist, as the kernel names them.
pub fn private_dirs() -> Vec<PathBuf> {
    let xdg = [
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "XDG_RUNTIME_DIR",
        // tmux's socket folder when it is not /tmp's (`tmux-<uid>/` and its sockets in it).
        "TMUX_TMPDIR",
    ]
    .into_iter()
    .filter_map(std::env::var_os)
    .map(PathBuf::from)
    .filter(|dir| dir.is_absolute());
    directories::ProjectDirs::from("", "", "cuekit")
        .into_iter()
        .flat_map(|dirs| {
            [
                dirs.data_dir().to_path_buf(),
                dirs.config_dir().to_path_buf(),
            ]
        })
        .chain(xdg)
        .filter_map(|dir| dir.canonicalize().ok())
        .collect()
}

/// Where a sandboxed task's agent keeps its state (sessions, memory, shell snapshots): a
/// folder of the task's own in cuekit's data dir, bound over the agent's, so nothing a child
/// writes there reaches the user's own runs of that agent.
pub fn state_dir(task_id: &str) -> Option<PathBuf> {
    super::is_task_id(task_id)
        .then(|| data_dir().map(|dir| dir.join("state").join(task_id)))
        .flatten()
}

pub fn drop_dir(task_id: &str) -> Option<PathBuf> {
    super::is_task_id(task_id)
        .then(|| data_dir().map(|dir| dir.join("drop").join(task_id)))
        .flatten()
}

/// `~/.local/share/cuekit/tasks`.
pub fn registry_dir() -> Option<PathBuf> {
    data_dir().map(|dir| dir.join("tasks"))
}

fn pending_dir() -> Option<PathBuf> {
    data_dir().map(|dir| dir.join("pending"))
}

/// A registry directory that must already exist.
fn existing(dir: Option<PathBuf>) -> Result<PathBuf> {
    dir.filter(|dir| dir.is_dir()).ok_or_else(|| {
        Error::new(ErrorCode::Io, "cuekit's registry directory is gone")
            .with_hint("a task registered there can no longer be announced")
    })
}

fn require(dir: Option<PathBuf>) -> Result<PathBuf> {
    let dir = dir.ok_or_else(|| {
        Error::new(
            ErrorCode::Io,
            "cannot find a home directory for cuekit's registry",
        )
        .with_hint("set HOME (or XDG_DATA_HOME)")
    })?;
    if !dir.is_dir() {
        super::create_private_dir(&dir)?;
    }
    Ok(dir)
}

/// Records, before tmux is asked, that this process is about to start `placement`'s task.
/// Not synced: after a crash there is no submitter and nothing of the task to protect.
pub fn write_pending(placement: &Placement) -> Result<()> {
    let dir = require(pending_dir())?;
    require(registry_dir())?;
    let me = std::process::id();
    let pending = Pending {
        placement: placement.clone(),
        submitter_pid: me,
        submitter_start: crate::effects::process::start_ticks(me),
    };
    let path = dir.join(&placement.id);
    // Linked into place, never seen half-written; a writer killed first leaves only a temp
    // file named after it, which the next reader removes. A link, unlike a rename, never
    // replaces an entry: two submits of one id (a caller-chosen one) cannot both go ahead.
    let tmp = dir.join(format!(".{}.{me}.pending.tmp", placement.id));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut file| file.write_all(&serde_json::to_vec(&pending).expect("serializes")))
        .and_then(|()| std::fs::hard_link(&tmp, &path));
    let _ = std::fs::remove_file(&tmp);
    match written {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::invalid_input(
            format!("task {} is already being submitted", placement.id),
        )
        .with_hint("leave the id out, and cuekit picks a fresh one")),
        Err(err) => Err(Error::io("write", &path, err)),
    }
}

pub fn remove_pending(task_id: &str) {
    if let Some(dir) = pending_dir() {
        let _ = std::fs::remove_file(dir.join(task_id));
    }
}

/// Every pending submit, and the temp files of writers that no longer run.
pub fn pending_submits() -> Vec<Pending> {
    let Some(dir) = pending_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut pending = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if super::is_task_id(&name) {
            match std::fs::read(entry.path())
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            {
                Some(found) => pending.push(found),
                // Entries are renamed into place whole: this one was damaged from outside.
                None => {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        } else {
            super::atomic::remove_if_stale_tmp(&entry.path());
        }
    }
    pending
}

/// The registry entry, written and synced under a temp name until [`super::Staged::commit`].
pub fn stage_placement(placement: &Placement) -> Result<super::Staged> {
    // The id is the file's name: only a task id's shape may become one.
    refuse_non_id(&placement.id)?;
    let tmp_dir = require(pending_dir())?;
    let dir = require(registry_dir())?;
    let bytes = serde_json::to_vec_pretty(placement).expect("serializes");
    super::atomic::stage_in(&tmp_dir, &dir.join(&placement.id), &bytes)
}

/// Records the pane tmux created for the task's attempt, replacing an earlier attempt's. Renamed
/// into place: a reader finds the one pane or the other, never a mix (unsynced: one lost to a
/// crash reads as an unknown pane, which never leads to acting on the wrong one).
pub fn record_pane_start(task_id: &str, pane: &PaneStart) -> Result<()> {
    record_fact_unsynced(task_id, "pane", pane)
}

/// The registry's placement of `task_id`, if cuekit ever registered it on this account.
pub fn placement(task_id: &str) -> Result<Option<Placement>> {
    if !super::is_task_id(task_id) {
        return Ok(None);
    }
    let Some(dir) = registry_dir() else {
        return Ok(None);
    };
    let path = dir.join(task_id);
    let bytes = match super::atomic::read_small(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Error::io("read", &path, err)),
    };
    parse_placement(task_id, bytes, &path).map(Some)
}

fn parse_placement(task_id: &str, bytes: Vec<u8>, path: &Path) -> Result<Placement> {
    if bytes.first() == Some(&b'{') {
        let placement: Placement = serde_json::from_slice(&bytes).map_err(|err| {
            Error::new(
                ErrorCode::StoreCorrupt,
                format!("registry entry {} is damaged: {err}", path.display()),
            )
            .with_hint("run `cuekit doctor`")
        })?;
        if placement.id != task_id {
            return Err(Error::new(
                ErrorCode::StoreCorrupt,
                format!(
                    "registry entry {} names task {}",
                    path.display(),
                    placement.id
                ),
            ));
        }
        return Ok(placement);
    }
    // An entry from before placements were recorded: the task directory alone.
    Ok(Placement {
        id: task_id.to_string(),
        task_dir: PathBuf::from(OsString::from_vec(bytes)),
        socket: Socket(String::new()),
        session: crate::effects::tmux::args::session_name(task_id),
        created_at: String::new(),
        timeout_secs: None,
        host: None,
        facts: None,
        legacy: true,
    })
}

/// The pane recorded for `task_id`, once tmux has created it.
pub fn pane_start(task_id: &str) -> Option<PaneStart> {
    fact_of(task_id, "pane")
}

/// A file of the registry's, staged in its temp folder (both must exist: a write never makes a
/// removed registry anew).
pub(super) fn stage_own(path: &Path, bytes: &[u8]) -> Result<super::Staged> {
    existing(registry_dir())?;
    let tmp_dir = existing(pending_dir())?;
    super::atomic::stage_in(&tmp_dir, path, bytes)
}

/// Records what `cuekit merge` did (replacing an earlier merge's record).
pub fn record_merge(task_id: &str, merge: &MergeRecord) -> Result<()> {
    record_fact(task_id, "merge", merge)
}

/// The last merge of `task_id`'s branch, if cuekit merged it.
pub fn merge_of(task_id: &str) -> Option<MergeRecord> {
    fact_of(task_id, "merge")
}

/// Writes one of a task's facts beside its registry entry (`tasks/<id>.<kind>`), whole,
/// replacing the last: cuekit's alone, out of a child's reach.
fn record_fact<T: Serialize>(task_id: &str, kind: &str, fact: &T) -> Result<()> {
    refuse_non_id(task_id)?;
    let dir = existing(registry_dir())?;
    let bytes = serde_json::to_vec(fact).expect("serializes");
    stage_own(&dir.join(format!("{task_id}.{kind}")), &bytes)?.commit()
}

/// [`record_fact`] for a fact a submit or a start writes: renamed into place without an fsync
/// (the submit pays none for it; one lost to a crash reads as unknown, never as something
/// else), the registry made if it is not there yet.
fn record_fact_unsynced<T: Serialize>(task_id: &str, kind: &str, fact: &T) -> Result<()> {
    refuse_non_id(task_id)?;
    let (tmp_dir, dir) = (require(pending_dir())?, require(registry_dir())?);
    let bytes = serde_json::to_vec(fact).expect("serializes");
    super::atomic::stage_unsynced_in(&tmp_dir, &dir.join(format!("{task_id}.{kind}")), &bytes)?
        .commit()
}

fn refuse_non_id(task_id: &str) -> Result<()> {
    if super::is_task_id(task_id) {
        Ok(())
    } else {
        Err(Error::invalid_input(format!(
            "'{task_id}' is not a task id"
        )))
    }
}

/// One of a task's facts ([`record_fact`]), if it was recorded and reads whole.
fn fact_of<T: serde::de::DeserializeOwned>(task_id: &str, kind: &str) -> Option<T> {
    if !super::is_task_id(task_id) {
        return None;
    }
    let path = registry_dir()?.join(format!("{task_id}.{kind}"));
    serde_json::from_slice(&super::atomic::read_small(&path).ok()?).ok()
}

/// Records where `task_id`'s check stands (`tasks/<id>.check`), replacing the last: written
/// by cuekit's check alone, outside the project, so a child cannot decide its verdict.
pub fn record_check(task_id: &str, state: &crate::domain::check::CheckState) -> Result<()> {
    record_fact(task_id, "check", state)
}

/// Keeps the spec a task was submitted with, where its child cannot write: what a further
/// attempt, a retry or a late start is built from (its approval mode, permissions, argv,
/// model), never the `task.json` its child may have rewritten. Renamed into place without an
/// fsync (a submit pays none for it): a spec lost to a crash makes a retry refuse, never guess.
pub fn keep_spec(task_id: &str, spec: &crate::domain::spec::TaskSpec) -> Result<()> {
    record_fact_unsynced(task_id, "spec", spec)
}

/// The spec kept at submit ([`keep_spec`]).
pub fn kept_spec(task_id: &str) -> Result<crate::domain::spec::TaskSpec> {
    let gone = || {
        Error::new(
            ErrorCode::StoreCorrupt,
            format!("task {task_id}: the spec kept at its submit is gone or unreadable"),
        )
        .with_hint("submit the task again")
    };
    fact_of(task_id, "spec").ok_or_else(gone)
}

/// Records `task_id`'s last report as taken from the task itself (`cuekit report` from its own
/// pane, or its sandbox's drop): what a dependency reads, never a report a child wrote into its
/// `task.json`.
pub fn record_report(task_id: &str, report: &crate::domain::report::Report) -> Result<()> {
    record_fact(task_id, "report", report)?;
    // The last few, for the recap a next agent is told (its writers hold the record's lock).
    let mut kept: Vec<crate::domain::report::Report> =
        fact_of(task_id, "reports").unwrap_or_default();
    kept.push(report.clone());
    let extra = kept
        .len()
        .saturating_sub(crate::domain::recap::REPORTS_KEPT);
    kept.drain(..extra);
    record_fact(task_id, "reports", &kept)
}

/// `task_id`'s last reports as cuekit took them, oldest first: at most
/// [`crate::domain::recap::REPORTS_KEPT`] (`tasks/<id>.reports`), else the last one.
pub fn reports_of(task_id: &str) -> Vec<crate::domain::report::Report> {
    fact_of(task_id, "reports").unwrap_or_else(|| report_of(task_id).into_iter().collect())
}

/// `task_id`'s last report as cuekit took it ([`record_report`]).
pub fn report_of(task_id: &str) -> Option<crate::domain::report::Report> {
    fact_of(task_id, "report")
}

/// Where `task_id`'s check stands, if it has one that ran or was set up.
pub fn check_of(task_id: &str) -> Option<crate::domain::check::CheckState> {
    fact_of(task_id, "check")
}

/// Every registered task id.
pub fn registered_ids() -> Result<Vec<String>> {
    let Some(dir) = registry_dir() else {
        return Ok(Vec::new());
    };
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(Error::io("read", &dir, err)),
    };
    Ok(entries
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| super::is_task_id(name))
        .collect())
}

/// What the monitor last announced for `task_id` (`tasks/<id>.seen`): kept on disk, so a
/// monitor that was killed announces each transition once, never twice or not at all.
pub fn announced(task_id: &str) -> crate::domain::transition::Announced {
    registry_dir()
        .and_then(|dir| std::fs::read(dir.join(format!("{task_id}.seen"))).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

pub fn save_announced(
    task_id: &str,
    announced: &crate::domain::transition::Announced,
) -> Result<()> {
    // The task was registered, so both directories exist; if they are gone (a removed HOME),
    // an announcement must not make them anew.
    let dir = existing(registry_dir())?;
    let bytes = serde_json::to_vec(announced).expect("serializes");
    let tmp_dir = existing(pending_dir())?;
    super::atomic::stage_in(&tmp_dir, &dir.join(format!("{task_id}.seen")), &bytes)?.commit()
}

/// Forgets a task: its placement, pane, announcements and what the scheduler kept of it.
pub fn unregister(task_id: &str) {
    // An id names files here: anything but a task id's shape names none of cuekit's.
    if !super::is_task_id(task_id) {
        return;
    }
    super::schedule::forget(task_id);
    super::intent::clear_cancel(task_id);
    for dir in [drop_dir(task_id), state_dir(task_id)]
        .into_iter()
        .flatten()
    {
        let _ = std::fs::remove_dir_all(dir);
    }
    if let Some(dir) = registry_dir() {
        // Its facts beside the entry; `conflicts` is the last conflict check's
        // (`store::conflicts`).
        let kinds = [
            "seen",
            "merge",
            "check",
            "report",
            "reports",
            "spec",
            "conflicts",
            "pane",
            "state",
        ];
        for kind in kinds {
            let _ = std::fs::remove_file(dir.join(format!("{task_id}.{kind}")));
        }
        let _ = std::fs::remove_file(dir.join(task_id));
    }
}
