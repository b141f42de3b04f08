//! The process starts that are not a run waited for within a deadline (those go through
//! [`crate::effects::bounded`]): a background worker started and left to itself, a program
//! this process becomes (`exec`), the user's pager on this terminal, and a supervised
//! long-lived child handed descriptors (the sandbox network's bubblewrap and slirp4netns).

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::domain::error::{Error, ErrorCode, Result};

/// `program ARGS…` in the background: its own process group, no terminal, its stdio on
/// `/dev/null`, in `cwd` when given, with `env` set (a `None` value removes the variable).
/// A thread of this process waits for it, so a long-lived caller (the monitor) keeps no zombie.
pub fn detached(
    program: &Path,
    args: &[OsString],
    env: &[(&str, Option<OsString>)],
    cwd: Option<&Path>,
) -> std::io::Result<()> {
    let mut command = Command::new(program);
    command.args(args);
    for (name, value) in env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// Becomes `program ARGS…` (execvp): returns only the error when it cannot.
pub fn become_program(program: &OsStr, args: &[OsString]) -> std::io::Error {
    Command::new(program).args(args).exec()
}

/// Feeds `write` into the user's pager (`command_line` through `/bin/sh`, as git runs
/// `$PAGER`) on this terminal, and waits for it to close: it ends when the person quits it.
pub fn page(command_line: &str, write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command_line)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|err| Error::new(ErrorCode::Io, format!("cannot run {command_line}: {err}")))?;
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let written = write(&mut stdin);
    drop(stdin);
    let _ = child.wait();
    written
}

/// A supervised long-lived child: `argv` given each descriptor `from` as `to` (open across
/// exec), stdin and stdout on `/dev/null` unless `inherit` (then this process's), stderr piped
/// when `stderr_piped`. Its caller owns its whole life (waits, kills): it has no deadline.
pub fn handing_over(
    argv: &[OsString],
    pairs: Vec<(RawFd, RawFd)>,
    inherit: bool,
    stderr_piped: bool,
) -> std::io::Result<Child> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::other("no program to run"))?;
    let mut command = Command::new(program);
    command.args(args);
    if !inherit {
        command.stdin(Stdio::null()).stdout(Stdio::null());
    }
    if stderr_piped {
        command.stderr(Stdio::piped());
    }
    // SAFETY: only fcntl and dup2, async-signal-safe, between fork and exec, on a fixed array.
    unsafe {
        command.pre_exec(move || {
            let mut lifted = [0 as RawFd; 8];
            for (at, (from, _)) in pairs.iter().enumerate().take(lifted.len()) {
                lifted[at] = libc::fcntl(*from, libc::F_DUPFD_CLOEXEC, 64);
                if lifted[at] < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (at, (_, to)) in pairs.iter().enumerate().take(lifted.len()) {
                if libc::dup2(lifted[at], *to) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Writes `bytes` into a child's stdin. A child that exits before it read them all makes this
/// an error (broken pipe), never the end of cuekit: its CLI keeps SIGPIPE's default action
/// (`cuekit list | head` ends quietly), and the signal a write into a closed pipe raises goes
/// to the writing thread. Blocked around the write, it is taken back when it was raised: a
/// `git` that failed before reading its input once ended `cuekit list` with signal 13 and no
/// word.
pub fn write_to_child(pipe: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: the set is initialised by sigemptyset before use; the mask changes affect this
    // thread alone and are put back before returning; sigtimedwait with a zero timeout only
    // takes a SIGPIPE already pending.
    unsafe {
        let mut pipe_signal: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe_signal);
        libc::sigaddset(&mut pipe_signal, libc::SIGPIPE);
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe_signal, &mut before);
        let written = pipe.write_all(bytes);
        let now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        while libc::sigtimedwait(&pipe_signal, std::ptr::null_mut(), &now) == libc::SIGPIPE {}
        libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a forked process with SIGPIPE at its default action (as the CLI sets it), a write
    /// into a pipe nobody reads is an error, and the process lives on to say so.
    #[test]
    fn a_write_to_a_child_that_is_gone_is_an_error_not_the_end() {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        // SAFETY: the forked child only changes its own signal disposition, writes to a pipe
        // and exits with _exit, never returning into the test harness.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
            let mut writer = writer;
            let said = write_to_child(&mut writer, &[b'x'; 100_000]);
            let code = match said {
                Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => 0,
                _ => 1,
            };
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            !libc::WIFSIGNALED(status),
            "ended by signal {}",
            libc::WTERMSIG(status)
        );
        assert_eq!(libc::WEXITSTATUS(status), 0, "the write did not fail");
    }
}
