use std::path::Path;

use clap::Args;

use super::render::{print_json, say};
use crate::ops;

#[derive(Debug, Args)]
pub struct DiffArgs {
    #[arg(value_name = "ID")]
    id: String,
    /// Only the changed files with their line counts.
    #[arg(long)]
    stat: bool,
    /// For a race (ID is `r_…`): the second candidate's work against the first's.
    #[arg(long, value_name = "A,B", value_delimiter = ',', num_args = 1)]
    candidates: Vec<String>,
}

pub fn run(args: &DiffArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    if crate::domain::race::is_race_id(&args.id) {
        return candidates(args, cwd, json);
    }
    let diff = ops::diff(&args.id, cwd, !args.stat)?;
    let summary = format!(
        "{} ({} against {} {})",
        diff.stat,
        diff.branch,
        diff.base_ref,
        &diff.base_commit[..diff.base_commit.len().min(12)]
    );
    show(&diff, diff.patch.as_deref(), &diff.files, &summary, json);
    if !json && let Some(commit) = &diff.checked_commit {
        let line = format!(
            "cuekit: this is the commit task {}'s last passing check ran on ({}), which a plain \
             merge takes; work in its checkout since then is not in it (`cuekit merge {} \
             --unchecked` takes the checkout as it is)",
            diff.task_id,
            &commit[..commit.len().min(12)],
            diff.task_id
        );
        // On stderr: stdout stays the diff itself.
        super::render::say_err(&line);
    }
    if !json {
        for path in &diff.submodules {
            let line = format!(
                "submodule {path}: changed (its commits or files are not in this diff; \
                 a merge refuses it)"
            );
            // With a patch, on stderr: stdout stays exactly the patch.
            match diff.patch {
                Some(_) => super::render::say_err(&line),
                None => say(&line),
            }
        }
    }
    Ok(0)
}

/// A diff as JSON, as its patch, or as its files and a summary line.
fn show(
    diff: &impl serde::Serialize,
    patch: Option<&str>,
    files: &[ops::DiffFile],
    summary: &str,
    json: bool,
) {
    if json {
        return print_json(diff);
    }
    if let Some(patch) = patch {
        return print_patch(patch);
    }
    for file in files {
        let counts = match (file.insertions, file.deletions) {
            (Some(added), Some(deleted)) => format!("+{added} -{deleted}"),
            _ => "binary".to_string(),
        };
        say(&format!("{} {:<12} {}", file.status, counts, file.path));
    }
    say(summary);
}

/// `diff RACE --candidates A,B`.
fn candidates(args: &DiffArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let [from, to] = args.candidates.as_slice() else {
        return Err(crate::domain::error::Error::new(
            crate::domain::error::ErrorCode::Usage,
            "a race's diff compares two candidates: --candidates A,B",
        )
        .with_hint("`cuekit result RACE` lists them")
        .into());
    };
    let diff = ops::diff_candidates(&args.id, from, to, cwd, !args.stat)?;
    let summary = format!("{} ({} against {})", diff.stat, diff.to, diff.from);
    show(&diff, diff.patch.as_deref(), &diff.files, &summary, json);
    Ok(0)
}

/// Exact bytes for a pipe (`git apply`); on a terminal, a child's file must not drive it.
fn print_patch(patch: &str) {
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        print!("{}", crate::domain::display::terminal_text::visible(patch));
    } else {
        print!("{patch}");
    }
}
