//! Running hook commands: `/bin/sh -c COMMAND` in the task's working directory, with the
//! transition in its environment and the task's JSON view on stdin. A hook runs beside the
//! monitor's tick, never in it, under a time limit; what became of it (exit status, output, a
//! kill at the limit) is appended to the task's `events.jsonl`. A failing or hanging hook changes
//! nothing about the task.

use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::effects::bounded::{Bounded, Group, Input, RunError};

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
    let command = Bounded::shell(&run.command, run.timeout)
        .cwd(&run.cwd)
        .envs(run.env.iter().map(|(k, v)| (k, v)))
        .stdin(Input::Bytes(run.stdin.clone()))
        .keep(OUTPUT_KEPT, 0)
        // Its own group, so the time limit ends whatever it started too; what it leaves in the
        // background when it ends in time may go on.
        .group(Group::OwnOutlived);
    let (ran, timed_out) = match command.run() {
        Ok(ran) => (ran, false),
        Err(RunError::TimedOut { ran, .. }) => (*ran, true),
        Err(err) => {
            let why = match err {
                RunError::Start { source, .. } => format!("cannot run /bin/sh: {source}"),
                other => other.to_string(),
            };
            return outcome(None, false, why.into_bytes(), false);
        }
    };
    let mut output = Vec::new();
    for kept in [&ran.stdout, &ran.stderr] {
        let room = OUTPUT_KEPT.saturating_sub(output.len());
        output.extend_from_slice(&kept.head[..kept.head.len().min(room)]);
    }
    let total = ran.stdout.total + ran.stderr.total;
    let truncated = total > output.len() as u64;
    outcome(ran.code(), timed_out, output, truncated)
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
