//! The workers that run with no face, each its own process: the monitor of a tmux server
//! (transitions, timeouts, conflicts, hooks), the scheduler, the stopper that ends a task's
//! processes, the event filter in a pane, and what wakes a parent agent. Who runs is decided by
//! lock files ([`monitor_lock`]); the operations start them, never wait on them.

pub(crate) mod monitor;
pub(crate) mod monitor_lock;
pub(crate) mod outbound;
pub(crate) mod scheduler;
mod scheduler_watch;
pub(crate) mod stopper;
pub(crate) mod stream;
pub(crate) mod wake;
