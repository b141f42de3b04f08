//! The one way cuekit runs a program and waits for it: the bounded runner. Every start of a
//! process that is waited for goes through [`Bounded`]: git, hooks, checks, ssh, notifications,
//! doctor's probes.
//!
//! What it guarantees, whatever the program does:
//! - a deadline: past it, the program's process group is killed (`TimedOut`, naming the
//!   command), never a hang;
//! - bounded output: of each captured stream the first and the last bytes are kept, the rest
//!   counted ([`Kept`]); [`Kept::whole`] refuses a cut one (`OutputCapped`);
//! - stdin given (bytes, a file) or closed, never inherited by accident; the working directory
//!   and the environment as the caller says;
//! - its own process group, killed before the program is reaped: the program's end is waited
//!   for with `waitid(WNOWAIT)`, so its pid (the group's id) stays taken until the group was
//!   killed and cannot name another's group by then; and no zombie left (it is reaped).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::domain::error::{Error, ErrorCode};

/// What a caller that keeps everything keeps of each stream (head and tail together).
pub const DEFAULT_CAP: usize = 16 * 1024 * 1024;

/// What goes to the program's stdin.
#[derive(Debug)]
pub enum Input {
    /// Nothing: `/dev/null`.
    Closed,
    /// These bytes, written from a thread of their own (the program may fill its stdout first).
    Bytes(Vec<u8>),
    /// This file, from its current offset.
    File(File),
    /// This process's own stdin (a relayed command on the user's terminal).
    Terminal,
}

/// Where one of the program's output streams goes.
#[derive(Debug)]
pub enum Sink {
    /// Read into memory: its head and tail kept ([`Kept`]).
    Capture,
    /// `/dev/null`.
    Null,
    /// This process's own stream (the user's terminal).
    Terminal,
    /// This file (an unlinked scratch file that a background process may keep open).
    File(File),
    /// stderr only: the same pipe as stdout, interleaved.
    Stdout,
}

/// The program's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// A group of its own, killed when the program ends or at the deadline.
    Own,
    /// A group of its own, killed only at the deadline: what the program started in the
    /// background may outlive it (a hook's `notify-send &`).
    OwnOutlived,
    /// This process's group (a relayed command that must stay in the terminal's foreground, a
    /// run a cancel of the caller's group must end too): only the program itself is killed at
    /// the deadline.
    Caller,
}

/// A stream's bytes: the first `head` and last `tail` bytes the program wrote, and how many it
/// wrote in all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kept {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    /// Every byte written, kept or not.
    pub total: u64,
}

impl Kept {
    /// Whether bytes between the head and the tail were dropped.
    pub fn cut(&self) -> bool {
        self.total > (self.head.len() + self.tail.len()) as u64
    }

    /// Head and tail together (the whole output when nothing was cut).
    pub fn bytes(&self) -> Vec<u8> {
        let mut bytes = self.head.clone();
        bytes.extend_from_slice(&self.tail);
        bytes
    }

    /// The whole output; `OutputCapped` when some of it was not kept.
    pub fn whole(&self, command: &str, cap: usize) -> Result<Vec<u8>, RunError> {
        if self.cut() {
            return Err(RunError::OutputCapped {
                command: command.to_string(),
                printed: self.total,
                cap,
            });
        }
        Ok(self.bytes())
    }
}

/// What became of a run that ended within its deadline (or, inside `TimedOut`, of one that
/// did not: what it printed by then).
#[derive(Debug)]
pub struct Ran {
    /// The command, for messages.
    pub command: String,
    /// `None` only inside `TimedOut`.
    pub status: Option<ExitStatus>,
    pub stdout: Kept,
    pub stderr: Kept,
    pub elapsed: Duration,
    /// Processes carrying the run's mark ([`Bounded::mark`]) that had left its group, ended.
    pub leftovers: usize,
}

impl Ran {
    /// Its exit code, or 128 + the signal that ended it (as a shell reports it).
    pub fn code(&self) -> Option<i32> {
        self.status
            .and_then(|status| status.code().or_else(|| status.signal().map(|n| 128 + n)))
    }

    pub fn success(&self) -> bool {
        self.status.is_some_and(|status| status.success())
    }
}

/// Each limit the runner holds a program to, naming the command.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot run `{command}`: {source}")]
    Start {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` ran past its limit of {:.1} s and was killed with its process group", limit.as_secs_f64())]
    TimedOut {
        command: String,
        limit: Duration,
        /// What it printed by then.
        ran: Box<Ran>,
    },
    #[error("`{command}` printed {printed} bytes, more than the {cap} kept")]
    OutputCapped {
        command: String,
        printed: u64,
        cap: usize,
    },
}

impl RunError {
    /// The stable code of each limit (src/domain/error.rs).
    pub fn code(&self) -> ErrorCode {
        match self {
            RunError::Start { .. } => ErrorCode::Io,
            RunError::TimedOut { .. } => ErrorCode::ProcessTimedOut,
            RunError::OutputCapped { .. } => ErrorCode::ProcessOutputTooLarge,
        }
    }

    /// The program could not be found on PATH.
    pub fn not_found(&self) -> bool {
        matches!(self, RunError::Start { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

impl From<RunError> for Error {
    fn from(err: RunError) -> Error {
        let hint = match &err {
            RunError::Start { .. } => "check that the program is installed and on PATH",
            RunError::TimedOut { .. } => "something made it wait; run it by hand to see what",
            RunError::OutputCapped { .. } => "the output was cut; run it by hand to see it all",
        };
        Error::new(err.code(), err.to_string()).with_hint(hint)
    }
}

/// A program to run: what, where, with what, and within what limits.
#[derive(Debug)]
pub struct Bounded {
    program: OsString,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    env_clear: bool,
    env: Vec<(OsString, Option<OsString>)>,
    stdin: Input,
    stdout: Sink,
    stderr: Sink,
    deadline: Option<Duration>,
    head: usize,
    tail: usize,
    group: Group,
    keep_open: Option<std::os::fd::RawFd>,
    mark: Option<(String, String)>,
}

impl Bounded {
    /// `program` (found on PATH unless a path), stdin closed, both streams captured (16 MiB of
    /// each kept), in a group of its own, with a deadline of `deadline`.
    pub fn new(program: impl AsRef<OsStr>, deadline: Duration) -> Bounded {
        Bounded {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            cwd: None,
            env_clear: false,
            env: Vec::new(),
            stdin: Input::Closed,
            stdout: Sink::Capture,
            stderr: Sink::Capture,
            deadline: Some(deadline),
            head: DEFAULT_CAP / 2,
            tail: DEFAULT_CAP / 2,
            group: Group::Own,
            keep_open: None,
            mark: None,
        }
    }

    /// `/bin/sh -c script`.
    pub fn shell(script: impl AsRef<OsStr>, deadline: Duration) -> Bounded {
        Bounded::new("/bin/sh", deadline).arg("-c").arg(script)
    }

    pub fn deadline(mut self, deadline: Duration) -> Bounded {
        self.deadline = Some(deadline);
        self
    }

    /// No deadline: for a relayed command that ends when the user (or its peer) ends it.
    pub fn unlimited(mut self) -> Bounded {
        self.deadline = None;
        self
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Bounded {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Bounded
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Runs in `dir` (else in this process's working directory).
    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Bounded {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Starts from an empty environment: only what [`Bounded::env`] sets.
    pub fn env_clear(mut self) -> Bounded {
        self.env_clear = true;
        self
    }

    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Bounded {
        self.env
            .push((name.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    pub fn envs<I, K, V>(mut self, vars: I) -> Bounded
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (name, value) in vars {
            self = self.env(name, value);
        }
        self
    }

    pub fn env_remove(mut self, name: impl AsRef<OsStr>) -> Bounded {
        self.env.push((name.as_ref().to_owned(), None));
        self
    }

    pub fn stdin(mut self, input: Input) -> Bounded {
        self.stdin = input;
        self
    }

    pub fn stdout(mut self, sink: Sink) -> Bounded {
        self.stdout = sink;
        self
    }

    pub fn stderr(mut self, sink: Sink) -> Bounded {
        self.stderr = sink;
        self
    }

    /// Keeps the first `head` and the last `tail` bytes of each captured stream.
    pub fn keep(mut self, head: usize, tail: usize) -> Bounded {
        self.head = head;
        self.tail = tail;
        self
    }

    pub fn group(mut self, group: Group) -> Bounded {
        self.group = group;
        self
    }

    /// The program inherits this descriptor (a lock it must hold while it runs); it stays
    /// close-on-exec in this process.
    pub fn keep_open(mut self, fd: std::os::fd::RawFd) -> Bounded {
        self.keep_open = Some(fd);
        self
    }

    /// Marks every process of the run with `name=value` in its environment: when it ends,
    /// however it ends, those that left its group (a daemon) are ended too.
    pub fn mark(mut self, name: &str, value: &str) -> Bounded {
        self.mark = Some((name.to_string(), value.to_string()));
        self.env(name, value)
    }

    /// How much of each captured stream is kept.
    pub fn cap(&self) -> usize {
        self.head + self.tail
    }

    /// The command as words, for messages (shortened past 300 characters).
    pub fn describe(&self) -> String {
        let mut words = vec![self.program.to_string_lossy().into_owned()];
        words.extend(self.args.iter().map(|a| a.to_string_lossy().into_owned()));
        let text = words.join(" ");
        match text.char_indices().nth(300) {
            Some((end, _)) => format!("{}…", &text[..end]),
            None => text,
        }
    }

    /// Runs it to its end or its deadline.
    pub fn run(self) -> Result<Ran, RunError> {
        let limit = self.deadline;
        let mut running = self.start()?;
        let ended = match limit {
            Some(limit) => running.wait_for(limit),
            None => running.wait_for(Duration::MAX),
        };
        let ran = running.finish();
        match (ended, limit) {
            (false, Some(limit)) => Err(RunError::TimedOut {
                command: ran.command.clone(),
                limit,
                ran: Box::new(ran),
            }),
            _ => Ok(ran),
        }
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        if let Some(dir) = &self.cwd {
            command.current_dir(dir);
        }
        if self.env_clear {
            command.env_clear();
        }
        for (name, value) in &self.env {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        if self.group != Group::Caller {
            command.process_group(0);
        }
        if let Some(fd) = self.keep_open {
            // SAFETY: only fcntl, async-signal-safe, runs between fork and exec; it changes the
            // child's copy of the descriptor table.
            unsafe {
                command.pre_exec(move || {
                    if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        command
    }

    /// Starts it and returns at once: [`Running::wait_for`] and [`Running::finish`] do the rest.
    pub fn start(self) -> Result<Running, RunError> {
        let described = self.describe();
        let start_error = |source| RunError::Start {
            command: described.clone(),
            source,
        };
        let mut command = self.command();
        let mut merged = None;
        command.stdin(match self.stdin {
            Input::Closed => Stdio::null(),
            Input::Bytes(_) => Stdio::piped(),
            Input::File(ref file) => Stdio::from(file.try_clone().map_err(start_error)?),
            Input::Terminal => Stdio::inherit(),
        });
        match (&self.stdout, &self.stderr) {
            (Sink::Capture, Sink::Stdout) => {
                let (reader, writer) = std::io::pipe().map_err(start_error)?;
                command.stderr(writer.try_clone().map_err(start_error)?);
                command.stdout(writer);
                merged = Some(reader);
            }
            (stdout, stderr) => {
                command.stdout(stdio(stdout).map_err(start_error)?);
                command.stderr(stdio(stderr).map_err(start_error)?);
            }
        }
        let started = Instant::now();
        let mut child = command.spawn().map_err(start_error)?;
        // The pipe's writing ends are the child's now; ours must go for the reader to end.
        drop(command);
        if let (Input::Bytes(bytes), Some(mut stdin)) = (self.stdin, child.stdin.take()) {
            std::thread::spawn(move || crate::effects::spawn::write_to_child(&mut stdin, &bytes));
        }
        let (head, tail) = (self.head, self.tail);
        let stdout = match merged {
            Some(reader) => Some(Reader::start(reader, head, tail)),
            None => child
                .stdout
                .take()
                .map(|out| Reader::start(out, head, tail)),
        };
        let stderr = child
            .stderr
            .take()
            .map(|err| Reader::start(err, head, tail));
        let exited = wait_unreaped(child.id());
        Ok(Running {
            mark: self.mark,
            command: described,
            child,
            group: self.group,
            exited,
            ended: false,
            started,
            stdout,
            stderr,
        })
    }
}

fn stdio(sink: &Sink) -> std::io::Result<Stdio> {
    Ok(match sink {
        Sink::Capture => Stdio::piped(),
        Sink::Null | Sink::Stdout => Stdio::null(),
        Sink::Terminal => Stdio::inherit(),
        Sink::File(file) => Stdio::from(file.try_clone()?),
    })
}

/// A program under way.
pub struct Running {
    mark: Option<(String, String)>,
    command: String,
    child: Child,
    group: Group,
    exited: Receiver<()>,
    ended: bool,
    started: Instant,
    stdout: Option<Reader>,
    stderr: Option<Reader>,
}

impl Running {
    /// Its pid (and, in a group of its own, its group's id).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether it ended within `wait` (it is not reaped yet: [`Running::finish`] does that).
    pub fn wait_for(&mut self, wait: Duration) -> bool {
        if !self.ended {
            self.ended = match self.exited.recv_timeout(wait) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => true,
                Err(RecvTimeoutError::Timeout) => false,
            };
        }
        self.ended
    }

    /// Kills what must go (its group, or the program if it has not ended), reaps it, and
    /// collects its output. A stream still held open by a process that left the group is read
    /// for at most a moment more.
    pub fn finish(mut self) -> Ran {
        let pid = self.child.id() as libc::pid_t;
        match (self.group, self.ended) {
            // SAFETY: plain syscalls on the program's own group or itself, whose leader is not
            // reaped yet (waited for with WNOWAIT), so its id names no other process.
            (Group::Own, _) | (Group::OwnOutlived, false) => unsafe {
                libc::killpg(pid, libc::SIGKILL);
            },
            (Group::Caller, false) => unsafe {
                libc::kill(pid, libc::SIGKILL);
            },
            _ => {}
        }
        let status = self.child.wait().ok().filter(|_| self.ended);
        let leftovers = match &self.mark {
            Some((name, value)) => {
                let left = crate::effects::process::carrying(name, value);
                let count = left.len();
                crate::effects::process::terminate(left, Duration::from_millis(200));
                count
            }
            None => 0,
        };
        let grace = Duration::from_millis(if self.group == Group::Own { 2000 } else { 200 });
        let stdout = self.stdout.take().map(|r| r.collect(grace));
        let stderr = self.stderr.take().map(|r| r.collect(grace));
        Ran {
            command: self.command.clone(),
            status,
            stdout: stdout.unwrap_or_default(),
            stderr: stderr.unwrap_or_default(),
            elapsed: self.started.elapsed(),
            leftovers,
        }
    }
}

impl Drop for Running {
    /// A run dropped before its finish leaves nothing behind: its group is killed and it is
    /// reaped.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            if self.group == Group::Caller {
                let _ = self.child.kill();
            } else {
                // SAFETY: as in finish; the leader is not reaped yet.
                unsafe { libc::killpg(self.child.id() as libc::pid_t, libc::SIGKILL) };
            }
            let _ = self.child.wait();
        }
    }
}

/// A thread that answers once `pid` (our own child) has ended, without reaping it.
fn wait_unreaped(pid: u32) -> Receiver<()> {
    let (exited, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        loop {
            // SAFETY: waitid on our own child with WNOWAIT only reads its state.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            let waited = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if waited == 0
                || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                break;
            }
        }
        let _ = exited.send(());
    });
    ended
}

/// One captured stream, read on a thread of its own into its head and tail.
struct Reader {
    kept: Arc<Mutex<Kept>>,
    done: Receiver<()>,
    tail: usize,
}

impl Reader {
    fn start(mut from: impl Read + Send + 'static, head: usize, tail: usize) -> Reader {
        let kept = Arc::new(Mutex::new(Kept::default()));
        let (finished, done) = std::sync::mpsc::channel();
        let into = Arc::clone(&kept);
        std::thread::spawn(move || {
            let mut buffer = vec![0u8; 16 * 1024];
            loop {
                let read = match from.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(read) => read,
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let mut kept = into.lock().unwrap_or_else(|p| p.into_inner());
                keep(&mut kept, &buffer[..read], head, tail);
            }
            let _ = finished.send(());
        });
        Reader { kept, done, tail }
    }

    fn collect(self, grace: Duration) -> Kept {
        let _ = self.done.recv_timeout(grace);
        let mut kept = std::mem::take(&mut *self.kept.lock().unwrap_or_else(|p| p.into_inner()));
        if kept.tail.len() > self.tail {
            let drop = kept.tail.len() - self.tail;
            kept.tail.drain(..drop);
        }
        kept
    }
}

/// Adds `bytes` to `kept`: the head fills first, then the tail keeps the last `tail` bytes.
fn keep(kept: &mut Kept, mut bytes: &[u8], head: usize, tail: usize) {
    kept.total += bytes.len() as u64;
    let room = head.saturating_sub(kept.head.len());
    let into_head = bytes.len().min(room);
    kept.head.extend_from_slice(&bytes[..into_head]);
    bytes = &bytes[into_head..];
    if tail == 0 || bytes.is_empty() {
        return;
    }
    if bytes.len() >= tail {
        kept.tail.clear();
        kept.tail.extend_from_slice(&bytes[bytes.len() - tail..]);
        return;
    }
    kept.tail.extend_from_slice(bytes);
    // Trimmed in batches: a byte at a time would move the tail on every write.
    if kept.tail.len() > 2 * tail {
        let drop = kept.tail.len() - tail;
        kept.tail.drain(..drop);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pid written in `file`, and whether it died within two seconds.
    fn ends_soon(file: &Path) -> (u32, bool) {
        let pid: u32 = std::fs::read_to_string(file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let gone = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            !crate::effects::process::is_alive(pid)
        });
        (pid, gone)
    }

    fn zombies_of_this_process() -> Vec<u32> {
        crate::effects::process::zombie_children(std::process::id())
    }

    #[test]
    fn status_output_stdin_env_and_cwd_are_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let ran = Bounded::shell(
            "cat; echo \"$ONLY\" >&2; pwd; exit 3",
            Duration::from_secs(20),
        )
        .cwd(dir.path())
        .env_clear()
        .env("ONLY", "this")
        .stdin(Input::Bytes(b"in\n".to_vec()))
        .run()
        .unwrap();
        assert_eq!(ran.code(), Some(3));
        let out = String::from_utf8(ran.stdout.bytes()).unwrap();
        assert!(out.starts_with("in\n"), "{out}");
        assert!(out.contains(&dir.path().display().to_string()), "{out}");
        assert_eq!(ran.stderr.bytes(), b"this\n");
    }

    #[test]
    fn a_flood_keeps_its_head_and_tail_and_the_whole_is_refused() {
        let ran = Bounded::shell(
            "echo first; head -c 1000000 /dev/zero | tr '\\0' x; echo; echo last",
            Duration::from_secs(20),
        )
        .keep(100, 100)
        .run()
        .unwrap();
        assert!(ran.stdout.cut() && ran.stdout.total > 1_000_000);
        assert!(ran.stdout.head.starts_with(b"first\n"));
        assert!(ran.stdout.tail.ends_with(b"last\n"));
        assert_eq!(ran.stdout.tail.len(), 100);
        let err = ran.stdout.whole(&ran.command, 200).unwrap_err();
        assert_eq!(err.code(), ErrorCode::ProcessOutputTooLarge);
        assert!(err.to_string().contains("/bin/sh -c echo first"), "{err}");
    }

    #[test]
    fn past_its_deadline_its_whole_group_is_killed_and_reaped() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let script = format!(
            "sleep 300 & echo $! > '{}'; echo started; wait",
            pids.display()
        );
        let started = Instant::now();
        let err = Bounded::shell(&script, Duration::from_millis(300))
            .run()
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(err.code(), ErrorCode::ProcessTimedOut);
        assert!(err.to_string().contains("sleep 300"), "{err}");
        let RunError::TimedOut { ran, .. } = err else {
            panic!("{err}")
        };
        assert_eq!(ran.stdout.bytes(), b"started\n");
        assert!(ran.status.is_none());
        let (pid, gone) = ends_soon(&pids);
        assert!(gone, "{pid} outlived the deadline");
    }

    #[test]
    fn a_group_killed_at_the_end_takes_its_background_and_leaves_no_zombie() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let script = format!("sleep 300 >/dev/null 2>&1 & echo $! > '{}'", pids.display());
        let mut running = Bounded::shell(&script, Duration::from_secs(20))
            .start()
            .unwrap();
        let leader = running.id();
        assert!(running.wait_for(Duration::from_secs(20)));
        let ran = running.finish();
        assert_eq!(ran.code(), Some(0));
        assert!(!zombies_of_this_process().contains(&leader));
        let (pid, gone) = ends_soon(&pids);
        assert!(gone, "the background {pid} outlived its group's end");
    }

    #[test]
    fn a_program_that_is_not_there_is_a_start_error_naming_it() {
        let err = Bounded::new("cuekit-no-such-program", Duration::from_secs(5))
            .arg("--flag")
            .run()
            .unwrap_err();
        assert!(err.not_found(), "{err}");
        assert!(err.to_string().contains("cuekit-no-such-program --flag"));
        let err: Error = err.into();
        assert_eq!(err.code, ErrorCode::Io);
    }
}
