//! Test counts ([`crate::domain::check_count`]): what each of a check's commands reported
//! running, read from its part of the log, and on a pass the same commands' counts on the base,
//! measured once per base tree (and commands) and kept in cuekit's data directory. A pass that
//! ran fewer tests than the base is no pass.

use std::path::Path;
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::scratch;
use crate::domain::check::{CheckPlan, LOG_LIMIT, Verdict};
use crate::domain::check_count::{self, BaseCounts};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::git::Git;
use crate::effects::store;
use crate::ops::task::Task;

/// Where the next command's output begins in `log`.
pub(super) fn log_len(log: &Path) -> u64 {
    std::fs::symlink_metadata(log).map_or(0, |m| m.len())
}

/// The tests a command reported running, read from `log` past `from`: `Some(None)` when it
/// reported no count, `None` when its output was not kept whole (or the log not read).
pub(super) fn reported(log: &Path, from: u64, printed: u64) -> Option<Option<u64>> {
    if printed >= LOG_LIMIT {
        return None;
    }
    let bytes = store::read_limited(log, from + 2 * LOG_LIMIT).ok()?;
    let part = bytes.get(usize::try_from(from).ok()?..)?;
    Some(check_count::tests_ran(&String::from_utf8_lossy(part)))
}

fn total(ran: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    ran.flatten().reduce(|a, b| a + b)
}

/// On a pass whose output reported a test count (or was too long to read one from): the tests
/// it ran against the base's, the verdict turned into a failure with both numbers when it ran
/// fewer, or could not be read where the base's could. A base that cannot be
/// measured leaves the pass as it is (said in the log).
pub(super) fn judge(
    task: &Task,
    plan: &CheckPlan,
    verdict: &mut Verdict,
    ran: &[Option<Option<u64>>],
    log: &Path,
) {
    verdict.tests_ran = total(ran.iter().map(|r| r.flatten()));
    // Where no runner reported a count there is nothing to compare, and the base is not run —
    // unless a command's output was not kept whole: its count is unknown, never "none".
    let unread = ran.iter().any(Option::is_none);
    if verdict.tests_ran.is_none() && !unread {
        return;
    }
    let base = match base_counts(task, plan) {
        Ok(base) => base,
        Err(err) => {
            let _ = store::append_line(
                log,
                format!("cuekit: the base's test count is unknown: {}", err.message).as_bytes(),
            );
            return;
        }
    };
    verdict.base_tests_ran = total(base.ran.iter().copied());
    if let Some(fewer) = check_count::fewer_than_base(&plan.run, ran, &base) {
        let reason = fewer.reason();
        let _ = store::append_line(log, format!("cuekit: {reason}").as_bytes());
        verdict.passed = false;
        verdict.error = Some(reason);
    }
}

/// The base's counts for `plan`'s commands: kept ones, else measured now (under a lock, so a
/// race's candidates measure it once).
pub(super) fn base_counts(task: &Task, plan: &CheckPlan) -> Result<BaseCounts> {
    let worktree = crate::ops::work::diff::worktree_of(task)?;
    let tree = Git::new(&worktree.repo_root)
        .run([
            "rev-parse",
            "--verify",
            "--end-of-options",
            &format!("{}^{{tree}}", worktree.base_commit),
        ])?
        .trim()
        .to_string();
    let mut key = Sha256::new();
    key.update(tree.as_bytes());
    for command in &plan.run {
        key.update(b"\0");
        key.update(command.as_bytes());
    }
    key.update(format!("\0{:?}", task.sandbox_policy().mode).as_bytes());
    let key: String = key.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let dir = store::data_dir()
        .map(|dir| dir.join("checks").join("base"))
        .ok_or_else(|| Error::new(ErrorCode::Io, "cannot find cuekit's data directory"))?;
    std::fs::create_dir_all(&dir).map_err(|err| Error::io("create", &dir, err))?;
    let kept = dir.join(format!("{key}.json"));
    let _lock = store::lock_file(&dir.join(format!("{key}.lock")))?;
    if let Some(counts) = store::read_small(&kept)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<BaseCounts>(&bytes).ok())
        .filter(|counts| counts.tree == tree && counts.commands == plan.run)
    {
        return Ok(counts);
    }
    let counts = measure(task, plan, &tree, &dir.join(format!("{key}.log")))?;
    let json = serde_json::to_vec(&counts)
        .map_err(|err| Error::new(ErrorCode::Io, format!("base counts: {err}")))?;
    store::write_atomic(&kept, &json)?;
    Ok(counts)
}

/// Runs every command on the base's tree (each whatever the one before did) and reads its
/// count.
fn measure(task: &Task, plan: &CheckPlan, tree: &str, log: &Path) -> Result<BaseCounts> {
    let started = Instant::now();
    let scratch = scratch::of_tree(task, tree, "base")?;
    let _ = std::fs::remove_file(log);
    let marker = format!("{}.base.{}", task.record.id, std::process::id());
    let policy = task.sandbox_policy();
    let mut ran = Vec::new();
    for command in &plan.run {
        let from = log_len(log);
        let done =
            super::run::run_command(task, &policy, &scratch.tree, plan, command, log, &marker)?;
        let count = if done.timed_out {
            None
        } else {
            reported(log, from, done.printed).flatten()
        };
        ran.push(count);
    }
    // Only the counts are kept: a log per base tree would pile up with nobody to prune it.
    let _ = std::fs::remove_file(log);
    Ok(BaseCounts {
        tree: tree.to_string(),
        commands: plan.run.clone(),
        ran,
        took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}
