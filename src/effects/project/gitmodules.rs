//! A worktree's `.gitmodules`, as typed submodules. The file is the repository's word: its
//! names end up in git config keys and its paths in git command lines, so each is checked here
//! ([`super::names`]) before any git command sees it. Git itself parses the (proven) bytes, so
//! cuekit reads the file exactly as git would.

use std::collections::BTreeMap;

use crate::domain::error::{Error, ErrorCode, Result};

pub const FILE: &str = ".gitmodules";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submodule {
    pub name: String,
    /// Relative to the work tree; plain names only.
    pub path: String,
    pub url: Option<String>,
}

/// The submodules in `git config --file - -z --list` output (`key\nvalue\0` entries); an entry
/// with an unsafe name, path or URL refuses them all.
pub fn from_config_list(listing: &str) -> Result<Vec<Submodule>> {
    let mut found: BTreeMap<String, (Option<String>, Option<String>)> = BTreeMap::new();
    for entry in listing.split('\0').filter(|e| !e.is_empty()) {
        let (key, value) = entry.split_once('\n').unwrap_or((entry, ""));
        // `submodule.<name>.<variable>`: the name is everything between the first and the last dot.
        let Some(rest) = key.strip_prefix("submodule.") else {
            continue;
        };
        let Some((name, variable)) = rest.rsplit_once('.') else {
            continue;
        };
        // `update = !command` runs the command (git refuses it from `.gitmodules`, as an
        // error cuekit could only report as `io`); only git's own strategies are the
        // repository's to choose.
        if variable == "update" && !matches!(value, "checkout" | "rebase" | "merge" | "none") {
            return Err(Error::new(
                ErrorCode::UnsafeProjectData,
                format!("submodule {name:?} in {FILE} sets `update = {value}`"),
            )
            .with_hint(
                "a repository's .gitmodules may choose checkout, rebase, merge or none; \
                 fix .gitmodules (nothing was run)",
            ));
        }
        let slot = found.entry(name.to_string()).or_default();
        match variable {
            "path" => slot.0 = Some(value.to_string()),
            "url" => slot.1 = Some(value.to_string()),
            _ => {}
        }
    }
    let mut submodules = Vec::new();
    for (name, (path, url)) in found {
        let Some(path) = path else {
            // Git skips a submodule without a path; so does cuekit.
            continue;
        };
        super::names::submodule_name(&name)?;
        super::names::submodule_path(&path)?;
        if let Some(url) = &url {
            super::names::option_value("submodule URL", url)?;
        }
        if let Some(other) = submodules.iter().find(|s: &&Submodule| s.path == path) {
            // git takes one of them for the path, and not necessarily the one cuekit would
            // point at the main checkout's copy: the other's URL (any local repository)
            // would be cloned with `file://` allowed.
            return Err(Error::new(
                ErrorCode::UnsafeProjectData,
                format!(
                    "submodules {:?} and {name:?} share the path {path:?} in {FILE}",
                    other.name
                ),
            )
            .with_hint("a path belongs to one submodule: fix .gitmodules"));
        }
        submodules.push(Submodule { name, path, url });
    }
    Ok(submodules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::error::ErrorCode;

    #[test]
    fn submodules_are_read_by_name_and_unsafe_ones_refuse_all() {
        let listing = "submodule.lib.path\nlib\0submodule.lib.url\n../lib.git\0\
                       submodule.a.b.path\nvendor/a b\0core.bare\nfalse\0";
        let found = from_config_list(listing).unwrap();
        assert_eq!(
            found,
            [
                Submodule {
                    name: "a.b".into(),
                    path: "vendor/a b".into(),
                    url: None
                },
                Submodule {
                    name: "lib".into(),
                    path: "lib".into(),
                    url: Some("../lib.git".into())
                },
            ]
        );
        for bad in [
            "submodule.a.update=!touch x #.path\nlib\0",
            "submodule.lib.path\n../../.ssh\0",
            "submodule.lib.path\nlib\0submodule.lib.url\n--upload-pack=x\0",
            "submodule.-x.path\nlib\0",
            // Two names for one path: which one git takes is not cuekit's to guess.
            "submodule.lib.path\nlib\0submodule.zzz.path\nlib\0submodule.zzz.url\n/secret\0",
            // Audit 48 (work F8): a command as the update strategy is the repository's data,
            // refused as such (it was git's `io` refusal).
            "submodule.two.path\ntwo\0submodule.two.update\n!touch /tmp/pwned\0",
        ] {
            let err = from_config_list(bad).unwrap_err();
            assert_eq!(err.code, ErrorCode::UnsafeProjectData, "{bad:?}");
        }
    }
}
