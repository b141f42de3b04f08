//! Running one check command: `/bin/sh -c COMMAND` in a process group of its own, under a time
//! limit, its output (stdout and stderr, interleaved) into a log that keeps at most a bounded
//! number of bytes. When it ends, however it ends, its group is killed and so is every process
//! that carries its marker in its environment (a daemon that left the group): a check leaves
//! nothing running.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::domain::error::{Error, Result};
use crate::effects::bounded::{Bounded, RunError, Sink};

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
    /// A sandboxed task's check: none of the caller's variables whose names say secret
    /// ([`crate::domain::sandbox::looks_secret`]) reach the child's code, as none reach its
    /// agent; whoever runs the check (a parent's `cuekit check`, the monitor) has them.
    pub without_secrets: bool,
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
    let kept_in_log = usize::try_from(check.log_limit).unwrap_or(usize::MAX);
    let mut runner = Bounded::shell(check.command, check.timeout);
    if check.without_secrets {
        for (name, value) in std::env::vars_os() {
            let (Some(text_name), Some(text)) = (name.to_str(), value.to_str()) else {
                continue;
            };
            if crate::domain::sandbox::looks_secret(text_name, text) {
                runner = runner.env_remove(&name);
            }
        }
    }
    let ran = runner
        .cwd(check.cwd)
        .mark(CHECK_VARIABLE, check.marker)
        .stdout(Sink::Capture)
        .stderr(Sink::Stdout)
        .keep(kept_in_log, TAIL_KEPT)
        .run();
    let (ran, timed_out) = match ran {
        Ok(ran) => (ran, false),
        Err(RunError::TimedOut { ran, .. }) => (*ran, true),
        Err(RunError::Start { source, .. }) => {
            return Err(Error::io("run /bin/sh for", check.cwd, source));
        }
        Err(err) => return Err(err.into()),
    };
    let printed = ran.stdout.total;
    let _ = log.write_all(&ran.stdout.head);
    let everything = ran.stdout.bytes();
    let tail = everything[everything.len().saturating_sub(TAIL_KEPT)..].to_vec();
    let exit_code = ran.code();
    let dropped = printed.saturating_sub(check.log_limit);
    let end = match (timed_out, exit_code) {
        (true, _) => format!("ran past its limit of {} s", check.timeout.as_secs()),
        (false, Some(code)) => format!("exit code {code}"),
        (false, None) => "status unknown".to_string(),
    };
    let leftovers = ran.leftovers;
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
    let _ = Bounded::new("chmod", Duration::from_secs(60))
        .args(["-R", "u+rwx", "--"])
        .arg(root)
        .stdout(Sink::Null)
        .stderr(Sink::Null)
        .run();
    let _ = std::fs::remove_dir_all(root);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_in(dir: &Path, command: &str, timeout: Duration, limit: u64) -> (Ran, String) {
        let log = dir.join("1.log");
        let _ = std::fs::remove_file(&log);
        let marker = format!("test.{}.{}", std::process::id(), command.len());
        let ran = run(&CheckRun {
            without_secrets: false,
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
