//! How hosts' tasks are shown: each host asked once per call, hosts in parallel, and a host
//! that does not answer gives `unknown` rows instead of an error.

use std::collections::BTreeMap;
use std::path::Path;

use super::{parse_reply, unreadable_reply};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::config::Config;
use crate::effects::remote::args::words;
use crate::effects::remote::connection::{self, CALL_DEADLINE};
use crate::effects::remote::{self as host_access, Host};
use crate::effects::store::{self, Placement};
use crate::ops::task::view::TaskView;

/// Registered tasks by host, for [`host_views`].
/// An entry that cannot be read is left to this machine's listing, which shows it as the
/// damaged entry it is (and a command on it fails there, saying so).
pub(crate) fn by_host(ids: impl IntoIterator<Item = String>) -> BTreeMap<String, Vec<Placement>> {
    let mut hosts: BTreeMap<String, Vec<Placement>> = BTreeMap::new();
    for id in ids {
        if let Ok(Some(placement)) = store::placement(&id)
            && let Some(host) = placement.host.clone()
        {
            hosts.entry(host).or_default().push(placement);
        }
    }
    hosts
}

/// Views of hosts' tasks: one call per host, hosts asked in parallel. `listing` asks for the
/// host's whole list (`list --all`), else `status` of the given tasks. A host that does not
/// answer gives `unknown` rows (reason `host_unreachable`, never stored); in a status, another
/// failure (a task the host does not know) is the error.
pub(crate) fn host_views(
    hosts: BTreeMap<String, Vec<Placement>>,
    listing: bool,
    cwd: &Path,
) -> Result<Vec<TaskView>> {
    let configured = host_access::hosts(&Config::load(cwd)?)?;
    let results: Vec<Result<Vec<TaskView>>> = std::thread::scope(|scope| {
        let calls: Vec<_> = hosts
            .iter()
            .map(|(name, placements)| {
                let host = configured.get(name);
                scope.spawn(move || views_on_host(name, host, placements, listing))
            })
            .collect();
        calls
            .into_iter()
            .map(|call| call.join().expect("a host's call does not panic"))
            .collect()
    });
    let mut views = Vec::new();
    for result in results {
        views.extend(result?);
    }
    Ok(views)
}

fn views_on_host(
    name: &str,
    host: Option<&Host>,
    placements: &[Placement],
    listing: bool,
) -> Result<Vec<TaskView>> {
    let Some(host) = host else {
        let error = Error::new(
            ErrorCode::HostUnreachable,
            format!("host {name} is no longer configured (hosts: in the user's config)"),
        );
        return Ok(unknown_rows(name, placements, &error));
    };
    let mut request = words(&["--json"]);
    if listing {
        request.extend(words(&["list", "--all"]));
    } else {
        request.push("status".into());
        request.extend(placements.iter().map(|p| p.id.clone()));
    }
    let reply = connection::call(host, None, &request, None, CALL_DEADLINE)
        .and_then(|ran| parse_reply::<serde_json::Value>(host, &ran));
    let value = match reply {
        Ok(value) => value,
        Err(error) if listing || error.code == ErrorCode::HostUnreachable => {
            return Ok(unknown_rows(name, placements, &error));
        }
        Err(error) => return Err(error),
    };
    let rows: Vec<TaskView> = match value {
        serde_json::Value::Array(rows) => serde_json::from_value(rows.into()),
        one => serde_json::from_value(one).map(|view| vec![view]),
    }
    .map_err(|err| unreadable_reply(host, &err))?;
    // Only the tasks registered here with this host: a host's other tasks are not ours to show.
    let mut views: Vec<TaskView> = rows
        .into_iter()
        .filter(|row| placements.iter().any(|p| p.id == row.id))
        .map(|row| row.on_host(name))
        .collect();
    // A task registered here that its host does not list (removed there, or a submit whose
    // request never arrived) is shown, so it can be seen and forgotten.
    let missing: Vec<Placement> = placements
        .iter()
        .filter(|p| !views.iter().any(|view| view.id == p.id))
        .cloned()
        .collect();
    if !missing.is_empty() {
        let error = Error::new(
            ErrorCode::TaskNotFound,
            format!("host {name} does not know this task; `cuekit rm` forgets it here"),
        );
        views.extend(unknown_rows(name, &missing, &error));
    }
    Ok(views)
}

pub(super) fn unknown_rows(name: &str, placements: &[Placement], error: &Error) -> Vec<TaskView> {
    placements
        .iter()
        .map(|placement| {
            let mut view = TaskView::host_unreachable(placement, name, error);
            if error.code != ErrorCode::HostUnreachable {
                view.reason = Some(error.code.as_str().to_string());
            }
            view
        })
        .collect()
}
