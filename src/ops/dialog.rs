//! `approve` of an interactive child: its permission dialog answered in its pane, as a person
//! at the terminal would, with the digit of the option chosen from what the screen shows at
//! that moment (no Enter: the digit alone answers it). The screen is read again just before
//! the key, under the task's steer lock, and nothing is sent unless it still shows the same
//! dialog (a digit after the dialog closed would be typed into the prompt); the answer counts
//! only once the dialog is seen to close. A caller inside the task's own pane is refused.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::acp::Approval;
use super::task::Task;
use crate::domain::acp::control::Answer;
use crate::domain::acp::protocol::PermissionOption;
use crate::domain::adapter;
use crate::domain::attention::{self, Attention};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::permission_screen::{self, Dialog};
use crate::domain::status::Status;
use crate::effects::store;
use crate::effects::tmux::{PaneInfo, Tmux, args};

/// How long the dialog may take to close after its key.
const CLOSE_WINDOW: Duration = Duration::from_secs(5);
const CLOSE_POLL: Duration = Duration::from_millis(20);
/// Captures in a row that must show the dialog gone.
const CLOSED_CAPTURES: usize = 4;

/// What was typed into a dialog and what it did: part of an interactive task's approval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DialogAnswer {
    /// What the dialog asked, as `status` showed it.
    pub asked: String,
    /// The key typed: the option's digit.
    pub key: String,
    /// From the key to the screen without that dialog.
    pub closed_after_ms: u64,
}

/// Answers the permission dialog interactive task `task` shows.
pub(super) fn approve_on_screen(
    task: &Task,
    answer: &Answer,
    by: Option<&str>,
) -> Result<Approval> {
    super::acp::refuse_inside(task)?;
    let record = &task.record;
    let id = &record.id;
    if !permission_screen::answers_by_digit(&record.spec.agent_kind) {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!(
                "{id} is an interactive {} task: cuekit answers the permission dialogs of interactive Gemini tasks only",
                record.spec.agent_kind
            ),
        )
        .with_hint(format!("answer it in its pane: `cuekit attach {id}`")));
    }
    let refreshed = super::judge::refresh(vec![task.clone()])?;
    let task = &refreshed.tasks[0];
    let pane = refreshed
        .pane(task)?
        .filter(|pane| !pane.dead && task.record.status == Status::Running)
        .ok_or_else(|| nothing_asked(id, "it is not running"))?;
    let tmux = Tmux::new(task.placement.socket.clone());
    let capture = || {
        tmux.capture_screens(&[(&pane.pane_id, pane.height)])
            .remove(&pane.pane_id)
    };
    let rules = &adapter::lookup(&record.spec.agent_kind)?.screen;
    let shown = capture().ok_or_else(|| nothing_asked(id, "its pane is gone"))?;
    let dialog_on = |screen: &String| {
        let on_dialog = attention::detect(rules, screen, pane.history_lines > 0)
            == Some(Attention::PermissionPrompt);
        permission_screen::dialog(screen).filter(|_| on_dialog)
    };
    let dialog = std::iter::once(shown)
        .chain(looks_again(&capture))
        .find_map(|screen| dialog_on(&screen))
        .ok_or_else(|| nothing_asked(id, "its screen shows no permission dialog"))?;
    let option = dialog.choose(answer).cloned().ok_or_else(|| {
        Error::invalid_input(format!(
            "the dialog of {id} has no option for that answer; it shows: {}",
            dialog.line()
        ))
        .with_hint(format!(
            "choose one by its number: `cuekit approve {id} --option N`"
        ))
    })?;
    let _serialised = store::lock_task_file(&task.record.task_dir.join("steer.lock"))?;
    // On record the moment the key went: the receipt below waits for the dialog to close (up
    // to seconds), and an `approve` killed meanwhile had answered with nothing on record.
    let typed = || {
        let event = serde_json::json!({"type": "cuekit_approve_typed",
            "at": crate::effects::clock::now_rfc3339(), "by": by,
            "asked": dialog.line(), "key": &option.digit});
        let _ = store::append_event(
            &task.record.task_dir,
            &serde_json::to_vec(&event).expect("events serialize"),
        );
    };
    let closed_after = answer_in_pane(&tmux, pane, &dialog, &option.digit, &capture, typed)
        .map_err(|why| why.into_error(id, &dialog))?;
    let approval = Approval {
        task_id: id.clone(),
        option: PermissionOption {
            id: option.digit.clone(),
            name: option.label.clone(),
            kind: option.kind.to_string(),
        },
        at: crate::effects::clock::now_rfc3339(),
        by: by.map(str::to_string),
        dialog: Some(DialogAnswer {
            asked: dialog.line(),
            key: option.digit,
            closed_after_ms: closed_after.as_millis() as u64,
        }),
    };
    let event = serde_json::json!({"type": "cuekit_approve", "approval": &approval});
    store::append_event(
        &task.record.task_dir,
        &serde_json::to_vec(&event).expect("events serialize"),
    )?;
    Ok(approval)
}

/// Why a dialog was not answered.
enum NotAnswered {
    /// The screen no longer showed that dialog just before the key: nothing was sent.
    GoneBefore,
    /// The key went but the dialog still shows.
    StillShown,
    Tmux(Error),
}

impl NotAnswered {
    fn into_error(self, id: &str, dialog: &Dialog) -> Error {
        match self {
            NotAnswered::GoneBefore => Error::new(
                ErrorCode::InvalidState,
                format!(
                    "the dialog of {id} closed or changed before the key was sent: nothing was typed (it asked: {})",
                    dialog.line()
                ),
            )
            .with_hint(format!(
                "`cuekit status {id}` shows what it asks now; answer that, if anything"
            )),
            NotAnswered::StillShown => Error::new(
                ErrorCode::InvalidState,
                format!(
                    "the key was typed into {id}'s dialog, but after {} s it still shows: {}",
                    CLOSE_WINDOW.as_secs(),
                    dialog.line()
                ),
            )
            .with_hint(format!("look at it: `cuekit attach {id}`")),
            NotAnswered::Tmux(err) => err,
        }
    }
}

/// Reads the screen again, types `key` only when it still shows `dialog` (`typed` is told once
/// it went), and waits for the dialog to close: the time from the key to the close.
fn answer_in_pane(
    tmux: &Tmux,
    pane: &PaneInfo,
    dialog: &Dialog,
    key: &str,
    capture: &impl Fn() -> Option<String>,
    typed: impl FnOnce(),
) -> std::result::Result<Duration, NotAnswered> {
    let again = capture().ok_or(NotAnswered::GoneBefore)?;
    let still_shown = std::iter::once(again)
        .chain(looks_again(capture))
        .any(|screen| !permission_screen::closed(dialog, &screen));
    if !still_shown {
        return Err(NotAnswered::GoneBefore);
    }
    if pane.in_mode {
        // Copy mode swallows keys; leaving it loses nothing.
        let _ = tmux.run(&args::cancel_copy_mode(&pane.pane_id));
    }
    let sent = Instant::now();
    tmux.run(&args::send_literal(&pane.pane_id, key))
        .map_err(NotAnswered::Tmux)?;
    typed();
    // A capture taken while the TUI redraws may show the dialog half erased: it counts as
    // closed only when [`CLOSED_CAPTURES`] captures in a row show it gone.
    let mut gone: Option<(Duration, usize)> = None;
    while sent.elapsed() < CLOSE_WINDOW {
        std::thread::sleep(CLOSE_POLL);
        let Some(screen) = capture() else {
            return Ok(gone.map_or_else(|| sent.elapsed(), |(at, _)| at));
        };
        gone = if permission_screen::closed(dialog, &screen) {
            let (at, seen) = gone.unwrap_or((sent.elapsed(), 0));
            if seen + 1 >= CLOSED_CAPTURES {
                return Ok(at);
            }
            Some((at, seen + 1))
        } else {
            None
        };
    }
    Err(NotAnswered::StillShown)
}

/// Up to [`permission_screen::LOOKS_FOR_A_DIALOG`] − 1 more captures, taken only as asked for
/// (a search that finds what it looks for stops them); none once the pane is gone.
fn looks_again(capture: &impl Fn() -> Option<String>) -> impl Iterator<Item = String> + '_ {
    (1..permission_screen::LOOKS_FOR_A_DIALOG).map_while(move |_| {
        std::thread::sleep(permission_screen::DIALOG_LOOK_GAP);
        capture()
    })
}

fn nothing_asked(id: &str, why: &str) -> Error {
    Error::new(
        ErrorCode::InvalidState,
        format!("{id} waits on no permission dialog: {why}"),
    )
    .with_hint(format!("`cuekit status {id}` shows what it waits for"))
}
