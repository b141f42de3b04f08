//! A new worktree's submodules, initialised from the main checkout's copies where it has them
//! (no network, objects shared), never from their URLs (see [`init_at`]). `.gitmodules` is the repository's word:
//! it is read through [`crate::effects::project`], which checks every name and path; only a gitlink of
//! the worktree's index is treated as a submodule, and cuekit runs git only in folders proven
//! to lie inside the worktree (a tracked link named like a submodule leads nowhere).

use std::ffi::OsString;
use std::path::Path;

use super::{Git, args};
use crate::domain::error::Result;
use crate::effects::project::Root;
use crate::effects::project::gitmodules::{self, Submodule};

/// Nested submodules deeper than this are left to `git submodule update` by hand.
const MAX_DEPTH: usize = 8;

/// Initialises the submodules of the work tree `worktree` (a new one cuekit made), taking
/// each from the same path under `main` (the checkout it was made from) when that is a
/// checkout of its own.
pub fn init(worktree: &Path, main: &Path) -> Result<()> {
    init_at(worktree, main, 0)
}

fn init_at(worktree: &Path, main: &Path, depth: usize) -> Result<()> {
    let tree_root = Root::new(worktree)?;
    let Some(bytes) = tree_root.read(Path::new(gitmodules::FILE))? else {
        return Ok(());
    };
    let tree = Git::new(tree_root.path());
    // Git parses the proven bytes (from stdin, so it reads no other file: no includes).
    let listing = tree.run_with(
        &[
            "config".into(),
            "--file".into(),
            "-".into(),
            "-z".into(),
            "--list".into(),
        ],
        &[],
        &bytes,
    )?;
    // The main checkout may lack the submodule (never initialised there): then it is left
    // uninitialised, and nested ones with it.
    let main_root = Root::new(main).ok();
    for submodule in gitmodules::from_config_list(&listing)? {
        if !is_gitlink(&tree, &submodule.path)? {
            continue;
        }
        let relative = Path::new(&submodule.path);
        let inside = tree_root.prove_no_links(relative)?;
        let local = match &main_root {
            Some(root) => Some(root.prove_no_links(relative)?),
            None => None,
        };
        let local_copy = local
            .clone()
            .filter(|local| is_real_dir(local) && local.join(".git").exists());
        // Never from its URL: that is the repository's word, and cuekit's git runs as the user,
        // with the user's network position, ssh agent and credentials, outside any sandbox (a
        // loopback-only service, an internal host). Without a copy of the user's the folder stays
        // empty; `git submodule update --init` in the task fetches it with the task's own reach.
        let Some(local) = local_copy else {
            continue;
        };
        from_local(&tree, &submodule, &local, &inside)?;
        if depth < MAX_DEPTH {
            init_at(&inside, &local, depth + 1)?;
        }
    }
    Ok(())
}

/// Clones the main checkout's copy, then points the clone's `origin` back at the submodule's
/// real URL (the main checkout's configured one, else `.gitmodules`'s).
fn from_local(tree: &Git, submodule: &Submodule, local: &Path, inside: &Path) -> Result<()> {
    tree.run_with(
        &args::submodule_from_local(&submodule.path),
        &args::submodule_from_local_config(&submodule.name, local),
        &[],
    )?;
    // Git made the folder; cuekit runs git in it only once it is proven a folder of the
    // worktree's own.
    Root::new(tree.dir())?.prove_real_dir(Path::new(&submodule.path))?;
    let configured = Git::new(local)
        .line(["config", "--get", "remote.origin.url"])
        .ok()
        .filter(|url| crate::effects::project::names::option_value("submodule URL", url).is_ok());
    if let Some(url) = configured.or_else(|| submodule.url.clone()) {
        let set: Vec<OsString> = ["remote", "set-url", "--", "origin", &url]
            .iter()
            .map(OsString::from)
            .collect();
        Git::new(inside).run(set)?;
    }
    Ok(())
}

/// Whether the index holds a gitlink (a submodule commit) at exactly `path`.
fn is_gitlink(tree: &Git, path: &str) -> Result<bool> {
    let listed = tree.run(args::index_entry(path))?;
    Ok(listed.split('\0').any(|entry| {
        entry
            .split_once('\t')
            .is_some_and(|(meta, name)| name == path && meta.starts_with("160000 "))
    }))
}

fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
}
