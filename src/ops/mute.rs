//! `cuekit mute <id>` (issue 53): a task's notices beyond this machine stop (or, with
//! `--off`, go again). Kept in the user's data directory (`store::notified`), never in the
//! project: a task's own files cannot unmute it.

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::store::{self, notified};

/// Mutes (`muted`) or unmutes a registered task of this machine's.
pub fn mute(task_id: &str, muted: bool) -> Result<()> {
    let known = store::is_task_id(task_id) && matches!(store::placement(task_id), Ok(Some(_)));
    if !known {
        return Err(
            Error::new(ErrorCode::TaskNotFound, format!("no task {task_id}"))
                .with_hint("`cuekit list --all` shows every task's id"),
        );
    }
    notified::set_muted(task_id, muted)
}
