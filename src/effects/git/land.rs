//! Landing a merge on a branch checked out in a worktree, so that no kill leaves it half-done.
//! The merge itself is built out of any work tree (`merge-tree --write-tree`, `commit-tree`:
//! objects only); then, in this order:
//! 1. a journal (`cuekit-landing` in the worktree's git dir) says `<ref> <old> <new>`;
//! 2. the branch moves with `update-ref`, only from the value the merge was built on;
//! 3. the worktree's index and files follow (`read-tree -m -u <old> <new>`, which refuses
//!    to overwrite a file git does not track, and touches no other file) — an ignored file in
//!    the way, which git would take, is refused before step 1;
//! 4. the journal goes.
//!
//! The recovery rule, for a kill anywhere in between ([`repair`], run first by every merge
//! into that worktree): a journal whose branch is still at `<old>` is dropped (nothing
//! moved); one whose branch is at `<new>` while the index still holds `<old>` has step 3 run
//! again; any other state (the user moved on by hand) is left as it is, only the journal
//! dropped. No `MERGE_HEAD`, `MERGE_MSG` or `AUTO_MERGE` is ever written: git's own merge
//! never runs in the user's checkout. What an older cuekit's `git merge` left there (its
//! `MERGE_MSG` starts with `cuekit task `) is aborted by [`repair`].

use std::path::PathBuf;

use super::Git;
use crate::domain::error::{Error, ErrorCode, Result};

/// The journal's file name, in the target worktree's git dir.
const JOURNAL: &str = "cuekit-landing";
/// How an older cuekit's merge message starts.
const OLD_MERGE_MESSAGE: &str = "cuekit task ";

/// A path in the worktree's git dir (`git rev-parse --git-path`).
fn git_path(there: &Git, name: &str) -> Result<PathBuf> {
    let path = PathBuf::from(there.line(["rev-parse", "--git-path", name])?);
    Ok(if path.is_absolute() {
        path
    } else {
        there.dir().join(path)
    })
}

/// Moves `branch` (checked out in `there`'s worktree) from `old` to `new`, then its index and
/// files, as the module says. On a refusal of the files' update the branch goes back.
pub fn land(there: &Git, branch: &str, old: &str, new: &str, why: &str) -> Result<()> {
    refuse_files_in_the_way(there, old, new)?;
    let name = format!("refs/heads/{branch}");
    let journal = git_path(there, JOURNAL)?;
    crate::effects::store::write_atomic(&journal, format!("{name} {old} {new}\n").as_bytes())?;
    let drop_journal = || {
        let _ = std::fs::remove_file(&journal);
    };
    if let Err(err) = there.run(["update-ref", "-m", why, &name, new, old]) {
        drop_journal();
        return Err(err);
    }
    if let Err(err) = there.run(["read-tree", "-m", "-u", old, new]) {
        let _ = there.run(["update-ref", "-m", "cuekit: merge undone", &name, old, new]);
        drop_journal();
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!("the target worktree's files could not follow the merge: {}", err.message),
        )
        .with_hint("nothing was changed; move the untracked files git names out of the way, then merge again"));
    }
    drop_journal();
    Ok(())
}

/// Refuses a merge that would write over files of the user's that git does not track: a path
/// the merge adds where the worktree has a file or folder already, or under a name the worktree
/// has as a file. `read-tree -m -u` refuses untracked files in the way, but takes *ignored*
/// ones (a `settings.local`, an `out/` of results) as expendable: they are often the only copy.
fn refuse_files_in_the_way(there: &Git, old: &str, new: &str) -> Result<()> {
    let top = PathBuf::from(there.line(["rev-parse", "--show-toplevel"])?);
    let added = there.run([
        "diff-tree",
        "-r",
        "-z",
        "--no-renames",
        "--name-only",
        "--diff-filter=AT",
        old,
        new,
    ])?;
    let mut in_the_way: Vec<String> = Vec::new();
    for path in added.split('\0').filter(|p| !p.is_empty()) {
        let mut at = top.clone();
        let names: Vec<&str> = path.split('/').collect();
        for (n, name) in names.iter().enumerate() {
            at.push(name);
            let Ok(meta) = at.symlink_metadata() else {
                break;
            };
            let last = n + 1 == names.len();
            // The added file itself, or a file where the merge needs a folder.
            if last || !meta.is_dir() {
                let shown = names[..=n].join("/");
                if !in_the_way.contains(&shown) {
                    in_the_way.push(shown);
                }
                break;
            }
        }
    }
    if in_the_way.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::InvalidState,
        format!(
            "the merge would write over files of yours that git does not track (ignored ones \
             included): {}",
            in_the_way.join(", ")
        ),
    )
    .with_hint(
        "nothing was changed; move those files out of the way (or keep a copy), then merge again",
    ))
}

/// What an interrupted merge left in `there`'s worktree, put right: cuekit's journal by the
/// recovery rule, an older cuekit's unfinished `git merge` aborted. Returns what it did, in
/// words (`None`: nothing to do).
pub fn repair(there: &Git) -> Result<Option<String>> {
    let mut done = Vec::new();
    let journal = git_path(there, JOURNAL)?;
    if let Ok(bytes) = crate::effects::store::read_small(&journal) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let words: Vec<&str> = text.split_whitespace().collect();
        if let [name, old, new] = words[..]
            && there.resolve(name).ok().as_deref() == Some(new)
            && there.yes(["diff-index", "--cached", "--quiet", old, "--"])?
        {
            there.run(["read-tree", "-m", "-u", old, new])?;
            done.push(format!(
                "finished an interrupted merge: {} now shows {}",
                name.trim_start_matches("refs/heads/"),
                &new[..new.len().min(12)]
            ));
        }
        let _ = std::fs::remove_file(&journal);
    }
    let merging = there.yes(["rev-parse", "--quiet", "--verify", "MERGE_HEAD"])?;
    let message = git_path(there, "MERGE_MSG")
        .ok()
        .and_then(|path| crate::effects::store::read_small(&path).ok())
        .unwrap_or_default();
    if merging && message.starts_with(OLD_MERGE_MESSAGE.as_bytes()) {
        there.run(["merge", "--abort"])?;
        done.push("aborted an unfinished merge an older cuekit left".to_string());
    }
    Ok((!done.is_empty()).then(|| done.join("; ")))
}
