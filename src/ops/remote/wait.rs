//! Waiting on a host's tasks: the wait runs on the host, and a host that stops answering is
//! asked again until the wait's own timeout, never taken for an ending.

use std::path::Path;
use std::time::{Duration, Instant};

use super::views::unknown_rows;
use super::{parse_reply, unreadable_reply};
use crate::domain::error::{ErrorCode, Result};
use crate::effects::config::Config;
use crate::effects::remote::connection;
use crate::effects::remote::run::Ran;
use crate::effects::remote::{self as host_access, Host};
use crate::effects::store;
use crate::ops::task::view::TaskView;
use crate::ops::wait::{WaitNews, WaitOutcome, WaitRequest};

/// How long a wait on a host that stopped answering pauses before asking again.
const HOST_RETRY: Duration = Duration::from_secs(2);

/// How long past the host's own wait its answer may take to arrive: the connection's connect
/// timeout.
const REPLY_GRACE: Duration = crate::effects::remote::args::CONNECT_TIMEOUT;

/// The host's `cuekit --json wait` words for `request`, with what is left of its timeout.
fn host_wait_words(request: &WaitRequest, remaining: Option<Duration>) -> Vec<String> {
    let mut out: Vec<String> = vec!["--json".into(), "wait".into()];
    out.extend(request.task_ids.iter().cloned());
    out.push(format!("--until={}", request.until.flag()));
    if request.any {
        out.push("--any".into());
    }
    if let Some(left) = remaining {
        out.push(format!("--timeout={}ms", left.as_millis()));
    }
    out
}

/// A wait on host `name`'s tasks, run there as one wait (so reports and endings count from
/// its start): a call with a deadline just past the wait's timeout, or without a timeout one
/// that runs until it ends (a dead peer ends it). A host that stops answering is asked again
/// until the wait's own timeout, never taken for an ending, and `watch` is told; if it still
/// does not answer then, the wait has timed out and its tasks read `unknown` (reason
/// `host_unreachable`, the ssh error as hint).
pub(crate) fn wait_on_host(
    name: &str,
    request: &WaitRequest,
    cwd: &Path,
    watch: &mut dyn FnMut(WaitNews),
) -> Result<WaitOutcome> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    let started = Instant::now();
    loop {
        let remaining = request
            .timeout
            .map(|limit| limit.saturating_sub(started.elapsed()));
        let words = host_wait_words(request, remaining);
        let reply = match remaining {
            Some(left) => connection::call(&host, None, &words, None, left + REPLY_GRACE),
            None => {
                let mut stdout = Vec::new();
                super::call_until_end(&host, &words, &mut stdout).map(|ran| Ran { stdout, ..ran })
            }
        }
        .and_then(|ran| wait_reply(&host, &ran));
        match reply {
            Err(error) if error.code == ErrorCode::HostUnreachable => {
                let left = request
                    .timeout
                    .map(|limit| limit.saturating_sub(started.elapsed()));
                if left.is_some_and(|left| left <= HOST_RETRY) {
                    let placements = request
                        .task_ids
                        .iter()
                        .filter_map(|id| store::placement(id).transpose())
                        .collect::<Result<Vec<_>>>()?;
                    return Ok(WaitOutcome {
                        tasks: unknown_rows(name, &placements, &error),
                        timed_out: true,
                        unreachable: Some(error),
                    });
                }
                watch(WaitNews::HostUnreachable(&error));
                std::thread::sleep(HOST_RETRY);
            }
            other => return other,
        }
    }
}

/// A host's `wait --json` reply: it exits non-zero when the wait timed out or a task failed,
/// with the same reply, so only an `error` is an error.
fn wait_reply(host: &Host, ran: &Ran) -> Result<WaitOutcome> {
    #[derive(serde::Deserialize)]
    struct Reply {
        timed_out: bool,
        tasks: Vec<TaskView>,
    }
    let value = match serde_json::from_slice::<serde_json::Value>(&ran.stdout) {
        Ok(value) if value.get("error").is_none() => value,
        _ => parse_reply::<serde_json::Value>(host, ran)?,
    };
    let reply: Reply = serde_json::from_value(value).map_err(|err| unreadable_reply(host, &err))?;
    Ok(WaitOutcome {
        timed_out: reply.timed_out,
        unreachable: None,
        tasks: reply
            .tasks
            .into_iter()
            .map(|view| view.on_host(&host.name))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_wait_carries_what_is_left_of_the_timeout() {
        let request = WaitRequest {
            task_ids: vec!["t_0123456789ab".to_string()],
            any: true,
            timeout: Some(Duration::from_secs(60)),
            until: crate::ops::wait::WaitUntil::Report,
        };
        assert_eq!(
            host_wait_words(&request, Some(Duration::from_millis(1500))),
            [
                "--json",
                "wait",
                "t_0123456789ab",
                "--until=report",
                "--any",
                "--timeout=1500ms"
            ]
        );
        assert_eq!(host_wait_words(&request, None).len(), 5);
    }
}
