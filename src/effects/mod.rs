//! Everything that touches the world: tmux, cuekit's store, git, processes, remote hosts, the
//! project's files (through the one door, [`project`]), the configuration as read, hooks and
//! notifications. Effects build on [`crate::domain`] and on each other, never on an operation
//! or a face.

pub mod acp;
pub mod bounded;
pub mod check_run;
pub mod clock;
pub mod config;
pub mod git;
pub mod hooks;
pub mod notify;
pub mod outbound;
pub mod owner;
pub mod process;
pub mod project;
pub mod remote;
pub mod role;
pub mod scope;
pub mod spawn;
pub mod store;
pub mod team;
pub mod tmux;
pub mod trust;
pub mod which;
