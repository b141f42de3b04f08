use std::io::Write;
use std::path::Path;

use clap::Args;

use crate::ops;

#[derive(Debug, Args)]
pub struct LogsArgs {
    #[arg(value_name = "ID", add = super::task_ids())]
    id: String,
    /// The bytes exactly as the pane printed them (escape sequences included).
    #[arg(long)]
    raw: bool,
    /// Keep printing until the task ends.
    #[arg(long, short = 'f', conflicts_with = "tail")]
    follow: bool,
    /// Only the last N lines of the readable log (blank lines at its very end left out).
    #[arg(long, short = 'n', value_name = "N", conflicts_with = "raw")]
    tail: Option<usize>,
}

pub fn run(args: &LogsArgs, cwd: &Path) -> anyhow::Result<i32> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.follow {
        ops::follow_logs(&args.id, cwd, args.raw, &mut out)?;
    } else if let Some(lines) = args.tail {
        for line in ops::tail_logs(&args.id, cwd, lines)? {
            writeln!(out, "{line}")?;
        }
    } else {
        ops::read_logs(&args.id, cwd, args.raw, &mut out)?;
    }
    Ok(0)
}
