//! What of a child's work a removal would lose, taken before anything is removed: every ref of
//! the task's git dir (a repository of its own: its branches, tags and stash; a worktree: its
//! `HEAD` and its own refs), the tips its reflogs name, and each submodule's state (files that
//! differ from its `HEAD`, commits its remote does not hold). The checkout's own uncommitted and
//! untracked files are [`super::cleanup`]'s.
//!
//! Nothing here runs git in a repository the child can rewrite: refs and reflogs are read as
//! files (no link followed, bounded), and every question about commits goes to a bare
//! repository cuekit makes in the task directory (`inventory.git`: cuekit's config, no hook,
//! no attributes), which borrows the objects of the user's repository, the task's git dir and
//! its submodules' through `objects/info/alternates`. A submodule's files are staged with that
//! repository, an index of cuekit's and the empty tree as attribute source, as the checkout's
//! own are ([`super::checkout`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Git;
use super::checkout::Checkout;
use crate::domain::error::{Error, ErrorCode, Result};

/// cuekit's bare repository for the questions, in the task directory.
const REPO: &str = "inventory.git";
/// How deep submodules are followed, and how many entries a git dir's folders may hold.
const MAX_DEPTH: usize = 8;
const MAX_ENTRIES: usize = 100_000;
/// The most commits of a reflog compared with the kept ones by their changes.
const PATCH_LIMIT: usize = 50;
/// The most a reflog file is read of.
const REFLOG_LIMIT: u64 = 64 * 1024 * 1024;

/// Where a removal would lose work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Holder {
    /// A ref (a branch, a tag, the stash, a detached `HEAD`) of the task's git dir.
    Ref,
    /// Tips a reflog of the task's git dir names.
    Reflog,
    /// Commits of a submodule that neither its remote nor the base holds.
    SubmoduleCommits,
    /// A submodule's files that differ from its `HEAD` (changed or untracked).
    SubmoduleChanges,
    /// The checkout's own files, changed since its work was kept.
    Files,
    /// A process working in the checkout (its working directory inside): what it writes
    /// next would have nowhere to go.
    Process,
    /// Untracked files of the checkout that only its own ignore rules hide — a `.gitignore`
    /// the child wrote or changed, an `info/exclude` line added since submit
    /// ([`super::ignore_rules`]); `name` lists them.
    Hidden,
}

/// One thing a removal would lose: what holds it, its name and where it lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unsaved {
    pub holder: Holder,
    /// The ref's or reflog's name (`refs/stash`, `logs/HEAD`), the submodule's path.
    pub name: String,
    /// The git dir or folder it lives in.
    pub place: PathBuf,
    /// Commits nothing kept holds (for a ref, a reflog, a submodule's commits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commits: Option<usize>,
}

impl std::fmt::Display for Unsaved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let commits = self.commits.unwrap_or(0);
        let place = self.place.display();
        match self.holder {
            Holder::Ref => write!(
                f,
                "{} in {place}: {commits} commit(s) kept nowhere else",
                self.name
            ),
            Holder::Reflog => write!(
                f,
                "reflog {} in {place}: {commits} commit(s) kept nowhere else",
                self.name
            ),
            Holder::SubmoduleCommits => write!(
                f,
                "submodule {} ({place}): {commits} commit(s) not in its remote",
                self.name
            ),
            Holder::SubmoduleChanges => write!(
                f,
                "submodule {} ({place}): changed or untracked files",
                self.name
            ),
            Holder::Files => write!(f, "files in {place} changed since its work was kept"),
            Holder::Process => write!(f, "process {} works in {place}", self.name),
            Holder::Hidden => write!(
                f,
                "untracked files in {place} that only the task's own ignore rules hide: {}",
                self.name
            ),
        }
    }
}

/// What a removal keeps: commits whose history is saved (the base, cuekit's merge of the
/// task, a race's kept ref, the task's fetched tip).
pub struct Kept<'a> {
    pub commits: &'a [String],
}

/// The inventory of `checkout`, whose work tree's files are `tree` (`None`: the checkout is
/// gone). An `Err` is a doubt, which keeps the checkout.
pub fn take(checkout: &Checkout, tree: Option<&str>, kept: &Kept) -> Result<Vec<Unsaved>> {
    let placed = checkout.placed;
    let Some(git_dir) = checkout.git_dir() else {
        if placed.path.exists() && placed.own_repo() {
            return Err(doubt("cuekit has no record of the task's git dir"));
        }
        return Ok(Vec::new());
    };
    let has_dir = is_real_dir(&git_dir);
    let modules = if has_dir {
        module_dirs(&git_dir.join("modules"), 0)?
    } else {
        Vec::new()
    };
    let repo = Inventory::open(
        checkout.scratch,
        placed,
        has_dir.then_some(&*git_dir),
        &modules,
    )?;
    let mut found = Vec::new();
    if has_dir {
        found.extend(repo.own_refs(&git_dir, placed.own_repo(), kept)?);
    }
    if !modules.is_empty() {
        let base_links = repo.gitlinks_of(&placed.base_commit)?;
        for module in &modules {
            found.extend(repo.module_commits(module, &base_links)?);
        }
    }
    if let Some(tree) = tree.filter(|_| placed.path.is_dir()) {
        repo.submodule_changes(&placed.path, "", tree, 0, &mut found)?;
    }
    Ok(found)
}

/// The submodules a child changed in `checkout`, whose work is `tree`: those whose commit
/// differs from the one the base records (a gitlink added, moved or removed) and those whose
/// files differ from their `HEAD`; sorted. For `diff`, `result` and a merge's refusal.
pub fn changed_submodules(checkout: &Checkout, tree: &str) -> Result<Vec<String>> {
    let placed = checkout.placed;
    let root = Git::new(&placed.repo_root);
    let listed = |rev: &str| -> Result<BTreeSet<(String, String)>> {
        let out = root.run(["ls-tree", "-r", "-z", "--end-of-options", rev])?;
        Ok(gitlinks(&out).into_iter().collect())
    };
    let (base, now) = (listed(&placed.base_commit)?, listed(tree)?);
    let mut changed: BTreeSet<String> = base
        .symmetric_difference(&now)
        .map(|(path, _)| path.clone())
        .collect();
    if placed.path.is_dir() && !now.is_empty() {
        let git_dir = checkout.git_dir().filter(|dir| is_real_dir(dir));
        let modules = match &git_dir {
            Some(dir) => module_dirs(&dir.join("modules"), 0)?,
            None => Vec::new(),
        };
        // The same alternates as a removal's inventory writes: one running beside this one
        // (`rm` while `result` reads) never finds the task's objects taken away.
        let repo = Inventory::open(checkout.scratch, placed, git_dir.as_deref(), &modules)?;
        let mut found = Vec::new();
        repo.submodule_changes(&placed.path, "", tree, 0, &mut found)?;
        changed.extend(found.into_iter().map(|unsaved| unsaved.name));
    }
    Ok(changed.into_iter().collect())
}

fn doubt(why: impl Into<String>) -> Error {
    Error::new(ErrorCode::Io, why.into())
}

fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
}

fn is_object_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The git dirs of the submodules under `modules` (names may hold `/`: a folder that is no
/// git dir is looked into), nested ones too.
fn module_dirs(modules: &Path, depth: usize) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    if depth > MAX_DEPTH || !is_real_dir(modules) {
        return Ok(found);
    }
    let mut pending = vec![modules.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|err| Error::io("read", &dir, err))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if path.join("HEAD").is_file() && is_real_dir(&path.join("objects")) {
                found.extend(module_dirs(&path.join("modules"), depth + 1)?);
                found.push(path);
            } else {
                pending.push(path);
            }
            if found.len() + pending.len() > MAX_ENTRIES {
                return Err(doubt(format!("too many folders in {}", modules.display())));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// A git dir's refs as files: `HEAD` when it names a commit, every loose ref under `refs/`,
/// and (`packed`) those of `packed-refs`. Symbolic refs are left out: what they point to is
/// listed.
fn refs_in(git_dir: &Path, packed: bool) -> Result<Vec<(String, String)>> {
    if git_dir.join("reftable").exists() {
        return Err(doubt(format!(
            "{} keeps its refs in a reftable, which cuekit does not read",
            git_dir.display()
        )));
    }
    let mut refs = Vec::new();
    if let Some(head) = read_text(&git_dir.join("HEAD"))? {
        let head = head.trim();
        if is_object_id(head) {
            refs.push(("HEAD".to_string(), head.to_string()));
        }
    }
    for (name, path) in files_under(git_dir, "refs")? {
        if let Some(text) = read_text(&path)? {
            let text = text.trim();
            if is_object_id(text) {
                refs.push((name, text.to_string()));
            } else if !text.starts_with("ref: ") {
                return Err(doubt(format!("unreadable ref {}", path.display())));
            }
        }
    }
    if packed && let Some(text) = read_text(&git_dir.join("packed-refs"))? {
        for line in text.lines().filter(|l| !l.starts_with(['#', '^'])) {
            if let Some((id, name)) = line.split_once(' ')
                && is_object_id(id)
                && !refs.iter().any(|(known, _)| known == name)
            {
                refs.push((name.to_string(), id.to_string()));
            }
        }
    }
    Ok(refs)
}

/// The regular files under `git_dir/top`, by their names relative to `git_dir`; links are not
/// followed.
fn files_under(git_dir: &Path, top: &str) -> Result<Vec<(String, PathBuf)>> {
    let mut files = Vec::new();
    let mut pending = vec![git_dir.join(top)];
    let mut seen = 0;
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(Error::io("read", &dir, err)),
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(doubt(format!("too many entries under {}", dir.display())));
            }
            let path = entry.path();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(path),
                Ok(kind) if kind.is_file() => {
                    let name = path.strip_prefix(git_dir).unwrap_or(&path);
                    files.push((name.to_string_lossy().into_owned(), path));
                }
                _ => {}
            }
        }
    }
    files.sort();
    Ok(files)
}

/// A small file of a git dir as text; `None` when it is not there.
fn read_text(path: &Path) -> Result<Option<String>> {
    match crate::effects::store::read_small(path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(Error::io("read", path, err)),
    }
}

/// The commits a reflog file names as new tips.
fn reflog_tips(path: &Path) -> Result<BTreeSet<String>> {
    let bytes = crate::effects::store::read_limited(path, REFLOG_LIMIT)
        .map_err(|err| Error::io("read", path, err))?;
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| line.split(' ').nth(1))
        .filter(|id| is_object_id(id) && id.bytes().any(|b| b != b'0'))
        .map(str::to_string)
        .collect())
}

/// cuekit's bare repository for one inventory, borrowing every object it asks about.
struct Inventory {
    git: Git,
    root: Git,
    dir: PathBuf,
}

impl Inventory {
    fn open(
        scratch: &Path,
        placed: &crate::effects::store::WorktreePlacement,
        git_dir: Option<&Path>,
        modules: &[PathBuf],
    ) -> Result<Inventory> {
        let dir = scratch.join(REPO);
        if !dir.join("HEAD").is_file() {
            make_bare(&dir)?;
        }
        let mut alternates = vec![placed.common_dir.join("objects")];
        alternates.extend(git_dir.map(|dir| dir.join("objects")));
        alternates.extend(modules.iter().map(|dir| dir.join("objects")));
        let mut text = String::new();
        for alternate in alternates.iter().filter(|dir| is_real_dir(dir)) {
            text.push_str(&alternate.to_string_lossy());
            text.push('\n');
        }
        let file = dir.join("objects/info/alternates");
        crate::effects::store::write_atomic(&file, text.as_bytes())?;
        Ok(Inventory {
            git: Git::at_git_dir(&dir).on_task_tree(),
            root: Git::new(&placed.repo_root),
            dir,
        })
    }

    /// How many commits `tips` reach that `kept` does not; missing objects are left out.
    fn unsaved(&self, tips: &BTreeSet<String>, kept: &BTreeSet<String>) -> Result<usize> {
        if tips.is_empty() {
            return Ok(0);
        }
        let count = self.rev_list(&["--count"], tips, kept)?;
        count
            .trim()
            .parse()
            .map_err(|_| doubt(format!("git rev-list answered '{}'", count.trim())))
    }

    /// `git rev-list OPTIONS` of `tips` not reachable from `not`, the commits on stdin.
    fn rev_list(
        &self,
        options: &[&str],
        tips: &BTreeSet<String>,
        not: &BTreeSet<String>,
    ) -> Result<String> {
        let mut input = String::new();
        for tip in tips {
            input.push_str(tip);
            input.push('\n');
        }
        for commit in not {
            input.push('^');
            input.push_str(commit);
            input.push('\n');
        }
        let mut words: Vec<std::ffi::OsString> = vec!["rev-list".into()];
        words.extend(options.iter().map(Into::into));
        words.extend(["--ignore-missing".into(), "--stdin".into()]);
        self.git.run_with(&words, &[], input.as_bytes())
    }

    /// The stable patch ids of `commits` (merges and empty commits have none).
    fn patch_ids(&self, commits: &str) -> Result<BTreeSet<String>> {
        if commits.trim().is_empty() {
            return Ok(BTreeSet::new());
        }
        let diff = ["diff-tree", "--stdin", "-p", "--no-color", "--no-ext-diff"];
        let diff: Vec<std::ffi::OsString> = diff.iter().map(Into::into).collect();
        let patches = self.git.run_with(&diff, &[], commits.as_bytes())?;
        let ids = ["patch-id", "--stable"];
        let ids: Vec<std::ffi::OsString> = ids.iter().map(Into::into).collect();
        let listed = self.git.run_with(&ids, &[], patches.as_bytes())?;
        Ok(listed
            .lines()
            .filter_map(|line| line.split(' ').next())
            .map(str::to_string)
            .collect())
    }

    /// [`Inventory::unsaved`] for a reflog's tips, less the commits whose change `kept`
    /// already holds as a copy of its own (what cuekit's `merge --rebase` replaced in the
    /// task's worktree). At most [`PATCH_LIMIT`] commits are compared; more count as unsaved.
    fn unsaved_changes(
        &self,
        tips: &BTreeSet<String>,
        with_refs: &BTreeSet<String>,
        kept: &[String],
    ) -> Result<usize> {
        let listed = self.rev_list(&[], tips, with_refs)?;
        let commits: Vec<&str> = listed.lines().filter(|l| !l.is_empty()).collect();
        if commits.is_empty() || commits.len() > PATCH_LIMIT || kept.is_empty() {
            return Ok(commits.len());
        }
        let kept: BTreeSet<String> = kept.iter().cloned().collect();
        // What the kept commits hold beyond the history the unsaved ones share with them.
        let shared: BTreeSet<String> = commits.iter().map(|c| c.to_string()).collect();
        let theirs = self.rev_list(&["--max-count=1000"], &kept, &shared)?;
        let saved = self.patch_ids(&theirs)?;
        let mut unsaved = 0;
        for commit in commits {
            let ids = self.patch_ids(&format!("{commit}\n"))?;
            if ids.is_empty() || !ids.is_subset(&saved) {
                unsaved += 1;
            }
        }
        Ok(unsaved)
    }

    /// The task git dir's refs and reflogs (a worktree's admin dir holds only its `HEAD`, its
    /// own refs and their reflogs: its branches live in the user's repository, which stays).
    fn own_refs(&self, git_dir: &Path, own: bool, kept: &Kept) -> Result<Vec<Unsaved>> {
        let mut kept_set: BTreeSet<String> = kept.commits.iter().cloned().collect();
        let mut found = Vec::new();
        let refs = refs_in(git_dir, own)?;
        let all: BTreeSet<String> = refs.iter().map(|(_, id)| id.clone()).collect();
        let mut tips = all.clone();
        let reflogs = files_under(git_dir, "logs")?;
        for (_, path) in &reflogs {
            tips.extend(reflog_tips(path)?);
        }
        // One question in the common case: nothing beyond what the removal keeps.
        if self.unsaved(&tips, &kept_set)? == 0 {
            return Ok(found);
        }
        if !own {
            // The user's repository stays: whatever its refs hold is kept.
            let listed = self.root.run(["for-each-ref", "--format=%(objectname)"])?;
            kept_set.extend(listed.lines().map(str::to_string));
            if self.unsaved(&tips, &kept_set)? == 0 {
                return Ok(found);
            }
        }
        // Something is unsaved: named ref by ref, then reflog by reflog.
        for (name, id) in &refs {
            let commits = self.unsaved(&BTreeSet::from([id.clone()]), &kept_set)?;
            if commits > 0 {
                found.push(unsaved(Holder::Ref, name, git_dir, Some(commits)));
            }
        }
        // A reflog's tips count beyond what the refs hold, which are named above.
        let mut with_refs = kept_set.clone();
        with_refs.extend(all);
        for (name, path) in &reflogs {
            let commits = self.unsaved_changes(&reflog_tips(path)?, &with_refs, kept.commits)?;
            if commits > 0 {
                found.push(unsaved(Holder::Reflog, name, git_dir, Some(commits)));
            }
        }
        Ok(found)
    }

    /// The gitlinks of `rev`'s tree in the user's repository: the submodule commits the base
    /// records.
    fn gitlinks_of(&self, rev: &str) -> Result<BTreeSet<String>> {
        let listed = self
            .root
            .run(["ls-tree", "-r", "-z", "--end-of-options", rev])?;
        Ok(gitlinks(&listed).into_iter().map(|(_, id)| id).collect())
    }

    /// A submodule's commits that neither its remote-tracking refs nor the base's gitlinks
    /// hold: its branches, tags, stash, `HEAD` and reflogs.
    fn module_commits(
        &self,
        module: &Path,
        base_links: &BTreeSet<String>,
    ) -> Result<Option<Unsaved>> {
        let refs = refs_in(module, true)?;
        let is_remote = |name: &str| name.starts_with("refs/remotes/");
        let mut kept: BTreeSet<String> = base_links.clone();
        kept.extend(
            refs.iter()
                .filter(|(n, _)| is_remote(n))
                .map(|(_, id)| id.clone()),
        );
        let mut tips: BTreeSet<String> = refs
            .iter()
            .filter(|(n, _)| !is_remote(n))
            .map(|(_, id)| id.clone())
            .collect();
        for (name, path) in files_under(module, "logs")? {
            if !name.starts_with("logs/refs/remotes/") {
                tips.extend(reflog_tips(&path)?);
            }
        }
        let commits = self.unsaved(&tips, &kept)?;
        let name = module
            .strip_prefix(
                module
                    .ancestors()
                    .find(|a| a.ends_with("modules"))
                    .unwrap_or(module),
            )
            .unwrap_or(module)
            .to_string_lossy()
            .into_owned();
        Ok((commits > 0).then(|| unsaved(Holder::SubmoduleCommits, &name, module, Some(commits))))
    }

    /// The tree of a submodule's files at `folder`, staged over its `HEAD` `commit` with an
    /// index of cuekit's. The index is kept per submodule (with the commit it was read from),
    /// so a later look hashes only the files that changed since; each call works on a copy of
    /// its own, put back when done, as [`super::checkout`] does with the checkout's.
    fn stage(&self, shown: &str, folder: &Path, commit: &str) -> Result<String> {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        shown.hash(&mut hasher);
        let name = format!("index-{:016x}", hasher.finish());
        let kept = self.dir.join(&name);
        let tip = self.dir.join(format!("{name}-tip"));
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let index = self
            .dir
            .join(format!("{name}.{}.{call}", std::process::id()));
        let seeded = crate::effects::store::read_small(&tip).ok();
        let reuse = seeded.as_deref() == Some(commit.as_bytes())
            && super::checkout::copy_index(&kept, &index);
        let over = Git::over(&self.dir, folder, &index);
        let staged = (|| {
            if !reuse {
                over.run(["read-tree", commit])?;
            }
            super::checkout::stage_all(&over, commit, reuse)?;
            over.line(["write-tree"])
        })();
        if staged.is_ok() && std::fs::rename(&index, &kept).is_ok() && !reuse {
            let _ = crate::effects::store::write_atomic(&tip, commit.as_bytes());
        } else {
            let _ = std::fs::remove_file(&index);
        }
        staged
    }

    /// The submodules of `tree` (at `prefix` in the checkout) whose files differ from their
    /// `HEAD`, nested ones in turn.
    fn submodule_changes(
        &self,
        checkout: &Path,
        prefix: &str,
        tree: &str,
        depth: usize,
        found: &mut Vec<Unsaved>,
    ) -> Result<()> {
        let listed = self
            .git
            .run(["ls-tree", "-r", "-z", "--end-of-options", tree])?;
        for (path, commit) in gitlinks(&listed) {
            let shown = format!("{prefix}{path}");
            let folder = checkout.join(&shown);
            if !is_real_dir(&folder) || is_empty_dir(&folder) {
                continue;
            }
            let staged = self.stage(&shown, &folder, &commit);
            // A commit none of the task's submodule repositories holds (a folder made a
            // repository by hand, a git dir the child moved), or files git could not read:
            // nothing proves it saved.
            let Ok(staged) = staged else {
                found.push(unsaved(Holder::SubmoduleChanges, &shown, &folder, None));
                continue;
            };
            let head_tree = self
                .git
                .line(["rev-parse", &format!("{commit}^{{tree}}")])?;
            if staged != head_tree {
                found.push(unsaved(Holder::SubmoduleChanges, &shown, &folder, None));
            }
            if depth < MAX_DEPTH {
                self.submodule_changes(checkout, &format!("{shown}/"), &staged, depth + 1, found)?;
            }
        }
        Ok(())
    }
}

/// A bare repository with nothing but what git needs to read objects, made without a git
/// process (an `init` costs one on every first inventory of a task).
fn make_bare(dir: &Path) -> Result<()> {
    for sub in ["objects/info", "refs/heads", "refs/tags"] {
        let path = dir.join(sub);
        std::fs::create_dir_all(&path).map_err(|err| Error::io("create", &path, err))?;
    }
    crate::effects::store::write_atomic(
        &dir.join("config"),
        b"[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
    )?;
    // Written last: a folder without it is made again.
    crate::effects::store::write_atomic(&dir.join("HEAD"), b"ref: refs/heads/main\n")
}

fn unsaved(holder: Holder, name: &str, place: &Path, commits: Option<usize>) -> Unsaved {
    Unsaved {
        holder,
        name: name.to_string(),
        place: place.to_path_buf(),
        commits,
    }
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
}

/// The gitlinks (path, commit) in `ls-tree -r -z` output.
fn gitlinks(listed: &str) -> Vec<(String, String)> {
    listed
        .split('\0')
        .filter_map(|entry| {
            let (meta, path) = entry.split_once('\t')?;
            let mut words = meta.split(' ');
            (words.next()? == "160000").then_some(())?;
            let _kind = words.next()?;
            Some((path.to_string(), words.next()?.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitlinks_are_read_from_a_tree_listing() {
        let id = "a".repeat(40);
        let listed = format!(
            "100644 blob {id}\tREADME\0160000 commit {id}\tvendor/lib\0040000 tree {id}\tsrc\0"
        );
        assert_eq!(gitlinks(&listed), [("vendor/lib".to_string(), id)]);
    }

    #[test]
    fn a_git_dirs_refs_are_read_as_files_and_symbolic_ones_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path();
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        std::fs::create_dir_all(git.join("refs/heads")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(git.join("refs/heads/side"), format!("{a}\n")).unwrap();
        std::fs::write(git.join("refs/stash"), "ref: refs/heads/side\n").unwrap();
        std::fs::write(
            git.join("packed-refs"),
            format!("# pack-refs\n{b} refs/heads/main\n^{a}\n{b} refs/heads/side\n"),
        )
        .unwrap();
        let refs = refs_in(git, true).unwrap();
        assert_eq!(
            refs,
            [
                ("refs/heads/side".to_string(), a.clone()),
                ("refs/heads/main".to_string(), b.clone())
            ]
        );
        std::fs::write(git.join("HEAD"), format!("{b}\n")).unwrap();
        assert_eq!(refs_in(git, false).unwrap()[0], ("HEAD".to_string(), b));
        std::fs::write(git.join("refs/heads/bad"), "nonsense").unwrap();
        assert!(
            refs_in(git, false).is_err(),
            "a ref it cannot read is a doubt"
        );
    }
}
