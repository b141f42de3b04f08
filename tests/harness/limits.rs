//! How long a test waits before it fails, named by what it waits for. Each is a hang guard,
//! never a clock: generous on a loaded two-core machine, so that only a hang fails a test, and
//! one place to change if a slower machine needs more. A test whose subject is a time (a
//! `--timeout 1s` that must fire, a backoff) writes its own figure instead.

use std::time::Duration;

/// Something cuekit does at once, or a shell child's whole run: a record written, a pane drawn,
/// an `sh -c` task ended, a monitor's or scheduler's look.
pub const SHORT: Duration = Duration::from_secs(10);

/// A task's whole run with the stand-in agents, worktrees and checks: several cuekit steps,
/// each starting processes.
pub const TASK: Duration = Duration::from_secs(30);

/// A real agent CLI's start and turn with canned replies (Node starting a large CLI, which a
/// loaded machine slows most), or any wait on what the code records ([`super::HANG_GUARD`]).
pub const AGENT: Duration = Duration::from_secs(60);

/// Several agent turns in a row: fix rounds, a race's candidates, a parent agent delegating.
pub const LONG: Duration = Duration::from_secs(120);

/// A limit as cuekit's `--timeout` takes it ("60s").
pub fn arg(limit: Duration) -> String {
    format!("{}s", limit.as_secs())
}
