//! Reading a task's work on git's safe paths only. A child can rewrite everything in its
//! checkout (its `.git` file, `.gitattributes`, a FIFO for an index) and, in a repository of
//! its own, everything in its git dir; cuekit's git therefore never discovers a repository
//! from the checkout and never reads the child's config, hooks, attributes or index:
//! - committed work of a task in its own repository comes by `git fetch` run in the user's
//!   repository from the git dir the registry recorded (git's path for an untrusted peer:
//!   upload-pack reads no hook or filter, every object is fsck'ed, nothing is fetched lazily);
//! - uncommitted work is a snapshot taken with the user's git dir (which a sandboxed child
//!   cannot reach), an index cuekit owns in the task directory and `GIT_WORK_TREE` the
//!   recorded checkout, its attributes read from the empty tree;
//! - every call has a deadline ([`super::deadline`]): a tree that makes git wait is unknown.

use std::path::{Path, PathBuf};

use super::{Git, args};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::store::WorktreePlacement;

/// File names in the task directory: cuekit's own index of the checkout, and the commit it was
/// last read from.
const INDEX: &str = "work.index";
const INDEX_TIP: &str = "work.index.tip";
/// The last tree a view took, with the checkout's fingerprint then (or that git timed out).
const LAST_TREE: &str = "work.tree";
/// The fingerprint of a task repository's refs at its last fetch.
const FETCHED: &str = "work.fetched";
/// How long a view leaves a tree that made git time out before it tries git again.
const RETRY_TIMED_OUT_SECS: u64 = 300;

/// Where a repository keeps its refs, as `lstat` sees them: `HEAD`, `packed-refs`, the reflog
/// of `HEAD` and every file under `refs/`.
fn refs_print(git_dir: &Path) -> Option<u64> {
    let refs = super::fingerprint::of(&git_dir.join("refs"), None)?;
    Some(
        ["HEAD", "packed-refs", "logs/HEAD"]
            .iter()
            .fold(refs, |acc, file| {
                acc.rotate_left(17) ^ super::fingerprint::stat_of(&git_dir.join(file))
            }),
    )
}

/// The upload side of a fetch from a task repository, inside bubblewrap
/// ([`crate::domain::sandbox::upload_pack_command`]): the child's git dir is read only where the child
/// itself could read.
fn upload_pack(git_dir: &Path, objects: &Path) -> Result<String> {
    let refused = |why: &str| {
        Error::new(
            ErrorCode::SandboxUnavailable,
            format!("cannot read the task's repository safely: {why}"),
        )
        .with_hint("install bubblewrap (a sandboxed task's repository is read inside one)")
    };
    let bwrap =
        crate::effects::which::find_on_path("bwrap").ok_or_else(|| refused("no bwrap on PATH"))?;
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(|home| home.canonicalize().ok())
        .ok_or_else(|| refused("HOME is not a directory"))?;
    let hidden =
        crate::domain::sandbox::hidden_roots(&home, &crate::effects::store::private_dirs());
    let reader = crate::effects::owner::reader_of(git_dir);
    crate::domain::sandbox::upload_pack_command(
        &bwrap.to_string_lossy(),
        &hidden,
        git_dir,
        objects,
        reader.as_ref(),
    )
}

/// Stages every change in the work tree, as `git add --all` would, without ever starting git
/// inside a nested repository (`add` runs `git status` in each submodule it holds, which reads
/// that repository's config): the changed tracked paths come from `diff-files`, with
/// submodules judged by their `HEAD` alone, the untracked ones from `ls-files`, and
/// `update-index` takes both. An index `reused` from an earlier look, seeded from `base` then,
/// may hold files that look staged, untracked by `base`, and ignored now (a line a child added
/// to `info/exclude` after that look): they go, so the tree is the same whichever looks came
/// before (once in a loaded run `diff` showed a file the child had hidden).
pub(super) fn stage_all(git: &Git, base: &str, reused: bool) -> Result<()> {
    if reused {
        drop_newly_ignored(git, base)?;
    }
    let changed = git.run([
        "diff-files",
        "--ignore-submodules=dirty",
        "-z",
        "--name-only",
    ])?;
    let untracked = git.run(["ls-files", "-z", "--others", "--exclude-standard"])?;
    let mut paths = Vec::new();
    for path in changed.split('\0').chain(untracked.split('\0')) {
        let path = path.trim_end_matches('/');
        if !path.is_empty() {
            paths.extend_from_slice(path.as_bytes());
            paths.push(0);
        }
    }
    if !paths.is_empty() {
        let update = ["update-index", "--add", "--remove", "-z", "--stdin"];
        let update: Vec<std::ffi::OsString> = update.iter().map(Into::into).collect();
        git.run_with(&update, &[], &paths)?;
    }
    Ok(())
}

/// Removes from the index the entries ignored now that `base` does not hold.
fn drop_newly_ignored(git: &Git, base: &str) -> Result<()> {
    let ignored = git.run([
        "ls-files",
        "-z",
        "--cached",
        "--ignored",
        "--exclude-standard",
    ])?;
    if ignored.split('\0').all(str::is_empty) {
        return Ok(());
    }
    let in_base = git.run(["ls-tree", "-r", "-z", "--name-only", base])?;
    let in_base: std::collections::HashSet<&str> = in_base.split('\0').collect();
    let mut paths = Vec::new();
    for path in ignored.split('\0').filter(|path| !path.is_empty()) {
        if !in_base.contains(path) {
            paths.extend_from_slice(path.as_bytes());
            paths.push(0);
        }
    }
    if !paths.is_empty() {
        let update = ["update-index", "--force-remove", "-z", "--stdin"];
        let update: Vec<std::ffi::OsString> = update.iter().map(Into::into).collect();
        git.run_with(&update, &[], &paths)?;
    }
    Ok(())
}

/// Copies cuekit's kept index, its modification time with it: git trusts an entry's stat
/// data only for a file older than the index, and a copy dated now would make a file
/// rewritten in the second the index was written (same size) read as unchanged.
pub(super) fn copy_index(kept: &Path, index: &Path) -> bool {
    let Ok(modified) = std::fs::symlink_metadata(kept).and_then(|m| m.modified()) else {
        return false;
    };
    std::fs::copy(kept, index).is_ok()
        && std::fs::OpenOptions::new()
            .write(true)
            .open(index)
            .and_then(|file| file.set_modified(modified))
            .is_ok()
}

/// A task's checkout as the registry placed it.
pub struct Checkout<'a> {
    pub placed: &'a WorktreePlacement,
    /// The task directory, where cuekit keeps its index of the checkout.
    pub scratch: &'a Path,
}

impl Checkout<'_> {
    /// Git in the user's repository.
    pub fn root(&self) -> Git {
        Git::new(&self.placed.repo_root)
    }

    /// The task's committed work, as a commit of the user's repository: its branch's tip, or
    /// for a task in its own repository what its `HEAD` names, fetched when the files its
    /// refs live in moved since the last fetch (a look that finds them as they were runs no
    /// fetch: stale only for a child that rewrote them within a timestamp's granularity).
    pub fn tip(&self) -> Result<String> {
        self.fetch(false)?;
        self.resolve_tip()
    }

    /// [`Checkout::tip`], fetched whatever the refs' files say: what a merge, a
    /// `--base-from` or a cleanup acts on.
    pub fn fresh_tip(&self) -> Result<String> {
        self.fetch(true)?;
        self.resolve_tip()
    }

    fn resolve_tip(&self) -> Result<String> {
        self.root()
            .resolve(&format!("{}^{{commit}}", self.placed.work_ref()))
    }

    fn fetch(&self, always: bool) -> Result<()> {
        let (Some(into), Some(from)) = (&self.placed.tip_ref, &self.placed.git_dir) else {
            return Ok(());
        };
        if !from.is_dir() {
            // Gone (removed with the task): what was fetched last stands.
            return Ok(());
        }
        // Taken before the fetch, so a move during it shows next time.
        let print = refs_print(from);
        let memo = self.scratch.join(FETCHED);
        let seen = crate::effects::store::read_small(&memo).ok();
        if !always
            && print.is_some()
            && seen.as_deref() == print.map(|p| p.to_be_bytes().to_vec()).as_deref()
        {
            return Ok(());
        }
        let upload_pack = upload_pack(from, &self.placed.common_dir.join("objects"))?;
        self.root()
            .on_task_tree()
            .run_with(
                &args::fetch_work(from, into, &upload_pack),
                &args::fetch_config(),
                b"",
            )
            .map_err(|err| Error {
                message: format!("cannot fetch the task's commits: {}", err.message),
                ..err
            })?;
        if let Some(print) = print {
            let _ = crate::effects::store::write_atomic(&memo, &print.to_be_bytes());
        }
        Ok(())
    }

    /// The tree of all the task's work: its committed work with the checkout's files as they
    /// are now (untracked ones included, ignored ones not), or the tip's tree once the checkout
    /// is gone.
    pub fn tree(&self) -> Result<String> {
        let tip = self.tip()?;
        self.tree_from(&tip)
    }

    /// [`Checkout::tree`] for a view (`status`, `list`, `top`): taken again only when the
    /// checkout's [`Checkout::fingerprint`] moved, so a look at many tasks runs git only for
    /// those that changed; a tree that made git time out costs its deadline once in
    /// [`RETRY_TIMED_OUT_SECS`], not on every look.
    pub fn tree_for_view(&self) -> Result<String> {
        let print = self.fingerprint();
        let memo = self.scratch.join(LAST_TREE);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if let Ok(bytes) = crate::effects::store::read_small(&memo) {
            let text = String::from_utf8_lossy(&bytes);
            let (seen, rest) = text.split_once(' ').unwrap_or(("", ""));
            match rest.strip_prefix('!') {
                // A tree that made git time out is not tried again for a while, however the
                // checkout changes: a child could otherwise cost every look a deadline.
                Some(failed) => {
                    let (at, said) = failed.split_once(' ').unwrap_or(("0", failed));
                    if now.saturating_sub(at.parse().unwrap_or(0)) < RETRY_TIMED_OUT_SECS {
                        return Err(Error::new(ErrorCode::GitTimedOut, said.trim().to_string()));
                    }
                }
                None if print.is_some_and(|p| seen == format!("{p:016x}")) => {
                    return Ok(rest.trim().to_string());
                }
                None => {}
            }
        }
        let tree = self.tree();
        let remembered = match &tree {
            Ok(tree) => print.map(|p| format!("{p:016x} {tree}")),
            Err(err) if err.code == ErrorCode::GitTimedOut => {
                Some(format!("- !{now} {}", err.message))
            }
            Err(_) => None,
        };
        if let Some(remembered) = remembered {
            let _ =
                crate::effects::store::write_atomic(&memo, format!("{remembered}\n").as_bytes());
        }
        tree
    }

    /// [`Checkout::tree`] for a tip already fetched.
    pub fn tree_from(&self, tip: &str) -> Result<String> {
        if !self.placed.path.is_dir() {
            return self.root().line(["rev-parse", &format!("{tip}^{{tree}}")]);
        }
        // Its folder is proved each time: a folder another user could rename entries in would
        // let them hand in a tree of their own as the task's work.
        super::place::prove_checkout(&self.placed.path)?;
        // A copy of cuekit's index per process and call (its stat cache kept), put back when
        // done: two looks at once (two processes, or two threads of the monitor: a tick's view
        // and a task's check) never share an index lock.
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let kept = self.scratch.join(INDEX);
        let index = self
            .scratch
            .join(format!("{INDEX}.{}.{call}", std::process::id()));
        let git = Git::over(&self.placed.common_dir, &self.placed.path, &index);
        let seeded_from = crate::effects::store::read_small(&self.scratch.join(INDEX_TIP)).ok();
        let reuse = seeded_from.as_deref() == Some(tip.as_bytes()) && copy_index(&kept, &index);
        let tree = (|| {
            if !reuse {
                git.run(["read-tree", tip])?;
            }
            stage_all(&git, tip, reuse)?;
            git.line(["write-tree"])
        })();
        match &tree {
            Ok(_) => {
                if std::fs::rename(&index, &kept).is_ok() && !reuse {
                    let _ = crate::effects::store::write_atomic(
                        &self.scratch.join(INDEX_TIP),
                        tip.as_bytes(),
                    );
                }
            }
            Err(_) => {
                let _ = std::fs::remove_file(&index);
            }
        }
        tree
    }

    /// Untracked files of the checkout that the excludes file `rules` does not ignore but the
    /// checkout's own rules do (what [`Checkout::tree_from`] leaves out): staged as that does,
    /// with an index of cuekit's, then listed by `ls-files --others` with `rules` alone (no
    /// `.gitignore` of the checkout's, no `info/exclude`, no `core.excludesFile`).
    pub fn hidden_files(&self, tip: &str, rules: &Path) -> Result<Vec<String>> {
        if !self.placed.path.is_dir() {
            return Ok(Vec::new());
        }
        super::place::prove_checkout(&self.placed.path)?;
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let index = self
            .scratch
            .join(format!("{INDEX}.{}.hidden.{call}", std::process::id()));
        let git = Git::over(&self.placed.common_dir, &self.placed.path, &index);
        let seeded_from = crate::effects::store::read_small(&self.scratch.join(INDEX_TIP)).ok();
        let listed = (|| {
            let reuse = seeded_from.as_deref() == Some(tip.as_bytes())
                && copy_index(&self.scratch.join(INDEX), &index);
            if !reuse {
                git.run(["read-tree", tip])?;
            }
            stage_all(&git, tip, reuse)?;
            let mut exclude = std::ffi::OsString::from("--exclude-from=");
            exclude.push(rules);
            git.run([
                std::ffi::OsString::from("ls-files"),
                "-z".into(),
                "--others".into(),
                exclude,
            ])
        })();
        let _ = std::fs::remove_file(&index);
        Ok(listed?
            .split('\0')
            .filter(|path| !path.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// Whether the work may have moved since a look, decided without git: the checkout's files
    /// ([`super::fingerprint`]) and the files a commit rewrites (its ref, `HEAD` and reflog of
    /// a task repository; the branch's ref of a worktree). `None`: only git can tell.
    pub fn fingerprint(&self) -> Option<u64> {
        let files = super::fingerprint::of(&self.placed.path, None)?;
        // What outside the checkout changes which files git adds: the repository's
        // `info/exclude` and git's default user excludes file (a line a child appends there
        // after a look must not have that look's tree served again).
        let excludes = [
            Some(self.placed.common_dir.join("info/exclude")),
            super::ignore_rules::default_global(),
        ];
        let files = excludes.iter().flatten().fold(files, |acc, file| {
            acc.rotate_left(17) ^ super::fingerprint::stat_of(file)
        });
        match self
            .placed
            .git_dir
            .as_ref()
            .filter(|_| self.placed.own_repo())
        {
            Some(dir) => Some(files.rotate_left(17) ^ refs_print(dir)?),
            None => {
                let branch = Path::new("refs/heads").join(&self.placed.branch);
                let watched = [
                    self.placed.common_dir.join(&branch),
                    self.placed.common_dir.join("packed-refs"),
                ];
                Some(watched.iter().fold(files, |acc, file| {
                    acc.rotate_left(17) ^ super::fingerprint::stat_of(file)
                }))
            }
        }
    }

    /// The git dir cuekit runs git in for this checkout (a worktree's admin dir, the task's
    /// own repository): the one recorded, else (records made before it was kept) the one the
    /// worktree's `.git` file names, if it lies in the repository's `worktrees/`.
    pub fn git_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.placed.git_dir {
            return Some(dir.clone());
        }
        let admin = self.placed.common_dir.join("worktrees");
        crate::effects::store::read_small(&self.placed.path.join(".git"))
            .ok()
            .and_then(|bytes| {
                let text = String::from_utf8(bytes).ok()?;
                Some(PathBuf::from(text.trim().strip_prefix("gitdir: ")?))
            })
            .filter(|dir| dir.parent() == Some(admin.as_path()))
    }

    /// Git in the checkout through its recorded git dir, with cuekit's index of it: for the
    /// few commands that must act on the checkout itself (a merge's rebase of a worktree).
    pub fn own_git(&self) -> Result<Git> {
        let dir = self.git_dir().ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidState,
                format!(
                    "cuekit has no record of {}'s git dir",
                    self.placed.path.display()
                ),
            )
        })?;
        Ok(Git::over(&dir, &self.placed.path, &dir.join("index")))
    }
}
