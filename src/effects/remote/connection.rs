//! One multiplexed connection per host, checked before use: a control socket whose master is
//! gone or hangs is removed (never waited on: `ConnectTimeout` does not cover it), and the far
//! cuekit's version is checked once per master connection, so a reply is never misread.
//!
//! The check reads the master's greeting on its socket (OpenSSH's PROTOCOL.mux: on a new
//! connection, "the first action of each is to send a hello message"), in-process: `ssh -O
//! check` answers the same question, but starting ssh costs ~10 ms on every call.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Host;
use super::args::{self, remote_line, ssh_argv};
use super::run::{Ran, capture};
use crate::domain::error::{Error, ErrorCode, Result};

/// What `cuekit --version` prints: the two ends must print the same.
pub const VERSION_LINE: &str = concat!("cuekit ", env!("CARGO_PKG_VERSION"));
/// Asking the local master costs a millisecond; a master that takes longer is stale.
pub const CHECK_DEADLINE: Duration = Duration::from_secs(2);
/// A new connection (TCP, key exchange, login) and one command.
pub const CALL_DEADLINE: Duration = Duration::from_secs(args::CONNECT_TIMEOUT.as_secs() + 15);

/// Runs the host's cuekit with `words` (in `cwd`, when given) over a checked connection.
/// ssh's own failures and the deadline are `host_unreachable`; the remote exit status and
/// output are the caller's to read.
pub fn call(
    host: &Host,
    cwd: Option<&str>,
    words: &[String],
    stdin: Option<&[u8]>,
    deadline: Duration,
) -> Result<Ran> {
    connect(host)?;
    call_connected(host, cwd, words, stdin, deadline)
}

/// [`call`] over a connection [`connect`] has just checked (a caller that must know the host
/// was reachable before it sends anything).
pub fn call_connected(
    host: &Host,
    cwd: Option<&str>,
    words: &[String],
    stdin: Option<&[u8]>,
    deadline: Duration,
) -> Result<Ran> {
    let argv = ssh_argv(host, &remote_line(&host.cuekit, cwd, words)?, false);
    let ran = capture(&argv, stdin, deadline)?;
    if ran.unreachable() {
        return Err(unreachable(host, &ran.why(deadline)));
    }
    Ok(ran)
}

/// A live master connection to a cuekit of this version; at most one local socket probe when
/// the connection is warm.
pub fn connect(host: &Host) -> Result<()> {
    if let Some(master) = live_master(host)
        && checked_master(host) == Some(master)
    {
        return Ok(());
    }
    let version = remote_version(host)?;
    if version != VERSION_LINE {
        return Err(mismatch(host, &version));
    }
    // The handshake's ssh became the master (or joined one): remember it was checked.
    if let Some(master) = live_master(host) {
        let _ = std::fs::write(stamp_path(host), master.to_string());
    }
    Ok(())
}

/// The far side's `cuekit --version`, over a new or existing connection.
pub fn remote_version(host: &Host) -> Result<String> {
    let line = remote_line(&host.cuekit, None, &args::words(&["--version"]))?;
    let ran = capture(&ssh_argv(host, &line, false), None, CALL_DEADLINE)?;
    if ran.unreachable() {
        return Err(unreachable(host, &ran.why(CALL_DEADLINE)));
    }
    match ran.status.and_then(|status| status.code()) {
        Some(0) => Ok(String::from_utf8_lossy(&ran.stdout).trim().to_string()),
        Some(127) => Err(Error::new(
            ErrorCode::HostVersionMismatch,
            format!(
                "host {}: cuekit is not installed (`{}` not found)",
                host.name, host.cuekit
            ),
        )
        .with_hint(install_hint(host))),
        _ => Err(mismatch(host, ran.stderr.trim())),
    }
}

/// The host's master connection, if one greets on the control socket within
/// [`CHECK_DEADLINE`], named by its socket's inode (a new master binds a new socket). A socket
/// nobody answers on, or whose master does not greet in time, is removed, so the next call
/// starts a new master instead of hanging on it.
pub fn live_master(host: &Host) -> Option<u64> {
    let socket = std::fs::symlink_metadata(&host.control_path).ok()?;
    if greets(&host.control_path) {
        return Some(socket.ino());
    }
    forget_master(host);
    None
}

/// Whether a mux master answers on `path` with its hello.
fn greets(path: &Path) -> bool {
    let Ok(mut stream) = UnixStream::connect(path) else {
        return false;
    };
    let mut hello = [0u8; 12];
    stream.set_read_timeout(Some(CHECK_DEADLINE)).is_ok()
        && stream.read_exact(&mut hello).is_ok()
        && is_mux_hello(&hello)
}

/// `uint32 length, uint32 MUX_MSG_HELLO (1), uint32 version`, big-endian.
fn is_mux_hello(bytes: &[u8; 12]) -> bool {
    bytes[4..8] == 1u32.to_be_bytes()
}

/// Removes the control socket and its handshake stamp (the master, if any, is left to its
/// `ControlPersist`).
pub fn forget_master(host: &Host) {
    let _ = std::fs::remove_file(&host.control_path);
    forget_check(host);
}

/// The next call checks the far cuekit's version again (it was just replaced).
pub fn forget_check(host: &Host) {
    let _ = std::fs::remove_file(stamp_path(host));
}

fn checked_master(host: &Host) -> Option<u64> {
    std::fs::read_to_string(stamp_path(host))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn stamp_path(host: &Host) -> PathBuf {
    let mut path = host.control_path.clone().into_os_string();
    path.push(".checked");
    PathBuf::from(path)
}

pub fn unreachable(host: &Host, why: &str) -> Error {
    Error::new(
        ErrorCode::HostUnreachable,
        format!("host {} ({}) is unreachable: {why}", host.name, host.ssh),
    )
    .with_hint(format!(
        "check that `ssh -o BatchMode=yes {} true` works without a prompt \
         (key loaded, host key known, host up)",
        host.ssh
    ))
}

pub fn mismatch(host: &Host, version: &str) -> Error {
    Error::new(
        ErrorCode::HostVersionMismatch,
        format!(
            "host {} runs `{version}`, this is `{VERSION_LINE}`: their requests and replies may differ",
            host.name
        ),
    )
    .with_hint(install_hint(host))
}

pub fn install_hint(host: &Host) -> String {
    format!(
        "install this cuekit on the host: `cuekit host install {}`",
        host.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_master_greets_with_mux_hello() {
        let hello = [0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 4];
        assert!(is_mux_hello(&hello));
        assert!(!is_mux_hello(&[0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 4]));
    }

    #[test]
    fn a_socket_that_never_greets_is_stale_and_removed() {
        let dir = std::env::temp_dir().join(format!("ck-mux-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let host = Host {
            name: "h".into(),
            ssh: "h".into(),
            cuekit: "cuekit".into(),
            cwd: None,
            control_path: dir.join("h"),
        };
        assert_eq!(live_master(&host), None, "no socket, no master");
        let silent = std::os::unix::net::UnixListener::bind(&host.control_path).unwrap();
        let greeter = std::os::unix::net::UnixListener::bind(dir.join("g")).unwrap();
        assert_eq!(live_master(&host), None);
        assert!(!host.control_path.exists(), "the stale socket is removed");
        drop(silent);
        std::thread::spawn(move || {
            use std::io::Write;
            let (mut client, _) = greeter.accept().unwrap();
            client
                .write_all(&[0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 4])
                .unwrap();
        });
        assert!(greets(&dir.join("g")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
