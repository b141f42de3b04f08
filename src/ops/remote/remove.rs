//! `rm` of a host's tasks: removed there, then forgotten here.

use std::path::Path;

use super::{FORWARD_DEADLINE, parse_reply};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::config::Config;
use crate::effects::remote as host_access;
use crate::effects::remote::args::words;
use crate::effects::remote::connection;
use crate::effects::store;
use crate::ops::remove::{Removal, RemovalOutcome};

/// `rm` of host `name`'s tasks, one call each: removed on the host, then forgotten here. A task
/// the host does not know (its submit was lost before it reached the host) is only forgotten
/// here: the host's word on its own tasks, and nothing on the host is touched.
pub(crate) fn remove_on_host(
    name: &str,
    ids: &[String],
    (force, dry_run): (bool, bool),
    cwd: &Path,
) -> Result<Vec<Removal>> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    let mut removals = Vec::new();
    for id in ids {
        let mut request = words(&["--json", "rm", id]);
        if force {
            request.push("--force".into());
        }
        if dry_run {
            request.push("--dry-run".into());
        }
        let reply = connection::call(&host, None, &request, None, FORWARD_DEADLINE)
            .and_then(|ran| removals_of(&host, &ran));
        match reply {
            Ok(rows) => {
                // Only the id asked about is forgotten here: ids in a host's reply name files
                // of this machine's registry, and are never taken from the host.
                if rows
                    .iter()
                    .any(|row| &row.task_id == id && row.outcome == RemovalOutcome::Removed)
                {
                    store::unregister(id);
                }
                removals.extend(rows.into_iter().filter(|row| &row.task_id == id));
            }
            Err(error) if error.code == ErrorCode::TaskNotFound => {
                if !dry_run {
                    store::unregister(id);
                }
                removals.push(Removal::of(id, dry_run));
            }
            Err(error) => return Err(with_done(error, &removals)),
        }
    }
    Ok(removals)
}

/// A host's `rm` reply: its rows, also when it exits `work_kept` (a task kept there).
fn removals_of(
    host: &host_access::Host,
    ran: &crate::effects::remote::run::Ran,
) -> Result<Vec<Removal>> {
    let kept = ErrorCode::WorkKept.exit_status();
    if ran.status.and_then(|status| status.code()) == Some(kept)
        && let Ok(rows) = serde_json::from_slice::<Vec<Removal>>(&ran.stdout)
    {
        return Ok(rows);
    }
    parse_reply::<Vec<Removal>>(host, ran)
}

/// An error part-way: what was already removed is said with it, not lost.
fn with_done(mut error: Error, removals: &[Removal]) -> Error {
    let done: Vec<&str> = removals
        .iter()
        .filter(|removal| removal.outcome == RemovalOutcome::Removed)
        .map(|removal| removal.task_id.as_str())
        .collect();
    if !done.is_empty() {
        error.message = format!("{} (already removed: {})", error.message, done.join(", "));
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_part_way_names_what_was_already_removed() {
        let lost = || Error::new(ErrorCode::HostUnreachable, "host gpu is unreachable");
        assert_eq!(with_done(lost(), &[]).message, "host gpu is unreachable");
        let done = [
            Removal::of("t_000000000001", false),
            Removal::of("t_000000000002", true),
        ];
        let error = with_done(lost(), &done);
        assert_eq!(
            (error.code, error.message.as_str()),
            (
                ErrorCode::HostUnreachable,
                "host gpu is unreachable (already removed: t_000000000001)"
            )
        );
    }
}
