//! Judging a look: one tmux call per server (one in all for a single task), the sentinels, and
//! the pure rules of [`crate::domain::status`]. What a look concludes is recorded
//! ([`super::ending`]) or, for a task whose timeout or budget is due, stopped ([`super::stop`]).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use super::ending::{record_noted_cancels, record_or_show, timed_out, unrecorded};
use super::stop::stop_due;
use crate::domain::adapter;
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::launch::{EXIT_CODE_FILE, SETUP_FAILED_FILE, parse_sentinel};
use crate::domain::spec::Mode;
use crate::domain::status::{Observation, Status, Verdict, judge};
use crate::effects::store::{self, TaskRecord};
use crate::effects::tmux::{self, PaneIndex, PaneInfo, Socket, Tmux, args};
use crate::ops::task::Task;

/// What tmux said about one server.
pub(super) enum Snapshot {
    Panes(PaneIndex),
    /// tmux could not be asked (permission, a broken socket): nothing can be concluded.
    Unreachable(Error),
}

pub(crate) fn read_sentinel(record: &TaskRecord) -> Option<i32> {
    let content = store::read_small(&record.task_dir.join(EXIT_CODE_FILE)).ok()?;
    parse_sentinel(&String::from_utf8_lossy(&content))
}

/// Judges every running task and records each ending (or stops a task whose timeout is due).
pub(crate) fn refresh(tasks: Vec<Task>) -> Result<Refreshed> {
    refresh_with(tasks, true, None)
}

/// A look at one server's panes begun before the records are read, so tmux answers while
/// cuekit reads them: listing hundreds of tasks spends about as long in each.
pub(crate) struct EarlyLook {
    socket: Socket,
    look: std::thread::JoinHandle<Snapshot>,
}

impl EarlyLook {
    pub fn begin(socket: Socket) -> EarlyLook {
        let asked = socket.clone();
        EarlyLook {
            socket,
            look: std::thread::spawn(move || look_at_server(&asked)),
        }
    }

    /// The snapshot, if it shows every one of `running` (its tasks on this server) that has a
    /// pane: a task submitted after the look began is not in it, and must not be taken for one
    /// whose pane went away. Otherwise, a look taken now.
    fn snapshot_showing(self, running: &[&Task]) -> Snapshot {
        let early = self.look.join().ok();
        if let Some(Snapshot::Panes(panes)) = &early
            && running
                .iter()
                .filter(|task| task.placement.socket == self.socket)
                .all(|task| find_pane(task, panes).is_some())
        {
            return early.expect("matched above");
        }
        look_at_server(&self.socket)
    }
}

/// [`refresh`], with the look at one server begun already.
pub(crate) fn refresh_after(tasks: Vec<Task>, early: EarlyLook) -> Result<Refreshed> {
    refresh_with(tasks, true, Some(early))
}

/// [`refresh`]; with `stop_timed_out`, a task whose timeout is due is recorded `timed_out` and
/// its processes are ended by a detached stopper. A caller that ends them itself passes `false`.
///
/// A task whose pane went away without an exit code (its server was killed) is recorded as
/// failed, and processes that ignored the hang-up are left for `status` to show and for
/// `cancel` or the task's timeout to end: a look never kills anything unasked.
pub(super) fn refresh_with(
    tasks: Vec<Task>,
    stop_timed_out: bool,
    mut early: Option<EarlyLook>,
) -> Result<Refreshed> {
    // A cancel noted while the disk was full is the ending, whatever the pane shows now.
    record_noted_cancels(&tasks);
    // A sandboxed child's reports wait in its drop: on record before any ending of it.
    for task in &tasks {
        let sandboxed = task
            .placement
            .facts
            .as_ref()
            .is_some_and(|facts| facts.sandbox.is_some());
        if sandboxed
            && task.record.status == Status::Running
            && let Some(dir) = store::drop_dir(&task.record.id)
        {
            crate::ops::report::dropped::take_dropped(task, &dir);
        }
    }
    // Panes are looked at first and sentinels after (see `Observation`). A server needs no
    // look when every running task on it has its sentinel already; finding one that has not is
    // enough to know it does (each sentinel is then read once, after the look).
    // A queued task has no pane to look at (its scheduler starts it).
    let running: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.record.status == Status::Running)
        .collect();
    // Every running task's server is looked at, sentinel or not: a sentinel beside a live pane
    // is not an ending (the child can write one).
    let mut snapshots: HashMap<Socket, Snapshot> = HashMap::new();
    let mut screens = HashMap::new();
    if let [task] = running.as_slice() {
        let (snapshot, screen) = look_at_one(task);
        if let Some((pane_id, screen)) = screen {
            screens.insert((task.placement.socket.clone(), pane_id), screen);
        }
        snapshots.insert(task.placement.socket.clone(), snapshot);
    } else {
        for task in &running {
            let socket = &task.placement.socket;
            if !snapshots.contains_key(socket) {
                let snapshot = match early.take_if(|early| &early.socket == socket) {
                    Some(early) => early.snapshot_showing(&running),
                    None => look_at_server(socket),
                };
                snapshots.insert(socket.clone(), snapshot);
            }
        }
    }
    // Unused (one task's look shows its screen too; no running task is on its server): its
    // tmux client is waited for, never left behind.
    if let Some(unused) = early {
        let _ = unused.look.join();
    }
    let now = SystemTime::now();
    let mut not_recorded = HashSet::new();
    let mut unseen = HashSet::new();
    let tasks = tasks
        .into_iter()
        .map(|mut task| {
            if task.record.status != Status::Running {
                return Ok(task);
            }
            // Recorded since the task was read (a task read as its submit finished).
            if task.pane.is_none() {
                task.pane = store::pane_start(&task.record.id);
            }
            let panes = match snapshots.get(&task.placement.socket) {
                Some(Snapshot::Panes(panes)) => Some(panes),
                Some(Snapshot::Unreachable(_)) => None,
                None => None,
            };
            let sentinel = read_sentinel(&task.record);
            // Only "no server" / "no such session" hides a pane: before that (or a non-zero
            // sentinel while tmux cannot be asked: it can only make the ending worse) is
            // believed, one read in /proc. A sentinel of 0 is never enough without tmux.
            let leader_alive = || task.group_leader().is_some_and(|leader| leader.is_alive());
            if panes.is_none() && (sentinel.is_none_or(|code| code == 0) || leader_alive()) {
                // tmux cannot be asked: nothing can be concluded about a live pane.
                return Ok(task);
            }
            let pane = panes.and_then(|panes| find_pane(&task, panes));
            let adapter = adapter::lookup(&task.record.spec.agent_kind)?;
            // Read only for a pane tmux shows dead without its status: one read in /proc.
            let unreaped_exit = pane
                .filter(|pane| pane.dead && pane.dead_status.is_none())
                .and_then(|_| task.group_leader()?.unreaped_exit_status());
            let leader_alive = pane.is_none_or(|pane| pane.dead && pane.dead_status.is_none())
                && unreaped_exit.is_none()
                && leader_alive();
            let mut seen = Observation {
                pane,
                // `find_pane` took the pane only if it is the one recorded at start.
                pane_proven: task.pane.is_some(),
                sentinel,
                now,
                stream: None,
                setup_failed: false,
                sandbox_failed: false,
                sandbox_exit: None,
                leader_alive,
                unreaped_exit,
            };
            // Read only for an ended task tmux and the kernel gave no word on.
            let vouched = pane
                .filter(|pane| pane.dead)
                .and_then(|pane| pane.dead_status.filter(|_| seen.pane_proven))
                .or(unreaped_exit);
            if vouched.is_none() && pane.is_none_or(|pane| pane.dead) && !leader_alive {
                seen.sandbox_exit = sandbox_exit(&task);
            }
            let exit = crate::domain::status::exit_status(&seen);
            seen.stream = (task.record.event_stream && exit == Some(0))
                .then(|| crate::ops::result::outcome::stream_report(&task.record));
            seen.setup_failed = task.record.task_dir.join(SETUP_FAILED_FILE).exists();
            // Read only once the task has an exit status to judge.
            seen.sandbox_failed = exit.is_some() && sandbox_never_came_up(&task);
            match judge(&task.record, adapter, &seen) {
                // Usage past its budget ends a task as its timeout does.
                Verdict::Unchanged => Ok(match crate::ops::judge::budget::exceeded(&task) {
                    // Its run is over, its exit is near: judged at its end, its exit code kept.
                    Some(_) if run_is_ending(&task) => task,
                    Some(ending) => stop_due(task, ending, stop_timed_out),
                    None => task,
                }),
                Verdict::Unseen => {
                    unseen.insert(task.record.id.clone());
                    Ok(task)
                }
                Verdict::Ended(ending) => {
                    let ending =
                        crate::ops::judge::attempt::name_fault(&task.record, adapter, ending);
                    let ending = crate::ops::judge::budget::at_end(&task, ending);
                    // An attempt its retry policy retries goes back to the queue instead.
                    match crate::ops::judge::attempt::requeue(&task, &ending) {
                        Some(Ok(requeued)) => return Ok(requeued),
                        Some(Err(err)) => {
                            not_recorded.insert(task.record.id.clone());
                            return Ok(unrecorded(task, &err));
                        }
                        None => {}
                    }
                    let (task, recorded) = record_or_show(task, ending);
                    if !recorded {
                        not_recorded.insert(task.record.id.clone());
                    }
                    Ok(task)
                }
                Verdict::TimeoutDue => Ok(stop_due(task, timed_out(), stop_timed_out)),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Refreshed {
        tasks,
        snapshots,
        screens,
        unrecorded: not_recorded,
        unseen,
    })
}

/// One snapshot of a server's panes (an empty one when no server runs).
pub(super) fn look_at_server(socket: &Socket) -> Snapshot {
    match Tmux::new(socket.clone()).panes() {
        Ok(panes) => Snapshot::Panes(PaneIndex::new(panes)),
        Err(err) => Snapshot::Unreachable(err),
    }
}

/// One task in one tmux invocation: its session's panes and, for an interactive task, its
/// screen.
pub(super) fn look_at_one(task: &Task) -> (Snapshot, Option<(String, String)>) {
    let pane_id = task
        .pane
        .as_ref()
        .map(|p| p.pane_id.as_str())
        .filter(|_| task.record.mode == Mode::Interactive);
    let tmux = Tmux::new(task.placement.socket.clone());
    match tmux.run(&args::look_at_session(&task.placement.session, pane_id)) {
        Ok(stdout) => {
            let (panes, screen) = args::split_session_look(&stdout);
            let panes = PaneIndex::new(tmux::parse_panes(panes));
            let screen = pane_id.zip(screen).and_then(|(id, screen)| {
                // Only the pane tmux created for the task; its height says where the screen ends.
                let pane = find_pane(task, &panes)?;
                (pane.pane_id == id).then(|| {
                    let lines: String = screen.split_inclusive('\n').take(pane.height).collect();
                    (id.to_string(), lines)
                })
            });
            (Snapshot::Panes(panes), screen)
        }
        Err(err)
            if tmux::is_no_server(&err.message)
                || tmux::is_no_such_target(&err.message)
                || tmux::is_no_session_left(&err.message) =>
        {
            (Snapshot::Panes(PaneIndex::default()), None)
        }
        Err(err) if err.code == ErrorCode::TmuxFailed => (
            Snapshot::Unreachable(Error::new(ErrorCode::TmuxUnavailable, err.message)),
            None,
        ),
        Err(err) => (Snapshot::Unreachable(err), None),
    }
}

/// The task's pane in a snapshot: its session's first pane, if it is the one tmux created.
pub(crate) fn find_pane<'a>(task: &Task, panes: &'a PaneIndex) -> Option<&'a PaneInfo> {
    let pane = panes.get(&task.placement.session)?;
    match &task.pane {
        Some(start) if start.pane_id != pane.pane_id || start.pane_pid != pane.pane_pid => None,
        _ => Some(pane),
    }
}

/// Whether the task at `task_dir` has ended, judged now: its record read again, then its pane
/// (a further attempt may have started since the task was read; its pane is that attempt's).
pub(crate) fn has_ended(task: &Task) -> Result<bool> {
    let record = crate::ops::task::reread(&task.placement)?;
    let current = Task {
        record,
        pane: store::pane_start(&task.placement.id),
        ..task.clone()
    };
    Ok(refresh(vec![current])?.tasks[0].record.status.is_terminal())
}

/// A bubblewrap sandbox around a shell-launched agent writes its status: one that never got
/// the agent's exit code was never up (or bubblewrap died). (An ACP task's agent is started by its client, which reports
/// its own failure.)
pub(super) fn sandbox_never_came_up(task: &Task) -> bool {
    let wrapped = task.record.mode != crate::domain::spec::Mode::Acp && task.in_bubblewrap();
    wrapped
        && !store::read_small(
            &task
                .record
                .task_dir
                .join(crate::domain::sandbox::STATUS_FILE),
        )
        .map(|bytes| crate::domain::sandbox::came_up(&String::from_utf8_lossy(&bytes)))
        .unwrap_or(false)
}

/// The agent's exit code as bubblewrap wrote it (`--json-status-fd`) for a shell-launched task
/// in a bubblewrap sandbox: its status file is in the task directory, which the sandbox shows
/// read-only, so the child cannot have written it. `None` for any other task.
pub(super) fn sandbox_exit(task: &Task) -> Option<i32> {
    let wrapped = task.record.mode != crate::domain::spec::Mode::Acp && task.in_bubblewrap();
    if !wrapped {
        return None;
    }
    let bytes = store::read_small(
        &task
            .record
            .task_dir
            .join(crate::domain::sandbox::STATUS_FILE),
    )
    .ok()?;
    // One JSON object a line (`{ "child-pid": N }`, then `{ "exit-code": N }`).
    String::from_utf8_lossy(&bytes).lines().find_map(|line| {
        let value: serde_json::Value = serde_json::from_str(line).ok()?;
        i32::try_from(value.get("exit-code")?.as_i64()?).ok()
    })
}

/// How long a batch run whose `result` is in may take to exit before a budget stops it.
pub(super) const EXIT_AFTER_RESULT: Duration = Duration::from_secs(10);

/// A batch run that reported its `result` moments ago: it spends nothing more, and stopping it
/// would lose its exit code.
pub(super) fn run_is_ending(task: &Task) -> bool {
    let progress = task
        .record
        .task_dir
        .join(crate::ops::background::stream::PROGRESS_FILE);
    let fresh = std::fs::symlink_metadata(&progress)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|at| at.elapsed().ok())
        .is_some_and(|age| age < EXIT_AFTER_RESULT);
    task.record.mode == crate::domain::spec::Mode::Batch
        && fresh
        && crate::ops::background::stream::read_progress(&task.record.task_dir)
            .is_some_and(|p| p.finished)
}

/// Tasks after a refresh, with the pane snapshots that judged them.
pub(crate) struct Refreshed {
    pub tasks: Vec<Task>,
    pub(super) snapshots: HashMap<Socket, Snapshot>,
    /// Screens already captured with the snapshot.
    pub(super) screens: HashMap<PaneKey, String>,
    /// Tasks shown as ended whose ending could not be written yet (a full disk).
    pub(super) unrecorded: HashSet<String>,
    /// Running tasks tmux does not show though their pane's process runs (see
    /// [`Verdict::Unseen`]).
    pub(super) unseen: HashSet<String>,
}

/// A pane by its server and id: pane ids (`%N`) are numbered per server, so two servers' panes
/// may share one.
pub type PaneKey = (Socket, String);
