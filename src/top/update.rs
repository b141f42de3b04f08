//! The pure heart of `cuekit top`: a message (a key, a refresh, an action's outcome) changes
//! the state and may ask for an effect, which the event loop carries out.

use std::time::SystemTime;

use super::state::{Mode, State};
use crate::domain::spec::Mode as TaskMode;
use crate::ops::{Board, BoardRow};

/// A key, as `top` tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Enter,
    Esc,
    Backspace,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    /// Ctrl-C: quits from anywhere.
    Interrupt,
}

#[derive(Debug, Clone)]
pub enum Msg {
    Key(Key),
    Refreshed(Board),
    /// The hosts' tasks, asked apart from this machine's.
    HostsRefreshed(Vec<BoardRow>),
    RefreshFailed(String),
    /// The clock moved on: ages are measured against it.
    Tick(SystemTime),
    /// An action finished: its outcome for the status line.
    Done(String),
    /// The table's height changed (rows per page).
    Page(usize),
}

/// What the event loop is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// A refresh now (the selection or the scope changed), rather than at the next tick.
    Refresh,
    Attach(String),
    Steer {
        task_id: String,
        text: String,
    },
    Cancel(String),
    /// Answer an ACP task's permission request.
    Answer {
        task_id: String,
        answer: crate::domain::acp::control::Answer,
    },
    Logs(String),
    Result(String),
    /// A worktree task's diff against its base, in the pager.
    Diff(String),
    /// `cuekit handoff`: the running attempt ends, the next runs on `agent`.
    HandOff {
        task_id: String,
        agent: String,
        model: Option<String>,
        message: Option<String>,
    },
}

pub fn update(state: &mut State, msg: Msg) -> Option<Effect> {
    match msg {
        Msg::Refreshed(board) => {
            state.rows = board.rows;
            state.rows.extend(state.host_rows.iter().cloned());
            state.preview = board.preview;
            state.loaded = true;
            // A selection that had to move wants its own preview at once.
            select_after_change(state)
        }
        Msg::HostsRefreshed(rows) => {
            // One asked for before the scope became this project's is late: dropped.
            if !state.all {
                return None;
            }
            let mut rows = rows;
            for row in &mut rows {
                remember_what_a_lost_host_said(row, &state.host_rows);
            }
            state.rows.retain(|row| row.view.host.is_none());
            state.rows.extend(rows.iter().cloned());
            state.host_rows = rows;
            select_after_change(state)
        }
        Msg::RefreshFailed(message) => {
            state.message = Some(format!("refresh failed: {message}"));
            None
        }
        Msg::Tick(now) => {
            state.now = now;
            None
        }
        Msg::Done(message) => {
            state.message = Some(message);
            Some(Effect::Refresh)
        }
        Msg::Page(rows) => {
            state.page = rows.max(1);
            None
        }
        Msg::Key(Key::Interrupt) => {
            state.quit = true;
            None
        }
        Msg::Key(key) => match state.mode.clone() {
            Mode::Normal => normal_key(state, key),
            Mode::Help => {
                state.mode = Mode::Normal;
                None
            }
            Mode::Filter => {
                match key {
                    Key::Enter => state.mode = Mode::Normal,
                    Key::Esc => {
                        state.filter.clear();
                        state.mode = Mode::Normal;
                    }
                    Key::Backspace => {
                        state.filter.pop();
                    }
                    Key::Char(c) => state.filter.push(c),
                    _ => {}
                }
                select_after_change(state)
            }
            Mode::Steer { task_id, mut text } => match key {
                Key::Enter if !text.trim().is_empty() => {
                    state.mode = Mode::Normal;
                    state.message = Some(format!("steering {task_id}…"));
                    Some(Effect::Steer { task_id, text })
                }
                Key::Esc => {
                    state.mode = Mode::Normal;
                    None
                }
                Key::Backspace | Key::Char(_) => {
                    match key {
                        Key::Char(c) => text.push(c),
                        _ => {
                            text.pop();
                        }
                    }
                    state.mode = Mode::Steer { task_id, text };
                    None
                }
                _ => None,
            },
            Mode::AnswerPermission { task_id } => {
                state.mode = Mode::Normal;
                use crate::domain::acp::control::Answer;
                let answer = match key {
                    Key::Char('y') => Answer::Allow,
                    Key::Char('a') => Answer::AllowAlways,
                    Key::Char('n') => Answer::Reject,
                    _ => {
                        state.message = Some(format!("{task_id}'s request still waits"));
                        return None;
                    }
                };
                state.message = Some(format!("answering {task_id}…"));
                Some(Effect::Answer { task_id, answer })
            }
            Mode::HandOff {
                task_id,
                to,
                message,
            } => hand_off_key(state, key, task_id, to, message),
            Mode::ConfirmCancel { task_id } => {
                state.mode = Mode::Normal;
                if key == Key::Char('y') || key == Key::Char('Y') {
                    state.message = Some(format!("cancelling {task_id}…"));
                    Some(Effect::Cancel(task_id))
                } else {
                    state.message = Some(format!("{task_id} left running"));
                    None
                }
            }
        },
    }
}

fn normal_key(state: &mut State, key: Key) -> Option<Effect> {
    match key {
        Key::Char('q') => {
            state.quit = true;
            None
        }
        Key::Down | Key::Char('j') => move_selection(state, 1),
        Key::Up | Key::Char('k') => move_selection(state, -1),
        Key::PageDown => move_selection(state, state.page as isize),
        Key::PageUp => move_selection(state, -(state.page as isize)),
        Key::Home | Key::Char('g') => move_selection(state, isize::MIN / 2),
        Key::End | Key::Char('G') => move_selection(state, isize::MAX / 2),
        Key::Char('/') => {
            state.mode = Mode::Filter;
            None
        }
        Key::Esc if !state.filter.is_empty() => {
            state.filter.clear();
            select_after_change(state)
        }
        Key::Char('?') => {
            state.mode = Mode::Help;
            None
        }
        Key::Char('a') => {
            state.all = !state.all;
            if !state.all {
                state.rows.retain(|row| row.view.host.is_none());
                state.host_rows.clear();
            }
            state.message = Some(if state.all {
                "showing every task".into()
            } else {
                "showing this project's tasks".into()
            });
            Some(Effect::Refresh)
        }
        Key::Enter => on_selected(state, |_, id| Step::Do(Effect::Attach(id))),
        Key::Char('l') => on_selected(state, |_, id| Step::Do(Effect::Logs(id))),
        Key::Char('r') => on_selected(state, |_, id| Step::Do(Effect::Result(id))),
        Key::Char('s') => on_selected(state, |row, id| {
            if row.view.status.is_terminal() {
                Step::Refuse(format!("{id} has ended and cannot be steered"))
            } else if row.view.status == crate::domain::status::Status::Untrusted {
                Step::Refuse(format!("{id} is untrusted: cuekit does not act on it"))
            } else if row.view.mode == Some(TaskMode::Batch) {
                Step::Refuse(format!("{id} is a batch task and cannot be steered"))
            } else {
                Step::Enter(Mode::Steer {
                    task_id: id,
                    text: String::new(),
                })
            }
        }),
        Key::Char('x') => on_selected(state, |row, id| {
            if row.view.status.is_terminal() {
                Step::Refuse(format!("{id} has already ended"))
            } else {
                Step::Enter(Mode::ConfirmCancel { task_id: id })
            }
        }),
        Key::Char('p') => on_selected(state, |row, id| {
            if row.view.request.is_some() {
                Step::Enter(Mode::AnswerPermission { task_id: id })
            } else {
                Step::Refuse(format!("{id} asks no permission"))
            }
        }),
        Key::Char('h') => {
            let agents = state.agents.clone();
            on_selected(state, |row, id| may_hand_off(row, id, &agents))
        }
        Key::Char('d') => on_selected(state, |row, id| {
            if row.view.branch.is_some() {
                Step::Do(Effect::Diff(id))
            } else {
                Step::Refuse(format!(
                    "{id} runs in no worktree of its own: no diff to show"
                ))
            }
        }),
        _ => None,
    }
}

/// `h` on a task: only a running one here is handed off, to an agent installed here; the
/// first offered is the first that is not the task's own.
fn may_hand_off(row: &BoardRow, id: String, agents: &[String]) -> Step {
    use crate::domain::status::Status;
    let view = &row.view;
    if view.status.is_terminal() {
        return Step::Refuse(format!(
            "{id} has ended: `cuekit retry {id}` starts it again"
        ));
    }
    if view.host.is_some() {
        return Step::Refuse(format!("{id} runs on a host: hand it off there"));
    }
    if matches!(
        view.status,
        Status::Queued | Status::Untrusted | Status::Unknown
    ) {
        return Step::Refuse(format!(
            "{id} is {}: only a running task is handed off",
            crate::domain::plain::status_word(view.status)
        ));
    }
    let Some(first) = agents
        .iter()
        .find(|agent| **agent != view.agent_kind)
        .or(agents.first())
    else {
        return Step::Refuse("no agent to hand off to is installed here".into());
    };
    Step::Enter(Mode::HandOff {
        task_id: id,
        to: first.clone(),
        message: None,
    })
}

/// A key in the hand-off prompt: first the agent (`↑` `↓` step through the installed ones,
/// typing edits `agent[:model]`), `Enter` moves on to the message, a second `Enter` hands off;
/// `Esc` drops it all.
fn hand_off_key(
    state: &mut State,
    key: Key,
    task_id: String,
    mut to: String,
    mut message: Option<String>,
) -> Option<Effect> {
    match (key, message.as_mut()) {
        (Key::Esc, _) => {
            state.mode = Mode::Normal;
            state.message = Some(format!("{task_id} left with its agent"));
            return None;
        }
        (Key::Enter, None) if !to.trim().is_empty() => message = Some(String::new()),
        (Key::Enter, Some(text)) => {
            state.mode = Mode::Normal;
            let (agent, model) = match to.trim().split_once(':') {
                Some((agent, model)) => (agent.to_string(), Some(model.to_string())),
                None => (to.trim().to_string(), None),
            };
            state.message = Some(format!("handing {task_id} off to {agent}…"));
            let text = text.trim().to_string();
            return Some(Effect::HandOff {
                task_id,
                agent,
                model,
                message: (!text.is_empty()).then_some(text),
            });
        }
        (Key::Up | Key::Down, None) => {
            let agents = &state.agents;
            let agent = to.split(':').next().unwrap_or_default();
            if let Some(at) = agents.iter().position(|known| known == agent) {
                let step = if key == Key::Up { agents.len() - 1 } else { 1 };
                to.clone_from(&agents[(at + step) % agents.len()]);
            } else if let Some(first) = agents.first() {
                to.clone_from(first);
            }
        }
        (Key::Char(c), None) => to.push(c),
        (Key::Char(c), Some(text)) => text.push(c),
        (Key::Backspace, None) => {
            to.pop();
        }
        (Key::Backspace, Some(text)) => {
            text.pop();
        }
        _ => {}
    }
    state.mode = Mode::HandOff {
        task_id,
        to,
        message,
    };
    None
}

/// A host that does not answer gives rows that know only the task's id: the agent, mode and
/// objective its host last told stay on screen (the status stays `unknown`).
fn remember_what_a_lost_host_said(row: &mut BoardRow, before: &[BoardRow]) {
    if row.view.reason.as_deref() != Some("host_unreachable") {
        return;
    }
    if let Some(known) = before.iter().find(|known| known.view.id == row.view.id) {
        row.view.agent_kind.clone_from(&known.view.agent_kind);
        row.view.mode = known.view.mode;
        row.view.objective.clone_from(&known.view.objective);
    }
}

/// What a key does to the selected task.
enum Step {
    Do(Effect),
    /// A prompt first (the steer line, the cancel question).
    Enter(Mode),
    /// Not for this task: the reason goes to the status line.
    Refuse(String),
}

fn on_selected(
    state: &mut State,
    decide: impl FnOnce(&BoardRow, String) -> Step,
) -> Option<Effect> {
    let Some(row) = state.selected_row() else {
        state.message = Some("no task selected".into());
        return None;
    };
    let step = decide(row, row.view.id.clone());
    state.message = None;
    match step {
        Step::Do(effect) => Some(effect),
        Step::Enter(mode) => {
            state.mode = mode;
            None
        }
        Step::Refuse(message) => {
            state.message = Some(message);
            None
        }
    }
}

fn move_selection(state: &mut State, by: isize) -> Option<Effect> {
    let visible = state.visible();
    if visible.is_empty() {
        return None;
    }
    let current = state.selected_index(&visible).unwrap_or(0) as isize;
    let target = (current.saturating_add(by)).clamp(0, visible.len() as isize - 1) as usize;
    let id = visible[target].view.id.clone();
    if state.selected.as_deref() == Some(id.as_str()) {
        return None;
    }
    state.selected = Some(id);
    // The preview follows the selection: ask for it now rather than at the next tick.
    Some(Effect::Refresh)
}

/// After the rows changed: the selection stays on its task while it is shown, else moves to
/// the first row.
fn keep_selection(state: &mut State) {
    let visible = state.visible();
    if state.selected_index(&visible).is_none() {
        state.selected = visible.first().map(|row| row.view.id.clone());
    }
}

fn select_after_change(state: &mut State) -> Option<Effect> {
    let before = state.selected.clone();
    keep_selection(state);
    (state.selected != before).then_some(Effect::Refresh)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::status::Status;
    use crate::ops::Board;
    use crate::top::fixtures::{board, loaded, row};

    fn press(state: &mut State, keys: &str) -> Vec<Effect> {
        keys.chars()
            .filter_map(|c| update(state, Msg::Key(Key::Char(c))))
            .collect()
    }

    #[test]
    fn the_selection_stays_on_its_task_when_rows_reorder() {
        let mut state = loaded(board());
        assert_eq!(press(&mut state, "jj"), [Effect::Refresh, Effect::Refresh]);
        assert_eq!(state.selected.as_deref(), Some("t_00000000000b"));
        // The task above it is answered: it drops below the running one.
        let mut rows = board();
        rows[4].view.status = Status::Running;
        rows[4].view.reason = None;
        update(
            &mut state,
            Msg::Refreshed(Board {
                rows,
                preview: None,
            }),
        );
        assert_eq!(state.selected.as_deref(), Some("t_00000000000b"));
        assert_eq!(state.selected_index(&state.visible()), Some(1));
    }

    #[test]
    fn hosts_rows_join_every_task_and_survive_local_refreshes_but_not_the_project_scope() {
        let mut state = loaded(board());
        let local = state.rows.len();
        let mut on_host = row("t_0000000000aa", Status::Running, None, 1, "far away");
        on_host.view.host = Some("gpu".into());
        // Asked for while every task was shown, arriving after the scope became the project's.
        update(&mut state, Msg::HostsRefreshed(vec![on_host.clone()]));
        assert_eq!(state.rows.len(), local, "late host rows are dropped");
        press(&mut state, "a");
        update(&mut state, Msg::HostsRefreshed(vec![on_host.clone()]));
        assert_eq!(state.rows.len(), local + 1);
        // This machine's refresh keeps the hosts' rows; a newer hosts' refresh replaces them.
        update(
            &mut state,
            Msg::Refreshed(Board {
                rows: board(),
                preview: None,
            }),
        );
        assert_eq!(state.rows.len(), local + 1);
        // A lost host's row keeps what the host last said of the task.
        let mut lost = row("t_0000000000aa", Status::Unknown, None, 1, "");
        lost.view.agent_kind = String::new();
        lost.view.reason = Some("host_unreachable".into());
        lost.view.host = Some("gpu".into());
        update(&mut state, Msg::HostsRefreshed(vec![lost]));
        assert_eq!(state.rows.len(), local + 1);
        let shown = &state.rows[local].view;
        assert_eq!(
            (
                shown.status,
                shown.agent_kind.as_str(),
                shown.objective.as_str()
            ),
            (
                Status::Unknown,
                on_host.view.agent_kind.as_str(),
                "far away"
            )
        );
        press(&mut state, "a");
        assert_eq!(state.rows.len(), local);
        assert!(state.rows.iter().all(|row| row.view.host.is_none()));
    }

    #[test]
    fn a_vanished_selection_moves_to_the_first_row_and_asks_for_its_preview() {
        let mut state = loaded(board());
        let rows = vec![row("t_0000000000ff", Status::Running, None, 1, "new")];
        let effect = update(
            &mut state,
            Msg::Refreshed(Board {
                rows,
                preview: None,
            }),
        );
        assert_eq!(state.selected.as_deref(), Some("t_0000000000ff"));
        assert_eq!(effect, Some(Effect::Refresh));
    }

    #[test]
    fn d_pages_a_worktree_tasks_diff_and_refuses_one_without_a_worktree() {
        let mut state = loaded(board());
        let first = state.selected.clone().unwrap();
        for row in &mut state.rows {
            if row.view.id == first {
                row.view.branch = Some(format!("cuekit/{first}"));
            }
        }
        assert_eq!(press(&mut state, "d"), [Effect::Diff(first.clone())]);
        press(&mut state, "G");
        assert_ne!(state.selected.as_deref(), Some(first.as_str()));
        assert!(press(&mut state, "d").is_empty());
        assert!(state.message.as_deref().unwrap().contains("no worktree"));
    }

    #[test]
    fn steer_collects_a_line_then_sends_it() {
        let mut state = loaded(board());
        press(&mut state, "shi");
        update(&mut state, Msg::Key(Key::Backspace));
        let effect = update(&mut state, Msg::Key(Key::Enter));
        assert_eq!(
            effect,
            Some(Effect::Steer {
                task_id: "t_00000000000c".into(),
                text: "h".into()
            })
        );
        assert_eq!(state.mode, Mode::Normal);
        // Keys typed into the message are text, not commands: `q` did not quit.
        press(&mut state, "sq");
        assert!(!state.quit);
        update(&mut state, Msg::Key(Key::Esc));
        assert_eq!(state.mode, Mode::Normal);
    }

    #[test]
    fn ended_and_batch_tasks_are_not_steered_and_ended_ones_not_cancelled() {
        let mut state = loaded(board());
        press(&mut state, "G");
        assert_eq!(state.selected.as_deref(), Some("t_00000000000a"));
        assert!(press(&mut state, "s").is_empty());
        assert_eq!(state.mode, Mode::Normal);
        assert!(state.message.as_deref().unwrap().contains("has ended"));
        assert!(press(&mut state, "x").is_empty());
        assert!(state.message.as_deref().unwrap().contains("already ended"));
        press(&mut state, "kk");
        assert_eq!(state.selected.as_deref(), Some("t_00000000000b"));
        assert!(press(&mut state, "s").is_empty());
        assert!(state.message.as_deref().unwrap().contains("batch"));
    }

    #[test]
    fn cancel_needs_y() {
        let mut state = loaded(board());
        assert!(press(&mut state, "xn").is_empty());
        assert!(state.message.as_deref().unwrap().contains("left running"));
        assert_eq!(
            press(&mut state, "xy"),
            [Effect::Cancel("t_00000000000c".into())]
        );
    }

    #[test]
    fn keys_for_attach_logs_result_scope_and_diff() {
        let mut state = loaded(board());
        assert_eq!(
            update(&mut state, Msg::Key(Key::Enter)),
            Some(Effect::Attach("t_00000000000c".into()))
        );
        assert_eq!(
            press(&mut state, "lr"),
            [
                Effect::Logs("t_00000000000c".into()),
                Effect::Result("t_00000000000c".into())
            ]
        );
        assert_eq!(press(&mut state, "a"), [Effect::Refresh]);
        assert!(state.all);
        // Without a worktree there is nothing to diff: said, not done.
        assert!(press(&mut state, "d").is_empty());
        assert!(state.message.as_deref().unwrap().contains("no worktree"));
        press(&mut state, "q");
        assert!(state.quit);
    }

    #[test]
    fn h_asks_the_agent_then_a_message_then_hands_the_running_task_off() {
        let mut state = loaded(board());
        state.agents = vec!["gemini".into(), "codex".into(), "opencode".into()];
        // The selected task runs on gemini: the first other agent is offered.
        assert!(press(&mut state, "h").is_empty());
        let to = |state: &State| match &state.mode {
            Mode::HandOff { to, .. } => to.clone(),
            mode => panic!("{mode:?}"),
        };
        assert_eq!(to(&state), "codex");
        update(&mut state, Msg::Key(Key::Down));
        assert_eq!(to(&state), "opencode");
        update(&mut state, Msg::Key(Key::Down));
        assert_eq!(to(&state), "gemini");
        update(&mut state, Msg::Key(Key::Up));
        update(&mut state, Msg::Key(Key::Up));
        assert_eq!(to(&state), "codex");
        // Typing names a model; `q` is text here, not a quit.
        press(&mut state, ":o4q");
        update(&mut state, Msg::Key(Key::Backspace));
        update(&mut state, Msg::Key(Key::Enter));
        press(&mut state, "keep going");
        let effect = update(&mut state, Msg::Key(Key::Enter));
        assert_eq!(
            effect,
            Some(Effect::HandOff {
                task_id: "t_00000000000c".into(),
                agent: "codex".into(),
                model: Some("o4".into()),
                message: Some("keep going".into()),
            })
        );
        assert!(!state.quit);
        assert_eq!(state.mode, Mode::Normal);
        // Without a message, none is sent; Esc drops the prompt.
        press(&mut state, "h");
        update(&mut state, Msg::Key(Key::Enter));
        let effect = update(&mut state, Msg::Key(Key::Enter));
        assert!(matches!(
            effect,
            Some(Effect::HandOff {
                message: None,
                model: None,
                ..
            })
        ));
        press(&mut state, "h");
        update(&mut state, Msg::Key(Key::Esc));
        assert_eq!(state.mode, Mode::Normal);
        // An ended task is not handed off, nor is any with no agent installed to take it.
        press(&mut state, "G");
        assert!(press(&mut state, "h").is_empty());
        assert!(state.message.as_deref().unwrap().contains("cuekit retry"));
        press(&mut state, "g");
        state.agents.clear();
        assert!(press(&mut state, "h").is_empty());
        assert_eq!(state.mode, Mode::Normal);
        assert!(state.message.as_deref().unwrap().contains("no agent"));
    }

    #[test]
    fn a_filter_narrows_rows_and_esc_clears_it() {
        let mut state = loaded(board());
        press(&mut state, "/port");
        assert_eq!(state.visible().len(), 1);
        assert_eq!(state.selected.as_deref(), Some("t_00000000000d"));
        update(&mut state, Msg::Key(Key::Esc));
        assert_eq!(state.visible().len(), 5);
    }
}
