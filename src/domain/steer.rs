//! Steering decisions that need no tmux: how a message is delivered and what the parent is
//! told about it. The effects live in `ops::steer`.

use std::time::Duration;

use serde::Serialize;

use crate::domain::error::{Error, Result};

/// How long the screen is watched after an Enter for signs that the message was taken.
pub const RECEIPT_WINDOW: Duration = Duration::from_millis(1500);
pub const RECEIPT_POLL: Duration = Duration::from_millis(30);
/// How long a steer waits for a slow child to draw the typed text before it presses Enter.
pub const TYPED_WINDOW: Duration = Duration::from_secs(3);
/// Longer single-line messages are pasted too: typing them key by key is slow and some TUIs
/// treat fast typing as a paste anyway.
const MAX_TYPED_BYTES: usize = 512;

/// What happened to a steering message. Each has its own exit status (docs/reference.md, "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Receipt {
    /// The child took it: its input emptied or it turned busy.
    Submitted,
    /// The text sits in the child's input line even after a second Enter.
    TypedNotSubmitted,
    /// The child is on a screen that eats input (login, trust, permission menu); nothing was sent.
    Blocked,
    /// The child's pane was gone by the time of sending.
    NotRunning,
    /// ACP: a turn is running; this prompt starts when it ends.
    Queued,
    /// ACP: the agent refused the prompt (its message is in the receipt).
    Rejected,
}

impl Receipt {
    pub fn as_str(self) -> &'static str {
        match self {
            Receipt::Submitted => "submitted",
            Receipt::TypedNotSubmitted => "typed_not_submitted",
            Receipt::Blocked => "blocked",
            Receipt::NotRunning => "not_running",
            Receipt::Queued => "queued",
            Receipt::Rejected => "rejected",
        }
    }

    pub fn exit_status(self) -> i32 {
        match self {
            Receipt::Submitted => 0,
            Receipt::TypedNotSubmitted => 22,
            Receipt::Blocked => 23,
            Receipt::NotRunning => 24,
            Receipt::Queued => 0,
            Receipt::Rejected => 28,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// `send-keys -l`: short single-line text.
    Typed,
    /// `load-buffer` + bracketed `paste-buffer`: multi-line or long text arrives as one message.
    Pasted,
    /// ACP: a `session/prompt` from the task's client; nothing is typed.
    Protocol,
}

/// The message as it will be sent (trailing line breaks dropped: Enter is sent on its own) and
/// how; refuses what cannot be delivered.
pub fn prepare(message: &str) -> Result<(&str, Delivery)> {
    let message = message.trim_end_matches(['\n', '\r']);
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
    let delivery = if message.contains(['\n', '\r']) || message.len() > MAX_TYPED_BYTES {
        Delivery::Pasted
    } else {
        Delivery::Typed
    };
    Ok((message, delivery))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_are_typed_and_the_rest_pasted() {
        assert_eq!(
            prepare("run the tests\n").unwrap(),
            ("run the tests", Delivery::Typed)
        );
        assert_eq!(prepare("a\nb").unwrap().1, Delivery::Pasted);
        assert_eq!(prepare(&"x".repeat(600)).unwrap().1, Delivery::Pasted);
    }

    #[test]
    fn empty_and_nul_are_invalid_input() {
        for bad in ["", "  \n", "a\0b"] {
            assert_eq!(
                prepare(bad).unwrap_err().code,
                crate::domain::error::ErrorCode::InvalidInput
            );
        }
    }

    #[test]
    fn receipts_have_distinct_exit_statuses() {
        let all = [
            Receipt::Submitted,
            Receipt::TypedNotSubmitted,
            Receipt::Blocked,
            Receipt::NotRunning,
            Receipt::Rejected,
        ];
        let mut statuses: Vec<i32> = all.iter().map(|r| r.exit_status()).collect();
        statuses.dedup();
        assert_eq!(statuses, [0, 22, 23, 24, 28]);
        assert_eq!(Receipt::Queued.exit_status(), 0);
    }
}
