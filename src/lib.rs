//! cuekit: delegate work to child coding agents running in tmux.
//!
//! The crate is built in layers, each a folder; an arrow may only point down (tests/structure.rs
//! says so for every path):
//!
//! - faces — [`cli`], [`mcp`], the [`top`] dashboard and the [`web`] face: read what the user asked, call an
//!   operation, show its answer;
//! - [`ops`] — the operations the faces call, and the background workers that run with no face;
//! - [`effects`] — everything that touches the world: tmux, the store, git, processes, remote
//!   hosts, the project's files, the configuration as read;
//! - [`domain`] — the task and its rules, pure: specs, adapters and the launch command, statuses
//!   and their judgment, transitions, the sandbox plan, the ACP protocol and session machine.
//!
//! Data flows one way: a request becomes a [`domain::spec::TaskSpec`], an adapter turns it into a
//! launch command, the launch builder wraps it with the exit-code sentinel, tmux starts it, and
//! the store records it.

pub mod cli;
pub mod domain;
pub mod effects;
pub mod mcp;
pub mod ops;
pub mod top;
pub mod web;

pub use domain::error::{Error, ErrorCode, Result};
