//! Reading a project's files, and proving where cuekit writes in one. A path that looks inside
//! the project is not proof: any component may be a symbolic link the repository ships
//! (`.cuekit/agents/worker.md -> ~/.ssh/id_ed25519`). So a file is opened first, and then the
//! file the kernel opened is checked — its real path (`/proc/self/fd/N`), its type, owner and
//! size — which leaves no gap between the check and the read.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use crate::domain::error::{Error, ErrorCode, Result};

/// The largest project file cuekit reads (config, profiles, specs, records): anything larger is
/// not one it wrote or documented, and reading it whole would cost memory for nothing.
pub const FILE_LIMIT: u64 = 4 * 1024 * 1024;

/// A folder that project files are read from, by its canonical path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    /// The folder `dir` (canonicalised: a link to the folder itself is fine, what matters is
    /// what lies under it).
    pub fn new(dir: &Path) -> Result<Root> {
        let dir = std::fs::canonicalize(dir).map_err(|err| Error::io("open", dir, err))?;
        Ok(Root { dir })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The bytes of the file at `relative`, `None` if there is none. A file that is really
    /// somewhere else (a link out of the root), is not a regular file, belongs to another user
    /// or is larger than [`FILE_LIMIT`] is refused with `unsafe_project_data`.
    pub fn read(&self, relative: &Path) -> Result<Option<Vec<u8>>> {
        let Some((file, path)) = self.open_inside(relative, 0)? else {
            return Ok(None);
        };
        let meta = regular_and_owned(&file, &path)?;
        if meta.len() > FILE_LIMIT {
            return Err(refused(
                &path,
                &format!(
                    "it is {} bytes, more than the {FILE_LIMIT} a project file may hold",
                    meta.len()
                ),
            ));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(FILE_LIMIT + 1)
            .read_to_end(&mut bytes)
            .map_err(|err| Error::io("read", &path, err))?;
        Ok(Some(bytes))
    }

    /// [`Root::read`], as UTF-8 text (anything else is `invalid_input`).
    pub fn read_text(&self, relative: &Path) -> Result<Option<String>> {
        let Some(bytes) = self.read(relative)? else {
            return Ok(None);
        };
        String::from_utf8(bytes).map(Some).map_err(|_| {
            Error::invalid_input(format!(
                "{} is not valid UTF-8",
                self.dir.join(relative).display()
            ))
            .with_hint("save the file as UTF-8 text")
        })
    }

    /// The names in the folder at `relative` (empty when there is none), once the folder is
    /// proven to lie inside the root. Each file is read with [`Root::read`], which proves it again.
    pub fn list(&self, relative: &Path) -> Result<Vec<OsString>> {
        let Some((dir, path)) = self.open_inside(relative, libc::O_DIRECTORY)? else {
            return Ok(Vec::new());
        };
        // Listed through the open descriptor: the folder proven is the folder listed.
        let entries =
            std::fs::read_dir(fd_path(&dir)).map_err(|err| Error::io("read", &path, err))?;
        let mut names: Vec<OsString> = entries.flatten().map(|e| e.file_name()).collect();
        names.sort();
        Ok(names)
    }

    /// Opens `relative` for reading (never blocking: a FIFO planted where a file should be must
    /// not hang the open), then proves the file the kernel opened lies inside the root. `None`
    /// when there is nothing there.
    fn open_inside(
        &self,
        relative: &Path,
        flags: libc::c_int,
    ) -> Result<Option<(std::fs::File, PathBuf)>> {
        let path = self.dir.join(plain_relative(relative)?);
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&path)
        {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(Error::io("read", &path, err)),
        };
        self.check_inside(&path, &opened_path(&file, &path))?;
        Ok(Some((file, path)))
    }

    fn check_inside(&self, path: &Path, real: &Path) -> Result<()> {
        if real.starts_with(&self.dir) {
            return Ok(());
        }
        Err(refused(
            path,
            &format!(
                "it leads out of {} (to {})",
                self.dir.display(),
                real.display()
            ),
        ))
    }

    /// `relative` under the root, proven to pass through no symbolic link and no `..`: where
    /// cuekit may create or copy a file without being led elsewhere. The part that exists must
    /// be real folders (the last component may be missing, or a link cuekit will not follow).
    pub fn prove_no_links(&self, relative: &Path) -> Result<PathBuf> {
        let relative = plain_relative(relative)?;
        let mut at = self.dir.clone();
        let mut components = relative.components().peekable();
        while let Some(component) = components.next() {
            at.push(component);
            let last = components.peek().is_none();
            match std::fs::symlink_metadata(&at) {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => break,
                Err(err) => return Err(Error::io("inspect", &at, err)),
                Ok(meta) if meta.file_type().is_symlink() && !last => {
                    return Err(refused(
                        &at,
                        "it is a symbolic link, and cuekit writes through none",
                    ));
                }
                Ok(meta) if !last && !meta.is_dir() => {
                    return Err(refused(&at, "it is not a folder"));
                }
                Ok(_) => {}
            }
        }
        Ok(self.dir.join(relative))
    }

    /// Appends `bytes` to the file at `relative` (made if missing), never through a
    /// link: a repository's `.gitignore` that links to `~/.bashrc` is refused, not appended to.
    pub fn append(&self, relative: &Path, bytes: &[u8]) -> Result<()> {
        use std::io::Write;
        let path = self.prove_no_links(relative)?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&path)
            .and_then(|mut file| {
                if !file.metadata()?.is_file() {
                    return Err(std::io::Error::other("not a regular file"));
                }
                file.write_all(bytes)
            })
            .map_err(|err| Error::io("write", &path, err))
    }

    /// The folder `relative` names under the root (`.` is the root), proven to lie inside it
    /// once every link is resolved: where a project's spec may ask a task to work.
    pub fn subdir(&self, relative: &Path) -> Result<PathBuf> {
        if relative.as_os_str().is_empty() || relative == Path::new(".") {
            return Ok(self.dir.clone());
        }
        let path = self.dir.join(plain_relative(relative)?);
        let real = std::fs::canonicalize(&path).map_err(|err| Error::io("open", &path, err))?;
        self.check_inside(&path, &real)?;
        if !real.is_dir() {
            return Err(refused(&path, "it is not a folder"));
        }
        Ok(real)
    }

    /// `relative` under the root as a real folder all the way down (no link at any level, the
    /// last included): where cuekit runs a command or makes files.
    pub fn prove_real_dir(&self, relative: &Path) -> Result<PathBuf> {
        let path = self.prove_no_links(relative)?;
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => Ok(path),
            Ok(_) => Err(refused(&path, "it is not a folder (a link, or a file)")),
            Err(err) => Err(Error::io("inspect", &path, err)),
        }
    }
}

impl Root {
    /// The file at `relative` opened for a streamed read, following no link at any level (the
    /// last included): a regular file of this user's under the root, with its size. `None`
    /// when there is none. For a file another program keeps and a child can write (an agent's
    /// session record), read by the caller within a bound of its own.
    pub fn open_unlinked(&self, relative: &Path) -> Result<Option<(std::fs::File, u64)>> {
        let path = self.prove_no_links(relative)?;
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&path)
        {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
                return Err(refused(
                    &path,
                    "it is a symbolic link, and cuekit follows none",
                ));
            }
            Err(err) => return Err(Error::io("read", &path, err)),
        };
        self.check_inside(&path, &opened_path(&file, &path))?;
        let meta = regular_and_owned(&file, &path)?;
        Ok(Some((file, meta.len())))
    }
}

/// A relative path of plain names only: no root, no `.` games, no `..`.
pub fn plain_relative(relative: &Path) -> Result<&Path> {
    let plain = !relative.as_os_str().is_empty()
        && relative
            .components()
            .all(|component| matches!(component, Component::Normal(_)));
    if plain {
        Ok(relative)
    } else {
        Err(Error::new(
            ErrorCode::UnsafeProjectData,
            format!(
                "'{}' is not a plain relative path (no leading /, no ..)",
                relative.display()
            ),
        )
        .with_hint("project paths name files inside the project, e.g. dir/file"))
    }
}

/// A file the user names (a team spec), read as project data: proven a regular file of the
/// user's inside the folder it is named in, not a link out of it.
pub fn read_named(path: &Path) -> Result<Vec<u8>> {
    let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(Error::invalid_input(format!(
            "{} names no file",
            path.display()
        )));
    };
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    Root::new(folder)?
        .read(Path::new(name))?
        .ok_or_else(|| Error::io("read", path, std::io::ErrorKind::NotFound.into()))
}

fn fd_path(file: &std::fs::File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// The real path of an open file, from the kernel; where `/proc` is missing, the path resolved
/// again (the best this system allows).
fn opened_path(file: &std::fs::File, path: &Path) -> PathBuf {
    std::fs::read_link(fd_path(file))
        .or_else(|_| std::fs::canonicalize(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// A file of another user's (a shared `/tmp`, a world-writable parent) is nobody's word to this
/// user; root's own files (a system checkout) are accepted.
/// The metadata of an opened project file, refused unless it is a regular file of this user's
/// (or root's).
fn regular_and_owned(file: &std::fs::File, path: &Path) -> Result<std::fs::Metadata> {
    let meta = file
        .metadata()
        .map_err(|err| Error::io("read", path, err))?;
    if !meta.is_file() {
        return Err(refused(path, "it is not a regular file"));
    }
    check_owner(&meta, path)?;
    Ok(meta)
}

fn check_owner(meta: &std::fs::Metadata, path: &Path) -> Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() == me || meta.uid() == 0 {
        return Ok(());
    }
    Err(refused(
        path,
        &format!("it belongs to another user (uid {})", meta.uid()),
    ))
}

fn refused(path: &Path, why: &str) -> Error {
    Error::new(
        ErrorCode::UnsafeProjectData,
        format!("cuekit does not read {}: {why}", path.display()),
    )
    .with_hint(
        "project files are read only from inside the project, as regular files of yours; \
         replace the link with the file itself (or remove it)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_file_inside_is_read_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.md"), "hello").unwrap();
        let root = Root::new(dir.path()).unwrap();
        assert_eq!(root.read(Path::new("sub/a.md")).unwrap().unwrap(), b"hello");
        assert_eq!(root.read(Path::new("sub/none.md")).unwrap(), None);
        // A link that stays inside is the file it names.
        symlink("a.md", dir.path().join("sub/b.md")).unwrap();
        assert_eq!(
            root.read_text(Path::new("sub/b.md")).unwrap().unwrap(),
            "hello"
        );
    }

    #[test]
    fn links_out_dot_dot_and_odd_files_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "key").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
        let err = root.read(Path::new("link")).unwrap_err();
        assert_eq!(err.code, ErrorCode::UnsafeProjectData);
        assert!(err.message.contains("leads out of"), "{}", err.message);
        // A folder that is a link out: the file under it is outside too.
        symlink(outside.path(), dir.path().join("agents")).unwrap();
        assert!(root.read(Path::new("agents/secret")).is_err());
        assert!(root.list(Path::new("agents")).is_err());
        assert!(root.read(Path::new("../x")).is_err());
        assert!(root.read(Path::new("/etc/passwd")).is_err());
        // A FIFO would block a plain open.
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = root.read(Path::new("fifo")).unwrap_err();
        assert!(
            err.message.contains("not a regular file"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_path_to_write_must_not_pass_through_a_link() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        symlink(outside.path(), dir.path().join("out")).unwrap();
        assert!(root.prove_no_links(Path::new("real/new/file")).is_ok());
        let err = root
            .prove_no_links(Path::new("out/authorized_keys"))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::UnsafeProjectData);
        // The last component may itself be a link: it is replaced or skipped, never followed.
        assert!(root.prove_no_links(Path::new("out")).is_ok());
    }
}
