//! What changed between two `wait` answers. A parent waiting on twenty children reads, in each
//! answer, only the tasks whose state moved since its last one (and counts of all), so it pays
//! for a task once per change, not once per call. The `cursor` each answer returns names what
//! that answer saw; none falls between two calls, since a task that ended in between differs
//! from what the cursor holds.

use std::collections::{BTreeMap, HashMap};

use sha2::{Digest, Sha256};

use crate::domain::error::{Error, Result};
use crate::domain::status::Status;
use crate::ops::TaskView;

/// A task's state as far as a parent acts on it: status, reason, exit code, last report, a
/// pending request. Eight hex digits of its hash.
fn fingerprint(view: &TaskView) -> String {
    let state = format!(
        "{}|{}|{:?}|{:?}|{}",
        view.status.as_str(),
        view.reason.as_deref().unwrap_or(""),
        view.exit_code,
        view.last_report.as_ref().map(|report| report.seq),
        view.request.is_some()
    );
    Sha256::digest(state.as_bytes())[..4]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The states a cursor names, by task id.
fn parse(cursor: &str) -> Result<HashMap<String, String>> {
    let refused = || {
        Error::invalid_input("cursor is not one a wait answer returned")
            .with_hint("pass the `cursor` of the previous wait answer unchanged, or none")
    };
    if cursor.is_empty() {
        return Ok(HashMap::new());
    }
    cursor
        .split(',')
        .map(|entry| {
            let (id, state) = entry.split_once('=').ok_or_else(refused)?;
            let fine = crate::domain::task::is_task_id(id)
                && state.len() == 8
                && state.bytes().all(|b| b.is_ascii_hexdigit());
            fine.then(|| (id.to_string(), state.to_string()))
                .ok_or_else(refused)
        })
        .collect()
}

/// What a `wait` answer carries of its tasks.
pub struct Changes {
    /// Changed since the cursor; without one, every task that is not plain running.
    pub tasks: Vec<TaskView>,
    /// How many of all the tasks are in each status.
    pub counts: BTreeMap<&'static str, usize>,
    /// What this answer saw, for the next call.
    pub cursor: String,
}

pub fn since(views: Vec<TaskView>, cursor: Option<&str>) -> Result<Changes> {
    let seen = cursor.map(parse).transpose()?;
    let mut counts = BTreeMap::new();
    let mut next = Vec::with_capacity(views.len());
    let mut tasks = Vec::new();
    for view in views {
        *counts.entry(view.status.as_str()).or_insert(0) += 1;
        let state = fingerprint(&view);
        let changed = match &seen {
            Some(seen) => seen.get(&view.id) != Some(&state),
            None => view.status != Status::Running,
        };
        next.push(format!("{}={state}", view.id));
        if changed {
            tasks.push(view);
        }
    }
    Ok(Changes {
        tasks,
        counts,
        cursor: next.join(","),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_read_back_and_others_refused() {
        let parsed = parse("t_0123456789ab=0a1b2c3d,t_ba9876543210=ffffffff").unwrap();
        assert_eq!(parsed["t_0123456789ab"], "0a1b2c3d");
        assert!(parse("").unwrap().is_empty());
        for bad in ["x", "t_0123456789ab=zz", "../x=0a1b2c3d", "t_0123456789ab"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
