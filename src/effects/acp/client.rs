//! `cuekit __acp`: the ACP client in an ACP task's pane. It starts the agent on two pipes,
//! carries out what [`crate::domain::acp::session`] decides, and is the only place here with effects: the
//! agent's stdio, the control socket, the pane's terminal (output above, a line editor at the
//! bottom), `events.jsonl`, `acp.json` and `result.json`.
//!
//! Processes: the client leads a process group of its own (and takes the terminal's
//! foreground), and the agent runs in it. `launch.sh` ends that group once the client has
//! exited, whatever ended it, so an agent never outlives its client; the client itself ends
//! the agent's tree when the session ends, and the kernel ends the agent if the client dies
//! (`PR_SET_PDEATHSIG`).

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Sender};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::control::{self, Answer, Reply, Request};
use crate::domain::acp::session::{Action, Checked, Session, Settings, Shown};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::bounded::{Bounded, Group, Sink};
use crate::effects::store;

/// `acp.json` in the task directory: the session as status shows it.
pub const STATE_FILE: &str = "acp.json";
/// The agent's stderr (its warnings and crashes), kept out of the pane.
pub const AGENT_LOG: &str = "agent.log";
/// How long a prompt's receipt waits for the agent to refuse it before it counts as taken.
const RECEIPT_WINDOW: Duration = Duration::from_millis(10);
/// How often `progress.json` is written while messages stream (a turn's start, a new tool call
/// and a turn's end are written at once).
const PROGRESS_EVERY: Duration = Duration::from_millis(500);
/// How long a loaded session's agent must be quiet for its history replay to count as over.
const REPLAY_QUIET: Duration = Duration::from_millis(150);
/// How long the agent gets to end after its stdin closed, before its tree is ended.
const END_GRACE: Duration = Duration::from_secs(5);

/// The client's command line (everything but the agent's own words is cuekit's).
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub prompt_file: PathBuf,
    pub once: bool,
    pub bypass: bool,
    pub policy: Vec<(String, String)>,
    pub session_mode: Option<String>,
    pub session_model: Option<String>,
    pub load_session: Option<String>,
    /// Seconds since the epoch before which the agent is not started (see
    /// `AcpLaunch::load_overwrites_same_minute`).
    pub load_not_before: Option<u64>,
    pub env: Vec<(String, String)>,
    pub agent: Vec<OsString>,
}

enum Event {
    Line(String),
    AgentExited(Option<i32>),
    Control {
        request: Request,
        by: String,
        reply: Sender<Reply>,
    },
    Typed(String),
    Signal(i32),
    /// The task's check decided (run after a turn that ended with `end_turn`).
    Checked(Checked),
}

/// Runs the session to its end; the status is the task's exit code.
pub fn run(options: &Options) -> Result<i32> {
    let task_id = std::env::var(crate::effects::process::TASK_ID_VARIABLE).map_err(|_| {
        Error::new(
            ErrorCode::InvalidState,
            "`cuekit __acp` runs only in an ACP task's pane (CUEKIT_TASK_ID is not set)",
        )
    })?;
    let placement = store::placement(&task_id)?.ok_or_else(|| Error::task_not_found(&task_id))?;
    let task_dir = placement.task_dir.clone();
    let socket = control::socket_of(&placement)?;
    let pane_leader = store::pane_start(&task_id).map(|pane| pane.pane_pid);
    // cuekit's own file in the task directory: no link followed.
    let first_prompt = store::read_small(&options.prompt_file)
        .map_err(|err| Error::io("read", &options.prompt_file, err))
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())?;
    let cwd = std::env::current_dir().map_err(|err| Error::io("read", Path::new("."), err))?;
    // A task in a checkout of its own is measured by `diff` (git's safe paths), never by a
    // `git status` that would discover the checkout's repository from what the child wrote.
    let own_checkout = placement
        .facts
        .as_ref()
        .is_some_and(|facts| facts.worktree.is_some());
    let before = (!own_checkout)
        .then(|| crate::effects::git::changes::snapshot(&cwd))
        .flatten();
    let mut settings = settings(options, &cwd, first_prompt);
    settings.checked = placement
        .facts
        .as_ref()
        .is_some_and(|facts| facts.check.is_some());
    let mut session = Session::new(settings);

    take_the_terminal();
    let signals = block_signals();
    if let Some(epoch) = options.load_not_before {
        let left = epoch.saturating_sub(epoch_now());
        if left > 0 {
            println!(
                "{}",
                crate::domain::acp::render::note(&format!(
                    "waiting {left}s before loading the session: the agent would overwrite a session it started in the same minute"
                ))
            );
        }
        if let Some(signal) = sleep_until(epoch, &signals) {
            println!(
                "{}",
                crate::domain::acp::render::note(&format!("signal {signal}: ending the session"))
            );
            return Ok(crate::domain::acp::session::exit::CANCELLED);
        }
    }
    let (events, inbox) = mpsc::channel();
    adopt_orphans();
    let mut agent = spawn_agent(options, &task_dir)?;
    let agent_pid = agent.id();
    let reaper = reap_orphans(agent_pid);
    let mut stdin = agent.stdin.take();
    read_agent(agent.stdout.take().expect("piped"), events.clone());
    wait_agent(agent, events.clone());
    serve(&socket, pane_leader, events.clone())?;
    let editor = Editor::start(events.clone());
    let checks = events.clone();
    watch_signals(signals, events);

    let mut out = Output {
        editor,
        task_dir: task_dir.clone(),
        replies: HashMap::new(),
        next_ticket: 1,
        receipts: Vec::new(),
        stdin_open: true,
        cwd: cwd.clone(),
        before,
        session_since: None,
        heard: 0,
        last_activity: None,
        progress_at: None,
        progress_counted: (0, 0),
        task_id: task_id.clone(),
        checks,
    };
    let start = session.start();
    out.carry_out(&mut session, start, &mut stdin);
    let mut exited: Option<i32> = None;
    let mut ending_since: Option<Instant> = None;
    let mut heard_at = Instant::now();
    loop {
        let replay_over = session.replaying().then_some(heard_at + REPLAY_QUIET);
        let wait = out
            .receipts
            .iter()
            .map(|(_, at)| *at)
            .chain(replay_over)
            .map(|at| at.saturating_duration_since(Instant::now()))
            .min()
            .unwrap_or(Duration::from_millis(500));
        let event = match inbox.recv_timeout(wait) {
            Ok(event) => Some(event),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let actions = match event {
            Some(Event::Line(line)) => {
                heard_at = Instant::now();
                out.heard += 1;
                out.last_activity = Some(crate::effects::clock::now_rfc3339());
                out.log_message("in", &line);
                session.on_line(&line)
            }
            Some(Event::AgentExited(code)) => {
                exited = Some(session.on_agent_exit(code));
                break;
            }
            Some(Event::Control { request, by, reply }) => {
                let ticket = out.ticket(Some(reply));
                session.on_control(ticket, request, &by)
            }
            Some(Event::Typed(line)) => typed(&mut session, &mut out, &line),
            Some(Event::Checked(verdict)) => session.on_checked(verdict),
            Some(Event::Signal(signal)) => {
                out.editor.print(&crate::domain::acp::render::note(&format!(
                    "signal {signal}: ending the session"
                )));
                session.cancel()
            }
            None if replay_over.is_some_and(|at| at <= Instant::now()) => session.replayed(),
            None => out.due_receipts(&mut session),
        };
        out.carry_out(&mut session, actions, &mut stdin);
        if session.phase == crate::domain::acp::session::Phase::Ending {
            let since = *ending_since.get_or_insert_with(Instant::now);
            if since.elapsed() > END_GRACE {
                break;
            }
        }
    }
    drop(stdin);
    // Whatever is left of the agent (it would not end, or left children behind).
    let mut tree = crate::effects::process::process_tree(agent_pid);
    tree.extend(crate::effects::process::group_members(std::process::id()));
    crate::effects::process::terminate(tree, crate::effects::process::DEFAULT_GRACE);
    let status = exited.unwrap_or_else(|| {
        session
            .exit_status()
            .unwrap_or(crate::domain::acp::session::exit::CANCELLED)
    });
    // Before `finish` runs git (a child of the client's the reaper must not take).
    reaper.stop();
    out.finish(&session, status);
    let _ = std::fs::remove_file(&socket);
    Ok(status)
}

/// The session's settings, from the client's flags.
fn settings(options: &Options, cwd: &Path, first_prompt: String) -> Settings {
    Settings {
        cwd: cwd.to_string_lossy().into_owned(),
        first_prompt,
        once: options.once,
        bypass: options.bypass,
        policy: options
            .policy
            .iter()
            .filter_map(|(kind, decision)| {
                Some((
                    crate::domain::acp::policy::ToolKind::parse(kind),
                    crate::domain::acp::policy::Decision::parse(decision)?,
                ))
            })
            .collect(),
        mode: options.session_mode.clone(),
        model: options.session_model.clone(),
        load: options.load_session.clone(),
        checked: false,
    }
}

/// A line typed at the pane's editor: an answer while a permission request waits (`y`, `a`,
/// `n`), `/end` to end the session, `/cancel` to cancel the turn, else a prompt.
fn typed(session: &mut Session, out: &mut Output, line: &str) -> Vec<Action> {
    let ticket = out.ticket(None);
    let request = match (session.phase, line.trim()) {
        (crate::domain::acp::session::Phase::Permission, "y") => Request::Answer {
            answer: Answer::Allow,
        },
        (crate::domain::acp::session::Phase::Permission, "a") => Request::Answer {
            answer: Answer::AllowAlways,
        },
        (crate::domain::acp::session::Phase::Permission, "n") => Request::Answer {
            answer: Answer::Reject,
        },
        (_, "/end") => Request::End,
        (_, "/cancel") => Request::Cancel,
        (_, "") => return Vec::new(),
        (_, text) => Request::Prompt {
            text: text.to_string(),
        },
    };
    session.on_control(ticket, request, "the person at the pane")
}

struct Output {
    editor: Editor,
    task_dir: PathBuf,
    replies: HashMap<u64, Sender<Reply>>,
    next_ticket: u64,
    /// Receipts due once the agent had its chance to refuse the prompt.
    receipts: Vec<(u64, Instant)>,
    stdin_open: bool,
    cwd: PathBuf,
    /// `git status` when the client started, for the files the session changed.
    before: Option<crate::effects::git::changes::Snapshot>,
    /// When the agent's session became known (seconds since the epoch).
    session_since: Option<u64>,
    /// Messages from the agent so far, and when the last one came (RFC 3339).
    heard: u64,
    last_activity: Option<String>,
    /// When `progress.json` was last written, and the turns and tool calls it counted.
    progress_at: Option<Instant>,
    progress_counted: (usize, usize),
    task_id: String,
    /// Where a check's verdict goes.
    checks: Sender<Event>,
}

impl Output {
    /// A ticket for a request, and where its reply goes (a line typed in the pane has none).
    fn ticket(&mut self, reply: Option<Sender<Reply>>) -> u64 {
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        if let Some(reply) = reply {
            self.replies.insert(ticket, reply);
        }
        self.receipts
            .push((ticket, Instant::now() + RECEIPT_WINDOW));
        ticket
    }

    /// Runs the task's check beside the session (`cuekit __check --from-launch`, as a batch
    /// task's launch does): its line goes to the pane, its verdict back to the loop.
    fn check(&self) {
        let (events, task_id, task_dir) = (
            self.checks.clone(),
            self.task_id.clone(),
            self.task_dir.clone(),
        );
        let editor = self.editor.clone();
        std::thread::spawn(move || {
            let verdict = run_check(&task_id, &task_dir, &editor);
            let _ = events.send(Event::Checked(verdict));
        });
    }

    fn due_receipts(&mut self, session: &mut Session) -> Vec<Action> {
        let now = Instant::now();
        let (due, waiting): (Vec<_>, Vec<_>) =
            self.receipts.drain(..).partition(|(_, at)| *at <= now);
        self.receipts = waiting;
        due.into_iter()
            .flat_map(|(ticket, _)| session.receipt_due(ticket))
            .collect()
    }

    fn carry_out(
        &mut self,
        session: &mut Session,
        actions: Vec<Action>,
        stdin: &mut Option<ChildStdin>,
    ) {
        for action in actions {
            match action {
                Action::Send(line) => {
                    self.log_message("out", &line);
                    let written = stdin.as_mut().is_some_and(|pipe| {
                        pipe.write_all(line.as_bytes())
                            .and_then(|()| pipe.write_all(b"\n"))
                            .and_then(|()| pipe.flush())
                            .is_ok()
                    });
                    if !written && self.stdin_open {
                        self.stdin_open = false;
                        self.editor.print(&crate::domain::acp::render::failure(
                            "the agent no longer reads its input",
                        ));
                    }
                }
                Action::Show(text) => self.editor.print(&text),
                Action::Log(value) => self.append(&value),
                Action::Reply(ticket, reply) => {
                    self.receipts.retain(|(t, _)| *t != ticket);
                    if let Some(sender) = self.replies.remove(&ticket) {
                        let _ = sender.send(reply);
                    }
                }
                Action::CloseInput => {
                    *stdin = None;
                    self.stdin_open = false;
                }
                Action::Changed => self.write_state(&session.shown()),
                Action::TurnEnded => self.write_result(session, None),
                Action::Check => self.check(),
                Action::Exit(_) => {}
            }
        }
        self.editor.set_mode(session.phase);
        self.write_progress(session);
    }

    /// `progress.json`, as a batch task's stream writes it (status and `list` show it): at once
    /// when a turn or a tool call is new, else at most every [`PROGRESS_EVERY`].
    fn write_progress(&mut self, session: &Session) {
        let counted = (session.turns.len(), session.tool_calls());
        let due = self
            .progress_at
            .is_none_or(|at| at.elapsed() >= PROGRESS_EVERY);
        if counted == self.progress_counted && !due {
            return;
        }
        let progress = crate::domain::events::Progress {
            turns: u32::try_from(counted.0).unwrap_or(u32::MAX),
            tool_calls: counted.1,
            tokens: session.usage.map(|(input, output)| input + output),
            events: self.heard,
            last_activity: self.last_activity.clone(),
            // A session goes on after each turn: a budget stops it.
            finished: false,
        };
        let bytes = serde_json::to_vec(&progress).expect("progress serializes");
        let _ = store::write_atomic(
            &self.task_dir.join(crate::domain::events::PROGRESS_FILE),
            &bytes,
        );
        self.progress_at = Some(Instant::now());
        self.progress_counted = counted;
    }

    fn append(&self, value: &Value) {
        let _ = store::append_line(
            &self.task_dir.join(store::EVENTS_FILE),
            &serde_json::to_vec(value).expect("values serialize"),
        );
    }

    /// Every protocol message, as sent or received (a line that is no JSON as its text).
    fn log_message(&self, direction: &str, line: &str) {
        let message: Value =
            serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.to_string()));
        self.append(&json!({"type": "acp", "dir": direction, "message": message}));
    }

    fn write_state(&mut self, shown: &Shown) {
        if shown.session_id.is_some() && self.session_since.is_none() {
            self.session_since = Some(epoch_now());
        }
        let shown = Shown {
            session_since: self.session_since,
            ..shown.clone()
        };
        let bytes = serde_json::to_vec(&shown).expect("state serializes");
        let _ = store::write_atomic(&self.task_dir.join(STATE_FILE), &bytes);
    }

    /// The last state, and the final `result.json`.
    fn finish(&mut self, session: &Session, status: i32) {
        let mut shown = session.shown();
        shown.phase = crate::domain::acp::session::Phase::Ending;
        self.write_state(&shown);
        self.write_result(session, Some(status));
        self.editor.stop();
    }

    /// `result.json` as the session stands (`exit`: how it ended, if it has).
    fn write_result(&self, session: &Session, exit: Option<i32>) {
        let changed = self
            .before
            .as_ref()
            .zip(crate::effects::git::changes::snapshot(&self.cwd))
            .map(|(before, after)| crate::effects::git::changes::changed_files(before, &after));
        let result = super::outcome::result(session, exit, changed);
        let mut bytes = serde_json::to_vec_pretty(&result).expect("results serialize");
        bytes.push(b'\n');
        let _ = store::write_atomic(
            &self.task_dir.join(crate::domain::result::RESULT_FILE),
            &bytes,
        );
    }
}

/// The task's check, run by this cuekit (`__check --from-launch`) in the client's process
/// group (a cancel ends it with the session); the fix message is read from the task
/// directory, where the check wrote it.
fn run_check(task_id: &str, task_dir: &Path, editor: &Editor) -> Checked {
    // No deadline of its own: the check holds its commands to the check's time limit.
    let ran = std::env::current_exe().ok().and_then(|cuekit| {
        Bounded::new(cuekit, Duration::MAX)
            .unlimited()
            .args(["__check", "--from-launch", task_id])
            .stdout(Sink::Null)
            .group(Group::Caller)
            .run()
            .ok()
    });
    let Some(ran) = ran else {
        editor.print(&crate::domain::acp::render::failure(
            "the check could not run",
        ));
        return Checked::Failed;
    };
    let said = String::from_utf8_lossy(&ran.stderr.bytes()).into_owned();
    editor.print(&crate::domain::acp::render::note(said.trim()));
    match ran.status.and_then(|status| status.code()) {
        Some(0) => Checked::Passed,
        Some(crate::domain::check::FIX_ROUND_EXIT) => {
            store::read_small(&task_dir.join(crate::domain::check::FIX_FILE))
                .map_or(Checked::Failed, |bytes| {
                    Checked::Fix(String::from_utf8_lossy(&bytes).into_owned())
                })
        }
        _ => Checked::Failed,
    }
}

/// The client's own process group, and the pane's terminal's foreground with it: the agent
/// runs in this group, which `launch.sh` ends once the client is gone.
fn take_the_terminal() {
    // SAFETY: plain system calls on this process and its standard input; no memory is shared.
    unsafe {
        libc::setpgid(0, 0);
        libc::signal(libc::SIGTTOU, libc::SIG_IGN);
        if libc::isatty(0) == 1 {
            libc::tcsetpgrp(0, libc::getpgrp());
        }
    }
}

fn spawn_agent(options: &Options, task_dir: &Path) -> Result<Child> {
    let (program, args) = options
        .agent
        .split_first()
        .ok_or_else(|| Error::invalid_input("`cuekit __acp` names no agent command after `--`"))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(task_dir.join(AGENT_LOG))
        .map_err(|err| Error::io("open", &task_dir.join(AGENT_LOG), err))?;
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(options.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log);
    // SAFETY: prctl is async-signal-safe; the closure touches no memory of the parent's.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    command.spawn().map_err(|err| {
        Error::new(
            ErrorCode::AgentNotFound,
            format!(
                "cannot start the agent {}: {err}",
                program.to_string_lossy()
            ),
        )
    })
}

/// Makes the client the reaper of every process its agent's tree leaves behind: an orphan
/// (`setsid -f`, a daemon's double fork) becomes the client's child, not init's, so it still
/// descends from the pane's first process, and the control socket knows it for one of the
/// task's own ([`answer`]).
fn adopt_orphans() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes plain integers and has no preconditions.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Waits for the orphans the client adopted ([`adopt_orphans`]) as they exit, never for the
/// agent (which `wait_agent` waits for), until stopped.
struct Reaper {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Reaper {
    /// Stops and joins it: a child the client starts itself after this is its own to wait for.
    fn stop(self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = self.thread.join();
    }
}

/// How long a child of the client's stays an unreaped zombie before the reaper takes it. The
/// client's own children (the agent, a check, git) are waited for by whoever started them,
/// within moments of their exit, and must keep their status for them (a check whose status
/// the reaper took read "could not run"); an adopted orphan has nobody to wait for it.
const ORPHAN_AGE: Duration = Duration::from_secs(10);

fn reap_orphans(agent_pid: u32) -> Reaper {
    use std::sync::atomic::Ordering;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    let thread = std::thread::spawn(move || {
        let me = std::process::id();
        // Each zombie child, and since when it has been one.
        let mut seen: HashMap<u32, Instant> = HashMap::new();
        while !stopped.load(Ordering::SeqCst) {
            let zombies = crate::effects::process::zombie_children(me);
            seen.retain(|pid, _| zombies.contains(pid));
            let now = Instant::now();
            for pid in zombies.into_iter().filter(|pid| *pid != agent_pid) {
                let since = *seen.entry(pid).or_insert(now);
                if now.duration_since(since) >= ORPHAN_AGE {
                    // SAFETY: waits for one exited child by its pid; no memory is passed.
                    unsafe {
                        libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), libc::WNOHANG)
                    };
                    seen.remove(&pid);
                }
            }
            // A look a second, stopped within a tenth of one.
            for _ in 0..10 {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    });
    Reaper { stop, thread }
}

fn read_agent(stdout: std::process::ChildStdout, events: Sender<Event>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).split(b'\n') {
            let Ok(line) = line else { break };
            let line = String::from_utf8_lossy(&line)
                .trim_end_matches('\r')
                .to_string();
            if !line.trim().is_empty() && events.send(Event::Line(line)).is_err() {
                break;
            }
        }
    });
}

fn wait_agent(mut agent: Child, events: Sender<Event>) {
    std::thread::spawn(move || {
        let code = agent.wait().ok().and_then(|status| status.code());
        let _ = events.send(Event::AgentExited(code));
    });
}

/// The control socket: one request per connection, from a peer of this user's that does not
/// run inside the task's own pane.
fn serve(socket: &Path, pane_leader: Option<u32>, events: Sender<Event>) -> Result<()> {
    control::prepare_dir(socket)?;
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket).map_err(|err| Error::io("bind", socket, err))?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let events = events.clone();
            std::thread::spawn(move || answer(stream, pane_leader, &events));
        }
    });
    Ok(())
}

fn answer(stream: UnixStream, pane_leader: Option<u32>, events: &Sender<Event>) {
    let respond = |reply: &Reply| {
        let mut line = serde_json::to_vec(reply).expect("replies serialize");
        line.push(b'\n');
        let _ = (&stream).write_all(&line);
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    // The request is read before any answer, refusals too: a socket closed with a request
    // unread resets the connection, and the peer would never read why it was refused.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut line = String::new();
    let read = BufReader::new(&stream).read_line(&mut line);
    let Some((pid, uid)) = control::peer(&stream) else {
        return respond(&Reply::error("who is asking cannot be told"));
    };
    if uid != me {
        return respond(&Reply::error("another user's process"));
    }
    if of_the_task(pid, pane_leader) {
        return respond(&Reply::error(
            "this process runs inside the task's own pane: a child never steers itself or answers its own requests",
        ));
    }
    if read.is_err() {
        return;
    }
    let request = match serde_json::from_str::<Request>(&line) {
        Ok(request) => request,
        Err(err) => return respond(&Reply::error(&format!("not a request: {err}"))),
    };
    let (tx, rx) = mpsc::channel();
    let by = format!("pid {pid}");
    if events
        .send(Event::Control {
            request,
            by,
            reply: tx,
        })
        .is_err()
    {
        return respond(&Reply::receipt("not_running"));
    }
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(reply) => respond(&reply),
        Err(_) => respond(&Reply::error("the client did not answer in time")),
    }
}

/// Whether `pid` belongs to the task's own processes, by the kernel's word: it descends from
/// the pane's first process or from this client (an orphan of the agent's tree is the
/// client's, see [`adopt_orphans`]), or it is in the client's process group or the pane's
/// session. (`CUEKIT_TASK_ID` in its environment is no proof either way: `env -u` clears it.)
/// A parent agent that is itself a task runs in another pane: it may answer its children.
fn of_the_task(pid: u32, pane_leader: Option<u32>) -> bool {
    let me = std::process::id();
    let theirs = |get: unsafe extern "C" fn(libc::pid_t) -> libc::pid_t| {
        // SAFETY: getpgid and getsid take a pid and touch no memory.
        let (of_peer, of_mine) = unsafe { (get(pid as libc::pid_t), get(0)) };
        of_peer >= 0 && of_peer == of_mine
    };
    pid == me
        || pane_leader.is_some_and(|leader| {
            pid == leader || crate::effects::process::descends_from(pid, leader)
        })
        || crate::effects::process::descends_from(pid, me)
        || theirs(libc::getpgid)
        || theirs(libc::getsid)
}

fn block_signals() -> libc::sigset_t {
    // SAFETY: the set is initialised by sigemptyset before use; blocking here, before any
    // thread starts, makes every thread inherit the mask, so only `sigwait` sees them.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

fn epoch_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// Sleeps until `epoch` (seconds since the epoch), unless one of the blocked signals in `set`
/// comes first: that signal.
fn sleep_until(epoch: u64, set: &libc::sigset_t) -> Option<i32> {
    loop {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        let left = Duration::from_secs(epoch).checked_sub(now)?;
        let timeout = libc::timespec {
            tv_sec: left.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(left.subsec_nanos() as i32),
        };
        // SAFETY: `set` was initialised by `block_signals`; a null info pointer is allowed.
        let signal = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &timeout) };
        if signal > 0 {
            return Some(signal);
        }
        // EAGAIN (the time is up) or EINTR: the loop looks at the clock again.
    }
}

fn watch_signals(set: libc::sigset_t, events: Sender<Event>) {
    std::thread::spawn(move || {
        loop {
            let mut signal = 0;
            // SAFETY: `set` was initialised by `block_signals`; `signal` is a valid out-pointer.
            if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
                return;
            }
            if events.send(Event::Signal(signal)).is_err() {
                return;
            }
        }
    });
}

/// The pane's terminal: output above, and (on a terminal) a line editor at the bottom. The
/// input line is drawn only while the output stands at the start of a line, so a streamed
/// answer is never broken by it.
#[derive(Clone)]
struct Editor {
    terminal: bool,
    line: std::sync::Arc<std::sync::Mutex<EditorLine>>,
}

#[derive(Default)]
struct EditorLine {
    text: String,
    drawn: bool,
    at_line_start: bool,
    prompt: &'static str,
}

impl Editor {
    fn start(events: Sender<Event>) -> Editor {
        // SAFETY: isatty only reads the descriptor's state.
        let terminal = unsafe { libc::isatty(0) == 1 };
        let line = std::sync::Arc::new(std::sync::Mutex::new(EditorLine {
            at_line_start: true,
            prompt: "> ",
            ..EditorLine::default()
        }));
        if terminal && ratatui::crossterm::terminal::enable_raw_mode().is_ok() {
            let shared = line.clone();
            std::thread::spawn(move || keys(shared, events));
        } else {
            std::thread::spawn(move || {
                for line in std::io::stdin().lock().lines() {
                    let Ok(line) = line else { return };
                    if events.send(Event::Typed(line)).is_err() {
                        return;
                    }
                }
            });
        }
        Editor { terminal, line }
    }

    fn print(&self, text: &str) {
        let mut line = self.line.lock().expect("not poisoned");
        let mut out = std::io::stdout().lock();
        if line.drawn {
            let _ = out.write_all(b"\r\x1b[2K");
            line.drawn = false;
        }
        let text = if self.terminal {
            text.replace('\n', "\r\n")
        } else {
            text.to_string()
        };
        let _ = out.write_all(text.as_bytes());
        if !text.is_empty() {
            line.at_line_start = text.ends_with('\n');
        }
        if self.terminal && line.at_line_start {
            let _ = write!(out, "{}{}", line.prompt, line.text);
            line.drawn = true;
        }
        let _ = out.flush();
    }

    fn set_mode(&self, phase: crate::domain::acp::session::Phase) {
        let prompt = match phase {
            crate::domain::acp::session::Phase::Permission => "allow? [y]es / [a]lways / [n]o > ",
            _ => "> ",
        };
        let changed = {
            let mut line = self.line.lock().expect("not poisoned");
            let changed = line.prompt != prompt;
            line.prompt = prompt;
            changed
        };
        if changed {
            self.print("");
        }
    }

    fn stop(&self) {
        if self.terminal {
            let mut line = self.line.lock().expect("not poisoned");
            let mut out = std::io::stdout().lock();
            if line.drawn {
                let _ = out.write_all(b"\r\x1b[2K");
                line.drawn = false;
            }
            let _ = out.flush();
            let _ = ratatui::crossterm::terminal::disable_raw_mode();
        }
    }
}

fn keys(line: std::sync::Arc<std::sync::Mutex<EditorLine>>, events: Sender<Event>) {
    use ratatui::crossterm::event::{self, Event as Term, KeyCode, KeyEventKind, KeyModifiers};
    loop {
        let Ok(Term::Key(key)) = event::read() else {
            continue;
        };
        if key.kind == KeyEventKind::Release {
            continue;
        }
        let mut state = line.lock().expect("not poisoned");
        let submitted = match key.code {
            KeyCode::Enter => Some(std::mem::take(&mut state.text)),
            KeyCode::Backspace => {
                state.text.pop();
                None
            }
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                state.text.clear();
                None
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                state.text.push(c);
                None
            }
            _ => None,
        };
        if state.drawn {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "\r\x1b[2K{}{}", state.prompt, state.text);
            let _ = out.flush();
        }
        drop(state);
        if let Some(text) = submitted
            && events.send(Event::Typed(text)).is_err()
        {
            return;
        }
    }
}
