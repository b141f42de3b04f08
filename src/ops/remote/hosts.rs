//! The configured hosts: `cuekit hosts` (reachable? versions, linger, task counts) and
//! `cuekit host install` (this binary copied to a host of the same platform).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::unreadable_reply;
use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::config::Config;
use crate::effects::remote::args::{self, ssh_argv};
use crate::effects::remote::connection::{self, CALL_DEADLINE, VERSION_LINE};
use crate::effects::remote::{self as host_access, Host};
use crate::ops::task::view::TaskView;

/// How long copying this binary to a host may take.
const INSTALL_DEADLINE: Duration = Duration::from_secs(300);

/// What `cuekit host install` did.
#[derive(Debug, Clone, Serialize)]
pub struct Installed {
    pub host: String,
    /// Where the binary now is on the host (`~` is the remote home).
    pub path: String,
    /// What the installed binary's `--version` printed.
    pub version: String,
    /// What is left for the user to do, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Copies this cuekit to host `name` (its configured `cuekit` path, else
/// `~/.local/bin/cuekit`) when the host's OS and architecture are this build's, and runs it.
pub fn host_install(name: &str, cwd: &Path) -> Result<Installed> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    let path = if host.cuekit.contains('/') {
        host.cuekit.clone()
    } else {
        args::INSTALL_PATH.to_string()
    };
    let exe = std::env::current_exe()
        .map_err(|err| Error::new(ErrorCode::Io, format!("cannot find this cuekit: {err}")))?;
    let binary = std::fs::File::open(&exe).map_err(|err| Error::io("read", &exe, err))?;
    connection::live_master(&host);
    let argv = ssh_argv(&host, &args::install_line(&path)?, false);
    let ran = crate::effects::remote::run::capture_from(&argv, binary, INSTALL_DEADLINE)?;
    if ran.unreachable() {
        return Err(connection::unreachable(&host, &ran.why(INSTALL_DEADLINE)));
    }
    connection::forget_check(&host);
    let version = String::from_utf8_lossy(&ran.stdout).trim().to_string();
    match ran.status.and_then(|status| status.code()) {
        Some(0) if version == VERSION_LINE => {}
        Some(0) => return Err(connection::mismatch(&host, &version)),
        Some(3) => {
            return Err(Error::new(
                ErrorCode::InvalidState,
                format!(
                    "host {name}: {}; this cuekit is built for {}",
                    ran.stderr.trim(),
                    args::host_platform()
                ),
            )
            .with_hint("build cuekit on the host (`cargo install --path .` in a checkout)"));
        }
        _ => {
            return Err(Error::new(
                ErrorCode::Io,
                format!("host {name}: the copy failed: {}", ran.stderr.trim()),
            ));
        }
    }
    let note = (path != host.cuekit).then(|| {
        format!(
            "set `cuekit: {path}` under hosts.{name} in ~/.config/cuekit/config.yaml, unless \
             {path} is on the PATH of the host's ssh commands"
        )
    });
    Ok(Installed {
        host: name.to_string(),
        path,
        version,
        note,
    })
}

/// One host, as `cuekit hosts` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    pub name: String,
    pub ssh: String,
    pub reachable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuekit_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmux_version: Option<String>,
    /// `false` where systemd-logind runs and does not keep this user's processes after
    /// logout: with `KillUserProcesses=yes` it would end the host's tmux server, and its tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub linger: Option<bool>,
    /// The host's tasks (all of its account's, not only those submitted from here), by status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tasks: Option<BTreeMap<&'static str, usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<HostError>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl From<Error> for HostError {
    fn from(error: Error) -> HostError {
        HostError {
            code: error.code,
            message: error.message,
            hint: error.hint,
        }
    }
}

/// Where a task of `submit --host '*'` (every configured host, in name order) or `--host a,b`
/// (those, in that order) goes: the first host that answers and runs fewer live agents than
/// its cap (`limits.hosts.<name>`; none set: any room); when every one is at its cap, the one
/// with the fewest live and queued tasks, whose own scheduler queues it. A host that cannot be
/// reached is skipped, never waited on (each is asked at once, with the call deadline).
pub(crate) fn place(asked: &str, cwd: &Path) -> Result<String> {
    let config = Config::load(cwd)?;
    let configured = host_access::hosts(&config)?;
    let names: Vec<String> = if asked == "*" {
        configured.keys().cloned().collect()
    } else {
        asked
            .split(',')
            .map(|name| name.trim().to_string())
            .collect()
    };
    if names.is_empty() {
        return Err(Error::invalid_input("--host '*': no host is configured")
            .with_hint("name hosts under `hosts:` in ~/.config/cuekit/config.yaml"));
    }
    let hosts = names
        .iter()
        .map(|name| host_access::host(&config, name))
        .collect::<Result<Vec<Host>>>()?;
    let reports = reports_of(hosts.iter());
    let caps = config.host_limits();
    let count = |report: &HostReport, statuses: &[&str]| {
        report.tasks.as_ref().map_or(0, |tasks| {
            statuses
                .iter()
                .map(|s| tasks.get(s).copied().unwrap_or(0))
                .sum::<usize>()
        })
    };
    let answered: Vec<&HostReport> = reports
        .iter()
        .filter(|report| report.reachable && report.error.is_none())
        .collect();
    let live = |report: &HostReport| count(report, &["running", "input_required"]);
    if let Some(free) = answered.iter().find(|report| {
        caps.get(&report.name)
            .is_none_or(|cap| live(report) < *cap as usize)
    }) {
        return Ok(free.name.clone());
    }
    answered
        .iter()
        .min_by_key(|report| count(report, &["running", "input_required", "queued"]))
        .map(|report| report.name.clone())
        .ok_or_else(|| {
            Error::new(
                ErrorCode::HostUnreachable,
                format!("none of the hosts {} answered", names.join(", ")),
            )
            .with_hint("`cuekit hosts` says what each one lacks")
        })
}

/// Every configured host: reachable, its versions and task counts; hosts asked in parallel.
pub fn hosts(cwd: &Path) -> Result<Vec<HostReport>> {
    let hosts = host_access::hosts(&Config::load(cwd)?)?;
    Ok(reports_of(hosts.values()))
}

/// Each host's report, the hosts asked in parallel.
fn reports_of<'a>(hosts: impl Iterator<Item = &'a Host>) -> Vec<HostReport> {
    std::thread::scope(|scope| {
        let calls: Vec<_> = hosts
            .map(|host| scope.spawn(move || report(host)))
            .collect();
        calls
            .into_iter()
            .map(|call| call.join().expect("a host's check does not panic"))
            .collect()
    })
}

fn report(host: &Host) -> HostReport {
    let mut report = HostReport {
        name: host.name.clone(),
        ssh: host.ssh.clone(),
        reachable: false,
        cuekit_version: None,
        tmux_version: None,
        linger: None,
        tasks: None,
        error: None,
    };
    if let Err(error) = probe(host, &mut report) {
        report.reachable = error.code != ErrorCode::HostUnreachable;
        report.error = Some(error.into());
    }
    report
}

/// The handshake, then one round trip for the tmux version and the task list.
fn probe(host: &Host, report: &mut HostReport) -> Result<()> {
    connection::live_master(host);
    let version = connection::remote_version(host)?;
    report.reachable = true;
    report.cuekit_version = Some(version.clone());
    if version != VERSION_LINE {
        // The same error every other command gives.
        return connection::connect(host);
    }
    connection::connect(host)?;
    let argv = ssh_argv(host, &args::probe_line(&host.cuekit)?, false);
    let ran = crate::effects::remote::run::capture(&argv, None, CALL_DEADLINE)?;
    if ran.unreachable() {
        return Err(connection::unreachable(host, &ran.why(CALL_DEADLINE)));
    }
    let text = String::from_utf8_lossy(&ran.stdout);
    let mut lines = text.splitn(3, '\n');
    let (tmux, linger, list) = (
        lines.next().unwrap_or_default().trim(),
        lines.next().unwrap_or_default().trim(),
        lines.next().unwrap_or_default(),
    );
    report.tmux_version = Some(tmux.to_string()).filter(|v| v != "none");
    report.linger = match linger {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    };
    let rows: Vec<TaskView> =
        serde_json::from_str(list).map_err(|err| unreadable_reply(host, &err))?;
    let mut counts = BTreeMap::new();
    for row in rows {
        *counts.entry(row.status.as_str()).or_insert(0) += 1;
    }
    report.tasks = Some(counts);
    Ok(())
}
