//! A task's work in its own checkout: its diff, whose work would clash (conflicts), and the
//! merge that takes it.

pub(crate) mod checked;
pub(crate) mod conflicts;
pub(crate) mod diff;
pub(crate) mod merge;
pub(crate) mod submodules;
