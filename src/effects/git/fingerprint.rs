//! Whether a worktree changed since cuekit last took its tree, decided without running git: a
//! hash of every entry's name, type, size, mtime and ctime (nanoseconds) under the worktree
//! (`.git` left out, links not followed), and of the worktree's own index file. Only names and
//! `lstat` are read, never a file's contents.
//!
//! Limits, and why each is sound or accepted:
//! - An edit in place changes its file's mtime and ctime (a directory's mtime changes only when
//!   an entry is added, removed or renamed): every file is stat'ed, not only directories.
//! - An edit that keeps the size and lands within the file system's timestamp granularity of
//!   the last look and also keeps the ctime is missed until the next change: git's own racy
//!   clean problem; on ext4, xfs and btrfs timestamps are nanoseconds.
//! - A walk past [`MAX_ENTRIES`] entries gives no fingerprint: such a worktree is checked by git
//!   every time (always sound, never cheap). Folders linked in (`worktree.symlink`) are one
//!   entry each: a link is not followed.
//! - What lives outside the worktree and changes which files git adds is not seen here: a
//!   checkout's fingerprint adds the repository's `info/exclude` and git's default user
//!   excludes file (`Checkout::fingerprint`); a `core.excludesFile` configured elsewhere and a
//!   submodule's checked-out commit (inside its own `.git`) are not seen.

use std::hash::Hasher;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Entries a worktree may hold before its fingerprint is given up (about 10 ms of `lstat`).
pub const MAX_ENTRIES: usize = 50_000;

/// The fingerprint of the worktree at `root` whose index is `index`, or `None` when the walk
/// failed or went past [`MAX_ENTRIES`].
pub fn of(root: &Path, index: Option<&Path>) -> Option<u64> {
    let mut hash = Fnv::default();
    match index.map(std::fs::symlink_metadata) {
        Some(Ok(meta)) => stat(&mut hash, b"\0index", &meta),
        Some(Err(_)) => hash.write(b"\0no index"),
        None => {}
    }
    let mut entries = 0usize;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut names: Vec<std::fs::DirEntry> = std::fs::read_dir(&dir)
            .ok()?
            .collect::<std::io::Result<_>>()
            .ok()?;
        names.sort_by_key(|e| e.file_name());
        for entry in names {
            entries += 1;
            if entries > MAX_ENTRIES {
                return None;
            }
            let name = entry.file_name();
            if name == ".git" {
                continue;
            }
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).ok()?;
            let relative = path.strip_prefix(root).unwrap_or(&path);
            stat(&mut hash, relative.as_os_str().as_bytes(), &meta);
            if meta.file_type().is_dir() {
                stack.push(path);
            }
        }
    }
    Some(hash.finish())
}

/// A file's identity as a stat sees it, for files git writes by renaming a new one into place
/// (refs, `packed-refs`, `HEAD`): any rewrite is another inode or another mtime.
pub fn stat_of(path: &Path) -> u64 {
    let mut hash = Fnv::default();
    match std::fs::symlink_metadata(path) {
        Ok(meta) => stat(&mut hash, b"", &meta),
        Err(_) => hash.write(b"\0missing"),
    }
    hash.finish()
}

fn stat(hash: &mut Fnv, name: &[u8], meta: &std::fs::Metadata) {
    hash.write(name);
    hash.write_u8(0);
    for value in [
        u64::from(meta.mode()),
        meta.size(),
        meta.ino(),
        meta.mtime() as u64,
        meta.mtime_nsec() as u64,
        meta.ctime() as u64,
        meta.ctime_nsec() as u64,
    ] {
        hash.write_u64(value);
    }
}

/// FNV-1a, 64 bits: stable across processes and builds (the result is stored).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_in_place_an_added_file_and_a_new_index_each_change_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("wt");
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("src/deep/a.txt"), "one\n").unwrap();
        std::fs::write(root.join(".git"), "gitdir: x\n").unwrap();
        let index = dir.path().join("index");
        std::fs::write(&index, "i").unwrap();
        let first = of(&root, Some(&index)).unwrap();
        assert_eq!(of(&root, Some(&index)), Some(first), "nothing changed");
        // Same size, in place: the directory's mtime does not move, the file's does.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("src/deep/a.txt"), "two\n").unwrap();
        let edited = of(&root, Some(&index)).unwrap();
        assert_ne!(edited, first);
        std::fs::write(root.join("new.txt"), "").unwrap();
        let added = of(&root, Some(&index)).unwrap();
        assert_ne!(added, edited);
        std::fs::write(dir.path().join("index.new"), "j").unwrap();
        std::fs::rename(dir.path().join("index.new"), &index).unwrap();
        assert_ne!(of(&root, Some(&index)).unwrap(), added);
    }

    #[test]
    fn the_git_entry_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "1").unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let first = of(dir.path(), None).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "x").unwrap();
        assert_eq!(of(dir.path(), None), Some(first));
    }
}
