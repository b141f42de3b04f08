//! Fixed tasks for the dashboard's tests: five tasks in creation order, which the dashboard
//! must reorder by what needs a human.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::state::State;
use super::update::{Msg, update};
use crate::domain::events::Progress;
use crate::domain::spec::Mode as TaskMode;
use crate::domain::status::Status;
use crate::ops::{Board, BoardRow, Preview, TaskView};

pub fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + secs)
}

pub fn rfc(secs: u64) -> String {
    humantime::format_rfc3339_millis(at(secs)).to_string()
}

pub fn row(
    id: &str,
    status: Status,
    reason: Option<&str>,
    created: u64,
    objective: &str,
) -> BoardRow {
    let ended = status.is_terminal().then(|| rfc(created + 60));
    BoardRow {
        view: TaskView {
            agent_kind: "gemini".into(),
            mode: Some(TaskMode::Interactive),
            status,
            reason: reason.map(str::to_string),
            objective: objective.into(),
            created_at: rfc(created),
            ended_at: ended,
            ..TaskView::bare(id, Path::new("/p/.cuekit/tasks/x"))
        },
        last_activity: Some(at(created + 30)),
        created: Some(at(created)),
    }
}

pub fn board() -> Vec<BoardRow> {
    let mut streamed = row(
        "t_00000000000b",
        Status::Running,
        None,
        200,
        "Summarise the repository",
    );
    streamed.view.mode = Some(TaskMode::Batch);
    streamed.view.progress = Some(Progress {
        turns: 3,
        tool_calls: 2,
        tokens: Some(12_345),
        events: 40,
        last_activity: None,
        finished: false,
    });
    vec![
        row(
            "t_00000000000a",
            Status::Completed,
            None,
            100,
            "Write the changelog",
        ),
        streamed,
        row(
            "t_00000000000c",
            Status::InputRequired,
            Some("auth_required"),
            300,
            "Fix the failing parser test\nand add a regression test",
        ),
        row(
            "t_00000000000d",
            Status::Failed,
            Some("nonzero_exit"),
            400,
            "Port the build to cargo-dist",
        ),
        row(
            "t_00000000000e",
            Status::InputRequired,
            Some("idle_at_prompt"),
            500,
            "Review src/ops for dead code",
        ),
    ]
}

/// The state after a refresh that brought `rows` and a live preview of the task that needs
/// the human most (`t_00000000000c`).
pub fn loaded(rows: Vec<BoardRow>) -> State {
    let mut state = State::new(false, "/home/me/project".into(), false, at(1000));
    let first = (!rows.is_empty()).then(|| "t_00000000000c".to_string());
    update(
        &mut state,
        Msg::Refreshed(Board {
            rows,
            preview: first.map(|task_id| Preview {
                task_id,
                live: true,
                lines: vec![
                    "> Fix the failing parser test".into(),
                    String::new(),
                    "Please log in: https://accounts.example/…".into(),
                ],
                lead: Vec::new(),
            }),
        }),
    );
    state
}
