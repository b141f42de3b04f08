//! `submit`: a request becomes a task, in six named stages, each a typed function in a file of
//! its own:
//!
//! 1. [`resolve`] — the configuration, the role, the adapter and the spec;
//! 2. [`check`] — trust, names, the argv limit, the sandbox, the parent to wake: everything
//!    that can refuse the task, before anything is written;
//! 3. [`admit`] — the scheduler's word: start now, or queue;
//! 4. [`create`] — the pending entry, the worktree or repository of its own, the task's folder
//!    and files, with their undo;
//! 5. [`start`] — its slot and its pane (the pane is started the way the scheduler starts a
//!    queued task: [`crate::ops::submit::prepare::spawn_pane`]);
//! 6. [`commit`] — the registry, the record and the lifecycle, then the monitor's.

mod admit;
mod check;
mod commit;
mod create;
pub(crate) mod prepare;
mod request;
mod resolve;
mod start;

use std::path::Path;

use crate::domain::error::{Error, Result};
use crate::ops::schedule::Admission;
use check::Identified;
use create::Undo;
pub use request::{Asker, CheckRequest, SubmitOutcome, SubmitRequest};
pub(crate) use resolve::fail_closed;

/// Starts a task here, or with `request.host` on that host (see `remote::submit_on_host`). A
/// relative `cwd` is the caller's: here under `caller_cwd`, on a host as the host takes it.
/// Whether `request` would start an agent that runs whatever it is told, as the user: with its
/// permission bypass (nothing asked) and outside cuekit's bubblewrap sandbox. The web asks the
/// terminal's code for such a submit (issue 48, F16), as for the `command` agent.
pub fn runs_unguarded(request: SubmitRequest, caller_cwd: &Path) -> Result<bool> {
    let resolved = resolve::resolve(request, caller_cwd)?;
    // An agent not installed starts nothing: the submit says so.
    if crate::effects::which::find_on_path(&resolved.bin).is_none() {
        return Ok(false);
    }
    let (policy, _) = check::sandbox_of(&resolved)?;
    Ok(!crate::ops::sandbox::asks_for_approvals(&resolved.spec)
        && policy.mode != crate::domain::sandbox::SandboxMode::Bwrap)
}

pub fn submit(request: SubmitRequest, caller_cwd: &Path) -> Result<SubmitOutcome> {
    if let Some(host) = &request.host {
        return on_host(host, &request, caller_cwd);
    }
    let resolved = resolve::resolve(request, caller_cwd)?;
    if resolved.request.dry_run {
        return resolve::dry_run(resolved);
    }
    let mut checked = match check::check(resolved)? {
        Identified::New(checked) => checked,
        Identified::Again(view) => return Ok(SubmitOutcome::Submitted(view)),
    };
    let admitted = admit::admit(&checked)?;
    let undo = Undo::of(&checked.placement);
    let mut created = create::create(&mut checked, admitted.scheduled, &undo)?;
    // Held until the task is on record (the end of this function).
    let _decision = match admitted.admission {
        Admission::Queue(queued) => {
            let (plan, waits) = *queued;
            return commit::queue(&checked, created, &plan, waits).map_err(|err| undo.undo(err));
        }
        Admission::Start(lock) => lock,
    };
    let started = start::start(&checked, &mut created, admitted.scheduled, &undo)?;
    commit::commit(&checked, created, started, &undo)
}

/// A task for a host: ids and panes of this machine mean nothing there.
fn on_host(host: &str, request: &SubmitRequest, caller_cwd: &Path) -> Result<SubmitOutcome> {
    // Ids name tasks of this machine; a host's tasks wait on its own.
    let scheduling = &request.scheduling;
    if !scheduling.after.is_empty()
        || scheduling.context_from.is_some()
        || scheduling.base_from.is_some()
    {
        return Err(Error::invalid_input(format!(
            "--after, --context-from and --base-from name tasks of this machine, not of host \
             {host}"
        ))
        .with_hint("submit the pipeline on one machine (all on the host, or all here)"));
    }
    if request.wake_parent {
        return Err(Error::invalid_input(format!(
            "--wake-parent types into a pane of this machine, which host {host} cannot reach"
        ))
        .with_hint("wait for the host's task with `cuekit wait` instead"));
    }
    // `*` or `a,b`: the first of them with a free slot (see `remote::place`).
    let host = if host == "*" || host.contains(',') {
        super::remote::place(host, caller_cwd)?
    } else {
        host.to_string()
    };
    super::remote::submit_on_host(&host, request, caller_cwd)
}
