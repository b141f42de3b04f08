use std::io::Write;
use std::path::Path;
use std::time::Duration;

use clap::Args;

use crate::ops::TransitionEvent;
use crate::ops::{self, EventScope};

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Keep printing transitions as they happen (until interrupted).
    #[arg(long, short = 'f')]
    follow: bool,
    /// Every task's transitions, not only this project's.
    #[arg(long)]
    all: bool,
}

/// One line per transition: JSON lines with `--json`, else `time  id  old -> new [reason]`.
pub fn run(args: &EventsArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let scope = EventScope::new(args.all, cwd);
    let (events, mut cursor) = ops::events(&scope)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for event in &events {
        writeln!(out, "{}", line(event, json))?;
    }
    if !args.follow {
        return Ok(0);
    }
    loop {
        out.flush()?;
        let (events, next) = ops::next_events(&scope, Some(cursor), Duration::from_secs(60))?;
        cursor = next;
        for event in &events {
            writeln!(out, "{}", line(event, json))?;
        }
    }
}

fn line(event: &TransitionEvent, json: bool) -> String {
    if json {
        return super::render::json_line(event);
    }
    let old = event.old_status.map_or("-", |s| s.as_str());
    let reason = event
        .reason
        .as_deref()
        .map(|r| format!(" [{r}]"))
        .unwrap_or_default();
    let line = format!(
        "{}  {}  {old} -> {}{reason}  {}",
        event.at,
        event.task_id,
        event.new_status.as_str(),
        super::render::first_line(&event.objective, 60)
    );
    super::render::visible(&line).into_owned()
}
