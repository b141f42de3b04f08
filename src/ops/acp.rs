//! ACP tasks as the operations see them: the state their client shows (read from its
//! `acp.json`, no tmux call), and requests to the client over its control socket (the path the
//! registry keeps) — a steer, a permission answer, a cancel. A caller that runs inside the
//! task's own pane is refused here too (the client refuses it on the socket as well): a child
//! never steers itself or answers its own requests.

use std::time::Duration;

use serde::Serialize;

use super::task::Task;
use crate::domain::acp::session::{Pending, Phase, Shown};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::spec::Mode;
use crate::effects::acp::control::{self, Answer, Reply, Request};

/// How long a request to a client may take.
const CALL_LIMIT: Duration = Duration::from_secs(10);

/// What a running ACP task waits for, if anything: `(reason, a hash that changes with each new
/// wait, the request)`.
pub(crate) fn waiting(task: &Task) -> Option<(&'static str, u64, Option<Pending>)> {
    if task.record.mode != Mode::Acp {
        return None;
    }
    let shown = shown(task)?;
    let hash = |text: &str| {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        hasher.finish()
    };
    match shown.phase {
        Phase::Permission => {
            let request = shown.request?;
            let key = format!("permission {} {}", shown.turns, request.tool.id);
            Some(("permission_prompt", hash(&key), Some(request)))
        }
        Phase::Idle => Some((
            "idle_at_prompt",
            hash(&format!("idle {}", shown.turns)),
            None,
        )),
        _ => None,
    }
}

/// The state the task's client last wrote.
pub(crate) fn shown(task: &Task) -> Option<Shown> {
    shown_of(&task.record)
}

fn shown_of(record: &crate::effects::store::TaskRecord) -> Option<Shown> {
    let path = record
        .task_dir
        .join(crate::effects::acp::client::STATE_FILE);
    serde_json::from_slice(&crate::effects::store::read_small(&path).ok()?).ok()
}

/// The earliest time (seconds since the epoch) a task resuming `earlier`'s session may load it,
/// for an agent that would overwrite a session it started in the same minute: the next minute
/// after the one the session became known in (now, when that is unknown).
pub(crate) fn load_not_before(earlier: &crate::effects::store::TaskRecord) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let since = shown_of(earlier)
        .and_then(|shown| shown.session_since)
        .unwrap_or(now);
    (since / 60 + 1) * 60
}

/// The request this process would make to task `task`'s client: refused when the caller runs
/// inside that task's pane.
fn call(task: &Task, request: &Request) -> Result<Reply> {
    refuse_inside(task)?;
    let socket = control::socket_of(&task.placement)?;
    control::call(&socket, request, CALL_LIMIT)
}

/// Refuses a caller that runs inside task `task`'s own pane: a child never steers itself or
/// answers its own requests.
pub(super) fn refuse_inside(task: &Task) -> Result<()> {
    if let Some(inside) = super::task_of_process(std::process::id())
        && inside == task.record.id
    {
        return Err(Error::new(
            ErrorCode::InsideTask,
            format!(
                "this runs inside task {}'s own pane: a child never steers itself or answers its own requests",
                task.record.id
            ),
        )
        .with_hint("the parent (or you) answers, from outside the task"));
    }
    Ok(())
}

/// A prompt to the task's client: its receipt.
pub(crate) fn prompt(task: &Task, text: &str) -> Result<Reply> {
    call(
        task,
        &Request::Prompt {
            text: text.to_string(),
        },
    )
}

/// A request to end the session (after the running turn) or switch its model or mode.
pub(crate) fn control(task: &Task, request: Request) -> Result<Reply> {
    let reply = call(task, &request)?;
    if reply.ok {
        return Ok(reply);
    }
    Err(Error::new(
        ErrorCode::InvalidState,
        reply
            .message
            .unwrap_or_else(|| "the client refused it".to_string()),
    ))
}

/// What `approve` answered.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Approval {
    pub task_id: String,
    /// The option chosen: its id, name and kind.
    pub option: crate::domain::acp::protocol::PermissionOption,
    pub at: String,
    /// Who answered through a face that knows more than the process: `device NAME` for a
    /// paired browser of `cuekit serve`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// An interactive task's dialog: what it asked, the key typed, how soon it closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog: Option<super::dialog::DialogAnswer>,
}

/// Answers the permission request task `task_id` waits on: an ACP task's through its client,
/// an interactive task's dialog in its pane (`ops::dialog`).
pub fn approve(task_id: &str, cwd: &std::path::Path, answer: Answer) -> Result<Approval> {
    approve_by(task_id, cwd, answer, None)
}

/// [`approve`], recording who answered (`device NAME`) with the approval.
pub fn approve_by(
    task_id: &str,
    cwd: &std::path::Path,
    answer: Answer,
    by: Option<&str>,
) -> Result<Approval> {
    let task = super::task::open(task_id, cwd)?;
    if task.record.mode == Mode::Interactive {
        return super::dialog::approve_on_screen(&task, &answer, by);
    }
    if task.record.mode != Mode::Acp {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!("task {task_id} is a batch task: it asks no permissions cuekit can answer"),
        )
        .with_hint("permission requests are answered for interactive and --mode acp tasks"));
    }
    let reply = call(&task, &Request::Answer { answer })?;
    match (reply.ok, reply.option) {
        (true, Some(option)) => {
            let approval = Approval {
                task_id: task_id.to_string(),
                option,
                at: crate::effects::clock::now_rfc3339(),
                by: by.map(str::to_string),
                dialog: None,
            };
            let event = serde_json::json!({"type": "cuekit_approve", "approval": &approval});
            crate::effects::store::append_event(
                &task.record.task_dir,
                &serde_json::to_vec(&event).expect("events serialize"),
            )?;
            Ok(approval)
        }
        _ => Err(Error::new(
            ErrorCode::InvalidState,
            reply
                .message
                .unwrap_or_else(|| "the client answered nothing".to_string()),
        )
        .with_hint(format!(
            "`cuekit status {task_id}` shows the request and its options"
        ))),
    }
}

/// Asks the task's client to end the turn (`session/cancel`) before its processes are ended;
/// best effort: a client that is gone has nothing to cancel.
pub(crate) fn cancel(task: &Task) {
    if task.record.mode == Mode::Acp {
        let _ = call(task, &Request::Cancel);
    }
}
