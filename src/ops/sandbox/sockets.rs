//! The unix sockets of the outside a sandbox covers, found by what they are, not by the name
//! they were bound with: every socket file the child would see when its sandbox starts, found by
//! walking what the sandbox shows (links never followed), covered by an empty file.
//!
//! `/proc/net/unix` names a socket by the text its `bind()` was given: a relative name
//! (`tmux -S b.sock` in a folder), the old name of a folder renamed since, no second (hard-linked)
//! name, and nothing of a socket bound in another network namespace (a container's, an
//! `unshare -n` server's on a shared folder). Each of those answers a `connect()` at its path
//! all the same, and a read-only mount does not stop one: an unprivileged user's child is that
//! user, and a tmux server of theirs would run its `run-shell` outside the sandbox. So every
//! socket file in sight is covered, listed or not, alive or stale.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::domain::sandbox::Mount;

/// How many entries the walk looks at before the sandbox is refused: too many to prove that no
/// socket of the outside is in sight.
pub(super) const SOCKET_LOOK: usize = 2_000_000;

/// What of the machine the sandbox never shows as it is: bubblewrap gives it a `/proc` and a
/// `/dev` of its own, and `/sys` holds no socket file.
const OWN_OR_NONE: &[&str] = &["/proc", "/dev", "/sys"];

/// What a sandbox shows of the machine: pure, from its plan.
pub(super) struct Sight<'a> {
    /// The roots hidden by a private empty folder before anything is shown again.
    pub hidden: &'a [PathBuf],
    /// The mounts, in order: a later one covers an earlier one.
    pub mounts: &'a [Mount],
    /// The task's own folders (its checkout, report drop, state): what a socket there is, the
    /// child made.
    pub own: &'a [PathBuf],
}

impl Sight<'_> {
    /// The paths at which what the child sees may change: below any other, a folder in sight
    /// shows its entries (`shows` is asked only there).
    fn turns(&self) -> HashSet<PathBuf> {
        let mut turns: HashSet<PathBuf> = self.hidden.iter().chain(self.own).cloned().collect();
        turns.extend(OWN_OR_NONE.iter().map(PathBuf::from));
        for mount in self.mounts {
            turns.insert(match mount {
                Mount::ReadOnly(dir)
                | Mount::Writable(dir)
                | Mount::Private(dir)
                | Mount::Masked(dir) => dir.clone(),
                Mount::Bound { to, .. } => to.clone(),
            });
        }
        turns
    }

    /// Whether `path` of the machine is in the child's sight, and not its own.
    pub(super) fn shows(&self, path: &Path) -> bool {
        !self.own.iter().any(|own| path.starts_with(own))
            && !OWN_OR_NONE.iter().any(|dir| path.starts_with(dir))
            && super::plan::in_sight(self.hidden, self.mounts, path)
    }

    /// Where the walk starts: `top`, and every folder shown again (read-only or writable) that
    /// a walk from `top` would not reach (one inside a hidden root or a private folder).
    pub(super) fn roots(&self, top: &Path) -> Vec<PathBuf> {
        let mut roots = vec![top.to_path_buf()];
        for mount in self.mounts {
            if let Mount::ReadOnly(dir) | Mount::Writable(dir) = mount
                && dir.starts_with(top)
                && !roots.contains(dir)
            {
                roots.push(dir.clone());
            }
        }
        roots
    }
}

/// Every socket file in sight below `top`, as covers; `Err` with the count looked at once more
/// than `limit` entries were.
pub(super) fn socket_covers(
    top: &Path,
    sight: &Sight,
    limit: usize,
) -> std::result::Result<Vec<Mount>, usize> {
    use std::os::unix::fs::FileTypeExt;
    let mut covers: Vec<Mount> = Vec::new();
    let mut walked: HashSet<PathBuf> = HashSet::new();
    let turns = sight.turns();
    let mut looked = 0;
    let cover = |path: PathBuf, covers: &mut Vec<Mount>| {
        let mask = Mount::Masked(path);
        if !sight.mounts.contains(&mask) && !covers.contains(&mask) {
            covers.push(mask);
        }
    };
    for root in sight.roots(top) {
        // A root that is itself a socket (a file shown read-only).
        let Ok(meta) = root.symlink_metadata() else {
            continue;
        };
        if meta.file_type().is_socket() && sight.shows(&root) {
            cover(root, &mut covers);
            continue;
        }
        if !sight.shows(&root) {
            continue;
        }
        // Every folder walked is in sight: an entry of it is too, unless a turn is at it.
        let shows = |path: &Path| !turns.contains(path) || sight.shows(path);
        let mut folders = vec![root];
        while let Some(folder) = folders.pop() {
            if !walked.insert(folder.clone()) {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            for entry in entries.flatten() {
                looked += 1;
                if looked > limit {
                    return Err(looked);
                }
                // The entry's own type, never a link's target.
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if !kind.is_dir() && !kind.is_socket() {
                    continue;
                }
                let path = entry.path();
                if kind.is_dir() && shows(&path) {
                    folders.push(path);
                } else if kind.is_socket() && shows(&path) {
                    cover(path, &mut covers);
                }
            }
        }
    }
    Ok(covers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    fn masked(covers: &[Mount]) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = covers
            .iter()
            .filter_map(|mount| match mount {
                Mount::Masked(path) => Some(path.clone()),
                _ => None,
            })
            .collect();
        paths.sort();
        paths
    }

    /// A socket renamed with its folder, a second (hard-linked) name, a stale socket file (as
    /// one bound in another network namespace looks from here) are each covered; a socket in a
    /// hidden or private folder, or in the task's own, is not walked; a link is never followed.
    #[test]
    fn every_socket_file_in_sight_is_covered_whatever_it_was_bound_as() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        for sub in ["old", "link", "hidden", "private", "own", "shown/again"] {
            std::fs::create_dir_all(top.join(sub)).unwrap();
        }
        let _renamed = UnixListener::bind(top.join("old/c.sock")).unwrap();
        std::fs::rename(top.join("old"), top.join("new")).unwrap();
        let _linked = UnixListener::bind(top.join("d.sock")).unwrap();
        std::fs::hard_link(top.join("d.sock"), top.join("link/d2.sock")).unwrap();
        drop(UnixListener::bind(top.join("stale.sock")).unwrap());
        let _hidden = UnixListener::bind(top.join("hidden/h.sock")).unwrap();
        let _private = UnixListener::bind(top.join("private/p.sock")).unwrap();
        let _own = UnixListener::bind(top.join("own/o.sock")).unwrap();
        let _again = UnixListener::bind(top.join("shown/again/a.sock")).unwrap();
        std::os::unix::fs::symlink(top.join("hidden"), top.join("to-hidden")).unwrap();
        let hidden = vec![top.join("hidden"), top.join("shown")];
        let mounts = vec![
            Mount::Private(top.join("private")),
            Mount::ReadOnly(top.join("shown/again")),
        ];
        let own = vec![top.join("own")];
        let sight = Sight {
            hidden: &hidden,
            mounts: &mounts,
            own: &own,
        };
        let covers = socket_covers(&top, &sight, SOCKET_LOOK).unwrap();
        assert_eq!(
            masked(&covers),
            vec![
                top.join("d.sock"),
                top.join("link/d2.sock"),
                top.join("new/c.sock"),
                top.join("shown/again/a.sock"),
                top.join("stale.sock"),
            ]
        );
        // Too many entries to look at: refused, never a partial list.
        assert!(socket_covers(&top, &sight, 3).is_err());
    }

    #[test]
    fn the_walk_starts_at_the_top_and_at_each_folder_shown_again() {
        let hidden = vec![PathBuf::from("/home/u")];
        let mounts = vec![
            Mount::Private(PathBuf::from("/srv/p")),
            Mount::ReadOnly(PathBuf::from("/home/u/.gemini/settings.json")),
            Mount::Writable(PathBuf::from("/srv/p/work")),
            Mount::Masked(PathBuf::from("/srv/x.sock")),
        ];
        let sight = Sight {
            hidden: &hidden,
            mounts: &mounts,
            own: &[],
        };
        assert_eq!(
            sight.roots(Path::new("/")),
            ["/", "/home/u/.gemini/settings.json", "/srv/p/work"].map(PathBuf::from)
        );
        assert!(sight.shows(Path::new("/srv/p/work/a.sock")));
        assert!(!sight.shows(Path::new("/srv/p/b.sock")));
        assert!(!sight.shows(Path::new("/home/u/c.sock")));
        assert!(!sight.shows(Path::new("/proc/1/fd")));
        assert!(sight.shows(Path::new("/var/lib/d.sock")));
    }
}
