//! The integration tests: one crate, one binary (as casey/just and nextest do), one harness
//! (`tests/harness/`, shared with the benchmarks). Each module is one area of cuekit, driven
//! through the real binary, real tmux on a private socket per test and real `/bin/sh`.
//!
//! A test that must change the process environment cannot live here (the tests of a crate run
//! as threads of one process under `cargo test`): tests/top_cost.rs stays a binary of its own.

#[path = "../harness/mod.rs"]
mod harness;

mod acp;
mod acp_agents;
mod agents;
mod agents_real;
mod ai_parent;
mod antigravity;
mod checks;
mod checks_steering;
mod child_integrity;
mod cli_extras;
mod cli_parsing;
mod conflicts;
mod dialogs;
mod failover;
mod fanout;
mod faults;
mod first_contact;
mod gemini_real;
mod hostile_repo;
mod inventory;
mod jcode;
mod launch_quoting;
mod lifecycle;
mod mcp;
mod monitor;
mod notifications;
mod plain_screens;
mod races;
mod remote;
mod results;
mod sandbox;
mod sandbox_leftovers;
mod sandbox_net;
mod sandbox_reach;
mod sandbox_root;
mod sandbox_walls;
mod scheduler;
mod session_records;
mod setup;
mod steering;
mod structure;
mod top;
mod true_states;
mod trust_faults;
mod web;
mod web_guard;
mod web_plain;
mod web_receipts;
mod worktrees;
