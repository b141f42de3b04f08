//! Where an operation's tasks are: on this machine, or on one configured host. The registry
//! says (`Placement::host`), once per operation and before anything acts; every operation on
//! a task id starts here, so no front end ever asks.

use crate::domain::error::{Error, Result};
use crate::effects::store;

/// The one place an operation's tasks are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// This machine's tasks (or ids the registry does not know: the local operation says so).
    Here,
    /// Tasks on this configured host: reached only through `ops::remote`, by this name.
    Host(String),
}

/// Where `task_ids` are. Ids of different hosts (or of a host and this machine) are refused:
/// give each host's in its own call. A registry entry that cannot be read is the error.
pub(crate) fn route(task_ids: &[String]) -> Result<Route> {
    let mut hosts = task_ids
        .iter()
        .map(|id| Ok(store::placement(id)?.and_then(|p| p.host)))
        .collect::<Result<Vec<_>>>()?;
    hosts.dedup();
    match hosts.as_slice() {
        [] | [None] => Ok(Route::Here),
        [Some(host)] => Ok(Route::Host(host.clone())),
        _ => Err(Error::invalid_input(
            "these tasks are on different hosts (or some on this machine)",
        )
        .with_hint("give each host's tasks in a call of their own")),
    }
}

/// [`route`] of one task.
pub(crate) fn route_one(task_id: &str) -> Result<Route> {
    route(&[task_id.to_string()])
}

/// Whether work on this task, once begun, is finished by another process without the caller
/// (a host's task: its host's cuekit does the work, over an ssh of its own), so a caller may
/// exit without waiting for it. An entry that cannot be read counts as this machine's.
pub fn finishes_without_caller(task_id: &str) -> bool {
    matches!(route_one(task_id), Ok(Route::Host(_)))
}
