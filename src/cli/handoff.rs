//! `cuekit handoff ID --agent K [--model M] [--] [message]`: the running attempt ends (its work
//! stays) and the next runs on agent K, told the recap and the message.

use std::path::Path;

use clap::Args;

use super::render::{print_json, task_details};
use crate::ops;

#[derive(Debug, Args)]
pub struct HandoffArgs {
    #[arg(value_name = "ID", add = super::task_ids())]
    id: String,
    /// The agent that takes the task over.
    #[arg(long, value_name = "K")]
    agent: String,
    /// Its model (else its default).
    #[arg(long, value_name = "M")]
    model: Option<String>,
    /// Words for the next agent, after the recap (text starting with `-` goes after `--`).
    #[arg(value_name = "MESSAGE")]
    message: Vec<String>,
}

pub fn run(args: &HandoffArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let message = (!args.message.is_empty()).then(|| args.message.join(" "));
    let view = ops::handoff(
        &ops::HandoffRequest {
            id: args.id.clone(),
            agent: args.agent.clone(),
            model: args.model.clone(),
            message,
        },
        cwd,
    )?;
    if json {
        print_json(&view);
    } else {
        println!("{}", task_details(&view));
    }
    Ok(0)
}
