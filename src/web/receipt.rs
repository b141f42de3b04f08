//! What a task page says after an action on it. Done: the browser is sent back to the task
//! page (303) with the receipt's fixed code in the URL (`/t/ID?done=steered`), and the page
//! says it in words near the top. Not done: the task page is drawn again with the problem and
//! its hint, and the steer box keeps what was typed. A code from a URL is looked up in the
//! fixed table below: nothing of the query itself reaches the page.

use axum::http::StatusCode;

use crate::domain::error::{Error, ErrorCode};
use crate::domain::steer::Receipt as Steer;

/// An action that was done, named by a code of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receipt {
    Steered,
    SteerQueued,
    SteerTyped,
    Cancelled,
    AlreadyEnded,
    Retried,
    HandedOff,
    Allowed,
    AllowedAlways,
    Rejected,
    Merged,
    AlreadyMerged,
}

const ALL: [Receipt; 12] = [
    Receipt::Steered,
    Receipt::SteerQueued,
    Receipt::SteerTyped,
    Receipt::Cancelled,
    Receipt::AlreadyEnded,
    Receipt::Retried,
    Receipt::HandedOff,
    Receipt::Allowed,
    Receipt::AllowedAlways,
    Receipt::Rejected,
    Receipt::Merged,
    Receipt::AlreadyMerged,
];

impl Receipt {
    /// The code the task page's URL carries (`?done=CODE`).
    pub fn code(self) -> &'static str {
        match self {
            Receipt::Steered => "steered",
            Receipt::SteerQueued => "steer-queued",
            Receipt::SteerTyped => "steer-typed",
            Receipt::Cancelled => "cancelled",
            Receipt::AlreadyEnded => "already-ended",
            Receipt::Retried => "retried",
            Receipt::HandedOff => "handed-off",
            Receipt::Allowed => "allowed",
            Receipt::AllowedAlways => "allowed-always",
            Receipt::Rejected => "rejected",
            Receipt::Merged => "merged",
            Receipt::AlreadyMerged => "already-merged",
        }
    }

    /// The receipt a code names; none for any other text.
    pub fn from_code(code: &str) -> Option<Receipt> {
        ALL.into_iter().find(|receipt| receipt.code() == code)
    }

    /// A steer that reached the child (or its queue, or its input line); the others are
    /// problems ([`Problem::of_steer`]).
    pub fn of_steer(steer: Steer) -> Option<Receipt> {
        match steer {
            Steer::Submitted => Some(Receipt::Steered),
            Steer::Queued => Some(Receipt::SteerQueued),
            Steer::TypedNotSubmitted => Some(Receipt::SteerTyped),
            Steer::Blocked | Steer::NotRunning | Steer::Rejected => None,
        }
    }

    /// What it says: the deed, and what it means (the plain vocabulary of
    /// `crate::domain::plain`).
    pub fn said(self) -> (String, String) {
        let steer = |steer| {
            let said = crate::domain::plain::steer_said(steer, None);
            (capitalized(said.word), said.detail.unwrap_or_default())
        };
        let words = |word: &str, detail: &str| (word.to_string(), detail.to_string());
        match self {
            Receipt::Steered => steer(Steer::Submitted),
            Receipt::SteerQueued => steer(Steer::Queued),
            Receipt::SteerTyped => steer(Steer::TypedNotSubmitted),
            Receipt::Cancelled => words("Cancelled", "the child was stopped"),
            Receipt::AlreadyEnded => words("Not cancelled", "it had already ended"),
            Receipt::Retried => words("Retried", "a new attempt starts"),
            Receipt::HandedOff => words("Handed off", "the next agent takes the task on"),
            Receipt::Allowed => words("Allowed", "the child goes on"),
            Receipt::AllowedAlways => words(
                "Allowed always",
                "the child goes on and will not ask again for this tool",
            ),
            Receipt::Rejected => words("Rejected", "the child was told no"),
            Receipt::Merged => words("Merged", "its work is on the target branch"),
            Receipt::AlreadyMerged => words(
                "Nothing to merge",
                "the target branch already holds its work",
            ),
        }
    }

    /// Whether the person has something left to do (a message typed but not sent).
    pub fn warns(self) -> bool {
        matches!(self, Receipt::SteerTyped | Receipt::AlreadyEnded)
    }
}

/// An action that was not done: what went wrong in words, what to do, its code (kept in an
/// attribute for scripts and tests, not shown), the HTTP status the page goes with, and the
/// message typed into the steer box (drawn in it again).
#[derive(Debug, Clone)]
pub struct Problem {
    pub message: String,
    pub hint: Option<String>,
    pub code: &'static str,
    pub status: StatusCode,
    pub typed: Option<String>,
}

impl Problem {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Problem {
        Problem {
            message: message.into(),
            hint: None,
            code,
            status,
            typed: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Problem {
        self.hint = Some(hint.into());
        self
    }

    /// What was typed, given back in the steer box.
    pub fn typed(mut self, text: String) -> Problem {
        self.typed = Some(text);
        self
    }

    /// A steer that did not reach the child: blocked by a dialog, no child, refused.
    pub fn of_steer(receipt: &crate::ops::SteerReceipt) -> Problem {
        let said = crate::domain::plain::steer_said(receipt.receipt, receipt.blocked_by);
        let problem = Problem::new(
            StatusCode::CONFLICT,
            receipt.receipt.as_str(),
            format!(
                "{} — {}",
                capitalized(said.word),
                said.detail.unwrap_or_default()
            ),
        );
        match (receipt.blocked_by, &receipt.message) {
            (Some(screen), _) => problem.with_hint(screen.hint()),
            (None, Some(message)) => problem.with_hint(format!("the agent said: {message}")),
            (None, None) => {
                problem.with_hint("look at how it stands below; a task that ended can be retried")
            }
        }
    }
}

impl From<Error> for Problem {
    fn from(err: Error) -> Problem {
        let status = match err.code {
            ErrorCode::TaskNotFound => StatusCode::NOT_FOUND,
            ErrorCode::Internal | ErrorCode::Io => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::CONFLICT,
        };
        Problem {
            message: capitalized(&err.message),
            hint: err.hint,
            code: err.code.as_str(),
            status,
            typed: None,
        }
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_names_its_receipt_and_nothing_else_does() {
        for receipt in ALL {
            assert_eq!(Receipt::from_code(receipt.code()), Some(receipt));
            let (word, detail) = receipt.said();
            assert!(
                !word.contains('_') && !detail.contains('_'),
                "{word} {detail}"
            );
        }
        assert_eq!(Receipt::from_code("<script>"), None);
        assert_eq!(Receipt::from_code("Steered"), None);
        assert_eq!(
            Receipt::Steered.said(),
            (
                "Steered".to_string(),
                "the child received your message".to_string()
            )
        );
    }
}
