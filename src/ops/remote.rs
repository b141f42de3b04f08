//! Tasks on other hosts: the host's own cuekit runs them; this machine's registry records
//! which host each one is on (`Placement::host`), and that entry is the only way a host's task
//! is reached — a command on it goes to that host, never to a path or pid named in a reply.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::remove::{Removal, RemovalOutcome};
use super::submit::{SubmitOutcome, SubmitRequest};
use super::view::TaskView;
use super::wait::{WaitOutcome, WaitRequest};
use crate::config::Config;
use crate::error::{Error, ErrorCode, Result};
use crate::remote::args::{self, ssh_argv, words};
use crate::remote::connection::{self, CALL_DEADLINE, VERSION_LINE};
use crate::remote::run::Ran;
use crate::remote::{self as host_access, Host};
use crate::store::{self, Placement};
use crate::tmux::Socket;

/// Starts a task on host `name` with the request as given (its `cwd` is a remote directory,
/// default the host's `cwd`), and registers it here with its host. The id is chosen here and
/// registered before the host is asked: a connection lost after the host started the task (its
/// reply never came) leaves a task this machine knows and can ask about, never an orphan.
pub fn submit_on_host(name: &str, request: &SubmitRequest, cwd: &Path) -> Result<SubmitOutcome> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    let remote_cwd = match &request.cwd {
        Some(dir) => Some(dir.to_string_lossy().into_owned()),
        None => host.cwd.clone(),
    };
    // A host that cannot be reached is known to have started nothing.
    connection::connect(&host)?;
    let id = store::new_task_id();
    if !request.dry_run {
        register(&id, name, Path::new(""), &super::now_rfc3339())?;
    }
    let request = SubmitRequest {
        id: (!request.dry_run).then(|| id.clone()),
        ..request.clone()
    };
    let (words, stdin) = submit_words(&request);
    let outcome = connection::call(
        &host,
        remote_cwd.as_deref(),
        &words,
        stdin.as_deref(),
        CALL_DEADLINE,
    )
    .and_then(|ran| parse_reply::<serde_json::Value>(&host, &ran))
    .and_then(|reply| {
        // A submitted task has an id; only a dry run has none.
        match reply.get("id") {
            Some(_) => serde_json::from_value(reply).map(SubmitOutcome::Submitted),
            None => serde_json::from_value(reply),
        }
        .map_err(|err| unreadable_reply(&host, &err))
    });
    match outcome {
        Ok(SubmitOutcome::Submitted(view)) => {
            let view = view.on_host(name);
            // Its directory on the host, for the record; the id and host were registered above.
            register(&view.id, name, &view.task_dir, &view.created_at).map_err(|err| {
                Error::new(
                    err.code,
                    format!(
                        "task {} started on host {name}; its directory was not recorded here: {}",
                        view.id, err.message
                    ),
                )
            })?;
            Ok(SubmitOutcome::Submitted(Box::new(view)))
        }
        Ok(dry_run) => Ok(dry_run),
        Err(error) if error.code == ErrorCode::HostUnreachable && !request.dry_run => {
            let message = format!(
                "{}; task {id} may have started there before the connection was lost",
                error.message
            );
            Err(Error::new(error.code, message).with_hint(format!(
                "`cuekit status {id}` asks the host again; `cuekit cancel {id}` ends the task \
                 if it runs"
            )))
        }
        Err(error) => {
            store::unregister(&id);
            Err(error)
        }
    }
}

/// The remote `cuekit --json submit …` words for `request`, and its stdin. The objective goes
/// on stdin (`-`), byte for byte, unless the request carries argv words (the `command` agent),
/// which go as words after `--`. Values are `--flag=value`, so one starting with `-` stays one.
pub fn submit_words(request: &SubmitRequest) -> (Vec<String>, Option<Vec<u8>>) {
    let mut out = words(&["--json", "submit"]);
    let mut value = |flag: &str, value: Option<String>| {
        if let Some(value) = value {
            out.push(format!("--{flag}={value}"));
        }
    };
    value("agent", request.agent.clone());
    value("model", request.model.clone());
    value("mode", request.mode.map(|m| m.as_str().to_string()));
    value("approval-mode", request.approval_mode.clone());
    value(
        "timeout",
        request.timeout.map(|t| t.as_secs().max(1).to_string()),
    );
    value("resume-from", request.resume_from.clone());
    value("provider-profile", request.provider_profile.clone());
    value("role", request.role.clone());
    value("team", request.team.clone());
    value("base", request.base.clone());
    value("branch", request.branch.clone());
    value("id", request.id.clone());
    value("context", request.context.clone());
    for constraint in &request.constraints {
        value("constraint", Some(constraint.clone()));
    }
    let switches = [
        (
            request.dangerously_skip_permissions == Some(true),
            "--skip-permissions",
        ),
        (
            request.dangerously_skip_permissions == Some(false),
            "--no-skip-permissions",
        ),
        (request.stream_events == Some(false), "--no-events"),
        (request.worktree == Some(true), "--worktree"),
        (request.worktree == Some(false), "--no-worktree"),
        (request.dry_run, "--dry-run"),
    ];
    out.extend(
        switches
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, s)| s.to_string()),
    );
    if request.argv.is_empty() {
        out.push("-".into());
        (out, Some(request.objective.clone().into_bytes()))
    } else {
        out.push("--".into());
        out.extend(request.argv.iter().cloned());
        (out, None)
    }
}

/// Records a host's task in this machine's registry: its id and host are what every later
/// command goes by; the host's directory is only told.
fn register(id: &str, host: &str, task_dir: &Path, created_at: &str) -> Result<()> {
    let placement = Placement {
        id: id.to_string(),
        task_dir: task_dir.to_path_buf(),
        socket: Socket(String::new()),
        session: String::new(),
        created_at: created_at.to_string(),
        timeout_secs: None,
        host: Some(host.to_string()),
        legacy: false,
    };
    store::stage_placement(&placement)?.commit()
}

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
/// returns its JSON reply, for a front end that renders JSON itself (MCP). A reply with a
/// non-zero status but no `error` (a steer receipt, a wait that timed out) is still the reply.
/// `None` for this machine's tasks.
pub fn host_json(
    ids: &[String],
    words: &[String],
    stdin: Option<&[u8]>,
    cwd: &Path,
) -> Result<Option<serde_json::Value>> {
    let Some(name) = host_of(ids)? else {
        return Ok(None);
    };
    let host = host_access::host(&Config::load(cwd)?, &name)?;
    let ran = connection::call(&host, None, words, stdin, FORWARD_DEADLINE)?;
    match serde_json::from_slice::<serde_json::Value>(&ran.stdout) {
        Ok(reply) if reply.get("error").is_none() => Ok(Some(reply)),
        _ => parse_reply(&host, &ran).map(Some),
    }
}

/// What a host's cuekit printed for a forwarded command, and its exit status.
#[derive(Debug)]
pub struct Forwarded {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
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

/// `rm` of host `name`'s tasks, one call each: removed on the host, then forgotten here. A task
/// the host does not know (its submit was lost before it reached the host) is only forgotten
/// here: the host's word on its own tasks, and nothing on the host is touched.
pub fn remove_on_host(
    name: &str,
    ids: &[String],
    (force, dry_run): (bool, bool),
    cwd: &Path,
) -> Result<Vec<Removal>> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    let mut removals = Vec::new();
    for id in ids {
        let mut request = words(&["--json", "rm", id]);
        if force {
            request.push("--force".into());
        }
        if dry_run {
            request.push("--dry-run".into());
        }
        let ran = connection::call(&host, None, &request, None, FORWARD_DEADLINE)?;
        match parse_reply::<Vec<Removal>>(&host, &ran) {
            Ok(rows) => {
                for row in rows
                    .iter()
                    .filter(|row| row.outcome == RemovalOutcome::Removed)
                {
                    store::unregister(&row.task_id);
                }
                removals.extend(rows);
            }
            Err(error) if error.code == ErrorCode::TaskNotFound => {
                if !dry_run {
                    store::unregister(id);
                }
                removals.push(Removal {
                    task_id: id.clone(),
                    outcome: if dry_run {
                        RemovalOutcome::WouldRemove
                    } else {
                        RemovalOutcome::Removed
                    },
                    worktree: None,
                    branch: None,
                    reasons: Vec::new(),
                });
            }
            Err(error) => return Err(error),
        }
    }
    Ok(removals)
}

/// How long a wait on a host that stopped answering pauses before asking again.
pub const HOST_RETRY: Duration = Duration::from_secs(2);

/// The longest one remote wait blocks: a wait without a timeout (or a longer one) is several,
/// so no ssh call outlives its deadline.
const WAIT_CHUNK: Duration = Duration::from_secs(60);

/// The host's `cuekit wait` words for `request`, with what is left of its timeout.
pub fn host_wait_words(
    request: &WaitRequest,
    remaining: Option<Duration>,
    json: bool,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if json {
        out.push("--json".into());
    }
    out.push("wait".into());
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

/// A wait on host `name`'s tasks, run there and collected, for a front end that renders it
/// itself (MCP). A host that stops answering is asked again until the wait's own timeout, never
/// taken for an ending; if it still does not answer then, the wait has timed out and its tasks
/// read `unknown` (reason `host_unreachable`, the ssh error as hint).
pub fn wait_on_host(name: &str, request: &WaitRequest, cwd: &Path) -> Result<WaitOutcome> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    let started = Instant::now();
    loop {
        let remaining = request
            .timeout
            .map(|limit| limit.saturating_sub(started.elapsed()));
        let chunk = remaining.map_or(WAIT_CHUNK, |left| left.min(WAIT_CHUNK));
        let words = host_wait_words(request, Some(chunk), true);
        let reply = connection::call(&host, None, &words, None, chunk + CALL_DEADLINE)
            .and_then(|ran| wait_reply(&host, &ran));
        match reply {
            Ok(outcome) if outcome.timed_out && remaining.is_none_or(|left| left > chunk) => {}
            Ok(outcome) => return Ok(outcome),
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
                    });
                }
                std::thread::sleep(HOST_RETRY);
            }
            Err(error) => return Err(error),
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
        tasks: reply
            .tasks
            .into_iter()
            .map(|view| view.on_host(&host.name))
            .collect(),
    })
}

/// Registered tasks by host, for [`host_views`].
pub(crate) fn by_host(
    ids: impl IntoIterator<Item = String>,
) -> Result<BTreeMap<String, Vec<Placement>>> {
    let mut hosts: BTreeMap<String, Vec<Placement>> = BTreeMap::new();
    for id in ids {
        if let Some(placement) = store::placement(&id)?
            && let Some(host) = placement.host.clone()
        {
            hosts.entry(host).or_default().push(placement);
        }
    }
    Ok(hosts)
}

/// Views of hosts' tasks: one call per host, hosts asked in parallel. `listing` asks for the
/// host's whole list (`list --all`), else `status` of the given tasks. A host that does not
/// answer gives `unknown` rows (reason `host_unreachable`, never stored); in a status, another
/// failure (a task the host does not know) is the error.
pub(crate) fn host_views(
    hosts: BTreeMap<String, Vec<Placement>>,
    listing: bool,
    cwd: &Path,
) -> Result<Vec<TaskView>> {
    let configured = host_access::hosts(&Config::load(cwd)?)?;
    let results: Vec<Result<Vec<TaskView>>> = std::thread::scope(|scope| {
        let calls: Vec<_> = hosts
            .iter()
            .map(|(name, placements)| {
                let host = configured.get(name);
                scope.spawn(move || views_on_host(name, host, placements, listing))
            })
            .collect();
        calls
            .into_iter()
            .map(|call| call.join().expect("a host's call does not panic"))
            .collect()
    });
    let mut views = Vec::new();
    for result in results {
        views.extend(result?);
    }
    Ok(views)
}

fn views_on_host(
    name: &str,
    host: Option<&Host>,
    placements: &[Placement],
    listing: bool,
) -> Result<Vec<TaskView>> {
    let Some(host) = host else {
        let error = Error::new(
            ErrorCode::HostUnreachable,
            format!("host {name} is no longer configured (hosts: in the user's config)"),
        );
        return Ok(unknown_rows(name, placements, &error));
    };
    let mut request = words(&["--json"]);
    if listing {
        request.extend(words(&["list", "--all"]));
    } else {
        request.push("status".into());
        request.extend(placements.iter().map(|p| p.id.clone()));
    }
    let reply = connection::call(host, None, &request, None, CALL_DEADLINE)
        .and_then(|ran| parse_reply::<serde_json::Value>(host, &ran));
    let value = match reply {
        Ok(value) => value,
        Err(error) if listing || error.code == ErrorCode::HostUnreachable => {
            return Ok(unknown_rows(name, placements, &error));
        }
        Err(error) => return Err(error),
    };
    let rows: Vec<TaskView> = match value {
        serde_json::Value::Array(rows) => serde_json::from_value(rows.into()),
        one => serde_json::from_value(one).map(|view| vec![view]),
    }
    .map_err(|err| unreadable_reply(host, &err))?;
    // Only the tasks registered here with this host: a host's other tasks are not ours to show.
    Ok(rows
        .into_iter()
        .filter(|row| placements.iter().any(|p| p.id == row.id))
        .map(|row| row.on_host(name))
        .collect())
}

fn unknown_rows(name: &str, placements: &[Placement], error: &Error) -> Vec<TaskView> {
    placements
        .iter()
        .map(|placement| {
            let mut view = TaskView::host_unreachable(placement, name, error);
            if error.code != ErrorCode::HostUnreachable {
                view.reason = Some(error.code.as_str().to_string());
            }
            view
        })
        .collect()
}

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
    let ran = crate::remote::run::capture_from(&argv, binary.into(), INSTALL_DEADLINE)?;
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

/// Every configured host: reachable, its versions and task counts; hosts asked in parallel.
pub fn hosts(cwd: &Path) -> Result<Vec<HostReport>> {
    let hosts = host_access::hosts(&Config::load(cwd)?)?;
    Ok(std::thread::scope(|scope| {
        let calls: Vec<_> = hosts
            .values()
            .map(|host| scope.spawn(move || report(host)))
            .collect();
        calls
            .into_iter()
            .map(|call| call.join().expect("a host's check does not panic"))
            .collect()
    }))
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
    let ran = crate::remote::run::capture(&argv, None, CALL_DEADLINE)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_wait_carries_what_is_left_of_the_timeout() {
        let request = WaitRequest {
            task_ids: vec!["t_0123456789ab".to_string()],
            any: true,
            timeout: Some(Duration::from_secs(60)),
            until: super::super::wait::WaitUntil::Report,
        };
        assert_eq!(
            host_wait_words(&request, Some(Duration::from_millis(1500)), true),
            [
                "--json",
                "wait",
                "t_0123456789ab",
                "--until=report",
                "--any",
                "--timeout=1500ms"
            ]
        );
        assert_eq!(host_wait_words(&request, None, false).len(), 4);
    }
    use crate::spec::Mode;
    use std::time::Duration;

    #[test]
    fn the_objective_goes_on_stdin_and_values_stay_whole() {
        let request = SubmitRequest {
            objective: "-rf $(x)\n'q'".into(),
            mode: Some(Mode::Batch),
            context: Some("-not a flag".into()),
            constraints: vec!["a".into(), "b".into()],
            timeout: Some(Duration::from_secs(90)),
            dangerously_skip_permissions: Some(false),
            worktree: Some(true),
            ..SubmitRequest::default()
        };
        let (words, stdin) = submit_words(&request);
        assert_eq!(
            words,
            [
                "--json",
                "submit",
                "--mode=batch",
                "--timeout=90",
                "--context=-not a flag",
                "--constraint=a",
                "--constraint=b",
                "--no-skip-permissions",
                "--worktree",
                "-"
            ]
        );
        assert_eq!(stdin.unwrap(), b"-rf $(x)\n'q'");
    }

    #[test]
    fn argv_words_go_after_a_double_dash() {
        let request = SubmitRequest {
            objective: "-v x".into(),
            argv: vec!["-v".into(), "x".into()],
            ..SubmitRequest::default()
        };
        let (words, stdin) = submit_words(&request);
        assert_eq!(words, ["--json", "submit", "--", "-v", "x"]);
        assert!(stdin.is_none());
    }
}
