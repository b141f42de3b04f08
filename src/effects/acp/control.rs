//! The control socket between cuekit's commands (steer, approve, cancel) and the client in an
//! ACP task's pane: one JSON request a line, one JSON reply. The socket lives outside the
//! project (`$XDG_RUNTIME_DIR/cuekit/`, else cuekit's data directory), owner-only, and its path
//! is in the registry: the child can write the project, and must not be able to stand in for
//! the client. The client refuses a peer that runs inside the task's own pane (`SO_PEERCRED`):
//! a child never answers its own permission requests or steers itself.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::domain::acp::control::{Answer, Reply, Request};
use crate::domain::error::{Error, ErrorCode, Result};

/// `sun_path` holds 108 bytes on Linux, the terminator included.
const MAX_SOCKET_PATH: usize = 107;

/// The control socket the registry recorded for an ACP task (its only source: a task folder
/// is writable by the child).
pub fn socket_of(placement: &crate::effects::store::Placement) -> Result<PathBuf> {
    placement
        .facts
        .as_ref()
        .and_then(|facts| facts.acp_socket.clone())
        .ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidState,
                format!("task {} was not registered as an ACP task", placement.id),
            )
            .with_hint("only a task submitted with --mode acp has a control channel")
        })
}

/// Where task `id`'s control socket goes: the user's runtime directory (memory, owner-only,
/// gone at logout), else cuekit's data directory; a path too long for a socket falls back to
/// a short one under `/tmp` of the user's own.
pub fn socket_path(task_id: &str) -> Option<PathBuf> {
    let name = format!("{task_id}.sock");
    let runtime = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute() && dir.is_dir())
        .map(|dir| dir.join("cuekit"));
    let data = crate::effects::store::data_dir().map(|dir| dir.join("run"));
    // SAFETY: geteuid has no preconditions and cannot fail.
    let short = PathBuf::from(format!("/tmp/cuekit-{}", unsafe { libc::geteuid() }));
    [runtime, data, Some(short)]
        .into_iter()
        .flatten()
        .map(|dir| dir.join(&name))
        .find(|path| path.as_os_str().len() <= MAX_SOCKET_PATH)
}

/// The socket's folder, made owner-only, and proven to be the user's own (a `/tmp` folder
/// another user made first is refused).
pub fn prepare_dir(socket: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let dir = socket
        .parent()
        .ok_or_else(|| Error::invalid_input("a control socket path has a folder"))?;
    crate::effects::store::create_private_dir(dir)?;
    let meta = std::fs::symlink_metadata(dir).map_err(|err| Error::io("inspect", dir, err))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o077 != 0 {
        return Err(Error::new(
            ErrorCode::Io,
            format!(
                "{} is not a private folder of this user's: no control socket goes there",
                dir.display()
            ),
        )
        .with_hint("remove it, or set XDG_RUNTIME_DIR"));
    }
    Ok(())
}

/// The pid and uid of the process at the other end of `stream` (the kernel's word).
pub fn peer(stream: &UnixStream) -> Option<(u32, u32)> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given; the descriptor is
    // open for the life of `stream`.
    let done = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    };
    (done == 0).then_some((cred.pid as u32, cred.uid))
}

/// Sends `request` to the client at `socket` and reads its reply (within `limit`).
pub fn call(socket: &Path, request: &Request, limit: Duration) -> Result<Reply> {
    let unreachable = |err: std::io::Error| {
        Error::new(
            ErrorCode::InvalidState,
            format!(
                "the task's ACP client does not answer on {}: {err}",
                socket.display()
            ),
        )
        .with_hint("the task may have just ended: `cuekit status <id>`")
    };
    let mut stream = UnixStream::connect(socket).map_err(unreachable)?;
    stream.set_read_timeout(Some(limit)).map_err(unreachable)?;
    stream.set_write_timeout(Some(limit)).map_err(unreachable)?;
    let mut line = serde_json::to_vec(request).expect("requests serialize");
    line.push(b'\n');
    stream.write_all(&line).map_err(unreachable)?;
    let mut reply = String::new();
    BufReader::new(&stream)
        .read_line(&mut reply)
        .map_err(unreachable)?;
    serde_json::from_str(&reply).map_err(|err| {
        Error::new(
            ErrorCode::InvalidState,
            format!("the task's ACP client answered something unreadable: {err}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_read_back() {
        for request in [
            Request::Prompt {
                text: "go on".into(),
            },
            Request::Answer {
                answer: Answer::Option("proceed_once".into()),
            },
            Request::Answer {
                answer: Answer::AllowAlways,
            },
            Request::Cancel,
            Request::End,
        ] {
            let line = serde_json::to_string(&request).unwrap();
            assert_eq!(
                serde_json::from_str::<Request>(&line).unwrap(),
                request,
                "{line}"
            );
        }
        let reply = Reply::rejected("busy");
        let line = serde_json::to_string(&reply).unwrap();
        assert_eq!(serde_json::from_str::<Reply>(&line).unwrap(), reply);
        assert!(socket_path("t_0123456789ab").unwrap().as_os_str().len() <= MAX_SOCKET_PATH);
    }
}
