//! Running hook commands: `/bin/sh -c COMMAND` in the task's working directory, with the
//! transition in its environment and the task's JSON view on stdin. A hook runs beside the
//! monitor's tick, never in it, under a time limit; what became of it (exit status, output, a
//! kill at the limit) is appended to the task's `events.jsonl`. A failing or hanging hook changes
//! nothing about the task.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Output kept per hook in the log; the rest is counted, not kept.
const OUTPUT_KEPT: usize = 8 * 1024;

/// One hook to run.
#[derive(Debug, Clone)]
pub struct HookRun {
    /// `on_start`, `on_end`, `on_input_required`, `on_change`, `on_conflict`.
    pub name: &'static str,
    pub command: String,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub stdin: Vec<u8>,
    pub timeout: Duration,
    /// The task's `events.jsonl`.
    pub log: PathBuf,
}

/// What a hook did, as logged.
#[derive(Debug, Clone, Serialize)]
pub struct HookOutcome {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub hook: &'static str,
    pub command: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub output: String,
    pub output_truncated: bool,
    pub elapsed_ms: u64,
    pub at: String,
}

/// Starts the hook on a thread of its own and returns at once.
pub fn spawn(run: HookRun) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let outcome = execute(&run);
        let line = serde_json::to_vec(&outcome).expect("outcomes serialize");
        let _ = crate::effects::store::append_line(&run.log, &line);
    })
}

fn execute(run: &HookRun) -> HookOutcome {
    let started = Instant::now();
    let outcome = |exit_code, timed_out, output: Vec<u8>, truncated| HookOutcome {
        kind: "cuekit_hook",
        hook: run.name,
        command: run.command.clone(),
        exit_code,
        timed_out,
        output: String::from_utf8_lossy(&output).into_owned(),
        output_truncated: truncated,
        elapsed_ms: started.elapsed().as_millis() as u64,
        at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
    };
    let spawned = Command::new("/bin/sh")
        .arg("-c")
        .arg(&run.command)
        .current_dir(&run.cwd)
        .envs(run.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so the time limit ends whatever it started too.
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(err) => {
            return outcome(
                None,
                false,
                format!("cannot run /bin/sh: {err}").into_bytes(),
                false,
            );
        }
    };
    let stdin = child.stdin.take();
    let input = run.stdin.clone();
    // A hook that never reads its stdin must not block anything.
    std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&input);
        }
    });
    let readers = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|mut stream| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut total = 0usize;
            let mut buffer = [0u8; 4096];
            while let Ok(read) = stream.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                total += read;
                let room = OUTPUT_KEPT.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..read.min(room)]);
            }
            (kept, total)
        })
    })
    .collect::<Vec<_>>();
    let deadline = started + run.timeout;
    let (exit_code, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (status.code().or(status.signal_code()), false),
            Ok(None) if Instant::now() >= deadline => {
                unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
                let _ = child.wait();
                break (None, true);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break (None, false),
        }
    };
    let mut output = Vec::new();
    let mut total = 0;
    for reader in readers {
        if let Ok((kept, count)) = reader.join() {
            let room = OUTPUT_KEPT.saturating_sub(output.len());
            output.extend_from_slice(&kept[..kept.len().min(room)]);
            total += count;
        }
    }
    let truncated = total > output.len();
    outcome(exit_code, timed_out, output, truncated)
}

trait SignalCode {
    fn signal_code(&self) -> Option<i32>;
}

impl SignalCode for std::process::ExitStatus {
    /// A hook killed by a signal reads as 128 + the signal, as a shell reports it.
    fn signal_code(&self) -> Option<i32> {
        std::os::unix::process::ExitStatusExt::signal(self).map(|signal| 128 + signal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: &str, timeout: Duration) -> (HookOutcome, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let outcome = execute(&HookRun {
            name: "on_change",
            command: command.into(),
            cwd: dir.path().to_path_buf(),
            env: vec![("CUEKIT_NEW_STATUS".into(), "completed".into())],
            stdin: b"{\"id\":\"t_1\"}".to_vec(),
            timeout,
            log: dir.path().join("events.jsonl"),
        });
        (outcome, dir)
    }

    #[test]
    fn a_hook_gets_its_variables_and_stdin_and_its_status_is_kept() {
        let (outcome, _dir) = run(
            "echo \"$CUEKIT_NEW_STATUS\"; cat; pwd >&2; exit 3",
            Duration::from_secs(10),
        );
        assert_eq!(outcome.exit_code, Some(3));
        assert!(!outcome.timed_out);
        assert!(outcome.output.contains("completed"), "{}", outcome.output);
        assert!(
            outcome.output.contains("{\"id\":\"t_1\"}"),
            "{}",
            outcome.output
        );
    }

    #[test]
    fn a_hanging_hook_is_killed_at_its_limit_with_what_it_started() {
        let (outcome, _dir) = run("sleep 60 & sleep 60", Duration::from_millis(300));
        assert!(outcome.timed_out);
        assert_eq!(outcome.exit_code, None);
    }
}
