//! The ignore rules a removal trusts: the base's, never the child's. git calls a file ignored
//! by the `.gitignore` files in the checkout (the child writes those: a folder whose own
//! `.gitignore` says `*`), by the repository's `info/exclude` (an unsandboxed child can append
//! to it: a worktree shares its repository's git dir) and by the user's `core.excludesFile`.
//! What a removal may drop unasked is only what the rules the task started with ignore:
//! - the user's excludes as they were at submit — `core.excludesFile` (or git's default
//!   `~/.config/git/ignore`) and the repository's `info/exclude` — kept in the task's folder
//!   ([`keep_user_excludes`]);
//! - the `.gitignore` files committed at the task's base commit, read from the user's
//!   repository (a link is no `.gitignore` to git, and none here).
//!
//! They are written as one excludes file read at the top ([`base_rules`]): each folder's
//! patterns anchored under its folder, shallow folders first, so a deeper folder's pattern wins
//! as it does in git (the last match in one list wins).

use std::path::{Path, PathBuf};

use super::Git;
use super::checkout::Checkout;
use crate::domain::error::{Error, ErrorCode, Result};

/// The file in the task's folder holding the user's excludes as they were at submit.
pub const KEPT: &str = "base.excludes";
/// The most read of one excludes file (the user's, or one `.gitignore`).
const LIMIT: u64 = 1024 * 1024;

/// The user's excludes for the repository now: `core.excludesFile` (git's default when unset),
/// then `info/exclude`, which git ranks above it. A file that cannot be read adds nothing.
pub fn user_excludes(repo_root: &Path, common_dir: &Path) -> Vec<u8> {
    let configured = Git::new(repo_root)
        .line(["config", "--path", "--get", "core.excludesFile"])
        .ok()
        .filter(|path| !path.is_empty())
        .map(PathBuf::from);
    let global = configured.or_else(default_global);
    let mut rules = Vec::new();
    for file in global.into_iter().chain([common_dir.join("info/exclude")]) {
        if let Ok(bytes) = read_bounded(&file) {
            rules.extend_from_slice(&bytes);
            rules.push(b'\n');
        }
    }
    rules
}

/// git's own default for `core.excludesFile`.
pub(super) fn default_global() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("git/ignore"))
}

/// A file of the user's, a dotfiles link followed to a regular file (never a FIFO), at most
/// [`LIMIT`] bytes.
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::effects::store::read_limited(&path.canonicalize()?, LIMIT)
}

/// Keeps the user's excludes as they are now in the task's folder, for its removal.
pub fn keep_user_excludes(repo_root: &Path, common_dir: &Path, task_dir: &Path) -> Result<()> {
    crate::effects::store::write_atomic(&task_dir.join(KEPT), &user_excludes(repo_root, common_dir))
}

/// The user's excludes kept at submit; a task made before they were kept (or a checkout a
/// submit cut short left) has them read now.
fn kept_user_excludes(task_dir: &Path, repo_root: &Path, common_dir: &Path) -> Vec<u8> {
    crate::effects::store::read_limited(&task_dir.join(KEPT), LIMIT)
        .unwrap_or_else(|_| user_excludes(repo_root, common_dir))
}

/// The rules the task started with, as one excludes file's bytes: the user's excludes kept at
/// submit, then the base commit's `.gitignore` files, shallow folders first.
pub fn base_rules(
    root: &Git,
    base_commit: &str,
    task_dir: &Path,
    repo_root: &Path,
    common_dir: &Path,
) -> Result<Vec<u8>> {
    let mut rules = kept_user_excludes(task_dir, repo_root, common_dir);
    let listing = root.output([
        "ls-tree",
        "-r",
        "-z",
        "--full-tree",
        "--end-of-options",
        base_commit,
    ])?;
    if !listing.status.success() {
        return Err(super::failed(&["ls-tree".into()], &listing));
    }
    let mut files: Vec<(String, String)> = listing
        .stdout
        .split(|byte| *byte == 0)
        .filter_map(|entry| {
            let entry = std::str::from_utf8(entry).ok()?;
            let (meta, path) = entry.split_once('\t')?;
            let mut meta = meta.split(' ');
            let (mode, kind, id) = (meta.next()?, meta.next()?, meta.next()?);
            let name = path.rsplit('/').next()?;
            (name == ".gitignore" && kind == "blob" && mode != "120000")
                .then(|| (path.to_string(), id.to_string()))
        })
        .collect();
    files.sort_by_key(|(path, _)| path.matches('/').count());
    for (path, id) in files {
        let dir = path.strip_suffix(".gitignore").unwrap_or("");
        let blob = root.output(["cat-file", "blob", &id])?;
        if !blob.status.success() {
            return Err(Error::new(
                ErrorCode::Io,
                format!("cannot read the base's {path} ({id})"),
            ));
        }
        let text = String::from_utf8_lossy(&blob.stdout[..blob.stdout.len().min(LIMIT as usize)]);
        for line in text.split('\n') {
            if let Some(rule) = from_folder(dir.trim_end_matches('/'), line) {
                rules.extend_from_slice(rule.as_bytes());
                rules.push(b'\n');
            }
        }
    }
    Ok(rules)
}

/// Untracked files of `checkout` that only its own ignore rules hide (a `.gitignore` the child
/// wrote or changed, a line added to `info/exclude` since submit), seen against its commit
/// `tip`: work a removal must keep. The rules file lives in the task's folder for the call.
pub fn hidden(checkout: &Checkout, tip: &str) -> Result<Vec<String>> {
    let placed = checkout.placed;
    if !placed.path.is_dir() {
        return Ok(Vec::new());
    }
    let rules = base_rules(
        &checkout.root(),
        &placed.base_commit,
        checkout.scratch,
        &placed.repo_root,
        &placed.common_dir,
    )?;
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = checkout
        .scratch
        .join(format!("base.rules.{}.{call}", std::process::id()));
    crate::effects::store::write_atomic(&file, &rules)?;
    let found = checkout.hidden_files(tip, &file);
    let _ = std::fs::remove_file(&file);
    // A subtask's own folder (`.cuekit/tasks/<id>`, its `.gitignore` cuekit's) is no work.
    Ok(found?
        .into_iter()
        .filter(|path| !path.starts_with(".cuekit/tasks/") && !path.contains("/.cuekit/tasks/"))
        .collect())
}

/// Files named in a keep reason: the first few and how many there are.
pub fn named(files: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = files
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if files.len() > SHOWN {
        text.push_str(&format!(", … ({} in all)", files.len()));
    }
    text
}

/// Pure: one line of the `.gitignore` in folder `dir` (`""` at the top, no trailing `/`) as a
/// line of an excludes file read at the top, meaning the same paths; `None` for a blank line or
/// a comment. A pattern with no `/` but a trailing one matches at any depth below its folder,
/// any other is anchored there (gitignore(5)).
fn from_folder(dir: &str, line: &str) -> Option<String> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.trim_end_matches(' ').is_empty() || line.starts_with('#') {
        return None;
    }
    if dir.is_empty() {
        return Some(line.to_string());
    }
    let (negated, body) = match line.strip_prefix('!') {
        Some(body) => ("!", body),
        None => ("", line),
    };
    let folder: String = dir
        .chars()
        .flat_map(|c| match c {
            '*' | '?' | '[' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    let anchored = body.strip_suffix('/').unwrap_or(body).contains('/');
    Some(match (anchored, body.starts_with('/')) {
        (false, _) => format!("{negated}/{folder}/**/{body}"),
        (true, true) => format!("{negated}/{folder}{body}"),
        (true, false) => format!("{negated}/{folder}/{body}"),
    })
}

#[cfg(test)]
mod tests {
    use super::from_folder;

    #[test]
    fn a_folders_patterns_are_anchored_under_it() {
        assert_eq!(from_folder("", "*.log"), Some("*.log".into()));
        assert_eq!(from_folder("a/b", "*.log"), Some("/a/b/**/*.log".into()));
        assert_eq!(from_folder("a", "out/"), Some("/a/**/out/".into()));
        assert_eq!(from_folder("a", "/out"), Some("/a/out".into()));
        assert_eq!(from_folder("a", "x/y"), Some("/a/x/y".into()));
        assert_eq!(
            from_folder("a", "!keep.log"),
            Some("!/a/**/keep.log".into())
        );
        assert_eq!(from_folder("a", "!/x/y"), Some("!/a/x/y".into()));
        assert_eq!(from_folder("we*rd[", "f"), Some("/we\\*rd\\[/**/f".into()));
        assert_eq!(from_folder("a", "# note"), None);
        assert_eq!(from_folder("a", "   "), None);
        assert_eq!(from_folder("a", "x\r"), Some("/a/**/x".into()));
    }
}
