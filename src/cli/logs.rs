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
    #[arg(long, short = 'f')]
    follow: bool,
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
    } else {
        ops::read_logs(&args.id, cwd, args.raw, &mut out)?;
    }
    Ok(0)
}
