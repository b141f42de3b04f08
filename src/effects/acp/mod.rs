//! The ACP client as a process. It runs in the task's pane (`cuekit __acp`): it starts the
//! agent, renders the session readably for whoever attaches, answers or holds permission
//! requests, and takes steering over a control socket. Its rules are
//! [`crate::domain::acp`].
//!
//! - [`control`]: the control socket — its place, its requests and replies, a caller's side;
//! - [`outcome`]: the session as `result.json`;
//! - [`client`]: the client process.

pub mod client;
pub mod control;
pub mod outcome;
