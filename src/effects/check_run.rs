//! Running one check command: `/bin/sh -c COMMAND` in a process group of its own, under a time
//! limit, its output (stdout and stderr, interleaved) into a log that keeps at most a bounded
//! number of bytes. When it ends, however it ends, its group is killed and so is every process
//! that carries its marker in its environment (a daemon that left the group): a check leaves
//! nothing running.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::domain::error::{Error, Result};

/// The variable every process of a check carries (`<task id>.<round>.<pid>`).
pub const CHECK_VARIABLE: &str = "CUEKIT_CHECK";
/// The last bytes of the output kept in memory for the fix message.
const TAIL_KEPT: usize = 64 * 1024;

/// One command to run.
pub struct CheckRun<'a> {
    pub command: &'a str,
    pub cwd: &'a Path,
    pub timeout: Duration,
    /// The log file (created or appended to).
    pub log: &'a Path,
    /// At most this many bytes of output go into the log.
    pub log_limit: u64,
    /// Marks the command's processes ([`CHECK_VARIABLE`]).
    pub marker: &'a str,
}

/// What became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// Its exit status (128 + the signal for one killed by a signal); `None` when timed out.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Every byte it printed, kept or not.
    pub printed: u64,
    /// The last bytes it printed (up to 64 KiB).
    pub tail: Vec<u8>,
    /// Processes left behind and ended.
    pub leftovers: usize,
}

/// Runs the command to its end or its limit. `Err` only when it could not start or the log
/// could not be opened.
pub fn run(check: &CheckRun) -> Result<Ran> {
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(check.log)
        .map_err(|err| Error::io("open", check.log, err))?;
    let _ = writeln!(log, "$ {}", check.command);
    let (reader, writer) = std::io::pipe().map_err(|err| Error::io("pipe", check.log, err))?;
    let writer_too = writer
        .try_clone()
        .map_err(|err| Error::io("pipe", check.log, err))?;
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(check.command)
        .current_dir(check.cwd)
        .env(CHECK_VARIABLE, check.marker)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer_too)
        .process_group(0)
        .spawn()
        .map_err(|err| Error::io("run /bin/sh for", check.cwd, err))?;
    let group = child.id() as libc::pid_t;
    let (read_done, output) = std::sync::mpsc::channel();
    let limit = check.log_limit;
    let log_for_reader = log
        .try_clone()
        .map_err(|err| Error::io("open", check.log, err))?;
    std::thread::spawn(move || {
        let _ = read_done.send(copy_bounded(reader, log_for_reader, limit));
    });
    // The shell's end is waited for without reaping it: its pid, and so its group's id, stays
    // taken until the group was killed, never another's by then.
    let (exited, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: waitid on our own child with WNOWAIT only reads its state.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let waited = unsafe {
            libc::waitid(
                libc::P_PID,
                group as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        let _ = exited.send(waited);
    });
    let timed_out = ended.recv_timeout(check.timeout).is_err();
    // The group first, then every process carrying the marker, wherever it went.
    // SAFETY: a plain syscall on the command's own group, whose leader is not reaped yet.
    unsafe { libc::killpg(group, libc::SIGKILL) };
    let status = child.wait().ok();
    let left = crate::effects::process::carrying(CHECK_VARIABLE, check.marker);
    let leftovers = left.len();
    crate::effects::process::terminate(left, Duration::from_millis(200));
    // Everything that held the pipe is gone, so the reader ends; a process that could not be
    // killed would keep it open, and is not waited for.
    let (printed, tail) = output
        .recv_timeout(Duration::from_secs(5))
        .unwrap_or((0, Vec::new()));
    let exit_code = (!timed_out)
        .then(|| {
            status.and_then(|s| {
                s.code()
                    .or_else(|| std::os::unix::process::ExitStatusExt::signal(&s).map(|n| 128 + n))
            })
        })
        .flatten();
    let dropped = printed.saturating_sub(limit);
    let end = match (timed_out, exit_code) {
        (true, _) => format!("ran past its limit of {} s", check.timeout.as_secs()),
        (false, Some(code)) => format!("exit code {code}"),
        (false, None) => "status unknown".to_string(),
    };
    let _ = writeln!(
        log,
        "\n[cuekit: {end}; {printed} bytes printed, {dropped} not kept; {leftovers} processes left behind ended]"
    );
    Ok(Ran {
        exit_code,
        timed_out,
        printed,
        tail,
        leftovers,
    })
}

/// Removes a scratch tree a check ran in, also one it left read-only (made writable first).
pub fn remove_tree(root: &Path) {
    if std::fs::remove_dir_all(root).is_ok() || !root.exists() {
        return;
    }
    let _ = Command::new("chmod")
        .args(["-R", "u+rwx", "--"])
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = std::fs::remove_dir_all(root);
}

/// Copies `from` into `log` up to `limit` bytes, counts the rest and keeps the last bytes.
fn copy_bounded(mut from: impl Read, mut log: std::fs::File, limit: u64) -> (u64, Vec<u8>) {
    let mut printed = 0u64;
    let mut tail: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let room = limit.saturating_sub(printed) as usize;
        if room > 0 {
            let _ = log.write_all(&buffer[..read.min(room)]);
        }
        printed += read as u64;
        tail.extend_from_slice(&buffer[..read]);
        if tail.len() > 2 * TAIL_KEPT {
            tail.drain(..tail.len() - TAIL_KEPT);
        }
    }
    if tail.len() > TAIL_KEPT {
        tail.drain(..tail.len() - TAIL_KEPT);
    }
    (printed, tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_in(dir: &Path, command: &str, timeout: Duration, limit: u64) -> (Ran, String) {
        let log = dir.join("1.log");
        let _ = std::fs::remove_file(&log);
        let marker = format!("test.{}.{}", std::process::id(), command.len());
        let ran = run(&CheckRun {
            command,
            cwd: dir,
            timeout,
            log: &log,
            log_limit: limit,
            marker: &marker,
        })
        .unwrap();
        (ran, std::fs::read_to_string(&log).unwrap())
    }

    #[test]
    fn status_and_output_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (ran, log) = run_in(
            dir.path(),
            "echo out; echo err >&2; exit 3",
            Duration::from_secs(20),
            1024,
        );
        assert_eq!((ran.exit_code, ran.timed_out), (Some(3), false));
        assert!(log.starts_with("$ echo out;"), "{log}");
        assert!(log.contains("out\n") && log.contains("err\n"), "{log}");
        assert!(log.contains("[cuekit: exit code 3;"), "{log}");
        assert_eq!(ran.tail, b"out\nerr\n");
    }

    #[test]
    fn a_flood_is_bounded_in_the_log_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let (ran, log) = run_in(
            dir.path(),
            "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo last line",
            Duration::from_secs(20),
            10_000,
        );
        assert_eq!(ran.exit_code, Some(0));
        assert!(ran.printed > 3_000_000);
        assert!(log.len() < 11_000, "{}", log.len());
        assert!(ran.tail.len() <= TAIL_KEPT);
        assert!(String::from_utf8_lossy(&ran.tail).ends_with("last line\n"));
    }

    #[test]
    fn a_command_past_its_limit_and_its_daemon_are_ended() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let command = format!(
            "setsid sleep 300 & echo $! > '{}'; sleep 300 & echo $! >> '{}'; wait",
            pids.display(),
            pids.display()
        );
        let (ran, log) = run_in(dir.path(), &command, Duration::from_millis(500), 1024);
        assert!(ran.timed_out && ran.exit_code.is_none(), "{ran:?}");
        assert!(log.contains("ran past its limit"), "{log}");
        for pid in std::fs::read_to_string(&pids).unwrap().split_whitespace() {
            let pid: u32 = pid.parse().unwrap();
            assert!(!crate::effects::process::is_alive(pid), "{pid} survived");
        }
    }
}
