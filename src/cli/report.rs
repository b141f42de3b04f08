use std::path::Path;

use clap::Args;

use super::render::{print_json, say};
use crate::domain::error::{Error, ErrorCode};
use crate::domain::report::ReportKind;
use crate::ops::{self, ReportRequest};

/// The variable cuekit sets in every task's pane.
const TASK_ID_ENV: &str = "CUEKIT_TASK_ID";

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("kind").multiple(false))]
pub struct ReportArgs {
    /// Still working: where things stand (the default).
    #[arg(long, group = "kind")]
    progress: bool,
    /// Cannot go on without the parent: say what is needed.
    #[arg(long, group = "kind")]
    blocked: bool,
    /// Finished.
    #[arg(long, group = "kind")]
    done: bool,
    /// Gave up: say why.
    #[arg(long, group = "kind")]
    failed: bool,
    /// Structured detail for the parent, as JSON (e.g. '{"pr": 42}').
    #[arg(long, value_name = "JSON")]
    data: Option<String>,
    /// The report, in words (after `--` if it starts with `-`).
    #[arg(value_name = "MESSAGE", required = true)]
    message: Vec<String>,
}

pub fn run(args: &ReportArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let task_id = std::env::var(TASK_ID_ENV).ok().filter(|id| !id.is_empty());
    let Some(task_id) = task_id else {
        return Err(Error::new(
            ErrorCode::NotTaskPane,
            format!("{TASK_ID_ENV} is not set: this is not a cuekit task's pane"),
        )
        .with_hint("`cuekit report` is run by a child agent inside the task cuekit started it in")
        .into());
    };
    let data = args
        .data
        .as_deref()
        .map(|text| {
            serde_json::from_str(text).map_err(|err| {
                Error::invalid_input(format!("--data is not JSON: {err}"))
                    .with_hint(r#"give a JSON value, e.g. --data '{"pr": 42}'"#)
            })
        })
        .transpose()?;
    let kind = if args.blocked {
        ReportKind::Blocked
    } else if args.done {
        ReportKind::Done
    } else if args.failed {
        ReportKind::Failed
    } else {
        ReportKind::Progress
    };
    let request = ReportRequest {
        kind,
        message: args.message.join(" "),
        data,
    };
    // In a sandbox the pane and the record are out of sight: the monitor records the drop.
    if let Some(drop) = std::env::var_os(crate::domain::sandbox::REPORT_DROP_VARIABLE) {
        if request.message.trim().is_empty() {
            return Err(Error::invalid_input("the report has no message").into());
        }
        ops::drop_report(Path::new(&drop), &request)?;
        if json {
            print_json(&serde_json::json!({"task_id": task_id, "dropped": true}));
        } else {
            say(&format!("{task_id}  report handed to cuekit's monitor"));
        }
        return Ok(0);
    }
    let report = ops::report(&task_id, std::process::id(), request, cwd)?;
    if json {
        print_json(&report);
    } else {
        say(&format!(
            "{task_id}  report #{} {}",
            report.seq,
            report.kind.as_str()
        ));
    }
    Ok(0)
}
