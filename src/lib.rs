//! cuekit: delegate work to child coding agents running in tmux.
//!
//! Data flows one way: a request becomes a [`spec::TaskSpec`], an [`adapter`] turns it into a
//! launch command, [`launch`] wraps it with the exit-code sentinel, [`tmux`] starts it, and
//! [`store`] records it. [`status`] judges a task from its record, one pane snapshot and the
//! sentinel. The [`ops`] are what the front ends ([`cli`], [`mcp`], the [`top`] dashboard, the [`web`] face) call.

pub mod acp;
pub mod adapter;
pub mod age;
pub mod attention;
pub mod cli;
pub mod config;
pub mod doctor;
pub mod error;
pub mod events;
pub mod git;
pub mod hooks;
pub mod launch;
pub mod mcp;
pub mod notify;
pub mod ops;
pub mod process;
pub mod project;
pub mod remote;
pub mod report;
pub mod result_text;
pub mod role;
pub mod sandbox;
pub mod spec;
pub mod status;
pub mod steer;
pub mod store;
pub mod tail;
pub mod team;
pub mod terminal_text;
pub mod tmux;
pub mod top;
pub mod transcript;
pub mod transition;
pub mod trust;
pub mod web;
pub mod which;
pub mod yaml_depth;

pub use error::{Error, ErrorCode, Result};
