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
//! moved). For a branch at `<new>`, first the checkout's `index.lock` is waited for (a
//! `read-tree` runs in a process group of its own, so one may outlive a merge killed with its
//! group, and still be writing); then an index still at `<old>` has step 3 run again (what an
//! interrupted `read-tree` wrote there, files whose bytes are the start of what the merge
//! puts at that path, removed first); an index at `<new>` whose files the merge adds or
//! changes are missing or half-written has those written again. A checkout that then still
//! differs from `<new>` by changes of the user's is refused, saying the branch is at the
//! merge, and the journal stays; any other state (the user moved on by hand: an index that is
//! neither) is left as it is, only the journal dropped. When step 3 fails and the branch cannot be
//! put back either (a full disk), the journal stays for that rule, and the answer says where
//! the branch and the checkout are. No `MERGE_HEAD`, `MERGE_MSG` or `AUTO_MERGE` is ever written: git's own merge
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
        return Err(files_did_not_follow(there, &name, old, new, &err, &journal));
    }
    drop_journal();
    Ok(())
}

/// The answer when the worktree's files could not follow the branch (step 3 failed): the
/// branch goes back if it can, and the journal with it. If it cannot (on a full disk its lock
/// and log cannot be written either), the journal stays — the branch is at `new`, the index at
/// `old`, which is the state the recovery rule finishes on the next merge into this checkout —
/// and the answer says so, never that nothing changed.
fn files_did_not_follow(
    there: &Git,
    name: &str,
    old: &str,
    new: &str,
    err: &Error,
    journal: &std::path::Path,
) -> Error {
    let branch = name.trim_start_matches("refs/heads/");
    let short = |commit: &str| commit[..commit.len().min(12)].to_string();
    match there.run(["update-ref", "-m", "cuekit: merge undone", name, old, new]) {
        Ok(_) => {
            let _ = std::fs::remove_file(journal);
            Error::new(
                ErrorCode::InvalidState,
                format!(
                    "the target worktree's files could not follow the merge: {}; {branch} was put \
                     back at {}",
                    err.message,
                    short(old)
                ),
            )
            .with_hint(
                "the branch is as it was, but files git wrote before it stopped may be left in \
                 the checkout (`git status` shows them); move the untracked files git names out \
                 of the way, then merge again",
            )
        }
        Err(back) => Error::new(
            ErrorCode::Io,
            format!(
                "the target worktree's files could not follow the merge: {}; and {branch} could \
                 not be put back ({}): {branch} is at the merge {} while its checkout still shows \
                 {}",
                err.message,
                back.message,
                short(new),
                short(old)
            ),
        )
        .with_hint(format!(
            "commit nothing in that checkout yet; make room (or fix what git names), then run \
             `cuekit merge` again: it first brings the checkout up to {branch}"
        )),
    }
}

/// The checkout's top folder and the paths `old` → `new` changes (only those `filter` keeps,
/// a `--diff-filter=…`), as git names them.
fn merge_paths(
    there: &Git,
    old: &str,
    new: &str,
    filter: Option<&str>,
) -> Result<(PathBuf, Vec<String>)> {
    let top = PathBuf::from(there.line(["rev-parse", "--show-toplevel"])?);
    let mut args = vec!["diff-tree", "-r", "-z", "--no-renames", "--name-only"];
    args.extend(filter);
    args.extend([old, new]);
    let listed = there.run(args)?;
    let paths = listed
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    Ok((top, paths))
}

/// Before the recovery rule's step 3 is run again: what an interrupted `read-tree` wrote in the
/// checkout is removed, so that it does not stand in the way. A file is taken for such only
/// when its bytes are the start (or the whole) of what the merge puts at that path and not
/// what the index holds there: removing it loses nothing the merge's commit lacks. Anything
/// else is left, and git names it.
fn clear_partial_writes(there: &Git, old: &str, new: &str) -> Result<()> {
    const LARGEST: u64 = 64 * 1024 * 1024;
    let (top, changed) = merge_paths(there, old, new, None)?;
    let blob = |commit: &str, path: &str| -> Option<Vec<u8>> {
        let output = there
            .output(["cat-file", "blob", &format!("{commit}:{path}")])
            .ok()?;
        output.status.success().then_some(output.stdout)
    };
    for path in &changed {
        let at = top.join(path);
        let Ok(meta) = at.symlink_metadata() else {
            continue;
        };
        if !meta.is_file() || meta.len() > LARGEST {
            continue;
        }
        // Read as cuekit reads its own files: no link followed, a regular file, bounded.
        let written = crate::effects::store::read_limited(&at, LARGEST);
        let (Some(wanted), Ok(written)) = (blob(new, path), written) else {
            continue;
        };
        let held = blob(old, path);
        if wanted.starts_with(&written) && held.as_deref() != Some(&written[..]) {
            std::fs::remove_file(&at).map_err(|err| Error::io("remove", &at, err))?;
        }
    }
    Ok(())
}

/// Refuses a merge that would write over files of the user's that git does not track: a path
/// the merge adds where the worktree has a file or folder already, or under a name the worktree
/// has as a file. `read-tree -m -u` refuses untracked files in the way, but takes *ignored*
/// ones (a `settings.local`, an `out/` of results) as expendable: they are often the only copy.
fn refuse_files_in_the_way(there: &Git, old: &str, new: &str) -> Result<()> {
    let (top, added) = merge_paths(there, old, new, Some("--diff-filter=AT"))?;
    let mut in_the_way: Vec<String> = Vec::new();
    for path in &added {
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
        {
            // A `read-tree` that outlived the merge killed around it may still be writing.
            wait_for_index_lock(there, name, new)?;
            if let Some(finished) = follow(there, name, old, new)? {
                done.push(finished);
            }
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

/// How long a merge waits for a git still writing the checkout's index (a `read-tree` that
/// outlived the merge killed around it) before it judges the checkout.
const INDEX_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Waits while the checkout's `index.lock` is there; one still there after
/// [`INDEX_LOCK_WAIT`] is refused (the journal stays), saying where the branch is.
fn wait_for_index_lock(there: &Git, name: &str, new: &str) -> Result<()> {
    let lock = git_path(there, "index.lock")?;
    let started = std::time::Instant::now();
    while lock.exists() {
        if started.elapsed() >= INDEX_LOCK_WAIT {
            return Err(at_the_merge(
                name,
                new,
                &format!(
                    "{} is still there (a git at work, or one killed)",
                    lock.display()
                ),
            )
            .with_hint(format!(
                "commit nothing in that checkout yet; once no git runs there, remove {} and run \
                 `cuekit merge` again: it first brings the checkout up to the branch",
                lock.display()
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(())
}

/// The recovery rule for a branch at `new` (see the module): the checkout brought up to it
/// and what was done, in words; `None` when it already shows `new` (or was moved on by hand
/// in a way that is not the merge's). Refuses, the journal kept, a checkout that is neither.
fn follow(there: &Git, name: &str, old: &str, new: &str) -> Result<Option<String>> {
    let branch = name.trim_start_matches("refs/heads/");
    let short = &new[..new.len().min(12)];
    let finished = format!("finished an interrupted merge: {branch} now shows {short}");
    if there.yes(["diff-index", "--cached", "--quiet", old, "--"])? {
        clear_partial_writes(there, old, new)?;
        there
            .run(["read-tree", "-m", "-u", old, new])
            .map_err(|err| {
                at_the_merge(
                    name,
                    new,
                    &format!("its checkout still cannot follow: {}", err.message),
                )
                .with_hint(
                    "move the files git names out of the way (or make room), then merge \
                         again: the checkout is brought up to the branch first",
                )
            })?;
        return Ok(Some(finished));
    }
    if !there.yes(["diff-index", "--cached", "--quiet", new, "--"])? {
        // The index is neither the old head nor the merge: someone moved on by hand.
        return Ok(None);
    }
    if there.yes(["diff", "--quiet", "--"])? {
        return Ok(None);
    }
    // The index shows the merge but files it adds or changes are missing or half-written
    // (its `read-tree` stopped, or it and a retry crossed): they are written again. Any other
    // change is the user's, and refused with the journal kept.
    let mut missing = Vec::new();
    let (top, changed) = merge_paths(there, old, new, None)?;
    for path in &changed {
        if !top.join(path).exists() {
            missing.push(path.to_string());
        }
    }
    clear_partial_writes(there, old, new)?;
    for path in &changed {
        if !top.join(path).exists() && !missing.iter().any(|m| m == path) {
            missing.push(path.to_string());
        }
    }
    if !missing.is_empty() {
        let mut args = vec!["checkout-index", "-f", "--"];
        args.extend(missing.iter().map(String::as_str));
        there.run(args)?;
    }
    if there.yes(["diff", "--quiet", "--"])? {
        return Ok(Some(finished));
    }
    Err(at_the_merge(
        name,
        new,
        "its checkout has changes that are not the merge's",
    )
    .with_hint(
        "commit nothing in that checkout yet (`git status` shows the changes); move your own \
         changes away, then run `cuekit merge` again: it first brings the checkout up to the \
         branch",
    ))
}

/// A refusal that says the branch already holds the merge while its checkout does not show it.
fn at_the_merge(name: &str, new: &str, why: &str) -> Error {
    let branch = name.trim_start_matches("refs/heads/");
    Error::new(
        ErrorCode::InvalidState,
        format!(
            "an earlier merge moved {branch} to {} but its checkout does not show it yet: {why}; \
             {branch} is at the merge (nothing of it is lost)",
            &new[..new.len().min(12)]
        ),
    )
}
