//! Pure git argv builders, for the commands whose shape matters (what they may touch, what
//! they must never do). Each is run by [`super::Git`] in the directory the caller chose.

use std::ffi::OsString;
use std::path::Path;

fn words(list: &[&str]) -> Vec<OsString> {
    list.iter().map(OsString::from).collect()
}

/// A new worktree at `path` on a new branch from an already-resolved commit (never a name that
/// could resolve differently by the time git reads it).
pub fn worktree_add(path: &Path, branch: &str, commit: &str) -> Vec<OsString> {
    let mut args = words(&["worktree", "add", "--quiet", "--no-track", "-b", branch]);
    args.push(path.into());
    args.push(commit.into());
    args
}

/// A task repository's branch at its base commit (created, never moved: the old value must
/// be none).
pub fn branch_at(branch: &str, commit: &str) -> Vec<OsString> {
    let mut args = words(&["update-ref"]);
    args.push(format!("refs/heads/{branch}").into());
    args.push(commit.into());
    args.push("".into());
    args
}

/// Brings a task repository's committed work (whatever its `HEAD` names) into the user's
/// repository at `into`, and nothing else: no tags, no submodules, no `FETCH_HEAD`. Run in the
/// user's repository with [`fetch_config`]; `from` is the git dir the registry recorded, and
/// `upload_pack` the upload side's command (`crate::domain::sandbox::upload_pack_command`).
pub fn fetch_work(from: &Path, into: &str, upload_pack: &str) -> Vec<OsString> {
    let mut args = words(&[
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-recurse-submodules",
        "--no-write-fetch-head",
        "--no-auto-gc",
    ]);
    args.push(format!("--upload-pack={upload_pack}").into());
    args.push("--".into());
    args.push(from.into());
    args.push(format!("+HEAD:{into}").into());
    args
}

/// Every object a fetch brings is checked (`fsck`) before it lands.
pub fn fetch_config() -> Vec<(String, OsString)> {
    vec![
        ("fetch.fsckObjects".to_string(), OsString::from("true")),
        ("protocol.file.allow".to_string(), OsString::from("always")),
    ]
}

/// Initialises one submodule in a new worktree by cloning the main checkout's copy of it: no
/// network, the objects hard-linked, and the exact commit the base records. Not recursive:
/// nested submodules are cuekit's to prove and initialise in turn. The clone's source goes in
/// out of band ([`submodule_from_local_config`]), never in a `-c` word built from the
/// repository's names.
pub fn submodule_from_local(path: &str) -> Vec<OsString> {
    words(&["submodule", "update", "--init", "--", path])
}

/// The config [`submodule_from_local`] runs with: the submodule's URL is the main checkout's
/// copy, and `protocol.file` is allowed for this one command (the source is the user's own
/// checkout). Given to git as `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n` ([`config_env`]): git takes a
/// key given there whole, so a name holding `=` or a second key cannot split it.
pub fn submodule_from_local_config(name: &str, local: &Path) -> Vec<(String, OsString)> {
    vec![
        ("protocol.file.allow".to_string(), OsString::from("always")),
        (
            format!("submodule.{name}.url"),
            local.as_os_str().to_owned(),
        ),
    ]
}

/// Config entries as git's environment (git 2.31+).
pub fn config_env(entries: &[(String, OsString)]) -> Vec<(String, OsString)> {
    let mut env = vec![(
        "GIT_CONFIG_COUNT".to_string(),
        entries.len().to_string().into(),
    )];
    for (index, (key, value)) in entries.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{index}"), key.into()));
        env.push((format!("GIT_CONFIG_VALUE_{index}"), value.clone()));
    }
    env
}

/// The index entry at exactly `path` (a literal pathspec, never a pattern): a submodule is a
/// gitlink there, mode 160000.
pub fn index_entry(path: &str) -> Vec<OsString> {
    let mut args = words(&["ls-files", "--stage", "-z", "--"]);
    args.push(format!(":(literal){path}").into());
    args
}

/// Untracked files (ignored ones included) matching gitignore-style `patterns`; a wholly
/// untracked directory is listed once, as `dir/`. (Not `--no-empty-directory`: with it, git
/// 2.47 misses a file matched inside an untracked folder.)
pub fn untracked_matching(patterns: &[String]) -> Vec<OsString> {
    let mut args = words(&["ls-files", "-z", "--others", "--ignored", "--directory"]);
    for pattern in patterns {
        args.push("-x".into());
        args.push(pattern.into());
    }
    args
}

/// Untracked files git ignores (the `.worktreeinclude` rule copies only these).
pub fn ignored_untracked() -> Vec<OsString> {
    words(&[
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--directory",
    ])
}

/// Whether anything in a work tree differs from its `HEAD`, untracked files included
/// (ignored ones not).
pub fn status_porcelain() -> Vec<OsString> {
    words(&["status", "--porcelain=v1", "-z", "--untracked-files=all"])
}

/// A three-way merge computed without touching any work tree or index: exit 1 and the
/// conflicted paths when it does not merge cleanly.
pub fn merge_tree(target: &str, task: &str) -> Vec<OsString> {
    words(&[
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        "-z",
        target,
        task,
    ])
}

/// Deletes a branch only if it still points where cuekit inspected it: a commit added since
/// keeps it.
pub fn delete_branch_at(branch: &str, expected: &str) -> Vec<OsString> {
    let mut args = words(&["update-ref", "-d"]);
    args.push(format!("refs/heads/{branch}").into());
    args.push(expected.into());
    args
}

pub fn worktree_remove(path: &Path, force: bool) -> Vec<OsString> {
    let mut args = words(&["worktree", "remove"]);
    if force {
        // Twice: also removes a worktree git has locked.
        args.extend(words(&["--force", "--force"]));
    }
    args.push(path.into());
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktree_starts_from_a_resolved_commit_on_a_new_untracked_branch() {
        assert_eq!(
            worktree_add(Path::new("/r.worktrees/t_1"), "cuekit/t_1", "abc123"),
            words(&[
                "worktree",
                "add",
                "--quiet",
                "--no-track",
                "-b",
                "cuekit/t_1",
                "/r.worktrees/t_1",
                "abc123"
            ])
        );
    }

    #[test]
    fn a_branch_is_deleted_only_at_the_commit_inspected() {
        assert_eq!(
            delete_branch_at("cuekit/t_1", "abc"),
            words(&["update-ref", "-d", "refs/heads/cuekit/t_1", "abc"])
        );
    }

    #[test]
    fn the_submodule_source_goes_out_of_band_for_one_command_only() {
        assert_eq!(
            submodule_from_local("lib"),
            words(&["submodule", "update", "--init", "--", "lib"])
        );
        // The audit's name: with `-c` it set `submodule.a.update=!touch…`; here it is one key.
        let config = submodule_from_local_config("a.update=!touch x #", Path::new("/r/lib"));
        let env: Vec<(String, String)> = config_env(&config)
            .into_iter()
            .map(|(k, v)| (k, v.into_string().unwrap()))
            .collect();
        assert_eq!(
            env,
            [
                ("GIT_CONFIG_COUNT".into(), "2".into()),
                ("GIT_CONFIG_KEY_0".into(), "protocol.file.allow".into()),
                ("GIT_CONFIG_VALUE_0".into(), "always".into()),
                (
                    "GIT_CONFIG_KEY_1".into(),
                    "submodule.a.update=!touch x #.url".into()
                ),
                ("GIT_CONFIG_VALUE_1".into(), "/r/lib".into()),
            ]
        );
        assert_eq!(
            index_entry("*"),
            words(&["ls-files", "--stage", "-z", "--", ":(literal)*"])
        );
    }
}
