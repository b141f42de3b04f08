//! Running ssh: every call has a deadline, after which ssh is killed. Output goes to unlinked
//! temp files, not pipes: an ssh that becomes the connection's master (`ControlPersist`) lives
//! on in the background, and a pipe it inherited would never reach end-of-file.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::bounded::{self, Bounded, Group, Input, RunError, Sink};

/// What one ssh call gave back.
#[derive(Debug)]
pub struct Ran {
    /// `None` when the deadline passed and ssh was killed.
    pub status: Option<ExitStatus>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Ran {
    /// ssh's own failure (it exits 255: connection, login, host key), or the deadline.
    pub fn unreachable(&self) -> bool {
        self.status.is_none_or(|status| status.code() == Some(255))
    }

    /// What the user needs to see of a failure: ssh's last message, or the deadline.
    pub fn why(&self, deadline: Duration) -> String {
        match (self.status, self.stderr.trim().lines().last()) {
            (None, _) => format!("no answer within {}s", deadline.as_secs_f32()),
            (_, Some(line)) => line.trim().to_string(),
            (Some(status), None) => format!("ssh ended with {status}"),
        }
    }
}

/// Runs `argv` with `stdin`, and collects its output; killed at `deadline`.
pub fn capture(argv: &[String], stdin: Option<&[u8]>, deadline: Duration) -> Result<Ran> {
    let input = match stdin {
        Some(bytes) => {
            let mut file = scratch()?;
            file.write_all(bytes)
                .and_then(|()| file.rewind())
                .map_err(|err| Error::new(ErrorCode::Io, format!("cannot buffer input: {err}")))?;
            Input::File(file)
        }
        None => Input::Closed,
    };
    run_capturing(argv, input, deadline)
}

/// [`capture`], reading stdin from `input` (a file to copy, say).
pub fn capture_from(argv: &[String], input: File, deadline: Duration) -> Result<Ran> {
    run_capturing(argv, Input::File(input), deadline)
}

fn run_capturing(argv: &[String], input: Input, deadline: Duration) -> Result<Ran> {
    let mut stdout = scratch()?;
    let mut stderr = scratch()?;
    let ran = command(argv, deadline)
        .stdin(input)
        .stdout(Sink::File(clone(&stdout)?))
        .stderr(Sink::File(clone(&stderr)?))
        .run();
    let status = ended(argv, ran)?;
    Ok(Ran {
        status,
        stdout: read_back(&mut stdout),
        stderr: String::from_utf8_lossy(&read_back(&mut stderr)).into_owned(),
    })
}

/// The status of a run that ended, `None` for one killed at its deadline.
fn ended(
    argv: &[String],
    ran: std::result::Result<bounded::Ran, RunError>,
) -> Result<Option<ExitStatus>> {
    match ran {
        Ok(ran) => Ok(ran.status),
        Err(RunError::TimedOut { .. }) => Ok(None),
        Err(RunError::Start { source, .. }) => Err(spawn_error(&argv[0], source)),
        Err(err) => Err(err.into()),
    }
}

/// Runs `argv` on this terminal (stdin, stdout, stderr inherited, in the terminal's process
/// group): a relayed command or an interactive attach. `None` when `deadline` passed and ssh
/// was killed.
pub fn relay(argv: &[String], deadline: Option<Duration>) -> Result<Option<ExitStatus>> {
    let command = command(argv, deadline.unwrap_or(Duration::MAX))
        .stdin(Input::Terminal)
        .stdout(Sink::Terminal)
        .stderr(Sink::Terminal)
        .group(Group::Caller);
    let command = match deadline {
        Some(_) => command,
        None => command.unlimited(),
    };
    ended(argv, command.run())
}

/// Runs `argv` until it ends, with no deadline (a followed log, a wait without a timeout: a
/// dead peer ends ssh through its server-alive probes), copying its output to `out` as it comes.
/// The output still goes through a file, never a pipe (see above), read at its own offset while
/// ssh writes it. `Ran::stdout` is left empty: it went to `out`. A failed write to `out` (its
/// reader gone) ends the call.
pub fn stream(argv: &[String], out: &mut dyn Write) -> Result<Ran> {
    let stdout = scratch()?;
    let mut stderr = scratch()?;
    let mut running = command(argv, Duration::MAX)
        .unlimited()
        .stdout(Sink::File(clone(&stdout)?))
        .stderr(Sink::File(clone(&stderr)?))
        .start()
        .map_err(|err| match err {
            RunError::Start { source, .. } => spawn_error(&argv[0], source),
            other => other.into(),
        })?;
    let started = Instant::now();
    let mut pause = FINE_PAUSE;
    let mut copied = 0;
    loop {
        let exited = running.wait_for(pause);
        // Read after the exit is seen, so the last bytes are copied too.
        if let Err(err) = copy_from(&stdout, &mut copied, out) {
            // Dropped unfinished: its group is killed and it is reaped.
            drop(running);
            return Err(Error::new(
                ErrorCode::Io,
                format!("cannot write the output: {err}"),
            ));
        }
        if exited {
            let ran = running.finish();
            return Ok(Ran {
                status: ran.status,
                stdout: Vec::new(),
                stderr: String::from_utf8_lossy(&read_back(&mut stderr)).into_owned(),
            });
        }
        if started.elapsed() >= FINE_POLLING {
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

/// Copies what `file` holds past `offset` to `out`, and moves `offset` on.
fn copy_from(file: &File, offset: &mut u64, out: &mut dyn Write) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buffer = vec![0; 64 * 1024];
    let start = *offset;
    loop {
        let read = file.read_at(&mut buffer, *offset)?;
        if read == 0 {
            break;
        }
        out.write_all(&buffer[..read])?;
        *offset += read as u64;
    }
    if *offset > start {
        out.flush()?;
    }
    Ok(())
}

/// ssh in a group of its own, killed at the deadline; what it leaves in the background when
/// it ends in time (the connection's master, `ControlPersist`) goes on.
fn command(argv: &[String], deadline: Duration) -> Bounded {
    Bounded::new(&argv[0], deadline)
        .args(&argv[1..])
        .group(Group::OwnOutlived)
}

/// A warm call over the multiplexed connection takes a few milliseconds, so a streamed call's
/// first [`FINE_POLLING`] copies its output every half millisecond; a call that lasts longer (a
/// followed log) ever more rarely, up to every 20 ms.
const FINE_PAUSE: Duration = Duration::from_micros(500);
const FINE_POLLING: Duration = Duration::from_millis(250);

/// An anonymous file: created in the temp directory and unlinked at once.
fn scratch() -> Result<File> {
    let dir = std::env::temp_dir();
    let path = dir.join(format!(
        ".cuekit-ssh-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|err| Error::io("create", &path, err))?;
    let _ = std::fs::remove_file(&path);
    Ok(file)
}

fn clone(file: &File) -> Result<File> {
    file.try_clone()
        .map_err(|err| Error::new(ErrorCode::Io, format!("cannot duplicate a file: {err}")))
}

fn read_back(file: &mut File) -> Vec<u8> {
    let mut bytes = Vec::new();
    let _ = file.rewind().and_then(|()| file.read_to_end(&mut bytes));
    bytes
}

fn spawn_error(program: &str, err: std::io::Error) -> Error {
    let error = Error::new(
        ErrorCode::HostUnreachable,
        format!("cannot run {program}: {err}"),
    );
    if err.kind() == std::io::ErrorKind::NotFound {
        error.with_hint("install the OpenSSH client (`ssh`)")
    } else {
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        ["/bin/sh", "-c", script].map(String::from).to_vec()
    }

    #[test]
    fn output_and_status_come_back_and_stdin_goes_in() {
        let ran = capture(
            &sh("cat; echo err >&2; exit 3"),
            Some(b"in\n"),
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(ran.stdout, b"in\n");
        assert_eq!(ran.stderr, "err\n");
        assert_eq!(ran.status.unwrap().code(), Some(3));
        assert!(!ran.unreachable());
    }

    #[test]
    fn a_background_child_holding_the_output_does_not_hold_the_call() {
        let ran = capture(&sh("sleep 30 & echo done"), None, Duration::from_secs(10)).unwrap();
        assert_eq!(ran.stdout, b"done\n");
        assert!(
            ran.status.is_some(),
            "the call returned when the shell exited"
        );
    }

    #[test]
    fn a_streamed_call_copies_all_its_output_and_keeps_its_stderr() {
        let mut out = Vec::new();
        let ran = stream(
            &sh("echo one; sleep 0.3; echo two; echo err >&2; exit 4"),
            &mut out,
        )
        .unwrap();
        assert_eq!(out, b"one\ntwo\n");
        assert!(ran.stdout.is_empty());
        assert_eq!(ran.stderr, "err\n");
        assert_eq!(ran.status.unwrap().code(), Some(4));
    }

    #[test]
    fn the_deadline_kills_the_call() {
        let ran = capture(&sh("exec sleep 30"), None, Duration::from_millis(200)).unwrap();
        assert!(ran.status.is_none());
        assert!(ran.unreachable());
        assert!(
            ran.why(Duration::from_millis(200))
                .contains("no answer within 0.2s")
        );
    }
}
