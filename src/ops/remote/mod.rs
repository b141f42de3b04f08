//! Tasks on other hosts: the host's own cuekit runs them; this machine's registry records
//! which host each one is on (`Placement::host`), and that entry is the only way a host's task
//! is reached — a command on it goes to that host, never to a path or pid named in a reply.

mod hosts;
mod remove;
mod submit;
mod views;
mod wait;

pub use hosts::{HostError, HostReport, Installed, host_install, hosts};
pub use remove::remove_on_host;
pub use submit::submit_on_host;
pub(crate) use views::{by_host, host_views};
pub use wait::{HOST_RETRY, host_wait_words, wait_on_host};

use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use crate::config::Config;
use crate::error::{Error, ErrorCode, Result};
use crate::remote::args::{self, ssh_argv};
use crate::remote::connection;
use crate::remote::run::Ran;
use crate::remote::{self as host_access, Host};
use crate::store;

/// A reply this cuekit cannot read: the two ends do not speak the same format.
fn unreadable_reply(host: &Host, err: &serde_json::Error) -> Error {
    Error::new(
        ErrorCode::HostVersionMismatch,
        format!("host {}: cannot read cuekit's reply: {err}", host.name),
    )
    .with_hint(connection::install_hint(host))
}

/// A host's JSON reply, or its JSON error as an error naming the host.
fn parse_reply<T: serde::de::DeserializeOwned>(host: &Host, ran: &Ran) -> Result<T> {
    if ran.status.is_some_and(|status| status.success()) {
        return serde_json::from_slice(&ran.stdout).map_err(|err| unreadable_reply(host, &err));
    }
    #[derive(serde::Deserialize)]
    struct Reply {
        error: Body,
    }
    #[derive(serde::Deserialize)]
    struct Body {
        code: String,
        message: String,
        hint: Option<String>,
    }
    match serde_json::from_slice::<Reply>(&ran.stdout) {
        Ok(Reply { error }) => {
            let code = ErrorCode::parse(&error.code).unwrap_or(ErrorCode::Internal);
            let error_out = Error::new(code, format!("host {}: {}", host.name, error.message));
            Err(match error.hint {
                Some(hint) => error_out.with_hint(hint),
                None => error_out,
            })
        }
        Err(_) => Err(Error::new(
            ErrorCode::Internal,
            format!("host {}: cuekit failed: {}", host.name, ran.stderr.trim()),
        )),
    }
}

/// The host a set of task ids is on: `None` when all are this machine's. Ids of different
/// hosts (or of a host and this machine) are refused: give each host's in its own call.
pub fn host_of(task_ids: &[String]) -> Result<Option<String>> {
    let mut hosts = task_ids
        .iter()
        .map(|id| Ok(store::placement(id)?.and_then(|p| p.host)))
        .collect::<Result<Vec<_>>>()?;
    hosts.dedup();
    match hosts.as_slice() {
        [] => Ok(None),
        [one] => Ok(one.clone()),
        _ => Err(Error::invalid_input(
            "these tasks are on different hosts (or some on this machine)",
        )
        .with_hint("give each host's tasks in a call of their own")),
    }
}

/// When `ids` are a host's tasks: runs `words` (a `--json` cuekit command line) there and
/// returns the host's name and its JSON reply, read as `T`. A reply with a non-zero status but
/// no `error` (a steer receipt, a wait that timed out) is still the reply. `None` for this
/// machine's tasks.
pub fn host_reply<T: serde::de::DeserializeOwned>(
    ids: &[String],
    words: &[String],
    stdin: Option<&[u8]>,
    cwd: &Path,
) -> Result<Option<(String, T)>> {
    let Some(name) = host_of(ids)? else {
        return Ok(None);
    };
    let host = host_access::host(&Config::load(cwd)?, &name)?;
    let ran = connection::call(&host, None, words, stdin, FORWARD_DEADLINE)?;
    let reply = match serde_json::from_slice::<serde_json::Value>(&ran.stdout) {
        Ok(reply) if reply.get("error").is_none() => reply,
        _ => parse_reply(&host, &ran)?,
    };
    let reply = serde_json::from_value(reply).map_err(|err| unreadable_reply(&host, &err))?;
    Ok(Some((name, reply)))
}

/// What a host's cuekit printed for a forwarded command, and its exit status.
#[derive(Debug)]
pub struct Forwarded {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Forwarded {
    /// The host's error, read off its stderr as cuekit prints one (`error[CODE]: MESSAGE`, then
    /// `  hint: …`), naming the host.
    pub fn error(&self, host: &str) -> Error {
        let mut lines = self.stderr.lines();
        let parsed = lines
            .find_map(|line| line.strip_prefix("error["))
            .and_then(|rest| rest.split_once("]: "))
            .and_then(|(code, message)| Some((ErrorCode::parse(code)?, message)));
        let Some((code, message)) = parsed else {
            return Error::new(
                ErrorCode::Internal,
                format!("host {host}: cuekit failed: {}", self.stderr.trim()),
            );
        };
        let error = Error::new(code, format!("host {host}: {message}"));
        match lines.find_map(|line| line.trim_start().strip_prefix("hint: ")) {
            Some(hint) => error.with_hint(hint),
            None => error,
        }
    }
}

/// A forwarded command may do real work on the host (a cancel's grace period, a long log).
const FORWARD_DEADLINE: Duration = Duration::from_secs(120);

/// Runs `words` (a cuekit command line) on host `name` and collects the reply.
pub fn forward(
    name: &str,
    words: &[String],
    stdin: Option<&[u8]>,
    cwd: &Path,
) -> Result<Forwarded> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    let ran = connection::call(&host, None, words, stdin, FORWARD_DEADLINE)?;
    Ok(Forwarded {
        status: ran.status.and_then(|s| s.code()).unwrap_or(1),
        stdout: ran.stdout,
        stderr: ran.stderr,
    })
}

/// Runs `words` on host `name` on this terminal (a wait, a followed log, or with `tty` an
/// attach), until it ends; a connection lost on the way is `host_unreachable`.
pub fn relay(name: &str, words: &[String], tty: bool, cwd: &Path) -> Result<i32> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    connection::connect(&host)?;
    let line = args::remote_line(&host.cuekit, None, words)?;
    let status: Option<ExitStatus> = crate::remote::run::relay(&ssh_argv(&host, &line, tty), None)?;
    match status.and_then(|s| s.code()) {
        Some(255) | None => Err(connection::unreachable(
            &host,
            "the connection failed or was lost (ssh's message is above)",
        )),
        Some(code) => Ok(code),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forwarded_error_keeps_the_hosts_code_message_and_hint() {
        let forwarded = |stderr: &str| Forwarded {
            status: 4,
            stdout: Vec::new(),
            stderr: stderr.to_string(),
        };
        let error = forwarded(
            "error[task_not_found]: no task with id 't_000000000000'\n  hint: run `cuekit list --all`\n",
        )
        .error("gpu");
        assert_eq!(error.code, ErrorCode::TaskNotFound);
        assert_eq!(error.message, "host gpu: no task with id 't_000000000000'");
        assert_eq!(error.hint.as_deref(), Some("run `cuekit list --all`"));
        let odd = forwarded("Segmentation fault\n").error("gpu");
        assert_eq!(
            (odd.code, odd.message.as_str()),
            (
                ErrorCode::Internal,
                "host gpu: cuekit failed: Segmentation fault"
            )
        );
    }
}
