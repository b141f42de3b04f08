//! `cuekit __acp`: the ACP client, as `launch.sh` starts it in an ACP task's pane.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

use crate::ops::acp_client::{self as client, Options};

#[derive(Debug, Args)]
pub struct AcpArgs {
    /// The first prompt.
    #[arg(long, value_name = "FILE")]
    prompt_file: PathBuf,
    /// End the session after the first turn that ends.
    #[arg(long)]
    once: bool,
    /// Answer every permission request allow-once (and record it).
    #[arg(long)]
    bypass: bool,
    /// What to answer a request of a tool kind by itself: `KIND:allow|ask|reject`.
    #[arg(long = "allow", value_name = "KIND:DECISION")]
    policy: Vec<String>,
    /// The ACP mode to switch the session to.
    #[arg(long)]
    session_mode: Option<String>,
    /// The model to switch the session to (`session/set_model`).
    #[arg(long)]
    session_model: Option<String>,
    /// The agent session to continue (`session/load`).
    #[arg(long)]
    load_session: Option<String>,
    /// Start no earlier than this (seconds since the epoch): the agent would overwrite a session
    /// it started in the same minute.
    #[arg(long)]
    load_not_before: Option<u64>,
    /// Environment for the agent: `NAME=VALUE`.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// The agent's ACP command.
    #[arg(last = true, required = true)]
    agent: Vec<OsString>,
}

pub fn run(args: &AcpArgs) -> anyhow::Result<i32> {
    let pairs = |items: &[String], separator: char| -> Vec<(String, String)> {
        items
            .iter()
            .filter_map(|item| {
                let (name, value) = item.split_once(separator)?;
                Some((name.to_string(), value.to_string()))
            })
            .collect()
    };
    let options = Options {
        prompt_file: args.prompt_file.clone(),
        once: args.once,
        bypass: args.bypass,
        policy: pairs(&args.policy, ':'),
        session_mode: args.session_mode.clone(),
        session_model: args.session_model.clone(),
        load_session: args.load_session.clone(),
        load_not_before: args.load_not_before,
        env: pairs(&args.env, '='),
        agent: args.agent.clone(),
    };
    Ok(client::run(&options)?)
}
