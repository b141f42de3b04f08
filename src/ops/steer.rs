use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::domain::adapter::{self, Adapter};
use crate::domain::attention::{self, Attention, ScreenRules};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::launch::EXIT_CODE_FILE;
use crate::domain::spec::Mode;
use crate::domain::steer::{
    Delivery, RECEIPT_POLL, RECEIPT_WINDOW, Receipt, TYPED_WINDOW, prepare,
};
use crate::effects::config::Config;
use crate::effects::store;
use crate::effects::tmux::{PaneInfo, Tmux, args};
use crate::ops::task::route::{Route, route_one};

/// [`prepare`] chooses typed or pasted for a screen; an ACP steer never reaches the typing.
const PROTOCOL_TYPES_NOTHING: &str = "an ACP steer goes over the protocol: nothing is typed";

/// Read back from a host's JSON too (a host's task is steered there).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct SteerReceipt {
    pub task_id: String,
    pub receipt: Receipt,
    /// For `blocked`: the screen the child is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<Attention>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    /// Whether a second Enter was needed.
    pub enter_retried: bool,
    /// ACP: the agent's reason for refusing the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub elapsed_ms: u64,
    pub at: String,
}

/// Delivers `message` to a running interactive child and reports what became of it.
///
/// Short single-line text is typed literally, anything else pasted as one bracketed paste;
/// then, after the adapter's pause, Enter goes as a separate command (an Enter glued to the
/// text is taken as a newline by some TUIs). Nothing is typed into a dialog. Sends to one pane
/// are serialised across cuekit processes, and every steer is logged to `events.jsonl`.
///
/// A host's task is steered by its host's cuekit, and its receipt read back.
pub fn steer(task_id: &str, cwd: &Path, message: &str) -> Result<SteerReceipt> {
    if let Route::Host(host) = route_one(task_id)? {
        let words = ["--json", "steer", task_id, "-"].map(String::from);
        return super::remote::reply(&host, &words, Some(message.as_bytes()), cwd);
    }
    let (message, delivery) = prepare(message)?;
    let task = super::task::open(task_id, cwd)?;
    let record = &task.record;
    let adapter = adapter::lookup(&record.spec.agent_kind)?;
    if !adapter.task_capabilities(record.mode).supports_steering {
        let what = if record.mode == Mode::Batch {
            "a batch task"
        } else {
            "not steerable"
        };
        return Err(Error::new(
            ErrorCode::SteeringUnsupported,
            format!("task {task_id} is {what} and cannot be steered"),
        )
        .with_hint("submit with --mode interactive to steer a child"));
    }
    let refreshed = super::judge::refresh(vec![task.clone()])?;
    let task = &refreshed.tasks[0];
    let record = &task.record;
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
    if record.mode == Mode::Acp {
        return steer_over_protocol(task, message);
    }
    let started = Instant::now();
    let outcome = match refreshed.pane(task)?.filter(|pane| !pane.dead) {
        Some(pane) => {
            let _serialised = store::lock_task_file(&record.task_dir.join("steer.lock"))?;
            let tmux = Tmux::new(task.placement.socket.clone());
            let exited = || record.task_dir.join(EXIT_CODE_FILE).exists();
            let enter_delay = enter_delay(adapter, delivery, &record.cwd)?;
            deliver(
                &tmux,
                adapter,
                pane,
                (message, delivery, enter_delay),
                exited,
            )?
        }
        None => Outcome::not_running(),
    };
    let receipt = SteerReceipt {
        task_id: record.id.clone(),
        receipt: outcome.receipt,
        blocked_by: outcome.blocked_by,
        delivery: outcome.sent.then_some(delivery),
        enter_retried: outcome.enter_retried,
        message: None,
        elapsed_ms: started.elapsed().as_millis() as u64,
        at: crate::effects::clock::now_rfc3339(),
    };
    let event = serde_json::json!({"type": "steer", "message": message, "receipt": &receipt});
    crate::effects::store::append_event(
        &record.task_dir,
        &serde_json::to_vec(&event).expect("events serialize"),
    )?;
    Ok(receipt)
}

/// An ACP task's steer: a prompt to its client, whose receipt is the protocol's.
fn steer_over_protocol(task: &super::task::Task, message: &str) -> Result<SteerReceipt> {
    let started = Instant::now();
    let reply = super::acp::prompt(task, message)?;
    let receipt = match reply.receipt.as_deref() {
        Some("submitted") => Receipt::Submitted,
        Some("queued") => Receipt::Queued,
        Some("rejected") => Receipt::Rejected,
        Some("not_running") => Receipt::NotRunning,
        _ => {
            return Err(Error::new(
                ErrorCode::InvalidState,
                reply
                    .message
                    .unwrap_or_else(|| "the client answered no receipt".to_string()),
            ));
        }
    };
    let receipt = SteerReceipt {
        task_id: task.record.id.clone(),
        receipt,
        blocked_by: None,
        delivery: Some(Delivery::Protocol),
        enter_retried: false,
        message: reply.message,
        elapsed_ms: started.elapsed().as_millis() as u64,
        at: crate::effects::clock::now_rfc3339(),
    };
    let event = serde_json::json!({"type": "steer", "message": message, "receipt": &receipt});
    crate::effects::store::append_event(
        &task.record.task_dir,
        &serde_json::to_vec(&event).expect("events serialize"),
    )?;
    Ok(receipt)
}

/// Ends an ACP task's session once its running turn ends (`steer --end`), or switches its model
/// or mode mid-session.
pub fn steer_control(task_id: &str, cwd: &Path, control: SessionControl) -> Result<()> {
    let task = super::task::open(task_id, cwd)?;
    if task.record.mode != Mode::Acp {
        return Err(Error::new(
            ErrorCode::SteeringUnsupported,
            format!("task {task_id} is not an ACP task: --end, --model and --approval-mode steer ACP sessions"),
        )
        .with_hint("for an interactive task, steer it with the agent's own command (e.g. `/quit`)"));
    }
    let request = match control {
        SessionControl::End => crate::effects::acp::control::Request::End,
        SessionControl::Model(model) => crate::effects::acp::control::Request::SetModel { model },
        SessionControl::Mode(approval) => {
            let adapter = adapter::lookup(&task.record.spec.agent_kind)?;
            let mode = adapter
                .acp
                .and_then(|acp| acp.mode_id(&approval))
                .ok_or_else(|| {
                    Error::invalid_input(format!(
                        "{} has no ACP mode for approval mode '{approval}'",
                        adapter.kind()
                    ))
                })?;
            crate::effects::acp::control::Request::SetMode {
                mode: mode.to_string(),
            }
        }
    };
    super::acp::control(&task, request).map(drop)
}

/// What `steer --end|--model|--approval-mode` asks of an ACP session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionControl {
    End,
    Model(String),
    Mode(String),
}

/// The pause before Enter: `adapters.<kind>.steer_delay_ms` from the task's config, else the
/// adapter's; a paste never waits less than the adapter's paste pause.
fn enter_delay(adapter: &Adapter, delivery: Delivery, task_cwd: &Path) -> Result<Duration> {
    let configured = Config::load(task_cwd)?
        .steer_delay(adapter.kind())
        .map(|s| s.value);
    let typed = configured.unwrap_or(adapter.steer_enter_delay);
    Ok(match delivery {
        Delivery::Typed => typed,
        Delivery::Pasted => typed.max(adapter.paste_enter_delay),
        Delivery::Protocol => unreachable!("{PROTOCOL_TYPES_NOTHING}"),
    })
}

struct Outcome {
    receipt: Receipt,
    blocked_by: Option<Attention>,
    sent: bool,
    enter_retried: bool,
}

impl Outcome {
    fn not_running() -> Outcome {
        Outcome {
            receipt: Receipt::NotRunning,
            blocked_by: None,
            sent: false,
            enter_retried: false,
        }
    }
}

/// Types one line of cuekit's own into an agent's pane as a steer types it (a parent's wake):
/// the same pauses, the same receipt.
pub(super) fn type_line(
    tmux: &Tmux,
    adapter: &Adapter,
    pane: &PaneInfo,
    line: &str,
) -> Result<Receipt> {
    let pause = adapter.steer_enter_delay;
    deliver(tmux, adapter, pane, (line, Delivery::Typed, pause), || {
        false
    })
    .map(|done| done.receipt)
}

/// The screen with the typed text drawn, `enter_delay` after it was sent; the child may read
/// keys late on a loaded machine, and an Enter sent with text it has not read yet may become a
/// newline. Then it waits (at most `TYPED_WINDOW`) for the text to show, and the pause again.
/// None: the pane is gone.
fn settle(
    capture: &impl Fn() -> Option<String>,
    rules: &ScreenRules,
    enter_delay: Duration,
) -> Option<String> {
    std::thread::sleep(enter_delay);
    let screen = capture()?;
    if attention::shows_typed_input(rules, &screen) {
        return Some(screen);
    }
    let deadline = Instant::now() + TYPED_WINDOW;
    let mut screen = screen;
    while Instant::now() < deadline {
        std::thread::sleep(RECEIPT_POLL);
        screen = capture()?;
        if attention::shows_typed_input(rules, &screen) {
            std::thread::sleep(enter_delay);
            return capture();
        }
    }
    // The last screen seen: the one the Enter's effect is judged against.
    Some(screen)
}

/// `exited` tells whether the child has exited since: one that ends on the message (`/quit`)
/// took it.
fn deliver(
    tmux: &Tmux,
    adapter: &Adapter,
    pane: &PaneInfo,
    (message, delivery, enter_delay): (&str, Delivery, Duration),
    exited: impl Fn() -> bool,
) -> Result<Outcome> {
    let rules = &adapter.screen;
    let capture = || {
        tmux.capture_screens(&[(&pane.pane_id, pane.height)])
            .remove(&pane.pane_id)
    };
    let Some(screen) = capture() else {
        return Ok(Outcome::not_running());
    };
    if let Some(dialog) =
        attention::detect(rules, &screen, pane.history_lines > 0).filter(|a| a.blocks_input())
    {
        return Ok(Outcome {
            receipt: Receipt::Blocked,
            blocked_by: Some(dialog),
            sent: false,
            enter_retried: false,
        });
    }
    if pane.in_mode {
        // Copy mode swallows keys; leaving it loses nothing. A steer that held the lock before
        // this one may have left it already ("not in a mode").
        let _ = tmux.run(&args::cancel_copy_mode(&pane.pane_id));
    }
    for key in adapter.steer_pre_keys {
        tmux.run(&args::send_key(&pane.pane_id, key))?;
    }
    match delivery {
        Delivery::Typed => {
            tmux.run(&args::send_literal(&pane.pane_id, message))?;
        }
        Delivery::Pasted => {
            let buffer = format!("cuekit-steer-{}", pane.pane_id.trim_start_matches('%'));
            tmux.run_with_input(&args::load_buffer(&buffer), Some(message.as_bytes()))?;
            tmux.run(&args::paste_buffer(&buffer, &pane.pane_id))?;
        }
        Delivery::Protocol => unreachable!("{PROTOCOL_TYPES_NOTHING}"),
    }
    let Some(typed_screen) = settle(&capture, rules, enter_delay) else {
        return Ok(Outcome {
            sent: true,
            ..Outcome::not_running()
        });
    };
    for attempt in 0..2 {
        tmux.run(&args::send_key(&pane.pane_id, "Enter"))?;
        let deadline = Instant::now() + RECEIPT_WINDOW;
        loop {
            std::thread::sleep(RECEIPT_POLL);
            let Some(screen) = capture() else {
                return Ok(Outcome {
                    sent: true,
                    ..Outcome::not_running()
                });
            };
            if exited() || attention::was_submitted(rules, &typed_screen, &screen) {
                return Ok(Outcome {
                    receipt: Receipt::Submitted,
                    blocked_by: None,
                    sent: true,
                    enter_retried: attempt > 0,
                });
            }
            if Instant::now() >= deadline {
                break;
            }
        }
    }
    Ok(Outcome {
        receipt: Receipt::TypedNotSubmitted,
        blocked_by: None,
        sent: true,
        enter_retried: true,
    })
}
