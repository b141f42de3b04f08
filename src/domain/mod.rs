//! The task and its rules, pure: no file, process, terminal or clock is touched here (the
//! structure test keeps it so). Everything else builds on these.

pub mod acp;
pub mod adapter;
pub mod attention;
pub mod chat;
pub mod chat_claude;
pub mod chat_codex;
pub mod chat_qwen;
pub mod check;
pub mod check_count;
pub mod check_settings;
pub mod digest;
pub mod display;
pub mod error;
pub mod events;
pub mod failover;
pub mod launch;
pub mod notice;
pub mod pane;
pub mod parent;
pub mod permission_screen;
pub mod plain;
pub mod race;
pub mod recap;
pub mod report;
pub mod result;
pub mod sandbox;
pub mod sandbox_net;
pub mod sandbox_user;
pub mod spec;
pub mod status;
pub mod steer;
pub mod task;
pub mod transcript;
pub mod transition;
pub mod yaml_depth;
