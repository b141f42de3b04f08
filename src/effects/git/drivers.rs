//! The repository's own config that names a program git would run in cuekit's calls, and the
//! values that run none.
//!
//! A repository can arrive with its `.git` (an archive, a copied project, a shared folder): its
//! `.git/config` may define a filter driver (`filter.<x>.smudge`, `.clean`, `.process`, picked
//! by a committed `.gitattributes`), a diff driver (`diff.<x>.textconv`, `.command`,
//! `diff.external`), a merge driver (`merge.<x>.driver`), an ssh command, a credential helper,
//! a gpg program… git would run each as the user on a checkout, a staging, a diff or a merge
//! cuekit makes. Only the repository's own config (scope `local` or `worktree`, its includes
//! with it) is overridden — your global and system config are yours, so a filter you set up
//! there (Git LFS's, usually) still runs.
//!
//! The overriding values: an empty filter command is no filter (`required` false, so its
//! absence is no error: the file is checked out or staged as stored); `cat` is the textconv
//! that changes nothing; an empty external diff, merge driver or program cannot be run, so the
//! call fails (a merge driver's file is a conflict) instead of running what the repository named.

use std::ffi::OsString;

/// The `-c` entries (key, value) that keep every program `listing` names from running.
/// `listing` is `git config --list --show-scope --includes -z`'s output: `scope\0key\nvalue\0`.
pub fn neutralised(listing: &[u8]) -> Vec<(String, OsString)> {
    let mut out: Vec<(String, OsString)> = Vec::new();
    let mut fields = listing.split(|b| *b == 0);
    while let (Some(scope), Some(entry)) = (fields.next(), fields.next()) {
        if !matches!(scope, b"local" | b"worktree") {
            continue;
        }
        let key = entry.split(|b| *b == b'\n').next().unwrap_or_default();
        let Ok(key) = std::str::from_utf8(key) else {
            continue;
        };
        for (name, value) in overrides(key) {
            if !out.iter().any(|(known, _)| *known == name) {
                out.push((name, OsString::from(value)));
            }
        }
    }
    out
}

/// The overrides one key of the repository's config asks for (none for a harmless key).
fn overrides(key: &str) -> Vec<(String, &'static str)> {
    // Section and variable names are case-insensitive (git prints them lower case); a
    // subsection keeps its case and may hold dots.
    let (section, rest) = key.split_once('.').unwrap_or((key, ""));
    let section = section.to_ascii_lowercase();
    let (sub, var) = match rest.rsplit_once('.') {
        Some((sub, var)) => (Some(sub), var.to_ascii_lowercase()),
        None => (None, rest.to_ascii_lowercase()),
    };
    let one = |value: &'static str| vec![(key.to_string(), value)];
    match (section.as_str(), sub, var.as_str()) {
        ("filter", Some(sub), _) => ["smudge", "clean", "process"]
            .iter()
            .map(|var| (format!("filter.{sub}.{var}"), ""))
            .chain(std::iter::once((format!("filter.{sub}.required"), "false")))
            .collect(),
        ("diff", Some(sub), "textconv") => vec![(format!("diff.{sub}.textconv"), "cat")],
        ("diff", Some(sub), "command") => vec![(format!("diff.{sub}.command"), "")],
        ("diff", None, "external") | ("merge", Some(_), "driver") => one(""),
        ("core", None, "sshcommand" | "askpass" | "gitproxy" | "alternaterefscommand") => one(""),
        ("credential", _, "helper") => one(""),
        ("gpg", _, "program" | "defaultkeycommand") => one(""),
        ("remote", Some(_), "uploadpack" | "receivepack") => one(""),
        ("submodule", Some(_), "update") => one("checkout"),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (scope, entry) in entries {
            out.extend_from_slice(scope.as_bytes());
            out.push(0);
            out.extend_from_slice(entry.as_bytes());
            out.push(0);
        }
        out
    }

    fn value<'a>(found: &'a [(String, OsString)], key: &str) -> Option<&'a str> {
        found
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| v.to_str())
    }

    #[test]
    fn the_repositorys_programs_are_overridden_with_ones_that_run_nothing() {
        let found = neutralised(&listing(&[
            ("local", "filter.My.Drv.smudge\nid > /tmp/x"),
            ("local", "diff.x.textconv\nevil"),
            ("worktree", "diff.y.command\nevil"),
            ("local", "diff.external\nevil"),
            ("local", "merge.m.driver\nevil %A"),
            ("local", "core.sshcommand\nevil"),
            ("local", "credential.https://h.example.helper\nevil"),
            ("local", "gpg.ssh.program\nevil"),
            ("local", "submodule.s.update\n!evil"),
            ("local", "core.bare\nfalse"),
        ]));
        for (key, want) in [
            ("filter.My.Drv.smudge", ""),
            ("filter.My.Drv.clean", ""),
            ("filter.My.Drv.process", ""),
            ("filter.My.Drv.required", "false"),
            ("diff.x.textconv", "cat"),
            ("diff.y.command", ""),
            ("diff.external", ""),
            ("merge.m.driver", ""),
            ("core.sshcommand", ""),
            ("credential.https://h.example.helper", ""),
            ("gpg.ssh.program", ""),
            ("submodule.s.update", "checkout"),
        ] {
            assert_eq!(value(&found, key), Some(want), "{key}: {found:?}");
        }
        assert_eq!(value(&found, "core.bare"), None);
    }

    #[test]
    fn the_users_own_config_is_left_alone() {
        let found = neutralised(&listing(&[
            ("global", "filter.lfs.smudge\ngit-lfs smudge -- %f"),
            ("system", "diff.external\ndifft"),
            ("command", "core.sshcommand\nssh -i key"),
            ("global", "user.name\nA\nB"),
        ]));
        assert!(found.is_empty(), "{found:?}");
        // A key without a value, and a truncated listing, are read without panic.
        assert!(neutralised(b"local\0filter.x.required\0local").len() == 4);
    }
}
