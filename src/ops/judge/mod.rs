//! The one place that judges tasks and records what happened to them, by concept:
//!
//! - [`look`]: judging a look at the panes and the sentinels;
//! - [`ending`]: recording an ending;
//! - [`stop`]: ending a task's processes, here or by a detached stopper;
//! - [`stop_now`]: a stop asked for now (cancel, a stuck attempt, an abandoned stop);
//! - [`views`]: a refresh's tasks as views;
//! - [`upkeep`]: what the reads that keep cuekit going do on purpose before they look
//!   (undo interrupted submits, start the scheduler and the monitor, finish abandoned stops).
//!
//! Every other operation builds on these; they build on none of them.

pub(crate) mod attempt;
pub(crate) mod budget;
mod ending;
mod look;
mod stop;
mod stop_now;
mod upkeep;
mod views;

pub(crate) use ending::{cancelled, record_ending};
pub(crate) use look::{EarlyLook, has_ended, refresh, refresh_after};
pub(crate) use look::{PaneKey, Refreshed};
pub(crate) use stop::{STOP_GRACE_VARIABLE, end_processes, is_stopping};
pub(crate) use stop_now::{end_stuck, finish_stop, stop};
pub(crate) use upkeep::look_after;
pub use views::ScreenCache;
pub(crate) use views::waits_on_its_check;
