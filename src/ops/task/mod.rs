//! Finding tasks, and the trust boundary: a project's `task.json` is data anyone who can write
//! the project may have written (a cloned repository, a child agent); the user's registry says
//! where cuekit really put each task. Only a record that agrees with its registry entry is acted
//! on; others are shown and left alone.

pub(crate) mod route;
pub(crate) mod view;

use std::path::{Path, PathBuf};

use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::status::Status;
use crate::effects::process::GroupLeader;
use crate::effects::store::{self, PaneStart, Placement, TaskRecord, WorktreePlacement};
use crate::effects::tmux::Socket;

/// A task cuekit may act on: its registry placement, the pane tmux reported at start, and a
/// record that agrees with both.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub placement: Placement,
    pub pane: Option<PaneStart>,
    pub record: TaskRecord,
}

impl Task {
    /// The pane's process group, as recorded at start.
    pub fn group_leader(&self) -> Option<GroupLeader> {
        leader_of(self.pane.as_ref())
    }

    /// The task's own worktree, as cuekit created it (never as a record says).
    pub fn worktree(&self) -> Option<&WorktreePlacement> {
        self.placement.facts.as_ref()?.worktree.as_ref()
    }

    /// Whether the registry put the task inside bubblewrap ([`Placement::in_bubblewrap`]).
    pub fn in_bubblewrap(&self) -> bool {
        self.placement.in_bubblewrap()
    }

    /// The sandbox the registry recorded for the task ([`Placement::sandbox_policy`]).
    pub fn sandbox_policy(&self) -> crate::domain::sandbox::Policy {
        self.placement.sandbox_policy()
    }
}

pub(crate) fn leader_of(pane: Option<&PaneStart>) -> Option<GroupLeader> {
    pane.map(|pane| GroupLeader {
        pid: pane.pane_pid,
        start_ticks: pane.start_ticks,
    })
}

/// What was found under a task id or in a project's tasks directory.
#[derive(Debug)]
pub(crate) enum Found {
    Trusted(Box<Task>),
    /// Shown, never acted on: a record the registry does not know or that disagrees with it.
    Untrusted {
        id: String,
        task_dir: PathBuf,
        record: Option<Box<TaskRecord>>,
        why: String,
    },
    /// A registered task whose record cannot be read (damaged, or its directory deleted): its
    /// placement is still the user's own, so its processes can still be ended.
    Unreadable {
        placement: Placement,
        pane: Option<PaneStart>,
        error: Error,
    },
}

/// A task by id: through the registry, or (untrusted) in the current project.
pub(crate) fn find(task_id: &str, cwd: &Path) -> Result<Found> {
    if !store::is_task_id(task_id) {
        return Err(Error::task_not_found(task_id)
            .with_hint("task ids look like t_0123456789ab; run `cuekit list --all`"));
    }
    if let Some(placement) = store::placement(task_id)? {
        if let Some(host) = &placement.host {
            return Err(on_host_error(task_id, host));
        }
        let dir = placement.task_dir.clone();
        return Ok(judge_trust(placement, &dir));
    }
    match store::project_tasks_root(cwd).map(|root| root.join(task_id)) {
        Some(dir) if dir.join(store::RECORD_FILE).is_file() => Ok(untrusted_unregistered(&dir)),
        _ => Err(Error::task_not_found(task_id)),
    }
}

/// A task to act on: anything but a trusted task is an error that says why.
pub(crate) fn open(task_id: &str, cwd: &Path) -> Result<Task> {
    match find(task_id, cwd)? {
        Found::Trusted(task) => Ok(*task),
        Found::Untrusted { id, why, .. } => Err(untrusted_error(&id, &why)),
        Found::Unreadable { error, .. } => Err(error),
    }
}

/// A host's task is never judged or acted on here: its paths and pids are the host's.
/// Operations that reach hosts route it there first (`ops::route`); this is the boundary's
/// last word for the others.
pub(crate) fn on_host_error(task_id: &str, host: &str) -> Error {
    Error::new(
        ErrorCode::InvalidInput,
        format!("task {task_id} runs on host {host}; this command does not reach hosts"),
    )
    .with_hint(
        "status, list --all, logs, result, diff, steer, wait, cancel, attach and rm reach a \
         host's tasks; for anything else, run cuekit on the host",
    )
}

pub(crate) fn untrusted_error(id: &str, why: &str) -> Error {
    Error::new(
        ErrorCode::Untrusted,
        format!("task {id} is untrusted: {why}"),
    )
    .with_hint(UNTRUSTED_HINT)
}

pub(crate) const UNTRUSTED_HINT: &str = "cuekit acts only on tasks it started from this account; \
     this record was written or changed by something else (a cloned repository, a child agent). \
     Inspect it, then delete its directory";

/// The tmux server of the first of the many tasks a scan is about to find (`all`: the
/// registry's, else the project's around `cwd`), so its look can begin while the scan reads
/// the records. `None` for a few tasks: a look of its own costs them more than it saves.
pub(crate) fn server_of_many(all: bool, cwd: &Path) -> Option<Socket> {
    const MANY: usize = 16;
    let ids: Vec<String> = if all {
        store::registered_ids().ok()?
    } else {
        std::fs::read_dir(store::project_tasks_root(cwd)?)
            .ok()?
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| store::is_task_id(name))
            .collect()
    };
    if ids.len() < MANY {
        return None;
    }
    ids.iter().find_map(|id| {
        let placement = store::placement(id).ok().flatten()?;
        placement.host.is_none().then_some(placement.socket)
    })
}

/// Every task directory of the project around `cwd`, each judged against the registry.
pub(crate) fn scan_project(cwd: &Path) -> Result<Vec<Found>> {
    let mut found = Vec::new();
    scan_project_each(cwd, |item| found.push(item))?;
    Ok(found)
}

/// [`scan_project`], each task handed to `each` as it is found (a listing keeps one task at a
/// time, not every task twice over).
pub(crate) fn scan_project_each(cwd: &Path, mut each: impl FnMut(Found)) -> Result<()> {
    // Canonical, as submit stores task directories, so a path through a symlink still agrees.
    let Some(root) = store::project_tasks_root(cwd).and_then(|r| std::fs::canonicalize(r).ok())
    else {
        return Ok(());
    };
    let entries = std::fs::read_dir(&root).map_err(|err| Error::io("read", &root, err))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Whatever stands in the record's place (a link, a FIFO a child made) is listed and
        // judged: a task is never hidden by what was put there.
        let record = entry.path().join(store::RECORD_FILE);
        if !store::is_task_id(&name) || std::fs::symlink_metadata(&record).is_err() {
            continue;
        }
        let dir = entry.path();
        each(match store::placement(&name) {
            Ok(Some(placement)) => judge_trust(placement, &dir),
            Ok(None) => untrusted_unregistered(&dir),
            Err(error) => Found::Untrusted {
                id: name,
                task_dir: dir,
                record: None,
                why: error.message,
            },
        });
    }
    Ok(())
}

/// Every task in the user's registry.
pub(crate) fn scan_registry() -> Result<Vec<Found>> {
    let mut found = Vec::new();
    scan_registry_each(|item| found.push(item))?;
    Ok(found)
}

/// [`scan_registry`], each task handed to `each` as it is found.
pub(crate) fn scan_registry_each(mut each: impl FnMut(Found)) -> Result<()> {
    for id in store::registered_ids()? {
        match store::placement(&id) {
            // A host's task is listed from its host (`ops::remote`), never judged here.
            Ok(Some(placement)) if placement.host.is_some() => {}
            Ok(Some(placement)) => {
                let dir = placement.task_dir.clone();
                // A task whose directory is gone and that has no process left is history.
                if !dir.exists()
                    && crate::effects::process::task_processes(
                        &id,
                        leader_of(store::pane_start(&id).as_ref()),
                    )
                    .is_empty()
                {
                    continue;
                }
                each(judge_trust(placement, &dir));
            }
            Ok(None) => {}
            Err(error) => each(Found::Untrusted {
                id,
                task_dir: PathBuf::new(),
                record: None,
                why: error.message,
            }),
        }
    }
    Ok(())
}

fn untrusted_unregistered(dir: &Path) -> Found {
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Found::Untrusted {
        record: store::load(dir).ok().map(Box::new),
        task_dir: dir.to_path_buf(),
        why: "cuekit's registry has no such task".into(),
        id,
    }
}

/// A registered task, judged against its record as it is now.
pub(crate) fn found_for(placement: Placement) -> Found {
    let dir = placement.task_dir.clone();
    judge_trust(placement, &dir)
}

/// Holds the record found in `dir` against the registry's `placement`.
///
/// The pane start is read after the record (and the registry's lifecycle in it): a further
/// attempt records its pane before it says `running`, so a record read as running never meets
/// an earlier attempt's pane (which would read as gone: `pane_disappeared`).
fn judge_trust(mut placement: Placement, dir: &Path) -> Found {
    let record = match store::load(dir) {
        Ok(record) => record,
        Err(error) if dir == placement.task_dir => {
            let error = if dir.join(store::RECORD_FILE).exists() {
                error
            } else {
                Error::new(
                    ErrorCode::StoreCorrupt,
                    format!(
                        "task {}'s record is gone from {}",
                        placement.id,
                        dir.display()
                    ),
                )
                .with_hint(
                    "its directory was deleted (by the agent, or `git clean`); \
                     `cuekit cancel` still ends its processes",
                )
            };
            return Found::Unreadable {
                pane: store::pane_start(&placement.id),
                placement,
                error,
            };
        }
        Err(error) => {
            return Found::Untrusted {
                id: placement.id,
                task_dir: dir.to_path_buf(),
                record: None,
                why: error.message,
            };
        }
    };
    if placement.legacy {
        adopt_legacy(&mut placement, &record);
    }
    match disagreement(&placement, &record, dir) {
        None if store::lifecycle(&placement.id)
            .is_some_and(|stored| stored != store::Lifecycle::of(&record)) =>
        {
            // The mirror is behind the registry (its write met a full disk) or was written
            // over (by the child): it says again what the registry says, and is read as that.
            let record = store::update(dir, |_| Ok(true)).unwrap_or(record);
            trusted(placement, record)
        }
        None => trusted(placement, record),
        Some(why) => Found::Untrusted {
            id: placement.id,
            task_dir: dir.to_path_buf(),
            record: Some(Box::new(record)),
            why,
        },
    }
}

/// A task whose record agrees with the registry: what it believes, then its pane.
fn trusted(placement: Placement, record: TaskRecord) -> Found {
    let record = believed(&placement, record);
    Found::Trusted(Box::new(Task {
        pane: store::pane_start(&placement.id),
        record,
        placement,
    }))
}

/// The task's record read again from its directory, with what cuekit acts on taken from the
/// registry again (see [`believed`]).
pub(crate) fn reread(placement: &Placement) -> Result<TaskRecord> {
    Ok(believed(placement, store::load(&placement.task_dir)?))
}

/// Where a task's check stands, as the registry says (a planned check not run yet: its first
/// round pending); never what a `task.json` says.
pub(crate) fn believed_check(placement: &Placement) -> Option<crate::domain::check::CheckState> {
    store::check_of(&placement.id).or_else(|| {
        let plan = placement.facts.as_ref()?.check.as_ref()?;
        Some(crate::domain::check::CheckState::new(plan.rounds))
    })
}

/// The record with what cuekit acts on taken from the registry: a child that rewrote its own
/// `task.json` (its directory, agent, team, worktree, submitter) changes what people read in
/// the file, never what cuekit does. An entry from before these were registered keeps the
/// record's harmless fields, and no worktree or submitter: those are never acted on unproven.
fn believed(placement: &Placement, mut record: TaskRecord) -> TaskRecord {
    // Where the task stands (its status, ending, reason, exit code) is the registry's: a
    // `task.json` that says `completed` decides nothing.
    if let Some(lifecycle) = store::lifecycle(&placement.id) {
        lifecycle.apply(&mut record);
    }
    // So is where its check stands: a record that says `passed` decides nothing.
    record.check = believed_check(placement);
    match &placement.facts {
        Some(facts) => {
            record.cwd = facts.cwd.clone();
            record.spec.agent_kind = facts.agent.clone();
            record.mode = facts.mode;
            record.team = facts.team.clone();
            if facts.agent_session_id.is_some() {
                record.agent_session_id = facts.agent_session_id.clone();
            }
            record.submitted_from = facts.submitted_from.clone();
            record.sandbox = facts.sandbox.clone();
            record.worktree = facts.worktree.as_ref().map(Into::into);
            // Its deadline runs from the registry's start, by the registry's timeout.
            record.created_at = placement.created_at.clone();
            record.timeout_secs = placement.timeout_secs;
            // Whether an exit 0 must agree with the agent's `result` event.
            if let Some(event_stream) = facts.event_stream {
                record.event_stream = event_stream;
            }
        }
        None => {
            // The task's directory is `<cwd>/.cuekit/tasks/<id>`, as submit made it.
            if let Some(cwd) = placement.task_dir.ancestors().nth(3) {
                record.cwd = cwd.to_path_buf();
            }
            record.submitted_from = None;
            record.sandbox = None;
            record.worktree = None;
        }
    }
    record
}

/// An entry written before placements were recorded held only the task directory; the rest is
/// what such a task always had: the session named after it, on a server named (never a path).
fn adopt_legacy(placement: &mut Placement, record: &TaskRecord) {
    if let Some(tmux) = &record.tmux
        && !tmux.socket.0.contains('/')
        && let Ok(socket) = tmux.socket.resolve()
    {
        placement.socket = socket;
    }
    placement.created_at = record.created_at.clone();
    placement.timeout_secs = record.timeout_secs;
}

/// Why a record cannot be believed, if it cannot.
fn disagreement(placement: &Placement, record: &TaskRecord, dir: &Path) -> Option<String> {
    if record.id != placement.id {
        return Some(format!("its record names task {}", record.id));
    }
    if dir != placement.task_dir || record.task_dir != placement.task_dir {
        return Some(format!(
            "cuekit put this task in {}, not {}",
            placement.task_dir.display(),
            record.task_dir.display()
        ));
    }
    if matches!(
        record.status,
        Status::InputRequired | Status::Untrusted | Status::Unknown
    ) {
        return Some(format!(
            "its record claims the status {}, which is never stored",
            record.status.as_str()
        ));
    }
    let tmux = record.tmux.as_ref()?;
    let socket = tmux.socket.resolve().ok();
    if socket.as_ref() != Some(&placement.socket) || tmux.session != placement.session {
        return Some(format!(
            "its record names the tmux session {} on {}, but cuekit started it as {} on {}",
            tmux.session, tmux.socket.0, placement.session, placement.socket.0
        ));
    }
    None
}

/// The task whose pane `pid` runs in, judged by the kernel rather than by `pid`'s own
/// environment (`env -u CUEKIT_TASK_ID` clears that): an ancestor started with a task's id in
/// its environment, an ancestor that is a registered task's pane process, or a controlling
/// terminal that is a registered task's pane (an ancestry cut by `setsid` keeps its terminal,
/// unless it gave that up too — which [`crate::effects::process::controlling_terminal`] tells).
pub fn task_of_process(pid: u32) -> Option<String> {
    let chain = crate::effects::process::ancestry(pid);
    if let Some(id) = chain
        .iter()
        .find_map(|&pid| crate::effects::process::task_id_in_environment(pid))
    {
        return Some(id);
    }
    let terminal = crate::effects::process::controlling_terminal(pid);
    store::registered_ids().ok()?.into_iter().find(|id| {
        store::pane_start(id).is_some_and(|pane| {
            let ours = crate::effects::process::start_ticks(pane.pane_pid) == pane.start_ticks;
            ours && (chain.contains(&pane.pane_pid)
                || terminal.is_some()
                    && crate::effects::process::controlling_terminal(pane.pane_pid) == terminal)
        })
    })
}

/// The pid of task `task_id`'s pane process (the first process of its pane, which leads its
/// process group), as tmux reported it at creation.
pub fn task_pane_leader(task_id: &str) -> Option<u32> {
    store::pane_start(task_id).map(|pane| pane.pane_pid)
}
