use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::adapter;
use crate::error::{Error, ErrorCode, Result};
use crate::spec::Mode;
use crate::store::{self, TaskRecord};
use crate::tmux::{Tmux, args};

#[derive(Debug, Clone, Serialize)]
pub struct SteerReceipt {
    pub task_id: String,
    pub receipt: &'static str,
    pub at: String,
}

/// Types `message` into an interactive child's pane and submits it: literal text, the
/// adapter's pause, then Enter as a separate command (an Enter glued to the text is taken as
/// a newline by some TUIs). Sends to one pane are serialised across cuekit processes.
pub fn steer(task_id: &str, cwd: &Path, message: &str) -> Result<SteerReceipt> {
    if message.trim().is_empty() {
        return Err(
            Error::invalid_input("the steering message is empty").with_hint(
                "say what the child should do next, e.g. `cuekit steer <id> 'also run the tests'`",
            ),
        );
    }
    if message.contains('\0') {
        return Err(Error::invalid_input(
            "the steering message contains a NUL byte",
        ));
    }
    let record = super::open(task_id, cwd)?;
    let adapter = adapter::lookup(&record.spec.agent_kind)?;
    if !adapter.task_capabilities(record.mode).supports_steering {
        let mode = if record.mode == Mode::Batch {
            "a batch task"
        } else {
            "this agent"
        };
        return Err(Error::new(
            ErrorCode::SteeringUnsupported,
            format!("task {task_id} is {mode} and cannot be steered"),
        )
        .with_hint("submit with --mode interactive to steer a child"));
    }
    let record = super::refresh::refresh(vec![record])?.remove(0);
    if record.status.is_terminal() {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!(
                "task {task_id} is {} and cannot be steered",
                record.status.as_str()
            ),
        )
        .with_hint("read what it did with `cuekit logs <id>`, or submit a new task"));
    }
    let placement = record.tmux.as_ref().expect("a running task has a pane");
    let tmux = Tmux::new(placement.socket.clone());
    let _serialised = lock_pane(&record)?;
    tmux.run(&args::send_literal(&placement.pane_id, message))?;
    std::thread::sleep(adapter.steer_enter_delay);
    tmux.run(&args::send_key(&placement.pane_id, "Enter"))?;
    let receipt = SteerReceipt {
        task_id: record.id.clone(),
        receipt: "sent",
        at: super::now_rfc3339(),
    };
    append_event(
        &record,
        &serde_json::json!({"type": "steer", "message": message, "receipt": receipt.receipt, "at": receipt.at}),
    )?;
    Ok(receipt)
}

fn lock_pane(record: &TaskRecord) -> Result<std::fs::File> {
    let path = record.task_dir.join("steer.lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|err| Error::io("open", &path, err))?;
    file.lock().map_err(|err| Error::io("lock", &path, err))?;
    Ok(file)
}

/// One JSON object a line; a single `write` of a whole line keeps lines from interleaving.
fn append_event(record: &TaskRecord, event: &serde_json::Value) -> Result<()> {
    let path = record.task_dir.join(store::EVENTS_FILE);
    let mut line = serde_json::to_vec(event).expect("events serialize");
    line.push(b'\n');
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut file| file.write_all(&line))
        .map_err(|err| Error::io("append to", &path, err))
}
