//! tmux: pure argv builders ([`args`]) and the one runner that spawns tmux ([`Tmux`]).

pub mod args;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::domain::error::{Error, ErrorCode, Result};
pub use crate::domain::pane::{PaneIndex, PaneInfo, Socket};

/// Environment variable naming the tmux server: a name (`-L`) or, with a `/`, a path (`-S`).
pub const SOCKET_ENV: &str = "CUEKIT_TMUX_SOCKET";
/// A private server by default, so cuekit never types into or kills the user's own sessions.
pub const DEFAULT_SOCKET: &str = "cuekit";

/// Where the socket is on this machine: effects of the domain's [`Socket`].
impl Socket {
    /// The absolute path of this server's socket: tmux's own rule for `-L NAME`
    /// (`$TMUX_TMPDIR/tmux-UID/NAME`, `/tmp` by default), a relative `-S` path made absolute
    /// against the current directory.
    pub fn resolve(&self) -> Result<Socket> {
        let path = if self.0.contains('/') {
            let path = PathBuf::from(&self.0);
            if path.is_absolute() {
                path
            } else {
                std::env::current_dir()
                    .map_err(|err| Error::io("read", Path::new("."), err))?
                    .join(path)
            }
        } else {
            let dir = std::env::var_os("TMUX_TMPDIR")
                .filter(|dir| !dir.is_empty())
                .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
            dir.join(format!("tmux-{}", unsafe { libc::getuid() }))
                .join(&self.0)
        };
        Ok(Socket(path.to_string_lossy().into_owned()))
    }

    /// The socket's path (for a name, where tmux would put it).
    pub fn path(&self) -> PathBuf {
        self.resolve()
            .map_or_else(|_| PathBuf::from(&self.0), |s| PathBuf::from(s.0))
    }

    /// tmux creates the directory of a `-L` socket itself, but not that of a `-S` path: a
    /// resolved default socket needs its owner-only directory made the way tmux makes it.
    pub fn ensure_dir(&self) -> Result<()> {
        let Some(dir) = Path::new(&self.0).parent() else {
            return Ok(());
        };
        if dir.is_dir() {
            return Ok(());
        }
        crate::effects::store::create_private_dir(dir)
    }
}

/// Parses the output of [`args::list_panes`].
pub fn parse_panes(stdout: &str) -> Vec<PaneInfo> {
    stdout
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            Some(PaneInfo {
                session: fields.next()?.to_string(),
                pane_id: fields.next()?.to_string(),
                pane_pid: fields.next()?.parse().ok()?,
                dead: fields.next()? == "1",
                dead_status: fields.next()?.parse().ok(),
                in_mode: fields.next()? == "1",
                height: fields.next()?.parse().ok()?,
                history_lines: fields.next()?.parse().ok()?,
                activity: fields.next()?.parse().ok()?,
                dead_signal: fields.next().and_then(|field| field.parse().ok()),
            })
        })
        .collect()
}

#[derive(Clone)]
pub struct Tmux {
    socket: Socket,
}

/// A tmux invocation under way.
pub struct Pending {
    child: std::process::Child,
    /// For a new session: how to ask again when the server reached was on its way out.
    again: Option<(Tmux, args::Argv)>,
}

/// How many times a new session is asked for when the server it reached was exiting.
const SESSION_TRIES: u32 = 5;

/// tmux's words when the server it reached exited before answering. A server exits once its
/// last session is killed (`cuekit rm`, a cancel, a retry's start making room): a client that
/// connected just before then gets no session. Asked again, tmux starts a new server.
fn is_server_lost(message: &str) -> bool {
    message.contains("server exited unexpectedly") || message.contains("lost server")
}

impl Pending {
    /// Waits for tmux; its stdout, or its complaint as a `tmux_failed` error. A new session
    /// whose server exited under it is asked for again (see [`is_server_lost`]).
    pub fn finish(mut self) -> Result<String> {
        let again = self.again.take();
        let mut answer = self.finish_once();
        if let Some((tmux, argv)) = again {
            for attempt in 1..SESSION_TRIES {
                match &answer {
                    Err(err) if is_server_lost(&err.message) => {
                        std::thread::sleep(std::time::Duration::from_millis(
                            10 * u64::from(attempt),
                        ));
                        answer = tmux.run(&argv);
                    }
                    _ => break,
                }
            }
        }
        answer
    }

    fn finish_once(self) -> Result<String> {
        let output = self.child.wait_with_output().map_err(|err| {
            Error::new(ErrorCode::TmuxFailed, format!("tmux did not finish: {err}"))
        })?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
            Err(Error::new(
                ErrorCode::TmuxFailed,
                format!("tmux failed: {stderr}"),
            ))
        }
    }
}

/// tmux's path, looked up once with `stat`s: spawning by bare name would try an `execve` in
/// every PATH directory before tmux's own.
pub fn binary() -> &'static std::path::Path {
    static TMUX: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    TMUX.get_or_init(|| {
        crate::effects::which::find_on_path("tmux").unwrap_or_else(|| "tmux".into())
    })
}

impl Tmux {
    pub fn new(socket: Socket) -> Tmux {
        Tmux { socket }
    }

    pub fn socket(&self) -> &Socket {
        &self.socket
    }

    pub fn run(&self, args: &args::Argv) -> Result<String> {
        self.run_with_input(args, None)
    }

    /// Runs tmux with `input` on its stdin (for `load-buffer -`): text never goes on argv.
    pub fn run_with_input(&self, args: &args::Argv, input: Option<&[u8]>) -> Result<String> {
        self.start(args, input)?.finish()
    }

    /// Starts tmux and returns at once; [`Pending::finish`] collects its answer.
    pub fn spawn(&self, args: &args::Argv) -> Result<Pending> {
        self.start(args, None)
    }

    /// [`Tmux::spawn`] for a `new-session`, which [`Pending::finish`] asks for again when the
    /// server it reached exited meanwhile.
    pub fn spawn_session(&self, args: &args::Argv) -> Result<Pending> {
        let mut pending = self.start(args, None)?;
        pending.again = Some((self.clone(), args.clone()));
        Ok(pending)
    }

    fn start(&self, args: &args::Argv, input: Option<&[u8]>) -> Result<Pending> {
        let mut command = Command::new(binary());
        command
            // A tmux server started from inside a task's pane would otherwise hand that task's
            // id to every later pane and pipe, and cancelling the task would reach them.
            .env_remove("CUEKIT_TASK_ID")
            // Without a UTF-8 locale (an ssh command's usual environment) tmux prints a tab
            // of a format as `_`, and no pane listing could be read: `-u` says UTF-8 is fine.
            .arg("-u")
            .args(self.socket.args())
            .args(args.iter())
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                Error::new(
                    ErrorCode::TmuxUnavailable,
                    "tmux is not installed (not found on PATH)",
                )
                .with_hint("install tmux 3.2 or newer, e.g. `apt-get install tmux`")
            } else {
                Error::new(
                    ErrorCode::TmuxUnavailable,
                    format!("cannot run tmux: {err}"),
                )
            }
        })?;
        if let Some(input) = input {
            let mut stdin = child.stdin.take().expect("stdin was piped");
            crate::effects::spawn::write_to_child(&mut stdin, input).map_err(|err| {
                Error::new(
                    ErrorCode::TmuxFailed,
                    format!("cannot write to tmux: {err}"),
                )
            })?;
        }
        Ok(Pending { child, again: None })
    }

    /// Every pane of the server in one tmux call; no server, or a server with no session left,
    /// means no panes.
    pub fn panes(&self) -> Result<Vec<PaneInfo>> {
        match self.run(&args::list_panes()) {
            Ok(stdout) => Ok(parse_panes(&stdout)),
            Err(err)
                if err.code == ErrorCode::TmuxFailed
                    && (is_no_server(&err.message) || is_no_session_left(&err.message)) =>
            {
                Ok(Vec::new())
            }
            Err(err) => Err(err),
        }
    }
}

/// Largest argv, in bytes, sent in one tmux invocation: tmux refuses a command list over
/// about 16 KB ("command too long").
const MAX_ARGV_BYTES: usize = 12 * 1024;

impl Tmux {
    /// The visible screens of `panes` (pane id, height), a few hundred per tmux invocation.
    /// A pane that vanished meanwhile is simply missing from the result.
    pub fn capture_screens(&self, panes: &[(&str, usize)]) -> HashMap<String, String> {
        let mut screens = HashMap::new();
        let mut chunk: Vec<(&str, usize)> = Vec::new();
        let mut bytes = 0;
        for &(pane, height) in panes {
            let cost = pane.len() + 24;
            if bytes + cost > MAX_ARGV_BYTES {
                self.capture_chunk(&chunk, &mut screens);
                chunk.clear();
                bytes = 0;
            }
            chunk.push((pane, height));
            bytes += cost;
        }
        self.capture_chunk(&chunk, &mut screens);
        screens
    }

    fn capture_chunk(&self, chunk: &[(&str, usize)], screens: &mut HashMap<String, String>) {
        if chunk.is_empty() {
            return;
        }
        let Ok(stdout) = self.run(&args::capture_panes(chunk.iter().map(|(pane, _)| *pane))) else {
            // One pane gone stops tmux's command list: fall back to one pane at a time.
            if chunk.len() > 1 {
                for one in chunk {
                    self.capture_chunk(std::slice::from_ref(one), screens);
                }
            }
            return;
        };
        let mut lines = stdout.split_inclusive('\n');
        for (pane, height) in chunk {
            let screen: String = lines.by_ref().take(*height).collect();
            screens.insert(pane.to_string(), screen);
        }
    }
}

/// Whether tmux said that no server listens on the socket: the only tmux failure that means a
/// task's pane is gone. tmux words a refused connection or a socket that is not one as "no server
/// running", and a missing socket file as "error connecting to … (No such file or directory)";
/// anything else (permission denied, unsafe directory, a crash) says nothing about the pane.
pub fn is_no_server(message: &str) -> bool {
    message.contains("no server running on")
        || (message.contains("error connecting to")
            && message.contains("(No such file or directory)"))
}

/// Whether a pane listing (`list-panes -a`, or `-s -t =session`) was answered by a server with
/// no session left: tmux 3.3a says "no current target" then, not "can't find session". The
/// server exits once its last session is gone, but a look can come between the two (a status
/// during a cancel read `unknown`, "tmux failed", so), and a server told `exit-empty off`
/// stays so.
pub fn is_no_session_left(message: &str) -> bool {
    message.contains("no current target")
}

/// Whether tmux said that a target session or pane does not exist (the server answered).
pub fn is_no_such_target(message: &str) -> bool {
    ["can't find session", "can't find window", "can't find pane"]
        .iter()
        .any(|words| message.contains(words))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_name_or_path() {
        assert_eq!(
            Socket("cuekit".into()).args(),
            ["-L".into(), "cuekit".into()] as [std::ffi::OsString; 2]
        );
        assert_eq!(
            Socket("/tmp/s".into()).args(),
            ["-S".into(), "/tmp/s".into()] as [std::ffi::OsString; 2]
        );
    }

    #[test]
    fn attach_command_is_copy_pasteable() {
        assert_eq!(
            Socket("cuekit".into()).attach_command("cuekit-task-t_1"),
            "tmux -L 'cuekit' attach -t '=cuekit-task-t_1'"
        );
    }

    #[test]
    fn parses_live_and_dead_panes() {
        let panes = parse_panes(
            "cuekit-task-a\t%1\t42\t0\t\t0\t50\t0\t100\t\ncuekit-task-b\t%2\t43\t1\t3\t1\t50\t7\t101\t\ncuekit-task-c\t%3\t44\t1\t\t0\t50\t0\t102\t9\nbroken line\n",
        );
        assert_eq!(panes.len(), 3);
        assert_eq!(
            (panes[2].dead_status, panes[2].dead_signal),
            (None, Some(9))
        );
        assert_eq!(panes[0].dead_status, None);
        assert!(!panes[0].dead);
        assert_eq!(panes[1].dead_status, Some(3));
        assert!(panes[1].dead && panes[1].in_mode);
        assert_eq!(panes[1].activity, 101);
    }

    #[test]
    fn a_sessions_first_pane_stands_for_it() {
        let panes = parse_panes(
            "s\t%7\t1\t0\t\t0\t50\t0\t1\ns\t%3\t2\t0\t\t0\t50\t0\t1\nt\t%5\t3\t0\t\t0\t50\t0\t1\n",
        );
        let index = PaneIndex::new(panes);
        assert_eq!(index.get("s").unwrap().pane_id, "%3");
        assert_eq!(index.get("t").unwrap().pane_pid, 3);
        assert!(index.get("u").is_none());
    }

    #[test]
    fn recognises_no_server() {
        assert!(is_no_server(
            "tmux failed: no server running on /tmp/tmux-0/x"
        ));
        assert!(is_no_server(
            "tmux failed: error connecting to /tmp/x (No such file or directory)"
        ));
        assert!(!is_no_server(
            "tmux failed: error connecting to /tmp/x (Permission denied)"
        ));
        assert!(!is_no_server("tmux failed: can't find session"));
        assert!(is_no_session_left("tmux failed: no current target"));
        assert!(!is_no_session_left("tmux failed: can't find session"));
    }
}
