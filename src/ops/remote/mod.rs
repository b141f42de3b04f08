//! Tasks on other hosts: the host's own cuekit runs them; this machine's registry records
//! which host each one is on (`Placement::host`), and that entry is the only way a host's task
//! is reached — a command on it goes to that host, never to a path or pid named in a reply.
//! Only operations come here, once `ops::route` has said a task is a host's: front ends never
//! do, and read a host's answer only as the operation's typed value.

mod hosts;
mod remove;
mod submit;
mod views;
mod wait;

pub(crate) use hosts::place;
pub use hosts::{HostError, HostReport, Installed, host_install, hosts};
pub(crate) use remove::remove_on_host;
pub(crate) use submit::submit_on_host;
pub(crate) use views::{by_host, host_views};
pub(crate) use wait::wait_on_host;

use std::io::Write;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::config::Config;
use crate::effects::remote::args::{self, ssh_argv};
use crate::effects::remote::connection;
use crate::effects::remote::run::Ran;
use crate::effects::remote::{self as host_access, Host};

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

/// Runs `words` (a `--json` cuekit command line) on host `name` and reads its JSON reply as
/// `T`. A reply with a non-zero status but no `error` (a steer receipt) is still the reply.
pub(crate) fn reply<T: serde::de::DeserializeOwned>(
    name: &str,
    words: &[String],
    stdin: Option<&[u8]>,
    cwd: &Path,
) -> Result<T> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    let ran = connection::call(&host, None, words, stdin, FORWARD_DEADLINE)?;
    let reply = match serde_json::from_slice::<serde_json::Value>(&ran.stdout) {
        Ok(reply) if reply.get("error").is_none() => reply,
        _ => parse_reply(&host, &ran)?,
    };
    serde_json::from_value(reply).map_err(|err| unreadable_reply(&host, &err))
}

/// Runs `words` (a cuekit command line that prints text: a log) on host `name` and writes what
/// it printed to `out`.
pub(crate) fn text(name: &str, words: &[String], cwd: &Path, out: &mut dyn Write) -> Result<()> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    let ran = connection::call(&host, None, words, None, FORWARD_DEADLINE)?;
    if !ran.status.is_some_and(|status| status.success()) {
        return Err(text_error(name, &ran.stderr));
    }
    out.write_all(&ran.stdout)
        .and_then(|()| out.flush())
        .map_err(|err| Error::new(ErrorCode::Io, format!("cannot write the output: {err}")))
}

/// [`text`] for a command that runs until it ends (a followed log): what it prints is copied to
/// `out` as it comes.
pub(crate) fn stream(name: &str, words: &[String], cwd: &Path, out: &mut dyn Write) -> Result<()> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    let ran = call_until_end(&host, words, out)?;
    if !ran.status.is_some_and(|status| status.success()) {
        return Err(text_error(name, &ran.stderr));
    }
    Ok(())
}

/// Runs `words` on `host` with no deadline of its own (a followed log, a wait without a
/// timeout): a dead peer ends it within about 15 s (server-alive probes). Its output goes to
/// `out` as it comes; its exit status and stderr are the caller's to read.
fn call_until_end(host: &Host, words: &[String], out: &mut dyn Write) -> Result<Ran> {
    connection::connect(host)?;
    let line = args::remote_line(&host.cuekit, None, words)?;
    let ran = crate::effects::remote::run::stream(&ssh_argv(host, &line, false), out)?;
    if ran.unreachable() {
        return Err(connection::unreachable(host, &ran.why(Duration::ZERO)));
    }
    Ok(ran)
}

/// The host's error, read off its stderr as cuekit prints one (`error[CODE]: MESSAGE`, then
/// `  hint: …`), naming the host.
fn text_error(host: &str, stderr: &str) -> Error {
    let mut lines = stderr.lines();
    let parsed = lines
        .find_map(|line| line.strip_prefix("error["))
        .and_then(|rest| rest.split_once("]: "))
        .and_then(|(code, message)| Some((ErrorCode::parse(code)?, message)));
    let Some((code, message)) = parsed else {
        return Error::new(
            ErrorCode::Internal,
            format!("host {host}: cuekit failed: {}", stderr.trim()),
        );
    };
    let error = Error::new(code, format!("host {host}: {message}"));
    match lines.find_map(|line| line.trim_start().strip_prefix("hint: ")) {
        Some(hint) => error.with_hint(hint),
        None => error,
    }
}

/// A forwarded command may do real work on the host (a cancel's grace period, a long log).
const FORWARD_DEADLINE: Duration = Duration::from_secs(120);

/// Runs `words` on host `name` on this terminal, with a terminal of its own there (an attach),
/// until it ends; a connection lost on the way is `host_unreachable`.
pub(crate) fn relay(name: &str, words: &[String], cwd: &Path) -> Result<i32> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    connection::connect(&host)?;
    let line = args::remote_line(&host.cuekit, None, words)?;
    let status: Option<ExitStatus> =
        crate::effects::remote::run::relay(&ssh_argv(&host, &line, true), None)?;
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
        let error = text_error(
            "gpu",
            "error[task_not_found]: no task with id 't_000000000000'\n  hint: run `cuekit list --all`\n",
        );
        assert_eq!(error.code, ErrorCode::TaskNotFound);
        assert_eq!(error.message, "host gpu: no task with id 't_000000000000'");
        assert_eq!(error.hint.as_deref(), Some("run `cuekit list --all`"));
        let odd = text_error("gpu", "Segmentation fault\n");
        assert_eq!(
            (odd.code, odd.message.as_str()),
            (
                ErrorCode::Internal,
                "host gpu: cuekit failed: Segmentation fault"
            )
        );
    }
}
