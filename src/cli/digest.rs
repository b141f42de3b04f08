//! `cuekit digest [--since] [--send]` and `cuekit mute <id> [--off]` (issue 53).

use std::path::Path;

use clap::Args;

use super::render::{print_json, say};
use crate::ops;

#[derive(Debug, Args)]
pub struct DigestArgs {
    /// From when: a duration back (`12h`) or a time (RFC 3339); default: the last digest sent,
    /// else a day back.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Also send it to your notify channels (once a day: `notify.digest_at` shares the day).
    #[arg(long)]
    send: bool,
}

pub fn run(args: &DigestArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let from = ops::digest_since(args.since.as_deref())?;
    let report = if args.send {
        ops::send_digest(from, cwd)?
    } else {
        ops::digest(from, cwd)?
    };
    if json {
        print_json(&report);
        return Ok(0);
    }
    say(&format!("since {}: {}", report.since, report.headline));
    for line in &report.lines {
        say(&format!("  {line}"));
    }
    if let Some(to) = &report.sent_to {
        say(&if to.is_empty() {
            "not sent: no channel takes digests, or today's went out already".to_string()
        } else {
            format!("sent to {}", to.join(", "))
        });
    }
    Ok(0)
}

#[derive(Debug, Args)]
pub struct MuteArgs {
    #[arg(value_name = "ID", add = super::task_ids())]
    id: String,
    /// Unmute: its notices go out again.
    #[arg(long)]
    off: bool,
}

pub fn mute(args: &MuteArgs, json: bool) -> anyhow::Result<i32> {
    ops::mute(&args.id, !args.off)?;
    if json {
        print_json(&serde_json::json!({"id": args.id, "muted": !args.off}));
    } else if args.off {
        say(&format!("{}: notices go out again", args.id));
    } else {
        say(&format!(
            "{}: muted (no webhook, Slack, Discord or ntfy notice)",
            args.id
        ));
    }
    Ok(0)
}
