//! How a parent agent (an MCP client: Gemini CLI, Claude Code, Codex, …) is told about this
//! cuekit: its config entry, the merge of that entry into the client's own file, and a package
//! for its extension system. Texts only; [`crate::ops::parent_setup`] writes them.

mod client_config;
pub mod extension;
pub mod install;

pub use client_config::{Client, client_config, snippet, unexpanded};
