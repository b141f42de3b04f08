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
    let ids = [args.id.clone()];
    let on_host = if args.follow {
        super::remote::relayed(&ids, false, cwd)?
    } else {
        super::remote::forwarded(&ids, cwd)?
    };
    if let Some(status) = on_host {
        return Ok(status);
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.follow {
        ops::follow_logs(&args.id, cwd, args.raw, &mut out)?;
    } else if let Some(lines) = args.tail {
        let mut tail = crate::tail::Tail::new(lines);
        ops::read_logs(&args.id, cwd, false, &mut tail)?;
        for line in tail.finish() {
            writeln!(out, "{line}")?;
        }
    } else {
        ops::read_logs(&args.id, cwd, args.raw, &mut out)?;
    }
    Ok(0)
}
