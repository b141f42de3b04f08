//! The one place that judges tasks and records what happened to them: a look at the panes (one
//! tmux call per server, plus one for the screens of interactive tasks; one call in all for a
//! single task), the sentinels, and the pure rules of [`crate::domain::status`]; then the ending written
//! under the record's lock, and the task's processes ended when it must stop. Every other
//! operation calls this; it calls none of them.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use super::monitor_lock;
use super::task::{Found, Task};
use super::view::TaskView;
use crate::domain::adapter;
use crate::domain::attention;
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::launch::{EXIT_CODE_FILE, SETUP_FAILED_FILE, parse_sentinel};
use crate::domain::spec::Mode;
use crate::domain::status::{Ending, Observation, Status, Verdict, judge};
use crate::effects::store::{self, TaskRecord};
use crate::effects::tmux::{self, PaneIndex, PaneInfo, Socket, Tmux, args};

use crate::effects::process::DEFAULT_GRACE;

/// What tmux said about one server.
enum Snapshot {
    Panes(PaneIndex),
    /// tmux could not be asked (permission, a broken socket): nothing can be concluded.
    Unreachable(Error),
}

/// Tasks after a refresh, with the pane snapshots that judged them.
pub(crate) struct Refreshed {
    pub tasks: Vec<Task>,
    snapshots: HashMap<Socket, Snapshot>,
    /// Screens already captured with the snapshot.
    screens: HashMap<PaneKey, String>,
    /// Tasks shown as ended whose ending could not be written yet (a full disk).
    unrecorded: HashSet<String>,
    /// Running tasks tmux does not show though their pane's process runs (see
    /// [`Verdict::Unseen`]).
    unseen: HashSet<String>,
}

/// A pane by its server and id: pane ids (`%N`) are numbered per server, so two servers' panes
/// may share one.
pub type PaneKey = (Socket, String);

/// Screens captured by earlier refreshes, by pane id, with when each was captured (unix
/// seconds). A dashboard refreshing every second then captures only the panes whose window
/// printed since: an idle screen of hundreds of tasks costs no capture at all.
#[derive(Debug, Default)]
pub struct ScreenCache {
    screens: HashMap<PaneKey, (u64, String)>,
}

impl ScreenCache {
    /// Keeps the screens a refresh used: the reused ones as they were, the others as captured
    /// `now`. Panes it did not use (gone, ended, not interactive) are forgotten.
    fn remember(&mut self, used: &HashMap<PaneKey, String>, reused: &[PaneKey], now: u64) {
        let mut kept = HashMap::with_capacity(used.len());
        for (key, screen) in used {
            let entry = match self.screens.remove(key) {
                Some(entry) if reused.contains(key) => entry,
                _ => (now, screen.clone()),
            };
            kept.insert(key.clone(), entry);
        }
        self.screens = kept;
    }
}

impl Refreshed {
    /// Whether the task's ending is shown but not on record yet: the next look writes it.
    pub fn is_unrecorded(&self, task: &Task) -> bool {
        self.unrecorded.contains(&task.record.id)
    }

    /// Takes from `cache` the screens of running panes that printed nothing since their capture
    /// (window activity, in whole seconds, before the capture's second), so they are not
    /// captured again; returns their pane ids.
    fn reuse_screens(&mut self, cache: &ScreenCache) -> Vec<PaneKey> {
        let mut reused = Vec::new();
        for task in &self.tasks {
            let Ok(Some(pane)) = self.pane(task) else {
                continue;
            };
            let key = (task.placement.socket.clone(), pane.pane_id.clone());
            if let Some((captured_at, _)) = cache.screens.get(&key)
                && !pane.dead
                && pane.activity < *captured_at
            {
                reused.push(key);
            }
        }
        for key in &reused {
            self.screens
                .insert(key.clone(), cache.screens[key].1.clone());
        }
        reused
    }

    /// [`Self::views_and_screens`], capturing only what `cache` does not hold unchanged, and
    /// keeping what was captured in it, stamped `looked_at`: a time (unix seconds) taken before
    /// the refresh, so no capture it keeps is stamped later than it was taken (a screen that
    /// changed between a capture and a later stamp would be reused stale).
    pub fn views_and_screens_cached(
        &mut self,
        also: Option<&str>,
        cache: &mut ScreenCache,
        looked_at: u64,
    ) -> (Vec<TaskView>, HashMap<PaneKey, String>) {
        let reused = self.reuse_screens(cache);
        let (views, screens) = self.views_and_screens(also);
        cache.remember(&screens, &reused, looked_at);
        (views, screens)
    }

    /// The task's pane: its session's first pane, and only if it is the very pane tmux created
    /// for the task (a session of the same name made by anyone else is not the task's).
    /// An error when its server could not be asked.
    pub fn pane(&self, task: &Task) -> Result<Option<&PaneInfo>> {
        match self.snapshots.get(&task.placement.socket) {
            Some(Snapshot::Panes(panes)) => Ok(find_pane(task, panes)),
            Some(Snapshot::Unreachable(err)) => Err(err.clone()),
            None => Ok(None),
        }
    }

    /// Views of the tasks; a running interactive task whose child waits on a human is shown as
    /// `input_required` with the reason read off its screen, one whose server cannot be asked
    /// as `unknown`.
    pub fn views(&self) -> Vec<TaskView> {
        self.views_and_screens(None).0
    }

    /// [`Self::views`], and the screens read for them. The screen of `also` (a task
    /// id) rides in the same capture even when nothing else needs it (a batch task), so a
    /// dashboard's preview costs no tmux call of its own.
    pub fn views_and_screens(
        &self,
        also: Option<&str>,
    ) -> (Vec<TaskView>, HashMap<PaneKey, String>) {
        let live_pane = |t: &Task| {
            let pane = self.pane(t).ok().flatten()?;
            (!pane.dead).then_some(pane)
        };
        let watched: Vec<(&Task, &PaneInfo)> = self
            .tasks
            .iter()
            .filter(|t| {
                t.record.status == Status::Running
                    && (t.record.mode == Mode::Interactive || Some(t.record.id.as_str()) == also)
            })
            .filter_map(|t| live_pane(t).map(|p| (t, p)))
            .collect();
        let mut by_socket: HashMap<&Socket, Vec<(&str, usize)>> = HashMap::new();
        for (task, pane) in &watched {
            if !self
                .screens
                .contains_key(&(task.placement.socket.clone(), pane.pane_id.clone()))
            {
                by_socket
                    .entry(&task.placement.socket)
                    .or_default()
                    .push((&pane.pane_id, pane.height));
            }
        }
        let mut screens: HashMap<PaneKey, String> = by_socket
            .into_iter()
            .flat_map(|(socket, panes)| {
                Tmux::new(socket.clone())
                    .capture_screens(&panes)
                    .into_iter()
                    .map(|(pane_id, screen)| ((socket.clone(), pane_id), screen))
            })
            .collect();
        screens.extend(self.screens.iter().map(|(k, v)| (k.clone(), v.clone())));
        let views = self
            .tasks
            .iter()
            .map(|task| {
                let record = &task.record;
                let mut view = TaskView::from(record);
                view.diff_stat = super::diff::diff_stat(task);
                view.conflicts = super::conflicts::marks(task);
                if is_stopping(task) {
                    view.stopping = true;
                    let why = "still stopping: its processes are being ended (a stop whose \
                               caller was cut short is finished by a detached `cuekit __stop`)";
                    view.hint = Some(match view.hint.take() {
                        Some(hint) => format!("{hint}; {why}"),
                        None => why.to_string(),
                    });
                }
                if self.unseen.contains(&record.id) {
                    view.status = Status::Unknown;
                    view.reason = Some("tmux_socket_missing".into());
                    view.hint = Some(socket_missing_hint(task));
                    return view;
                }
                let pane = match self.pane(task) {
                    Ok(pane) => pane,
                    Err(err) => {
                        if !record.status.is_terminal() {
                            view.status = Status::Unknown;
                            view.reason = Some(err.code.as_str().to_string());
                            view.hint = Some(err.message);
                        }
                        return view;
                    }
                };
                let screen = pane
                    .filter(|_| {
                        record.status == Status::Running && record.mode == Mode::Interactive
                    })
                    .and_then(|pane| {
                        let key = (task.placement.socket.clone(), pane.pane_id.clone());
                        Some((screens.get(&key)?, pane.history_lines > 0))
                    });
                let rules = adapter::lookup(&record.spec.agent_kind).map(|a| &a.screen);
                if let (Some((screen, scrolled)), Ok(rules)) = (screen, rules)
                    && let Some(attention) = attention::detect(rules, screen, scrolled)
                {
                    view.status = Status::InputRequired;
                    view.reason = Some(attention.as_str().to_string());
                    view.hint = Some(rules.hint(attention).to_string());
                    if attention == attention::Attention::PermissionPrompt {
                        advise_unsandboxed(task, &mut view);
                    }
                }
                // An ACP task says itself what it waits for: its client's state, no screen.
                let live = pane.is_some_and(|pane| !pane.dead);
                if record.status == Status::Running
                    && live
                    && let Some((reason, _, request)) = super::acp::waiting(task)
                {
                    view.status = Status::InputRequired;
                    view.reason = Some(reason.to_string());
                    view.hint = Some(
                        if request.is_some() {
                            format!(
                                "the agent asks a permission: `cuekit approve {} --allow|--allow-always|--reject`",
                                record.id
                            )
                        } else {
                            format!(
                                "its turn ended; steer it (`cuekit steer {0} …`) or end it (`cuekit steer {0} --end`)",
                                record.id
                            )
                        },
                    );
                    if request.is_some() {
                        advise_unsandboxed(task, &mut view);
                    }
                    view.request = request.map(Box::new);
                }
                view
            })
            .collect();
        (views, screens)
    }
}

/// What `status` says of a permission an unsandboxed task asks.
pub(crate) const ADVISORY_APPROVAL: &str = "approvals of an unsandboxed task are advisory: its \
     child runs as you and can, in principle, answer its own request (cuekit refuses answers \
     from the task's own processes and keeps tmux out of its environment, but cannot close \
     every way round); submit with --sandbox for approvals that hold";

/// Says, on a permission request of a task without bubblewrap around it, that its approvals
/// are advisory.
fn advise_unsandboxed(task: &Task, view: &mut TaskView) {
    if !task.in_bubblewrap() {
        view.warnings.push(ADVISORY_APPROVAL.to_string());
    }
}

fn socket_missing_hint(task: &Task) -> String {
    let leader = task.group_leader();
    let pid = leader.map_or_else(String::new, |l| format!(" {}", l.pid));
    let server = leader
        .and_then(|l| l.parent())
        .map_or_else(|| "<its tmux server's pid>".to_string(), |p| p.to_string());
    format!(
        "tmux answers \"no server\" or \"no such session\" on {}, but this task's pane process{pid} \
         still runs: the socket file was deleted (a /tmp cleaner?) or another server took its path. \
         Nothing was recorded. `kill -USR1 {server}` makes its tmux server create the socket again \
         (once no other server holds the path); `cuekit cancel` ends the task without it",
        task.placement.socket.0
    )
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
fn refresh_with(
    tasks: Vec<Task>,
    stop_timed_out: bool,
    mut early: Option<EarlyLook>,
) -> Result<Refreshed> {
    super::reap::reap_orphans();
    // After a reboot (or a scheduler killed) the first look finds the queue and serves it.
    super::monitor_lock::ensure_scheduler();
    resume_abandoned_stops(&tasks);
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
            super::report_drop::take_dropped(task, &dir);
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
    // Whoever looks at a task that was running starts its server's monitor if none runs (it
    // was killed, or ended before this task did): transitions are announced whoever watches.
    let sockets: std::collections::HashSet<&Socket> =
        running.iter().map(|t| &t.placement.socket).collect();
    for socket in sockets {
        super::monitor_lock::ensure_running(socket);
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
                .then(|| super::outcome::stream_report(&task.record));
            seen.setup_failed = task.record.task_dir.join(SETUP_FAILED_FILE).exists();
            // Read only once the task has an exit status to judge.
            seen.sandbox_failed = exit.is_some() && sandbox_never_came_up(&task);
            match judge(&task.record, adapter, &seen) {
                // Usage past its budget ends a task as its timeout does.
                Verdict::Unchanged => Ok(match super::budget::exceeded(&task) {
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
                    let ending = super::attempt::name_fault(&task.record, adapter, ending);
                    let ending = super::budget::at_end(&task, ending);
                    // An attempt its retry policy retries goes back to the queue instead.
                    match super::attempt::requeue(&task, &ending) {
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

/// Ends an attempt stuck on a passing fault (an interactive child idle on a quota error): its
/// ending is recorded first, or under its retry policy the task is queued again, and then its
/// processes are ended (the next attempt starts only once they are gone).
pub(crate) fn end_stuck(task: Task, ending: Ending) -> Result<()> {
    match super::attempt::requeue(&task, &ending) {
        Some(requeued) => {
            let task = requeued?;
            end_processes(&task.placement, task.pane.as_ref(), None, DEFAULT_GRACE);
            Ok(())
        }
        None => stop(task, ending, DEFAULT_GRACE).map(|_| ()),
    }
}

/// Records `ending` of a task that must be stopped (its timeout, its budget) and has its
/// processes ended by a detached stopper (unless `in_background` is false: the caller ends
/// them). Claimed before it is recorded, so a look killed in between leaves a stop someone
/// finishes; someone at it already (a cancel) ends it anyway. Stopped only once the ending is
/// on record (see `stop`): it runs on until the ending can be written, and says why.
fn stop_due(task: Task, ending: Ending, in_background: bool) -> Task {
    let claim = match monitor_lock::try_claim_stop(&task.record.id) {
        Ok(Some(claim)) => claim,
        Ok(None) => return task,
        Err(err) => return unrecorded(task, &err),
    };
    let running = task.clone();
    match record_ending(task, ending) {
        Ok(task) => {
            // Left for the stopper (or, when this look is `stop`'s, for it).
            drop(claim);
            if in_background {
                stop_in_background(&task, None, None);
            }
            task
        }
        Err(err) => {
            claim.finish();
            unrecorded(running, &err)
        }
    }
}

/// One snapshot of a server's panes (an empty one when no server runs).
fn look_at_server(socket: &Socket) -> Snapshot {
    match Tmux::new(socket.clone()).panes() {
        Ok(panes) => Snapshot::Panes(PaneIndex::new(panes)),
        Err(err) => Snapshot::Unreachable(err),
    }
}

/// One task in one tmux invocation: its session's panes and, for an interactive task, its
/// screen.
fn look_at_one(task: &Task) -> (Snapshot, Option<(String, String)>) {
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
        Err(err) if tmux::is_no_server(&err.message) || tmux::is_no_such_target(&err.message) => {
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

/// Writes an ending unless another process recorded one first (the first ending wins).
pub(crate) fn record_ending(mut task: Task, ending: Ending) -> Result<Task> {
    let mut ended_queued = false;
    task.record = store::update(&task.placement.task_dir, |record| {
        if record.status.is_terminal() {
            return Ok(false);
        }
        ended_queued = record.status == Status::Queued;
        record.status = ending.status;
        record.reason = ending.reason;
        record.hint = ending.hint;
        record.exit_code = ending.exit_code;
        record.ended_at = Some(super::now_rfc3339());
        // The sentinel's temp file, if the pane died between writing and renaming it.
        let _ = std::fs::remove_file(record.task_dir.join(format!("{EXIT_CODE_FILE}.tmp")));
        Ok(true)
    })?;
    // Ended: its slot is free and it never starts again (a cancelled queued task).
    crate::effects::store::schedule::dequeue(&task.record.id);
    crate::effects::store::schedule::free_slot(&task.record.id);
    if ended_queued {
        crate::effects::store::schedule::close_plan(&task.record.id);
    }
    Ok(task)
}

/// Records the ending; when it cannot be written (a full or read-only disk) the task is still
/// shown as judged, with a warning, instead of failing the look at every other task. Nothing
/// is lost: the next look judges it again and records it. Returns whether it was recorded.
fn record_or_show(task: Task, ending: Ending) -> (Task, bool) {
    let mut shown = task.clone();
    match record_ending(task, ending.clone()) {
        Ok(task) => (task, true),
        Err(err) => {
            shown.record.status = ending.status;
            shown.record.reason = ending.reason;
            shown.record.hint = ending.hint;
            shown.record.exit_code = ending.exit_code;
            shown.record.ended_at = Some(super::now_rfc3339());
            (unrecorded(shown, &err), false)
        }
    }
}

fn unrecorded(mut task: Task, err: &Error) -> Task {
    task.record.warnings.push(format!(
        "not recorded yet ({}): the next look records it",
        err.message
    ));
    task
}

pub(crate) fn timed_out() -> Ending {
    Ending {
        status: Status::TimedOut,
        reason: Some("timeout".into()),
        hint: Some(
            "the task ran past its --timeout and was stopped; raise the timeout or split the task"
                .into(),
        ),
        exit_code: None,
    }
}

pub(crate) fn cancelled() -> Ending {
    Ending {
        status: Status::Cancelled,
        reason: Some("cancelled".into()),
        hint: Some("cancelled by the parent with `cuekit cancel`".into()),
        exit_code: None,
    }
}

/// Stops a task: judges it first (a task that already ended keeps its real ending), records
/// `ending` if it still runs, then ends its processes and its session. Recording first is what
/// keeps an agent that exits 0 on SIGTERM (Gemini) from reading as completed.
///
/// The stop is claimed before the ending is recorded and finished once nothing of the task runs
/// (see [`monitor_lock::claim_stop`]); a detached stopper waits on the claim meanwhile, so a
/// caller killed at any instant after recording (SIGKILL, a parent's timeout, a closed
/// terminal) still has its task stopped.
pub(crate) fn stop(task: Task, ending: Ending, grace: Duration) -> Result<Task> {
    let refreshed = refresh_with(vec![task], false, None)?;
    let pane_pid = refreshed
        .pane(&refreshed.tasks[0])
        .ok()
        .flatten()
        .filter(|pane| !pane.dead)
        .map(|pane| pane.pane_pid);
    let task = refreshed.tasks.into_iter().next().expect("one task in");
    let inside = inside(&task);
    // Without a claim (cuekit's data directory cannot be written) it stops as it can.
    let claim = monitor_lock::claim_stop(&task.record.id).ok();
    if claim.is_some() && !inside {
        stop_in_background(&task, None, Some(grace));
    }
    let task = if task.record.status.is_terminal() {
        task
    } else {
        record_ending(task, ending)?
    };
    if inside {
        // Run from the task's own pane: ending the tree here would end this process half-way,
        // so a detached stopper does it once this process has answered and exited.
        stop_in_background(&task, Some(std::process::id()), Some(grace));
        if let Some(claim) = claim {
            claim.keep_until_exit();
        }
        return Ok(task);
    }
    let survivors = end_processes(&task.placement, task.pane.as_ref(), pane_pid, grace);
    if let Some(claim) = claim.filter(|_| survivors.is_empty()) {
        claim.finish();
    }
    Ok(task)
}

/// A stop whose ending is on record but whose claimant was killed is handed to a detached
/// stopper; one killed before it recorded anything stopped nothing, and is forgotten. So is a
/// cancel or timeout on record with no claim (written by an older cuekit, or with cuekit's data
/// directory unwritable) whose pane process still runs. A `stat` per task, a read in /proc per
/// such ending.
fn resume_abandoned_stops(tasks: &[Task]) {
    for task in tasks {
        let id = &task.record.id;
        let claim = if monitor_lock::is_stopping(id) {
            monitor_lock::abandoned_stop(id)
        } else if stopped_by_cuekit(&task.record)
            && task.group_leader().is_some_and(|leader| leader.is_alive())
        {
            monitor_lock::try_claim_stop(id).ok().flatten()
        } else {
            None
        };
        let Some(claim) = claim else {
            continue;
        };
        // Read under the claim: nobody is between claiming and recording now.
        match store::load_task(&task.placement.task_dir) {
            Ok(record) if !record.status.is_terminal() => claim.finish(),
            _ => {
                drop(claim);
                stop_in_background(task, None, None);
            }
        }
    }
}

/// Finishes a stop that is not over, waiting for whoever is at it: an error when processes
/// outlive it (kept as a stop not over).
pub(crate) fn finish_stop(task: &Task) -> Result<()> {
    let Some(claim) = monitor_lock::resume_stop(&task.record.id) else {
        return Ok(());
    };
    let survivors = end_processes(&task.placement, task.pane.as_ref(), None, DEFAULT_GRACE);
    if survivors.is_empty() {
        claim.finish();
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::InvalidState,
        format!(
            "task {} is still stopping: processes {survivors:?} outlived SIGKILL",
            task.record.id
        ),
    )
    .with_hint("a process in uninterruptible sleep ends once its I/O does; try again then"))
}

/// An ending cuekit writes before it ends the task's processes.
fn stopped_by_cuekit(record: &TaskRecord) -> bool {
    matches!(record.status, Status::Cancelled | Status::TimedOut) && record.exit_code.is_none()
}

/// Whether the task's ending is on record but its processes are still being ended.
pub(crate) fn is_stopping(task: &Task) -> bool {
    task.record.status.is_terminal() && monitor_lock::is_stopping(&task.record.id)
}

/// Ends every process of a task and its session, from what the registry recorded, whether or
/// not its server, pane or directory still exist. Returns the pids that survived.
pub(crate) fn end_processes(
    placement: &store::Placement,
    pane: Option<&store::PaneStart>,
    live_pane_pid: Option<u32>,
    grace: Duration,
) -> Vec<u32> {
    let mut targets =
        crate::effects::process::task_processes(&placement.id, super::task::leader_of(pane));
    // The pid is only trusted while its pane is alive; a dead pane's pid may be reused.
    targets.extend(live_pane_pid);
    let survivors = crate::effects::process::terminate(targets, grace);
    // Gone already is fine: another cancel may have raced us.
    let _ = Tmux::new(placement.socket.clone()).run(&args::kill_session(&placement.session));
    survivors
}

/// Whether this process runs inside the task (its pane's process tree).
fn inside(task: &Task) -> bool {
    std::env::var(crate::effects::process::TASK_ID_VARIABLE).is_ok_and(|id| id == task.record.id)
        || task.group_leader().is_some_and(|leader| {
            (unsafe { libc::getpgrp() } as u32) == leader.pid
                || crate::effects::process::descends_from(std::process::id(), leader.pid)
        })
}

/// The grace a detached stopper gives the task's processes, from the cancel that started it.
const STOP_GRACE_VARIABLE: &str = "CUEKIT_STOP_GRACE_MS";

/// Ends a task's processes from a detached `cuekit __stop <id>`, for callers that must not wait
/// for it (a listing), that are themselves inside the task (`after`: the stopper first waits
/// for that process to exit), or that may be killed before they are done (the stopper waits on
/// their claim, and goes on where they left off).
pub(crate) fn stop_in_background(task: &Task, after: Option<u32>, grace: Option<Duration>) {
    use std::os::unix::process::CommandExt;
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut command = std::process::Command::new(exe);
    command.arg("__stop").arg(&task.record.id);
    if let Some(pid) = after {
        command.arg("--after").arg(pid.to_string());
    }
    if let Some(grace) = grace {
        command.env(STOP_GRACE_VARIABLE, grace.as_millis().to_string());
    }
    let _ = command
        .env_remove(crate::effects::process::TASK_ID_VARIABLE)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        // A session of its own: neither the task's group nor the caller's.
        .process_group(0)
        .spawn();
}

/// `cuekit __stop <id> [--after PID]`: finishes the task's stop (see [`stop_in_background`]),
/// once whoever claimed it is done or gone: ends its processes and session, unless the stop
/// was never recorded (its claimant was killed first) or is over.
pub fn run_stopper(task_id: &str, after: Option<u32>) -> Result<()> {
    unsafe { libc::setsid() };
    let Some(placement) = store::placement(task_id)? else {
        return Err(Error::task_not_found(task_id));
    };
    let grace = std::env::var(STOP_GRACE_VARIABLE)
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(DEFAULT_GRACE, Duration::from_millis);
    if let Some(caller) = after {
        // Let the caller inside the task print its answer and exit first (it is part of the
        // task, so it would be ended with it).
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while crate::effects::process::is_alive(caller) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if crate::effects::process::is_alive(caller) {
            // Hung with the claim held until it exits (its ending is on record): it is ended
            // with the task, which frees the claim.
            end_processes(&placement, store::pane_start(task_id).as_ref(), None, grace);
        }
    }
    let claim = monitor_lock::resume_stop(task_id);
    // No claim: the stop is over, unless the caller inside the task could not claim it (it
    // recorded the ending before it started this stopper).
    if claim.is_none() && after.is_none() {
        return Ok(());
    }
    let pane = match super::task::found_for(placement.clone()) {
        Found::Trusted(task) if !task.record.status.is_terminal() => {
            if let Some(claim) = claim {
                claim.finish();
            }
            return Ok(());
        }
        Found::Trusted(task) => task.pane,
        // Its record deleted after the ending was written: the registry still says where.
        Found::Unreadable { pane, .. } => pane,
        // A record changed since: nothing is done on its word.
        Found::Untrusted { .. } => {
            if let Some(claim) = claim {
                claim.finish();
            }
            return Ok(());
        }
    };
    let survivors = end_processes(&placement, pane.as_ref(), None, grace);
    if let Some(claim) = claim.filter(|_| survivors.is_empty()) {
        claim.finish();
    }
    Ok(())
}

/// Whether the task at `task_dir` has ended, judged now.
pub(crate) fn has_ended(task: &Task) -> Result<bool> {
    let current = Task {
        record: super::task::reread(&task.placement)?,
        ..task.clone()
    };
    Ok(refresh(vec![current])?.tasks[0].record.status.is_terminal())
}

/// A bubblewrap sandbox around a shell-launched agent writes its status: one that never got
/// the agent's exit code was never up (or bubblewrap died). (An ACP task's agent is started by its client, which reports
/// its own failure.)
fn sandbox_never_came_up(task: &Task) -> bool {
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
fn sandbox_exit(task: &Task) -> Option<i32> {
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
const EXIT_AFTER_RESULT: Duration = Duration::from_secs(10);

/// A batch run that reported its `result` moments ago: it spends nothing more, and stopping it
/// would lose its exit code.
fn run_is_ending(task: &Task) -> bool {
    let progress = task.record.task_dir.join(super::stream::PROGRESS_FILE);
    let fresh = std::fs::symlink_metadata(&progress)
        .and_then(|meta| meta.modified())
        .ok()
        .and_then(|at| at.elapsed().ok())
        .is_some_and(|age| age < EXIT_AFTER_RESULT);
    task.record.mode == crate::domain::spec::Mode::Batch
        && fresh
        && super::stream::read_progress(&task.record.task_dir).is_some_and(|p| p.finished)
}

/// Records the cancels noted while there was no room (`cancel`'s `stop_without_room`), once there
/// is: called by every look before it judges, so the ended pane reads `cancelled`. A task that
/// ended on record meanwhile keeps its ending (the first ending wins).
fn record_noted_cancels(tasks: &[Task]) {
    for task in tasks {
        let id = &task.record.id;
        if !store::intent::cancel_noted(id) {
            continue;
        }
        if task.record.status.is_terminal() || record_ending(task.clone(), cancelled()).is_ok() {
            store::intent::clear_cancel(id);
        }
    }
}
