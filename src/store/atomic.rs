use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Writes `bytes` to `path` so that readers see the old content or the new, never a mix:
/// a temp file in the same directory, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    stage(path, bytes)?.commit()
}

/// A file written and fsynced under a temp name, waiting for [`Staged::commit`] to rename it
/// into place. Splitting the two lets the slow part (fsync) overlap other work, such as the
/// tmux call of a submit, while the file still appears only when it should. Dropped without a
/// commit, the temp file is removed.
pub struct Staged {
    tmp: PathBuf,
    path: PathBuf,
}

pub fn stage(path: &Path, bytes: &[u8]) -> Result<Staged> {
    let dir = path.parent().expect("a file path has a parent");
    let name = path
        .file_name()
        .expect("a file path has a name")
        .to_string_lossy();
    let staged = Staged {
        tmp: dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple())),
        path: path.to_path_buf(),
    };
    // Owner-only, like everything else in a task directory.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&staged.tmp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .map_err(|err| Error::io("write", path, err))?;
    Ok(staged)
}

impl Staged {
    pub fn commit(self) -> Result<()> {
        std::fs::rename(&self.tmp, &self.path).map_err(|err| Error::io("write", &self.path, err))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        // After a successful rename the temp name no longer exists; this is a no-op then.
        let _ = std::fs::remove_file(&self.tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_staged_file_appears_only_on_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.json");
        let staged = stage(&path, b"x").unwrap();
        assert!(!path.exists());
        staged.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
        drop(stage(&path, b"y").unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
