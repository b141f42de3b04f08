//! `cuekit __events <task dir>`: the filter an event stream is piped through inside the pane.
//! Every raw line goes to `events.jsonl` as it arrives, a readable rendering to the pane (and so
//! the transcript), live progress to `progress.json`; when the stream ends, `result.json`.

use std::fs::OpenOptions;
use std::io::{BufRead, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::domain::error::{Error, Result};
use crate::domain::events::{Digest, Printer, Progress};
use crate::domain::launch::AGENT_EXIT_FILE;
use crate::effects::store::{self, write_atomic};
use crate::ops::result::outcome::{RESULT_FILE, from_digest};

pub use crate::domain::events::PROGRESS_FILE;
/// How often live progress is rewritten while events arrive.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

pub fn run_event_filter(task_dir: &Path) -> Result<()> {
    // The task record may not be in place yet (it is committed once tmux has answered): the
    // filter needs only its directory. The pane's working directory is the task's.
    let task_id = task_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // A task in a checkout of its own is measured by `diff` (git's safe paths), never by a
    // `git status` that would discover the checkout's repository from what the child wrote.
    // The filter starts once the task is registered (launch.sh's gate).
    let own_checkout = store::placement(&task_id)
        .ok()
        .flatten()
        .and_then(|placement| placement.facts)
        .is_some_and(|facts| facts.worktree.is_some());
    let before = std::env::current_dir()
        .ok()
        .filter(|_| !own_checkout)
        .and_then(|cwd| crate::effects::git::changes::snapshot(&cwd));
    let events_path = task_dir.join(store::EVENTS_FILE);
    let mut events = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&events_path)
        .map_err(|err| Error::io("open", &events_path, err))?;
    let stdout = std::io::stdout();
    let mut printer = Printer::new(stdout.lock());
    let mut digest = Digest::default();
    let mut last_progress = Instant::now();
    let mut calls_written = 0;
    let stdin = std::io::stdin();
    let mut reader = stdin.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|err| Error::io("read", Path::new("<stdin>"), err))?;
        if read == 0 {
            break;
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        events
            .write_all(&line)
            .map_err(|err| Error::io("append to", &events_path, err))?;
        let text = String::from_utf8_lossy(&line);
        let parsed = digest.push_line(text.trim_end_matches('\n'));
        // The pane going away must not lose the event files: its output errors are ignored.
        let _ = printer.print(parsed.as_ref(), &text);
        // A new tool call is written at once: a long one would otherwise stay unseen until the
        // next line, which comes only when it ends.
        if last_progress.elapsed() >= PROGRESS_EVERY || digest.tool_calls.len() != calls_written {
            calls_written = digest.tool_calls.len();
            write_progress(task_dir, &digest)?;
            last_progress = Instant::now();
        }
    }
    write_progress(task_dir, &digest)?;
    // The agent's status is written before the pipe closes (see launch.sh).
    let exit_code = crate::effects::store::read_small(&task_dir.join(AGENT_EXIT_FILE))
        .ok()
        .and_then(|s| String::from_utf8_lossy(&s).trim().parse().ok());
    let after = std::env::current_dir()
        .ok()
        .filter(|_| before.is_some())
        .and_then(|cwd| crate::effects::git::changes::snapshot(&cwd));
    let files_changed = before
        .zip(after)
        .map(|(b, a)| crate::effects::git::changes::changed_files(&b, &a));
    let result = from_digest(&task_id, digest, exit_code, files_changed);
    let mut bytes = serde_json::to_vec_pretty(&result).expect("results serialize");
    bytes.push(b'\n');
    write_atomic(&task_dir.join(RESULT_FILE), &bytes)
}

fn write_progress(task_dir: &Path, digest: &Digest) -> Result<()> {
    let bytes = serde_json::to_vec(&Progress::from(digest)).expect("progress serializes");
    write_atomic(&task_dir.join(PROGRESS_FILE), &bytes)
}

/// Live progress of a running stream, if it has started.
pub fn read_progress(task_dir: &Path) -> Option<Progress> {
    serde_json::from_slice(&crate::effects::store::read_small(&task_dir.join(PROGRESS_FILE)).ok()?)
        .ok()
}
