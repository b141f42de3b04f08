//! What the scratch checkout sets aside beyond the protected globs
//! ([`crate::domain::check_settings`]): a new top-level module named like a standard one is
//! removed from the check's tree and named; a manifest whose runner settings (`autotests`,
//! `[[test]]`, pytest's section, …) differ from the base's refuses the check with the reason;
//! the files of the merge review's classes the child changed are listed for the verdict.

use crate::domain::check::{EditKind, ProtectedEdit};
use crate::domain::check_settings;
use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::git::Git;
use crate::effects::git::review::{Changed, policy_paths};

/// Listings as `scratch` makes them: `(path, "<mode> <type> <object>")`, sorted by path.
type Listing = [(String, String)];

/// What the check's tree leaves out or the verdict names, beyond the protected globs.
#[derive(Debug, Default)]
pub(super) struct Steering {
    /// Paths removed from the check's tree (the files of a shadowing entry).
    pub remove: Vec<String>,
    /// The shadowing entries, as the verdict names them.
    pub edits: Vec<ProtectedEdit>,
    /// The changed files a merge asks to have reviewed (they run code or set policy).
    pub review: Vec<String>,
}

/// The steering of the child's work `ours` against `base`; `Err` (the check refused, with
/// the reason) when a manifest's runner settings differ from the base's.
pub(super) fn steering(git: &Git, base: &Listing, ours: &Listing) -> Result<Steering> {
    let changed = changed_settings(git, base, ours)?;
    if !changed.is_empty() {
        return Err(Error::new(
            ErrorCode::CheckFailed,
            format!(
                "the work changes settings that decide which tests run ({}); they are compared \
                 with the base's, not restored",
                changed.join(", ")
            ),
        )
        .with_hint(
            "put these settings back as the base has them; the rest of the file may change",
        ));
    }
    let base_paths: Vec<&str> = base.iter().map(|(p, _)| p.as_str()).collect();
    let our_paths: Vec<&str> = ours.iter().map(|(p, _)| p.as_str()).collect();
    let mut steering = Steering {
        review: review_paths(base, ours),
        ..Steering::default()
    };
    for shadow in check_settings::shadowing(&base_paths, &our_paths) {
        steering.remove.extend(shadow.paths);
        steering.edits.push(ProtectedEdit {
            path: format!("{} (shadows {})", shadow.entry, shadow.shadows),
            edit: EditKind::Added,
        });
    }
    Ok(steering)
}

fn find<'a>(list: &'a Listing, path: &str) -> Option<&'a str> {
    list.binary_search_by(|(p, _)| p.as_str().cmp(path))
        .ok()
        .map(|i| list[i].1.as_str())
}

/// The runner settings the child changed, over every manifest the base has too.
fn changed_settings(git: &Git, base: &Listing, ours: &Listing) -> Result<Vec<String>> {
    let blob = |info: &str| {
        let mut parts = info.split(' ');
        let (mode, kind, oid) = (parts.next()?, parts.next()?, parts.next()?);
        (kind == "blob" && mode.starts_with("100")).then(|| oid.to_string())
    };
    let read = |oid: &str| git.run(["cat-file", "blob", "--end-of-options", oid]);
    let mut changed = Vec::new();
    for (path, info) in ours.iter().filter(|(p, _)| check_settings::has_settings(p)) {
        let Some(our_oid) = blob(info) else {
            continue;
        };
        // A manifest the base has not is compared with an empty one: a new `pyproject.toml`
        // bringing `[tool.pytest.ini_options]` changes the runner as much as an edit would.
        let base_text = match find(base, path) {
            Some(base_info) if base_info == info => continue,
            Some(base_info) => match blob(base_info) {
                Some(base_oid) => read(&base_oid)?,
                None => continue,
            },
            None if check_settings::compared_when_new(path) => String::new(),
            None => continue,
        };
        changed.extend(check_settings::changed_settings(
            path,
            &base_text,
            &read(&our_oid)?,
        ));
    }
    Ok(changed)
}

/// The paths that differ between the listings and that a merge asks to have reviewed.
fn review_paths(base: &Listing, ours: &Listing) -> Vec<String> {
    let mut changed: Vec<Changed> = Vec::new();
    for (path, info) in ours {
        if find(base, path) != Some(info.as_str()) {
            changed.push(Changed {
                path: path.clone(),
                mode: info.split(' ').next().map(str::to_string),
            });
        }
    }
    for (path, _) in base {
        if find(ours, path).is_none() {
            changed.push(Changed {
                path: path.clone(),
                mode: None,
            });
        }
    }
    changed.sort_by(|a, b| a.path.cmp(&b.path));
    policy_paths(&changed)
}
