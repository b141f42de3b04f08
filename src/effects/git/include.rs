//! Untracked files a task needs in its new worktree (`.env`, build caches): `worktree.copy`
//! and `worktree.symlink` patterns, and the `.worktreeinclude` convention (files both
//! gitignored and listed there are copied). Nothing that exists in the worktree is overwritten.

use std::path::Path;

use super::{Git, args};
use crate::domain::error::{Error, Result};
use crate::effects::project::Root;

pub const INCLUDE_FILE: &str = ".worktreeinclude";

/// What to bring from the main checkout; patterns use gitignore syntax.
#[derive(Debug, Clone, Default)]
pub struct Includes {
    pub copy: Vec<String>,
    pub symlink: Vec<String>,
    /// Whether the repository's own `.worktreeinclude` counts.
    pub repository_list: bool,
}

/// Brings the matching untracked files of `main` into `worktree`; returns the paths brought.
///
/// The worktree holds the base commit's files, which may include links anywhere (a tracked
/// `config -> ~/.ssh`): every destination is proven to pass through no link before anything
/// is made there, and a destination that exists, link or not, is left alone.
pub fn bring_over(main: &Path, worktree: &Path, includes: &Includes) -> Result<Vec<String>> {
    let git = Git::new(main);
    let tree = Root::new(worktree)?;
    let mut brought = Vec::new();
    // Symlinks first: a path both linked and copied is linked.
    // cuekit's records (other tasks' prompts and transcripts) are never brought, whatever a
    // pattern says.
    let records = |path: &String| path == ".cuekit" || path.starts_with(".cuekit/");
    for path in matching(&git, &includes.symlink)?
        .into_iter()
        .filter(|p| !records(p))
    {
        let (from, to) = (main.join(&path), tree.prove_no_links(Path::new(&path))?);
        if exists(&to) {
            continue;
        }
        make_parent(&tree, &path)?;
        std::os::unix::fs::symlink(&from, &to).map_err(|err| Error::io("link", &to, err))?;
        brought.push(path);
    }
    let mut copies = matching(&git, &includes.copy)?;
    if includes.repository_list {
        copies.extend(worktreeinclude(&git, main)?);
    }
    copies.retain(|p| !records(p));
    copies.sort();
    copies.dedup();
    for path in copies {
        let (from, to) = (main.join(&path), tree.prove_no_links(Path::new(&path))?);
        if exists(&to) {
            continue;
        }
        make_parent(&tree, &path)?;
        copy_tree(&from, &to)?;
        brought.push(path);
    }
    Ok(brought)
}

/// Untracked paths matching `patterns`, a wholly untracked directory as one entry.
fn matching(git: &Git, patterns: &[String]) -> Result<Vec<String>> {
    if patterns.is_empty() {
        return Ok(Vec::new());
    }
    Ok(split_z(&git.run(args::untracked_matching(patterns))?))
}

/// The `.worktreeinclude` rule: listed there *and* ignored by git.
fn worktreeinclude(git: &Git, main: &Path) -> Result<Vec<String>> {
    let Some(text) = Root::new(main)?.read_text(Path::new(INCLUDE_FILE))? else {
        return Ok(Vec::new());
    };
    let patterns: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(String::from)
        .collect();
    let listed = matching(git, &patterns)?;
    let ignored = split_z(&git.run(args::ignored_untracked())?);
    Ok(listed
        .into_iter()
        .filter(|path| {
            // An ignored folder is listed once: everything under it is ignored too.
            ignored
                .iter()
                .any(|ignored| path == ignored || path.starts_with(&format!("{ignored}/")))
        })
        .collect())
}

fn split_z(text: &str) -> Vec<String> {
    text.split('\0')
        .filter(|p| !p.is_empty())
        .map(|p| p.trim_end_matches('/').to_string())
        .collect()
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The folders above `relative` in the worktree, made one by one, each proven again once made
/// (a folder that appeared as a link meanwhile stops it).
fn make_parent(tree: &Root, relative: &str) -> Result<()> {
    let Some(parent) = Path::new(relative)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    else {
        return Ok(());
    };
    let path = tree.prove_no_links(parent)?;
    std::fs::create_dir_all(&path).map_err(|err| Error::io("create", &path, err))?;
    tree.prove_real_dir(parent).map(drop)
}

/// Copies a file, symlink or directory tree, skipping whatever already exists at the target.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(from).map_err(|err| Error::io("read", from, err))?;
    if exists(to) {
        if meta.is_dir() && to.is_dir() {
            return copy_children(from, to);
        }
        return Ok(());
    }
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(from).map_err(|err| Error::io("read", from, err))?;
        std::os::unix::fs::symlink(target, to).map_err(|err| Error::io("link", to, err))
    } else if meta.is_dir() {
        std::fs::create_dir(to).map_err(|err| Error::io("create", to, err))?;
        copy_children(from, to)
    } else if meta.is_file() {
        copy_regular(from, to)
    } else {
        // A FIFO, socket or device: nothing a task needs, and a FIFO would block the copy.
        Ok(())
    }
}

/// Copies one regular file, opened without following a link and without blocking, and proven
/// regular on the open descriptor (a FIFO swapped in after the `lstat` is skipped, not waited
/// on).
fn copy_regular(from: &Path, to: &Path) -> Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut source = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(from)
    {
        Ok(file) => file,
        // A link or a FIFO put there since the listing: left out.
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => return Ok(()),
        Err(err) => return Err(Error::io("read", from, err)),
    };
    let meta = source
        .metadata()
        .map_err(|err| Error::io("read", from, err))?;
    if !meta.is_file() {
        return Ok(());
    }
    let mut target = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(meta.permissions().mode() & 0o777)
        .open(to)
        .map_err(|err| Error::io("copy to", to, err))?;
    std::io::copy(&mut source, &mut target)
        .map(drop)
        .map_err(|err| Error::io("copy to", to, err))
}

fn copy_children(from: &Path, to: &Path) -> Result<()> {
    let entries = std::fs::read_dir(from).map_err(|err| Error::io("read", from, err))?;
    for entry in entries {
        let entry = entry.map_err(|err| Error::io("read", from, err))?;
        copy_tree(&entry.path(), &to.join(entry.file_name()))?;
    }
    Ok(())
}
