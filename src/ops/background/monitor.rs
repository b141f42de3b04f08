//! One monitor per tmux server: a detached `cuekit __monitor <socket>` that looks at the server
//! once a tick, records endings and enforces timeouts through the judge (the same code as
//! `status`), and announces each task's transitions once — to the transitions log, the task's
//! `events.jsonl`, hooks and notifications. A lock file decides who runs; every cuekit call that
//! meets a running task (or records an ending) starts one if none runs, and a monitor ends itself
//! once nothing on its server is left to watch. A tick costs at most two tmux calls (the pane
//! listing, and the screens of interactive tasks whose window printed since they were last
//! captured) whatever the number of tasks; a tick that falls behind is dropped, never queued.
//! Between ticks it looks for the exit sentinels of the tasks it watches run (a `stat` each,
//! every [`SENTINEL_LOOK`] — less often past 50 running tasks, at most [`STATS_PER_SECOND`] —,
//! as `wait` does) and for a task registered since (a `stat` of the
//! registry folder): an agent's exit or a new task wakes the next tick, so an ending — and a
//! failover's decision, taken by the look that judges it — is on record within a tenth of a
//! second or so of the exit, not at the next whole interval.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::domain::adapter;
use crate::domain::attention::{self, Attention};
use crate::domain::error::Result;
use crate::domain::spec::Mode;
use crate::domain::status::Status;
use crate::domain::transition::{self, Announced, Seen, Transition, screen_hash};
use crate::effects::config::Config;
use crate::effects::hooks::{HookRun, spawn as spawn_hook};
use crate::effects::store::transitions::{self, TransitionEvent};
use crate::effects::store::{self, Placement};
use crate::effects::tmux::{Socket, Tmux};
use crate::ops::background::monitor_lock::{lock_path, open_lock, record_tick};
use crate::ops::judge::{Refreshed, end_processes, refresh};
use crate::ops::task::view::TaskView;
use crate::ops::task::{Found, Task, found_for};

/// How often, between ticks, the monitor looks for a watched task's exit sentinel: at most
/// this often, and never more than [`STATS_PER_SECOND`] sentinels a second (300 running tasks
/// are looked at every 300 ms), so the looks cost the same however many tasks run.
const SENTINEL_LOOK: Duration = Duration::from_millis(50);
const STATS_PER_SECOND: u64 = 1000;
/// A sentinel already there beside a task still running (the launch script ends just after it
/// writes it, or a check runs after the agent): the next tick comes this soon, for at most
/// [`SETTLE_LOOKS`] ticks per sentinel, then at the interval's pace again.
const SENTINEL_SETTLE: Duration = Duration::from_millis(40);
const SETTLE_LOOKS: u8 = 5;

/// `cuekit __monitor <socket>`: runs until nothing on the server is left to watch.
pub fn run_monitor(socket: &str) -> Result<()> {
    // A hook that exits without reading its stdin must not take the monitor with it: writes to
    // a closed pipe fail with EPIPE here instead of ending the process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::setsid();
    }
    let socket = Socket(socket.to_string());
    let Some(path) = lock_path(&socket) else {
        return Ok(());
    };
    let lock = open_lock(&path)?;
    if lock.try_lock().is_err() {
        return Ok(());
    }
    // One monitor serves every project on the server: its pace is the user's.
    let user = Config::load(Path::new("/")).unwrap_or_default();
    let interval = user
        .monitor_interval()
        .value
        .max(Duration::from_millis(100));
    let dwell = user.monitor_dwell().value;
    let digest_at = crate::ops::background::outbound::Outbound::of(&user).digest_at;
    let mut digest_day = String::new();
    let mut monitor = Monitor {
        socket,
        dwell,
        watched: HashMap::new(),
        known: HashSet::new(),
        worktrees: HashMap::new(),
        conflicts_checked: None,
        hooks: Vec::new(),
        settling: HashMap::new(),
        let_go: HashSet::new(),
    };
    let mut next_tick = Instant::now();
    let data_dir = store::data_dir();
    let served = data_dir.as_deref().and_then(dir_identity);
    loop {
        // The user's cuekit data is gone (a throw-away HOME removed), or is another directory
        // now (removed, then made anew by a write racing the removal): nothing left to serve,
        // and nothing of it is to be written anew.
        if served.is_none() || data_dir.as_deref().and_then(dir_identity) != served {
            return Ok(());
        }
        // A tick that fails (a full disk, a record being replaced) is logged and the next one
        // tries again: a monitor never dies of a passing fault.
        let watching = monitor.tick().unwrap_or_else(|err| {
            log_fault(&path, &err);
            true
        });
        record_tick(&path);
        if let Some(at) = digest_at {
            let sends = crate::ops::digest::when_due(at, &mut digest_day);
            monitor.hooks.extend(sends);
        }
        monitor.hooks.retain(|hook| !hook.is_finished());
        if !watching && monitor.hooks.is_empty() && !monitor.stays_after_letting_go(&lock) {
            return Ok(());
        }
        next_tick += interval;
        let now = Instant::now();
        if next_tick < now {
            // Fell behind: the missed ticks are dropped, the next one is a whole interval away.
            next_tick = now + interval;
        }
        if monitor.nap(next_tick) {
            // Woken by an exit: the pace goes on from this tick.
            next_tick = Instant::now();
        }
    }
}

struct Watched {
    placement: Placement,
    announced: Announced,
    /// The last screen captured: reused while the pane's window has printed nothing since.
    screen: Option<Screen>,
    /// Processes left past the deadline were ended (or there were none).
    swept: bool,
    /// The attempt (its `started_at`) that, stuck on a passing fault, is being ended: a later
    /// attempt stuck the same way is ended too.
    ending_stuck: Option<Option<String>>,
    /// Its check, left `checking` by a runner that died, was started again (once).
    rechecked: bool,
    /// The attempt whose placement this is: a later attempt may run another agent (a
    /// failover, a hand-off), so its placement is read again.
    attempt: Option<String>,
}

#[derive(Clone)]
struct Screen {
    pane_id: String,
    captured_at: u64,
    attention: Option<Attention>,
    hash: u64,
    /// An idle screen whose error line names a passing fault: the attempt is stuck there.
    fault: Option<(&'static str, Option<Duration>)>,
}

struct Monitor {
    socket: Socket,
    dwell: Duration,
    watched: HashMap<String, Watched>,
    /// Every registry id looked at (other servers' included), so each is read once.
    known: HashSet<String>,
    /// This server's worktree tasks, ended ones included (their work still merges or clashes):
    /// checked for conflicts while anything is watched.
    worktrees: HashMap<String, Placement>,
    /// When the worktrees were last checked for conflicts: a check walks each worktree's
    /// files, so it runs every [`CONFLICTS_EVERY`], not every tick.
    conflicts_checked: Option<Instant>,
    hooks: Vec<JoinHandle<()>>,
    /// Tasks whose sentinel was seen while they still ran: how many quick looks each had.
    settling: HashMap<String, u8>,
    /// Tasks the last tick let go because their server is gone (found again by a look at the
    /// registry, they are not a reason to stay while it is still gone).
    let_go: HashSet<String>,
}

impl Monitor {
    /// Sleeps until `until`, or less: until the exit sentinel of a task it watches run appears
    /// (then `true`), or a short while when one appeared beside a task still running.
    fn nap(&mut self, until: Instant) -> bool {
        let mut waiting = Vec::new();
        let mut settle = false;
        self.settling.retain(|id, _| self.watched.contains_key(id));
        for (id, watched) in &self.watched {
            if watched
                .announced
                .status
                .is_some_and(|status| status.is_terminal() || status == Status::Queued)
            {
                continue;
            }
            let sentinel = watched
                .placement
                .task_dir
                .join(crate::domain::launch::EXIT_CODE_FILE);
            if sentinel.exists() {
                let looks = self.settling.entry(id.clone()).or_insert(0);
                if *looks < SETTLE_LOOKS {
                    *looks += 1;
                    settle = true;
                }
            } else {
                self.settling.remove(id);
                waiting.push(sentinel);
            }
        }
        let until = if settle {
            until.min(Instant::now() + SENTINEL_SETTLE)
        } else {
            until
        };
        // A task registered since the last tick (its agent may end before the next one): the
        // registry folder's time changes, then its ids are read once.
        let registry = store::registry_dir();
        let stamp = || {
            registry
                .as_deref()
                .and_then(|dir| std::fs::metadata(dir).and_then(|meta| meta.modified()).ok())
        };
        let mut registry_stamp = stamp();
        let look = SENTINEL_LOOK.max(Duration::from_millis(
            waiting.len() as u64 * 1000 / STATS_PER_SECOND,
        ));
        loop {
            let now = Instant::now();
            if now >= until {
                return settle;
            }
            std::thread::sleep((until - now).min(look));
            if waiting.iter().any(|sentinel| sentinel.exists()) {
                return true;
            }
            let now_stamp = stamp();
            if now_stamp != registry_stamp {
                registry_stamp = now_stamp;
                let unknown = store::registered_ids()
                    .is_ok_and(|ids| ids.iter().any(|id| !self.known.contains(id)));
                if unknown {
                    return true;
                }
            }
        }
    }

    /// One look at the server. Returns whether anything is left to watch.
    fn tick(&mut self) -> Result<bool> {
        self.let_go.clear();
        self.discover()?;
        let mut trusted = Vec::new();
        let mut unreadable = Vec::new();
        let mut untrusted = Vec::new();
        for (id, watched) in &mut self.watched {
            // Announced queued and still waiting: a stat, not a read (hundreds may wait).
            if watched.announced.status == Some(Status::Queued) && store::schedule::is_queued(id) {
                continue;
            }
            let mut found = found_for(watched.placement.clone());
            if let Found::Trusted(task) = &found
                && task.record.started_at != watched.attempt
            {
                // Another attempt: its agent, session and stream are the registry's now.
                watched.attempt = task.record.started_at.clone();
                if let Ok(Some(fresh)) = store::placement(id) {
                    watched.placement = fresh;
                    found = found_for(watched.placement.clone());
                }
            }
            match found {
                Found::Trusted(task) => trusted.push(*task),
                Found::Unreadable { pane, .. } => unreadable.push((id.clone(), pane)),
                Found::Untrusted { .. } => untrusted.push(id.clone()),
            }
        }
        for id in untrusted {
            self.watched.remove(&id);
        }
        for (id, pane) in unreadable {
            // No record to judge: its deadline still holds. A task whose directory was deleted
            // and that has no deadline leaves nothing to do, and watching it would keep this
            // monitor alive for ever; a record unreadable for now (a damaged file, no file
            // handles left) is looked at again next tick.
            let watched = self.watched.get_mut(&id).expect("watched");
            if watched.placement.deadline().is_none() {
                if !watched.placement.task_dir.exists() {
                    self.watched.remove(&id);
                }
                continue;
            }
            if past(watched.placement.deadline()) {
                end_processes(
                    &watched.placement,
                    pane.as_ref(),
                    None,
                    crate::effects::process::DEFAULT_GRACE,
                );
                self.watched.remove(&id);
            }
        }
        // Whether this look asks the server (it does for a running task's pane).
        let server_asked = trusted
            .iter()
            .any(|task| task.record.status == Status::Running);
        crate::ops::judge::look_after(&trusted);
        let refreshed = refresh(trusted)?;
        let screens = self.screens(&refreshed);
        for task in &refreshed.tasks {
            // An ending not on record yet (a full disk) is announced once it is: the next
            // tick tries to write it again.
            if !refreshed.is_unrecorded(task) {
                self.follow(task, &refreshed, screens.get(&task.record.id));
            }
        }
        let due = self
            .conflicts_checked
            .is_none_or(|at| at.elapsed() >= CONFLICTS_EVERY);
        if due && !self.watched.is_empty() && !self.worktrees.is_empty() {
            self.conflicts_checked = Some(Instant::now());
            self.conflicts();
        }
        if !server_asked && !self.watched.is_empty() && self.server_gone() {
            // The server is gone, and its panes with it: a task with no deadline left to keep
            // (a record unreadable, a task queued, an ending on record, its own task.json
            // saying so too) is no monitor's to look at any more; one whose deadline may still
            // end survivors of the server is kept. Those let go are discovered again once a
            // server runs (a queued task's start brings one, and a monitor with it).
            let idle: Vec<String> = self
                .watched
                .iter()
                .filter(|(_, watched)| {
                    watched.placement.deadline().is_none()
                        && store::repair_mirror(&watched.placement.task_dir).is_ok()
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in idle {
                self.watched.remove(&id);
                self.known.remove(&id);
                self.let_go.insert(id);
            }
        }
        Ok(!self.watched.is_empty())
    }

    /// Lets go of the monitor's lock and looks for tasks registered meanwhile: whether it took
    /// the lock back to watch them. A submit registers its task before it starts a monitor;
    /// one that found this monitor's lock still held, while this monitor had looked at the
    /// registry for the last time and was about to go, started none, and its task would have
    /// had no monitor at all (its ending never announced: no hook, no notification — a digest
    /// test missed one task in 4 of 30 runs under load). After the lock is free, a later
    /// submit's monitor starts; an earlier submit's task is registered and found here.
    fn stays_after_letting_go(&mut self, lock: &std::fs::File) -> bool {
        let _ = lock.unlock();
        if self.discover().is_err() || self.watched.is_empty() {
            return false;
        }
        let only_let_go = self.watched.keys().all(|id| self.let_go.contains(id));
        if only_let_go && self.server_gone() {
            return false;
        }
        // Taken by a monitor started since: that one (a fresh look at the registry) watches.
        lock.try_lock().is_ok()
    }

    /// Whether tmux says its server does not run (one call; only asked on a tick that did
    /// not look at the server already).
    fn server_gone(&self) -> bool {
        matches!(
            Tmux::new(self.socket.clone()).run(&crate::effects::tmux::args::list_sessions()),
            Err(err) if crate::effects::tmux::is_no_server(&err.message)
        )
    }

    /// Rechecks the worktree tasks for conflicts (git runs only for work that changed) and
    /// announces each new one once.
    fn conflicts(&mut self) {
        let mut tasks = Vec::new();
        let mut gone = Vec::new();
        for (id, placement) in &self.worktrees {
            match found_for(placement.clone()) {
                Found::Trusted(task) => tasks.push(*task),
                // Removed (`rm`), or not to be acted on: no longer checked.
                Found::Untrusted { .. } => gone.push(id.clone()),
                Found::Unreadable { .. } if !placement.task_dir.exists() => gone.push(id.clone()),
                Found::Unreadable { .. } => {}
            }
        }
        for id in gone {
            self.worktrees.remove(&id);
        }
        let tasks = crate::ops::work::conflicts::candidates(tasks);
        let Ok(fresh) = crate::ops::work::conflicts::check_new(&tasks, false) else {
            return;
        };
        for new in fresh {
            if let Some(task) = tasks.iter().find(|t| t.record.id == new.task_id) {
                self.hooks.extend(deliver_conflict(task, &new.conflict));
            }
        }
    }

    /// Registered tasks of this server not seen before.
    fn discover(&mut self) -> Result<()> {
        for id in store::registered_ids()? {
            if self.known.contains(&id) {
                continue;
            }
            let Ok(Some(placement)) = store::placement(&id) else {
                // Not readable yet (a submit writing it): looked at again next tick.
                continue;
            };
            self.known.insert(id.clone());
            if placement.socket != self.socket {
                continue;
            }
            if placement
                .facts
                .as_ref()
                .is_some_and(|facts| facts.worktree.is_some())
            {
                self.worktrees.insert(id.clone(), placement.clone());
            }
            let announced = store::announced(&id);
            // An ended task is watched only while its stop is not over: each tick's look then
            // resumes a stop whose caller was killed.
            if announced.status.is_some_and(Status::is_terminal)
                && !crate::ops::background::monitor_lock::is_stopping(&id)
            {
                continue;
            }
            self.watched.insert(
                id,
                Watched {
                    placement,
                    announced,
                    screen: None,
                    swept: false,
                    ending_stuck: None,
                    rechecked: false,
                    attempt: None,
                },
            );
        }
        Ok(())
    }

    /// The screens of running interactive tasks: captured (all in one tmux call) only where the
    /// pane printed since the last capture.
    fn screens(&mut self, refreshed: &Refreshed) -> HashMap<String, Screen> {
        let now = unix_now();
        let mut wanted: Vec<(&Task, String, usize)> = Vec::new();
        let mut screens = HashMap::new();
        for task in &refreshed.tasks {
            if task.record.status != Status::Running || task.record.mode != Mode::Interactive {
                continue;
            }
            let Ok(Some(pane)) = refreshed.pane(task) else {
                continue;
            };
            if pane.dead {
                continue;
            }
            let cached = self
                .watched
                .get(&task.record.id)
                .and_then(|w| w.screen.clone())
                .filter(|s| s.pane_id == pane.pane_id && pane.activity < s.captured_at);
            match cached {
                Some(screen) => {
                    screens.insert(task.record.id.clone(), screen);
                }
                None => wanted.push((task, pane.pane_id.clone(), pane.height)),
            }
        }
        if wanted.is_empty() {
            return screens;
        }
        let panes: Vec<(&str, usize)> = wanted.iter().map(|(_, id, h)| (id.as_str(), *h)).collect();
        let captured = Tmux::new(self.socket.clone()).capture_screens(&panes);
        for (task, pane_id, _) in &wanted {
            let Some(text) = captured.get(pane_id) else {
                continue;
            };
            let scrolled = refreshed
                .pane(task)
                .ok()
                .flatten()
                .is_some_and(|p| p.history_lines > 0);
            let adapter = adapter::lookup(&task.record.spec.agent_kind).ok();
            let attention = adapter.and_then(|a| attention::detect(&a.screen, text, scrolled));
            let fault = adapter
                .filter(|_| attention == Some(Attention::IdleAtPrompt))
                .and_then(|a| adapter::faults::on_screen(a.faults, text));
            let screen = Screen {
                pane_id: pane_id.clone(),
                captured_at: now,
                attention,
                hash: screen_hash(text),
                fault,
            };
            if let Some(watched) = self.watched.get_mut(&task.record.id) {
                watched.screen = Some(screen.clone());
            }
            screens.insert(task.record.id.clone(), screen);
        }
        screens
    }

    /// Announces the task's transition, if it made one, and ends what outlived its deadline.
    fn follow(&mut self, task: &Task, refreshed: &Refreshed, screen: Option<&Screen>) {
        let record = &task.record;
        let seen = if record.status.is_terminal() {
            Seen::Ended {
                status: record.status,
                reason: record.reason.clone(),
            }
        } else if record.status == Status::Queued {
            Seen::Queued {
                reason: record.reason.clone(),
            }
        } else if let (Some((reason, hash, _)), Ok(Some(pane))) =
            (crate::ops::acp::waiting(task), refreshed.pane(task))
            && !pane.dead
        {
            // The protocol's word needs no dwell: the wait is as long as it has been.
            Seen::Waiting {
                reason: reason.to_string(),
                screen: hash,
                quiet_for: Duration::MAX,
            }
        } else {
            match (
                screen.and_then(|s| s.attention.map(|a| (a, s.hash))),
                refreshed.pane(task),
            ) {
                (Some((attention, hash)), Ok(Some(pane))) => {
                    // Whole seconds of quiet: output in the window's last active second counts.
                    let quiet_for =
                        Duration::from_secs(unix_now().saturating_sub(pane.activity + 1));
                    if crate::ops::judge::waits_on_its_check(task, attention) {
                        // Idle after its turn, its own check to come: running to everyone.
                        Seen::Checking {
                            screen: hash,
                            quiet_for,
                        }
                    } else {
                        Seen::Waiting {
                            reason: attention.as_str().to_string(),
                            screen: hash,
                            quiet_for,
                        }
                    }
                }
                _ => Seen::Running,
            }
        };
        let quiet_for = match &seen {
            Seen::Waiting { quiet_for, .. } | Seen::Checking { quiet_for, .. } => Some(*quiet_for),
            _ => None,
        };
        // An interactive child idle on an error it will not retry (a quota it hit) never exits
        // by itself: once the screen held for the dwell, the attempt's end is recorded, and
        // then it is ended (queued again under its retry policy).
        if let (Some(quiet_for), Some((reason, wait)), Some(watched)) = (
            quiet_for,
            screen.and_then(|s| s.fault),
            self.watched.get_mut(&record.id),
        ) && quiet_for >= self.dwell
            && watched.ending_stuck.as_ref() != Some(&record.started_at)
        {
            watched.ending_stuck = Some(record.started_at.clone());
            let stuck = task.clone();
            self.hooks.push(std::thread::spawn(move || {
                let _ = crate::ops::judge::end_stuck(stuck, stuck_ending(reason, wait));
            }));
            return;
        }
        let Some(watched) = self.watched.get_mut(&record.id) else {
            return;
        };
        let (announce, after) = transition::next(&watched.announced, &seen, self.dwell);
        // A turn's end whose check is to come: recorded quietly, checked below.
        let turn_to_check = transition::turn_to_check(&watched.announced, after.as_ref());
        // A pass kept open waits on a person on the screen of the turn it checked: announced,
        // not checked again.
        let checked_already =
            transition::waits_on_the_checked_turn(&watched.announced, after.as_ref());
        if let Some(after) = after {
            let _ = store::save_announced(&record.id, &after);
            watched.announced = after;
        }
        // The wait's screen is part of a transition's id (`notice::transition_id`).
        let wait_screen = watched.announced.last_wait.as_ref().map(|(_, hash)| *hash);
        for transition in &announce {
            self.hooks.extend(deliver(task, transition, wait_screen));
        }
        // An interactive child with a check, idle at its prompt after a turn: its check now,
        // beside the tick (the fix message or the quit follows it). So too, once, a check left
        // `checking` by a runner that died (a monitor killed mid-check): the turn's
        // announcement is behind it, and nothing else would check the work again.
        let checked_interactive = record.mode == Mode::Interactive
            && task
                .placement
                .facts
                .as_ref()
                .is_some_and(|facts| facts.check.is_some());
        let idle = |reason: Option<&str>| reason == Some(Attention::IdleAtPrompt.as_str());
        // (A kept-open task that passed waits on a person after its turns: announced
        // `input_required`, and each later turn checked again.)
        let turn_ended = turn_to_check
            || !checked_already
                && announce
                    .iter()
                    .any(|t| t.new_status == Status::InputRequired && idle(t.reason.as_deref()));
        let abandoned = checked_interactive
            && !watched.rechecked
            && (matches!(&seen, Seen::Checking { .. })
                || matches!(&seen, Seen::Waiting { reason, .. } if idle(Some(reason))))
            && crate::ops::check::abandoned(task);
        if abandoned {
            watched.rechecked = true;
        }
        if checked_interactive && (turn_ended || abandoned) {
            let checked = task.clone();
            self.hooks.push(std::thread::spawn(move || {
                let _ = crate::ops::check::after_turn(&checked);
            }));
        }
        let Some(watched) = self.watched.get_mut(&record.id) else {
            return;
        };
        if record.status.is_terminal() {
            // A pane gone without an exit code may have left processes that ignored the
            // hang-up: they are ended at the deadline, with nobody watching.
            let leftovers = record.exit_code.is_none()
                && !crate::effects::process::task_processes(&record.id, task.group_leader())
                    .is_empty();
            if leftovers && !watched.swept && past(task.placement.deadline()) {
                end_processes(
                    &task.placement,
                    task.pane.as_ref(),
                    None,
                    crate::effects::process::DEFAULT_GRACE,
                );
                watched.swept = true;
            }
            let done = !leftovers || watched.swept || task.placement.deadline().is_none();
            // Its own task.json may not say the ending yet (its disk was full when the
            // registry took it): watched until it does.
            let mirrored = store::repair_mirror(&task.placement.task_dir).is_ok();
            if done && mirrored && !crate::ops::judge::is_stopping(task) {
                self.watched.remove(&record.id);
            }
        }
    }
}

/// The ending of an attempt stuck on a passing fault its screen shows.
fn stuck_ending(reason: &str, wait: Option<Duration>) -> crate::domain::status::Ending {
    let asked = wait
        .map(|wait| format!(" (it asked to wait {})", humantime::format_duration(wait)))
        .unwrap_or_default();
    crate::domain::status::Ending {
        status: Status::Failed,
        reason: Some(reason.to_string()),
        hint: Some(format!(
            "the child's screen shows {}{asked} and it waits at its prompt: the attempt was \
             ended; `cuekit retry <id>` starts it again, or submit with --retry N",
            reason.replace('_', " ")
        )),
        exit_code: None,
    }
}

/// Appends a fault to `<lock>.log` beside the monitor's lock file, kept small.
fn log_fault(lock: &Path, err: &crate::domain::error::Error) {
    let log = lock.with_extension("log");
    if std::fs::metadata(&log).is_ok_and(|m| m.len() > 64 * 1024) {
        let _ = std::fs::remove_file(&log);
    }
    append_line(
        &log,
        &serde_json::json!({"at": crate::effects::clock::now_rfc3339(), "code": err.code.as_str(), "message": err.message}),
    );
}

/// A directory's device and inode: a directory removed and made again is another one.
fn dir_identity(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir)
        .ok()
        .filter(|meta| meta.is_dir())
        .map(|meta| (meta.dev(), meta.ino()))
}

fn past(deadline: Option<SystemTime>) -> bool {
    deadline.is_some_and(|deadline| SystemTime::now() >= deadline)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Records the transition (transitions log, the task's `events.jsonl`) and starts its hooks and
/// notifications; returns their threads.
fn deliver(task: &Task, transition: &Transition, wait_screen: Option<u64>) -> Vec<JoinHandle<()>> {
    let record = &task.record;
    let event = record_transition(record, transition, None);
    let events_file = record.task_dir.join(store::EVENTS_FILE);
    let mut threads: Vec<JoinHandle<()>> = wake_parent(task, transition, &events_file)
        .into_iter()
        .collect();
    // A race's candidate ended: its race is decided if it can be now (the pick, the losers'
    // refs, `--merge`), beside the tick.
    if transition.new_status.is_terminal() {
        let candidate = task.clone();
        threads.push(std::thread::spawn(move || {
            crate::ops::race::on_ending(&candidate);
            let sends = crate::ops::background::outbound::race_decided(&candidate)
                .into_iter()
                .chain(crate::ops::digest::on_drain());
            for sending in sends.collect::<Vec<_>>() {
                let _ = sending.join();
            }
        }));
    }
    let loaded = Config::load(&record.cwd);
    // The channels beyond this machine are the user's own: a broken project file stops none.
    let user = loaded.as_ref().map_or_else(
        |_| Config::load(Path::new("/")).unwrap_or_default(),
        |_| Config::default(),
    );
    threads.extend(crate::ops::background::outbound::on_transition(
        task,
        transition,
        wait_screen,
        loaded.as_ref().unwrap_or(&user),
    ));
    let Ok(config) = loaded else {
        return threads;
    };
    let hooks = config.hooks();
    let skipped: Vec<String> = config
        .untrusted_code_keys(&record.spec.agent_kind)
        .into_iter()
        .filter(|key| key.starts_with("hooks."))
        .collect();
    if !skipped.is_empty() {
        append_line(
            &events_file,
            &serde_json::json!({"type": "cuekit_hook", "skipped": skipped,
                "why": "the project's .cuekit.yaml is not trusted (`cuekit trust`)"}),
        );
    }
    let mut view = TaskView::from(record);
    view.status = transition.new_status;
    view.reason = transition.reason.clone();
    let stdin = serde_json::to_vec(&view).expect("views serialize");
    let env = hook_env(&event);
    let objective = event.objective;
    let specific = match transition.new_status {
        Status::Running if transition.old_status.is_none() => Some(("on_start", &hooks.on_start)),
        Status::InputRequired => Some(("on_input_required", &hooks.on_input_required)),
        status if status.is_terminal() => Some(("on_end", &hooks.on_end)),
        _ => None,
    };
    for (name, command) in specific
        .into_iter()
        .chain([("on_change", &hooks.on_change)])
    {
        let Some(command) = command else {
            continue;
        };
        let mut env = env.clone();
        env.push((
            crate::effects::process::HOOK_VARIABLE.to_string(),
            name.to_string(),
        ));
        threads.push(spawn_hook(HookRun {
            name,
            command: command.value.clone(),
            cwd: record.cwd.clone(),
            env,
            stdin: stdin.clone(),
            timeout: hooks.timeout,
            log: events_file.clone(),
        }));
    }
    let wanted = config
        .notify_on()
        .value
        .iter()
        .any(|on| on.matches(transition.new_status));
    if wanted {
        let channels = config.notify().value;
        let from = record.submitted_from.clone();
        let title = format!("cuekit {}", record.id);
        let message = match &transition.reason {
            Some(reason) => format!("{} ({reason}): {objective}", transition.new_status.as_str()),
            None => format!("{}: {objective}", transition.new_status.as_str()),
        };
        let log = events_file.clone();
        threads.push(std::thread::spawn(move || {
            let done = crate::effects::notify::announce(&channels, from.as_ref(), &title, &message);
            append_line(
                &log,
                &serde_json::json!({"type": "cuekit_notify", "channels": done}),
            );
        }));
    }
    threads
}

/// The submitting agent woken (`--wake-parent`) when the task ends or waits on a human: the
/// agent and its pane from the registry only, the line of cuekit's own words.
fn wake_parent(task: &Task, transition: &Transition, log: &Path) -> Option<JoinHandle<()>> {
    let parent = task.placement.facts.as_ref()?.wake_parent.clone()?;
    let status = transition.new_status;
    if !(status.is_terminal() || status == Status::InputRequired) {
        return None;
    }
    let exit_code = status
        .is_terminal()
        .then_some(task.record.exit_code)
        .flatten();
    let line = crate::ops::background::wake::line(
        &task.record.id,
        status,
        transition.reason.as_deref(),
        exit_code,
    );
    let log = log.to_path_buf();
    Some(std::thread::spawn(move || {
        let woken = crate::ops::background::wake::wake(
            &parent,
            line,
            crate::ops::background::wake::PATIENCE,
        );
        append_line(
            &log,
            &serde_json::json!({"type": "cuekit_wake", "pane": parent.pane, "wake": woken}),
        );
    }))
}

/// Records a `conflict` transition (the status unchanged) and starts `on_conflict`.
fn deliver_conflict(
    task: &Task,
    conflict: &crate::ops::work::conflicts::Conflict,
) -> Option<JoinHandle<()>> {
    let record = &task.record;
    let with = conflict.other();
    let event = record_transition(
        record,
        &Transition {
            old_status: Some(record.status),
            new_status: record.status,
            reason: Some("conflict".to_string()),
        },
        Some(transitions::ConflictNote {
            with: with.clone(),
            files: conflict.files.clone(),
        }),
    );
    let events_file = record.task_dir.join(store::EVENTS_FILE);
    let config = Config::load(&record.cwd).ok()?;
    let command = config.hooks().on_conflict?;
    let timeout = config.hooks().timeout;
    let files: Vec<&str> = conflict.files.iter().map(|f| f.path.as_str()).collect();
    let mut env = hook_env(&event);
    env.extend([
        ("CUEKIT_CONFLICT_WITH".to_string(), with),
        // One path a line: a path may hold spaces.
        ("CUEKIT_CONFLICT_FILES".to_string(), files.join("\n")),
        (
            crate::effects::process::HOOK_VARIABLE.to_string(),
            "on_conflict".to_string(),
        ),
    ]);
    let stdin = serde_json::to_vec(&serde_json::json!({"task": TaskView::from(record),
        "conflict": conflict}))
    .expect("views serialize");
    Some(spawn_hook(HookRun {
        name: "on_conflict",
        command: command.value,
        cwd: record.cwd.clone(),
        env,
        stdin,
        timeout,
        log: events_file,
    }))
}

/// Appends a transition to the transitions log and to the task's `events.jsonl`; the event
/// written (its objective cut to what hooks are given).
fn record_transition(
    record: &store::TaskRecord,
    transition: &Transition,
    conflict: Option<transitions::ConflictNote>,
) -> TransitionEvent {
    let event = TransitionEvent {
        at: crate::effects::clock::now_rfc3339(),
        task_id: record.id.clone(),
        agent: record.spec.agent_kind.clone(),
        old_status: transition.old_status,
        new_status: transition.new_status,
        reason: transition.reason.clone(),
        task_dir: record.task_dir.clone(),
        objective: record.spec.objective.chars().take(200).collect(),
        conflict,
    };
    let _ = transitions::append(&event);
    append_line(
        &record.task_dir.join(store::EVENTS_FILE),
        &serde_json::json!({"type": "cuekit_transition", "transition": &event}),
    );
    event
}

/// What every hook of a transition is told in its environment.
fn hook_env(event: &TransitionEvent) -> Vec<(String, String)> {
    vec![
        ("CUEKIT_TASK_ID".to_string(), event.task_id.clone()),
        ("CUEKIT_AGENT".to_string(), event.agent.clone()),
        (
            "CUEKIT_OLD_STATUS".to_string(),
            event.old_status.map_or("", Status::as_str).to_string(),
        ),
        (
            "CUEKIT_NEW_STATUS".to_string(),
            event.new_status.as_str().to_string(),
        ),
        (
            "CUEKIT_REASON".to_string(),
            event.reason.clone().unwrap_or_default(),
        ),
        (
            "CUEKIT_TASK_DIR".to_string(),
            event.task_dir.display().to_string(),
        ),
        ("CUEKIT_OBJECTIVE".to_string(), event.objective.clone()),
    ]
}

/// How often the monitor rechecks worktree tasks for conflicts (a walk of each worktree's
/// files; git only for work that changed).
const CONFLICTS_EVERY: Duration = Duration::from_secs(5);

/// One JSON line appended in a single write.
fn append_line(path: &Path, value: &serde_json::Value) {
    let _ = store::append_line(path, &serde_json::to_vec(value).expect("values serialize"));
}
