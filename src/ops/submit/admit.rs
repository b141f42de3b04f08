//! Stage 3, admit: the scheduler's word on the new task — it starts now (the scheduler's lock
//! held until the task is on record, so racing submits never both take the last slot) or
//! waits in the queue.

use super::check::Checked;
use crate::domain::error::Result;
use crate::ops::schedule::{self, Admission};

pub(super) struct Admitted {
    pub admission: Admission,
    pub scheduled: Scheduled,
}

pub(super) fn admit(checked: &Checked) -> Result<Admitted> {
    let resolved = &checked.resolved;
    let admission = schedule::admit(
        resolved.plan.as_ref(),
        &resolved.spec.agent_kind,
        resolved.request.team.as_deref(),
        resolved.request.scheduling.now,
    )?;
    let scheduled = match (&admission, &resolved.plan) {
        (Admission::Queue(..), _) => Scheduled::Queued,
        (_, Some(plan)) if plan.retry.is_some() || !plan.fallback.is_empty() => Scheduled::Retried,
        _ => Scheduled::No,
    };
    Ok(Admitted {
        admission,
        scheduled,
    })
}

/// Whether the scheduler starts the task (now or later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scheduled {
    /// Started by this submit, never again.
    No,
    /// Started by this submit; a retry may start it again.
    Retried,
    /// Queued: the scheduler starts it.
    Queued,
}
