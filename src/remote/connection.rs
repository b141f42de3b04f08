//! One multiplexed connection per host, checked before use: a control socket whose master is
//! gone or hangs is removed (never waited on: `ConnectTimeout` does not cover it), and the far
//! cuekit's version is checked once per master connection, so a reply is never misread.

use std::path::PathBuf;
use std::time::Duration;

use super::Host;
use super::args::{self, control_argv, remote_line, ssh_argv};
use super::run::{Ran, capture};
use crate::error::{Error, ErrorCode, Result};

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
    if let Some(pid) = master_pid(host)?
        && checked_pid(host) == Some(pid)
    {
        return Ok(());
    }
    let version = remote_version(host)?;
    if version != VERSION_LINE {
        return Err(mismatch(host, &version));
    }
    // The handshake's ssh became the master (or joined one): remember it was checked.
    if let Some(pid) = master_pid(host)? {
        let _ = std::fs::write(stamp_path(host), pid.to_string());
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

/// The pid of the host's master connection, if one answers on the control socket. A socket
/// nobody answers on, or whose master does not answer in time, is removed, so the next call
/// starts a new master instead of hanging on it.
pub fn master_pid(host: &Host) -> Result<Option<u32>> {
    if std::fs::symlink_metadata(&host.control_path).is_err() {
        return Ok(None);
    }
    let ran = capture(&control_argv(host, "check"), None, CHECK_DEADLINE)?;
    if ran.status.is_some_and(|status| status.success()) {
        return Ok(parse_master_pid(&ran.stderr));
    }
    forget_master(host);
    Ok(None)
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

/// `Master running (pid=1234)`.
fn parse_master_pid(stderr: &str) -> Option<u32> {
    let rest = stderr.split("(pid=").nth(1)?;
    rest.split(')').next()?.trim().parse().ok()
}

fn checked_pid(host: &Host) -> Option<u32> {
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
    fn the_master_pid_is_read_from_ssh_check() {
        assert_eq!(
            parse_master_pid("Master running (pid=4242)\r\n"),
            Some(4242)
        );
        assert_eq!(parse_master_pid("Control socket connect(x): refused"), None);
    }
}
