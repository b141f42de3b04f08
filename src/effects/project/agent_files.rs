//! An agent's own project files (see [`crate::domain::adapter::project_files`]): found in a
//! task's work folder, read through the project door, and weighed against the user's trust.

use std::path::{Path, PathBuf};

use super::files::Root;
use crate::domain::error::{Error, ErrorCode, Result};

/// At most this many files are read under one of an agent's folders (and this deep): a
/// repository that ships more is refused rather than read without end.
const FOLDER_FILES: usize = 256;
const FOLDER_DEPTH: usize = 8;

/// The folders an agent started in `start` reads its project files from: `start` and each
/// folder above it up to the repository's top (the first that holds `.git`), never HOME (the
/// user's own settings: `~/.qwen/settings.json` is the user's word) or above. Without a
/// repository, `start` alone (none when `start` is HOME).
fn searched(start: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut found = Vec::new();
    for dir in start.ancestors().take(64) {
        if home.as_deref() == Some(dir) {
            return found;
        }
        found.push(dir.to_path_buf());
        if dir.join(".git").symlink_metadata().is_ok() {
            return found;
        }
    }
    vec![start.to_path_buf()]
}

/// Every file under `relative` (a folder of `root`), read and proven one by one.
fn folder_files(
    root: &Root,
    relative: &Path,
    depth: usize,
    out: &mut Vec<(PathBuf, Vec<u8>)>,
) -> Result<()> {
    for name in root.list(relative)? {
        let inner = relative.join(&name);
        let meta = root.path().join(&inner).symlink_metadata();
        if meta.as_ref().is_ok_and(std::fs::Metadata::is_dir) && depth < FOLDER_DEPTH {
            folder_files(root, &inner, depth + 1, out)?;
        } else if let Some(bytes) = root.read(&inner)? {
            out.push((inner, bytes));
        }
        if out.len() > FOLDER_FILES {
            return Err(Error::new(
                ErrorCode::UnsafeProjectData,
                format!(
                    "{} holds more than {FOLDER_FILES} files an agent would load",
                    root.path().join(relative).display()
                ),
            )
            .with_hint("keep the agent's extensions few, or start the task where they are not"));
        }
    }
    Ok(())
}

/// The files of `agent_kind` in the folders its task started in `start` reads, each as the
/// path the user trusts it by (the same place under `trusted_top` as under `top`: a task's
/// checkout stands for the user's own) and its bytes in the task's folder.
fn found(
    agent_kind: &str,
    start: &Path,
    top: &Path,
    trusted_top: &Path,
) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let entries = crate::domain::adapter::project_files::code_files(agent_kind);
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for dir in searched(start) {
        let root = Root::new(&dir)?;
        let mut here = Vec::new();
        for entry in entries {
            match entry.strip_suffix('/') {
                Some(folder) => folder_files(&root, Path::new(folder), 0, &mut here)?,
                None => {
                    if let Some(bytes) = root.read(Path::new(entry))? {
                        here.push((PathBuf::from(entry), bytes));
                    }
                }
            }
        }
        let trusted_dir = dir
            .strip_prefix(top)
            .map_or_else(|_| dir.clone(), |inner| trusted_top.join(inner));
        files.extend(
            here.into_iter()
                .map(|(relative, bytes)| (trusted_dir.join(relative), bytes)),
        );
    }
    Ok(files)
}

/// Refuses a task of `agent_kind` started in `start` while a file its CLI loads from the
/// project, and that can run code, is not trusted as it is (`config_untrusted`, naming the
/// files). `top` is the task's checkout (`trusted_top` the user's, which the trust names), or
/// both the work folder for a task that works in place.
pub fn refuse_untrusted(
    agent_kind: &str,
    start: &Path,
    top: &Path,
    trusted_top: &Path,
) -> Result<()> {
    let untrusted: Vec<PathBuf> = found(agent_kind, start, top, trusted_top)?
        .into_iter()
        .filter(|(path, bytes)| {
            let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            crate::effects::trust::state(&path, bytes) != crate::effects::trust::TrustState::Trusted
        })
        .map(|(path, _)| path)
        .collect();
    let Some(first) = untrusted.first() else {
        return Ok(());
    };
    let names: Vec<String> = untrusted
        .iter()
        .take(8)
        .map(|p| p.display().to_string())
        .collect();
    Err(Error::new(
        ErrorCode::ConfigUntrusted,
        format!(
            "{agent_kind} loads the project's own {} when it starts, and {} can run code: \
             untrusted, so the task does not start",
            names.join(", "),
            if untrusted.len() == 1 { "it" } else { "they" }
        ),
    )
    .with_hint(format!(
        "read {} (and any other named), then `cuekit trust {}` for each file; or remove it, \
         or use another agent",
        first.display(),
        first.display()
    )))
}
