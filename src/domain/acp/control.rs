//! The messages of the control socket between cuekit's commands (steer, approve, cancel) and
//! the ACP client in a task's pane: one JSON request a line, one JSON reply. The socket itself
//! is [`crate::effects::acp::control`].

use serde::{Deserialize, Serialize};

use super::protocol::PermissionOption;

/// How a permission request is answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "answer", content = "option")]
pub enum Answer {
    /// The request's allow-once option (else its allow-always one).
    Allow,
    AllowAlways,
    /// The request's reject-once option (else its reject-always one).
    Reject,
    /// An option by its id.
    Option(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "op")]
pub enum Request {
    /// A prompt: a new turn, or queued behind the running one.
    Prompt {
        text: String,
    },
    Answer {
        answer: Answer,
    },
    /// End the running turn (`session/cancel`), then the session.
    Cancel,
    /// End the session once the running turn (if any) has ended.
    End,
    SetModel {
        model: String,
    },
    SetMode {
        mode: String,
    },
}

/// The client's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub ok: bool,
    /// For a prompt: `submitted`, `queued`, `rejected` or `not_running`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option: Option<PermissionOption>,
}

impl Reply {
    pub fn ok() -> Reply {
        Reply {
            ok: true,
            receipt: None,
            message: None,
            option: None,
        }
    }

    pub fn receipt(receipt: &str) -> Reply {
        Reply {
            ok: receipt != "not_running",
            receipt: Some(receipt.to_string()),
            ..Reply::ok()
        }
    }

    pub fn rejected(message: &str) -> Reply {
        Reply {
            ok: false,
            receipt: Some("rejected".into()),
            message: Some(message.to_string()),
            ..Reply::ok()
        }
    }

    pub fn error(message: &str) -> Reply {
        Reply {
            ok: false,
            message: Some(message.to_string()),
            ..Reply::ok()
        }
    }

    pub fn answered(option: &PermissionOption) -> Reply {
        Reply {
            option: Some(option.clone()),
            ..Reply::ok()
        }
    }
}
