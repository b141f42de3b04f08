use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use crate::error::{Error, ErrorCode, Result};
use crate::tmux::args;

/// Replaces this process with `tmux attach` on the task's server and session.
pub fn attach(task_id: &str, cwd: &Path) -> Result<std::convert::Infallible> {
    let task = super::task::open(task_id, cwd)?;
    let refreshed = super::judge::refresh(vec![task.clone()])?;
    let alive = refreshed.pane(&refreshed.tasks[0])?.is_some();
    let placement = &task.placement;
    if !alive {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!("task {task_id} has no tmux session any more"),
        )
        .with_hint("read what it printed with `cuekit logs <id>`"));
    }
    let err = Command::new(crate::tmux::binary())
        .args(placement.socket.args())
        .args(args::attach(&placement.session))
        // Attaching from inside another tmux is what the user asked for here.
        .env_remove("TMUX")
        .exec();
    Err(Error::new(
        ErrorCode::TmuxUnavailable,
        format!("cannot run tmux: {err}"),
    ))
}
