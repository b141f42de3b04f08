//! Everything `cuekit top` shows, in one value: [`super::update`] changes it, [`super::view`]
//! draws it, and nothing else touches it.

use std::time::SystemTime;

use crate::domain::status::Status;
use crate::ops::{BoardRow, Preview};

#[derive(Debug, Clone)]
pub struct State {
    /// Every task (`a`), or this project's.
    pub all: bool,
    /// Where "this project" is, for the header.
    pub project: String,
    /// This machine's rows as the last refresh brought them (oldest first), then the hosts'.
    pub rows: Vec<BoardRow>,
    /// The hosts' rows as their last refresh brought them (shown with every task only): hosts
    /// are asked apart from this machine, so a slow or lost host never holds up the screen.
    pub host_rows: Vec<BoardRow>,
    /// The selected task, by id: a refresh that reorders rows keeps the selection on its task.
    pub selected: Option<String>,
    pub preview: Option<Preview>,
    /// Rows whose id, agent, status, reason, objective or host contain this (case-insensitive).
    pub filter: String,
    pub mode: Mode,
    /// The outcome of the last action (a steer's receipt, a cancel), or a refusal.
    pub message: Option<String>,
    /// The time ages are measured against, set by each tick.
    pub now: SystemTime,
    /// Whether a refresh has arrived yet.
    pub loaded: bool,
    /// Status words in colour (off with `NO_COLOR` or `--color never`).
    pub color: bool,
    /// Rows the table shows at once, as last drawn: what a page key moves by.
    pub page: usize,
    /// The agents `h` offers a task to: those installed here but the command agent, in the
    /// adapters' order (read once when `top` starts).
    pub agents: Vec<String>,
    pub quit: bool,
}

/// What keys mean right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// Typing the filter after `/`.
    Filter,
    /// Typing a message for a task after `s`.
    Steer {
        task_id: String,
        text: String,
    },
    /// `x` pressed: `y` cancels the task, anything else does not.
    ConfirmCancel {
        task_id: String,
    },
    /// `p` pressed on an ACP task's permission request: `y` allows once, `a` always, `n`
    /// rejects, anything else leaves it waiting.
    AnswerPermission {
        task_id: String,
    },
    /// `h` pressed on a running task: first the agent it goes to (`to`, `agent[:model]`; ↑ ↓
    /// step through [`State::agents`]), then, once `message` is `Some`, the optional message
    /// for the next agent.
    HandOff {
        task_id: String,
        to: String,
        message: Option<String>,
    },
    Help,
}

impl State {
    pub fn new(all: bool, project: String, color: bool, now: SystemTime) -> State {
        State {
            all,
            project,
            rows: Vec::new(),
            host_rows: Vec::new(),
            selected: None,
            preview: None,
            filter: String::new(),
            mode: Mode::Normal,
            message: None,
            now,
            loaded: false,
            color,
            page: 10,
            agents: Vec::new(),
            quit: false,
        }
    }

    /// The rows shown, in display order: what needs the human first (`input_required`), then
    /// running tasks (oldest first, so rows do not jump), then ended ones (latest ending first).
    pub fn visible(&self) -> Vec<&BoardRow> {
        let needle = self.filter.to_lowercase();
        let mut rows: Vec<&BoardRow> = self
            .rows
            .iter()
            .filter(|row| needle.is_empty() || matches_filter(row, &needle))
            .collect();
        rows.sort_by(|a, b| crate::ops::attention_order(a, b));
        rows
    }

    /// The selected row's place among the visible rows.
    pub fn selected_index(&self, visible: &[&BoardRow]) -> Option<usize> {
        let id = self.selected.as_deref()?;
        visible.iter().position(|row| row.view.id == id)
    }

    pub fn selected_row(&self) -> Option<&BoardRow> {
        let id = self.selected.as_deref()?;
        self.rows.iter().find(|row| row.view.id == id)
    }

    /// How many tasks there are of each status, in display order, leaving out zeros.
    pub fn counts(&self) -> Vec<(Status, usize)> {
        let order = [
            Status::InputRequired,
            Status::Running,
            Status::Completed,
            Status::Failed,
            Status::Cancelled,
            Status::TimedOut,
        ];
        order
            .into_iter()
            .map(|status| {
                let n = self.rows.iter().filter(|r| r.view.status == status).count();
                (status, n)
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

fn matches_filter(row: &BoardRow, needle: &str) -> bool {
    let view = &row.view;
    [
        view.id.as_str(),
        view.agent_kind.as_str(),
        view.status.as_str(),
        view.reason.as_deref().unwrap_or(""),
        view.objective.as_str(),
        view.host.as_deref().unwrap_or(""),
    ]
    .iter()
    .any(|field| field.to_lowercase().contains(needle))
}
