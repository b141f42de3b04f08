//! The scheduler's state, kept in the user's own data directory (never in a project's
//! `.cuekit/`, which a cloned repository or a child can write): what a task waits for, its
//! attempts, and who holds a slot. Each fact is a file of its own, so the scheduler's look at an
//! idle queue is two directory reads.
//!
//! Layout under `~/.local/share/cuekit`:
//! - `tasks/<id>.plan`: the task's [`Plan`] (priority, dependencies, limits, retry policy,
//!   attempts), written at submit for a task that is queued or may be retried;
//! - `tasks/<id>.launch`: the `launch.sh` of the task's next start (owner-only, so nothing a
//!   project holds is ever run by the scheduler), and `tasks/<id>.env`, the submitter's
//!   environment, copied to `tasks/<id>.env.sh` (the pane's, read and deleted by `launch.sh`)
//!   at each start;
//! - `tasks/<id>.go`: the gate of a scheduled start: the pane starts the agent once it exists,
//!   which is once the record says `running`;
//! - `queue/<id>`: present while the task waits to start (empty);
//! - `slots/<id>`: present while the task holds a slot (its agent and team, JSON);
//! - `starting/<id>`: the claim of the process starting the task (its pid and start time);
//! - `scheduler.lock`: held by whoever decides starts (one at a time, user-wide).

pub use crate::domain::result::Attempt;
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::domain::error::{Error, Result};

/// How a task's attempts are retried: at most `max` more times, for the reasons in `on`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPolicy {
    pub max: u32,
    pub on: Vec<String>,
    /// Seconds before the first retry; doubled for each further one, up to `backoff_max`.
    pub backoff_first: u64,
    pub backoff_max: u64,
}

/// The reasons an attempt may be retried for. Everything else (`cancelled`, `timed_out`,
/// `auth_missing`, `input_error`, `untrusted`, a dependency failure, an exit the agent
/// documents as the task's own) is an ending.
pub const RETRYABLE: &[&str] = &["rate_limited", "transient", "pane_disappeared"];

impl RetryPolicy {
    /// The wait before attempt `next` (2 is the first retry), unless the agent named one.
    pub fn backoff(&self, next: usize, hinted: Option<Duration>) -> Duration {
        if let Some(hinted) = hinted {
            return hinted.min(Duration::from_secs(self.backoff_max.max(1) * 4));
        }
        let doublings = next.saturating_sub(2).min(20) as u32;
        let secs = self.backoff_first.saturating_mul(1u64 << doublings);
        Duration::from_secs(secs.min(self.backoff_max))
    }
}

/// Caps on live agents: the user's, lowered (never raised) by the project's file and the
/// team spec the task came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<u32>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, u32>,
}

impl Limits {
    pub fn is_empty(&self) -> bool {
        self.running.is_none() && self.agents.is_empty()
    }

    /// The stricter of the two, cap by cap.
    pub fn lowered_by(mut self, other: &Limits) -> Limits {
        self.running = min_some(self.running, other.running);
        for (agent, cap) in &other.agents {
            let cap = min_some(self.agents.get(agent).copied(), Some(*cap));
            self.agents.insert(agent.clone(), cap.expect("one is set"));
        }
        self
    }
}

fn min_some(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What the scheduler knows of a task besides its placement.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Higher starts first; equal ones in submit order.
    #[serde(default)]
    pub priority: i32,
    pub queued_at: String,
    /// Tasks that must have completed (or, with `after_ended`, ended) before this one starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after_ended: bool,
    #[serde(default, skip_serializing_if = "Limits::is_empty")]
    pub limits: Limits,
    /// The team's cap on its members running at once (`max_parallel` of a team spec).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team_max: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// An ended task whose answer goes into this one's prompt at its first start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_from: Option<String>,
    /// A worktree task whose branch tip this task's worktree starts from, made at its first
    /// start (with the `--branch` asked, if any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// The task ended while it waited (a cancel, a failed dependency): it never starts again
    /// unless `cuekit retry` reopens it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closed: bool,
    /// No attempt starts before this time (a retry's backoff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<String>,
    /// The agents a rate-limited task goes on with, in order (`--fallback`, the user's
    /// `retry.fallback`), and how many of them earlier failovers used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<crate::domain::failover::Fallback>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fallback_used: usize,
    /// A reset further off than this many seconds is not waited for (`retry.fallback_after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_after: Option<u64>,
    /// The next start runs another agent, told the recap (a failover or a hand-off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch: Option<Switch>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A start on another agent than the last attempt's, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switch {
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent (and model) of the attempt that ended, and its ending.
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_model: Option<String>,
    pub reason: String,
    /// The hand-off's message from the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// What a slot's holder is, for counting against the caps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
}

fn dir(name: &str) -> Option<PathBuf> {
    super::data_dir().map(|data| data.join(name))
}

fn file_in(name: &str, task_id: &str) -> Option<PathBuf> {
    super::is_task_id(task_id)
        .then(|| dir(name).map(|dir| dir.join(task_id)))
        .flatten()
}

fn registry_file(task_id: &str, suffix: &str) -> Option<PathBuf> {
    super::is_task_id(task_id)
        .then(|| super::registry_dir().map(|dir| dir.join(format!("{task_id}.{suffix}"))))
        .flatten()
}

fn no_home() -> Error {
    Error::new(
        crate::domain::error::ErrorCode::Io,
        "cannot find a home directory for cuekit's scheduler",
    )
    .with_hint("set HOME (or XDG_DATA_HOME)")
}

fn ensure_dir(name: &str) -> Result<PathBuf> {
    let dir = dir(name).ok_or_else(no_home)?;
    if !dir.is_dir() {
        if let Some(data) = super::data_dir()
            && !data.is_dir()
        {
            super::create_private_dir(&data)?;
        }
        super::create_private_dir(&dir)?;
    }
    Ok(dir)
}

pub fn plan_path(task_id: &str) -> Option<PathBuf> {
    registry_file(task_id, "plan")
}

pub fn launch_path(task_id: &str) -> Option<PathBuf> {
    registry_file(task_id, "launch")
}

pub fn env_path(task_id: &str) -> Option<PathBuf> {
    registry_file(task_id, "env")
}

/// `tasks/<id>.keys`: a sandboxed task's agents' own key variables (the secret-named ones of
/// each agent's `auth_env`, as the submitter or the hand-off's caller had them), kept apart
/// from its environment: a start on one agent is given that agent's only.
pub fn keys_path(task_id: &str) -> Option<PathBuf> {
    registry_file(task_id, "keys")
}

/// Each agent's own key variables kept for a task, by agent kind.
pub type AgentKeys = BTreeMap<String, Vec<(String, String)>>;

/// The key variables kept for a task's agents (none when nothing was kept).
pub fn agent_keys(task_id: &str) -> AgentKeys {
    keys_path(task_id)
        .and_then(|path| super::read_small(&path).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

pub fn save_agent_keys(task_id: &str, keys: &AgentKeys) -> Result<()> {
    let path = keys_path(task_id).ok_or_else(no_home)?;
    write_private(&path, &serde_json::to_vec(keys).expect("keys serialize"))
}

/// `tasks/<id>.env.sh`: the submitter's environment for the pane's next start, which
/// `launch.sh` reads and deletes as its first act. Kept in the data dir, never in a task
/// folder: every sandbox hides the data dir, while a project's `.cuekit/` lies where a child
/// of another project, or one of this project unsandboxed, could read it.
pub fn pane_env_path(task_id: &str) -> Option<PathBuf> {
    registry_file(task_id, "env.sh")
}

pub fn go_path(task_id: &str) -> Option<PathBuf> {
    registry_file(task_id, "go")
}

pub fn claim_path(task_id: &str) -> Option<PathBuf> {
    file_in("starting", task_id)
}

/// The task's plan, if it has one.
pub fn plan(task_id: &str) -> Option<Plan> {
    let bytes = super::read_small(&plan_path(task_id)?).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Writes the plan whole (temp file, sync, rename).
pub fn save_plan(task_id: &str, plan: &Plan) -> Result<()> {
    let path = plan_path(task_id).ok_or_else(no_home)?;
    let tmp_dir = ensure_dir("pending")?;
    ensure_dir("tasks")?;
    let bytes = serde_json::to_vec_pretty(plan).expect("a plan serializes");
    super::atomic::stage_in(&tmp_dir, &path, &bytes)?.commit()
}

/// Writes an owner-only file of the registry in place of any earlier one.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp_dir = ensure_dir("pending")?;
    super::atomic::stage_in(&tmp_dir, path, bytes)?.commit()
}

/// Closes the plan of a task that ended while it waited: nothing starts it again but `cuekit
/// retry`, and its attempts stay on record.
pub fn close_plan(task_id: &str) {
    if let Some(mut plan) = plan(task_id).filter(|plan| !plan.closed) {
        plan.closed = true;
        let _ = save_plan(task_id, &plan);
    }
}

/// Marks the task as waiting to start.
pub fn enqueue(task_id: &str) -> Result<()> {
    let dir = ensure_dir("queue")?;
    touch(&dir.join(task_id))
}

pub fn dequeue(task_id: &str) {
    if let Some(path) = file_in("queue", task_id) {
        let _ = std::fs::remove_file(path);
    }
}

pub fn is_queued(task_id: &str) -> bool {
    file_in("queue", task_id).is_some_and(|path| path.exists())
}

/// The ids waiting to start (one directory read).
pub fn queued_ids() -> Vec<String> {
    ids_in("queue")
}

/// Whether anything waits to start, without reading the whole directory.
pub fn any_queued() -> bool {
    dir("queue")
        .and_then(|dir| std::fs::read_dir(dir).ok())
        .is_some_and(|mut entries| {
            entries.any(|entry| {
                entry
                    .ok()
                    .is_some_and(|e| super::is_task_id(&e.file_name().to_string_lossy()))
            })
        })
}

/// Records that the task holds a slot.
pub fn take_slot(task_id: &str, slot: &Slot) -> Result<()> {
    let dir = ensure_dir("slots")?;
    write_in_place(
        &dir.join(task_id),
        &serde_json::to_vec(slot).expect("serializes"),
    )
}

/// A small owner-only file written in place (not synced): a reader that finds it half-written
/// takes it for missing, which costs a look, never a second start.
fn write_in_place(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|err| Error::io("write", path, err))
}

pub fn free_slot(task_id: &str) {
    if let Some(path) = file_in("slots", task_id) {
        let _ = std::fs::remove_file(path);
    }
}

pub fn slot_path(task_id: &str) -> Option<PathBuf> {
    file_in("slots", task_id)
}

/// The ids holding a slot (one directory read).
pub fn slot_ids() -> Vec<String> {
    ids_in("slots")
}

/// Every slot holder, with what it runs and when its slot was taken.
pub fn slots() -> Vec<(String, Option<Slot>, Option<std::time::SystemTime>)> {
    let Some(dir) = dir("slots") else {
        return Vec::new();
    };
    ids_in("slots")
        .into_iter()
        .map(|id| {
            let path = dir.join(&id);
            let taken = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            let slot = super::read_small(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok());
            (id, slot, taken)
        })
        .collect()
}

/// The claim of a start under way: who makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ticks: Option<u64>,
}

impl Claim {
    pub fn mine() -> Claim {
        let pid = std::process::id();
        Claim {
            pid,
            start_ticks: crate::effects::process::start_ticks(pid),
        }
    }

    pub fn is_alive(&self) -> bool {
        crate::effects::process::start_ticks(self.pid)
            .is_some_and(|ticks| self.start_ticks.is_none_or(|start| start == ticks))
    }
}

pub fn write_claim(task_id: &str) -> Result<()> {
    let dir = ensure_dir("starting")?;
    write_in_place(
        &dir.join(task_id),
        &serde_json::to_vec(&Claim::mine()).expect("serializes"),
    )
}

pub fn claim(task_id: &str) -> Option<Claim> {
    serde_json::from_slice(&super::read_small(&claim_path(task_id)?).ok()?).ok()
}

pub fn claimed_ids() -> Vec<String> {
    ids_in("starting")
}

pub fn drop_claim(task_id: &str) {
    if let Some(path) = claim_path(task_id) {
        let _ = std::fs::remove_file(path);
    }
}

/// Opens the scheduler's gate for the task's pane.
pub fn open_gate(task_id: &str) -> Result<()> {
    let path = go_path(task_id).ok_or_else(no_home)?;
    touch(&path)
}

pub fn close_gate(task_id: &str) {
    if let Some(path) = go_path(task_id) {
        let _ = std::fs::remove_file(path);
    }
}

/// The lock whoever decides starts holds, user-wide; `None` when there is no data directory.
pub fn decision_lock() -> Result<std::fs::File> {
    let data = ensure_dir("queue")?
        .parent()
        .expect("queue has a parent")
        .to_path_buf();
    super::lock_file(&data.join("scheduler.lock"))
}

/// The file whose lock the running scheduler process holds.
pub fn runner_lock_path() -> Option<PathBuf> {
    super::data_dir().map(|data| data.join("scheduler.pid"))
}

/// The members a team's budget spans (`teams/<team>.budget`), as its spec submitted them.
pub fn team_members(team: &str) -> Vec<String> {
    let Some(path) = dir("teams").map(|dir| dir.join(format!("{team}.budget"))) else {
        return Vec::new();
    };
    super::read_small(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Records that `task_id` spends from its team's budget.
pub fn join_team_budget(team: &str, task_id: &str) -> Result<()> {
    let dir = ensure_dir("teams")?;
    let mut members = team_members(team);
    if !members.iter().any(|id| id == task_id) {
        members.push(task_id.to_string());
    }
    write_private(
        &dir.join(format!("{team}.budget")),
        &serde_json::to_vec(&members).expect("ids serialize"),
    )
}

/// Forgets everything the scheduler kept of a task.
pub fn forget(task_id: &str) {
    dequeue(task_id);
    free_slot(task_id);
    drop_claim(task_id);
    close_gate(task_id);
    for path in [
        plan_path(task_id),
        launch_path(task_id),
        env_path(task_id),
        pane_env_path(task_id),
        keys_path(task_id),
    ]
    .into_iter()
    .flatten()
    {
        let _ = std::fs::remove_file(path);
    }
}

fn touch(path: &Path) -> Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map(|_| ())
        .map_err(|err| Error::io("write", path, err))
}

fn ids_in(name: &str) -> Vec<String> {
    let Some(dir) = dir(name) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| super::is_task_id(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max: 5,
            on: vec!["rate_limited".into()],
            backoff_first: 30,
            backoff_max: 900,
        }
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_and_a_hint_wins() {
        let policy = policy();
        assert_eq!(policy.backoff(2, None), Duration::from_secs(30));
        assert_eq!(policy.backoff(3, None), Duration::from_secs(60));
        assert_eq!(policy.backoff(7, None), Duration::from_secs(900));
        assert_eq!(
            policy.backoff(2, Some(Duration::from_secs(75))),
            Duration::from_secs(75)
        );
    }

    #[test]
    fn limits_are_only_ever_lowered() {
        let user = Limits {
            running: Some(4),
            agents: BTreeMap::from([("gemini".to_string(), 3)]),
        };
        let project = Limits {
            running: Some(9),
            agents: BTreeMap::from([("gemini".to_string(), 1), ("codex".to_string(), 2)]),
        };
        let both = user.lowered_by(&project);
        assert_eq!(both.running, Some(4));
        assert_eq!(both.agents["gemini"], 1);
        assert_eq!(both.agents["codex"], 2);
    }
}
