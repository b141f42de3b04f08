//! `cuekit attach` (and `submit --attach`): attach, then one line on how to come back.

use std::path::Path;

use super::render::say_err;
use crate::ops::{self, AttachEnd};

/// Attaches this terminal to the task; once the person detaches, says how to come back.
pub fn run(task_id: &str, cwd: &Path) -> anyhow::Result<i32> {
    Ok(match ops::attach(task_id, cwd)? {
        AttachEnd::Detached => {
            say_err(&format!(
                "detached from {task_id}, which keeps running: `cuekit attach {task_id}` comes \
                 back, `cuekit result {task_id}` once it ends"
            ));
            0
        }
        AttachEnd::Ended => {
            say_err(&format!(
                "{task_id} ended: `cuekit result {task_id}` says how"
            ));
            0
        }
        AttachEnd::Host(code) => code,
    })
}
