//! Starting a task on a host: the request goes over as the host cuekit's own `submit`, and the
//! task is registered here, with its host, before the host is asked.

use std::path::Path;

use super::{parse_reply, unreadable_reply};
use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::config::Config;
use crate::effects::remote as host_access;
use crate::effects::remote::args::words;
use crate::effects::remote::connection::{self, CALL_DEADLINE};
use crate::effects::store::{self, Placement};
use crate::effects::tmux::Socket;
use crate::ops::submit::{SubmitOutcome, SubmitRequest};

/// Starts a task on host `name` with the request as given (its `cwd` is a remote directory,
/// default the host's `cwd`), and registers it here with its host. The id is chosen here and
/// registered before the host is asked: a connection lost after the host started the task (its
/// reply never came) leaves a task this machine knows and can ask about, never an orphan.
pub(crate) fn submit_on_host(
    name: &str,
    request: &SubmitRequest,
    cwd: &Path,
) -> Result<SubmitOutcome> {
    let host = host_access::host(&Config::load(cwd)?, name)?;
    let remote_cwd = match &request.cwd {
        Some(dir) => Some(dir.to_string_lossy().into_owned()),
        None => host.cwd.clone(),
    };
    // A host that cannot be reached is known to have started nothing.
    connection::connect(&host)?;
    // A chosen id already registered with this host is a retry: the host's cuekit answers it
    // with the task it started (or refuses another request), and the registration stays.
    let (id, retry) = match &request.id {
        None => (store::new_task_id(), false),
        Some(id) if !store::is_task_id(id) => {
            return Err(Error::invalid_input(format!(
                "'{id}' is not a task id (t_ and 12 lowercase hex digits)"
            )));
        }
        Some(id) => match store::placement(id)? {
            Some(placement) if placement.host.as_deref() == Some(name) => (id.clone(), true),
            Some(_) => {
                return Err(Error::invalid_input(format!(
                    "task {id} already exists, not on host {name}"
                ))
                .with_hint("leave the id out, and cuekit picks a fresh one"));
            }
            None => (id.clone(), false),
        },
    };
    if !request.dry_run && !retry {
        register(
            &id,
            name,
            Path::new(""),
            &crate::effects::clock::now_rfc3339(),
        )?;
    }
    let forget = |id: &str| {
        if !retry {
            store::unregister(id);
        }
    };
    let request = SubmitRequest {
        id: (!request.dry_run).then(|| id.clone()),
        ..request.clone()
    };
    let (words, stdin) = submit_words(&request);
    let dry_run = request.dry_run;
    let ran = match connection::call_connected(
        &host,
        remote_cwd.as_deref(),
        &words,
        stdin.as_deref(),
        CALL_DEADLINE,
    ) {
        Ok(ran) => ran,
        // Lost on the way: the request may have reached the host.
        Err(error) if error.code == ErrorCode::HostUnreachable && !dry_run => {
            return Err(maybe_started(error, &id));
        }
        Err(error) => {
            forget(&id);
            return Err(error);
        }
    };
    // The host's own refusal (its JSON error): it started nothing.
    let refused = !ran.status.is_some_and(|status| status.success())
        && serde_json::from_slice::<serde_json::Value>(&ran.stdout)
            .is_ok_and(|reply| reply.get("error").is_some());
    if refused {
        forget(&id);
        return Err(match parse_reply::<serde_json::Value>(&host, &ran) {
            Err(error) => error,
            Ok(_) => unreadable_reply(&host, &serde::de::Error::custom("an error without a code")),
        });
    }
    let outcome = parse_reply::<serde_json::Value>(&host, &ran).and_then(|reply| {
        // A submitted task has an id; only a dry run has none.
        match reply.get("id") {
            Some(_) => serde_json::from_value(reply).map(SubmitOutcome::Submitted),
            None => serde_json::from_value(reply),
        }
        .map_err(|err| unreadable_reply(&host, &err))
    });
    match outcome {
        Ok(SubmitOutcome::Submitted(view)) if dry_run || view.id != id => {
            // Never registered under an id the host chose: ids name files here.
            let error = Error::new(
                ErrorCode::HostVersionMismatch,
                format!(
                    "host {name} answered with task {}, not the task {id} it was asked to start",
                    view.id
                ),
            )
            .with_hint(connection::install_hint(&host));
            Err(if dry_run {
                error
            } else {
                maybe_started(error, &id)
            })
        }
        Ok(SubmitOutcome::Submitted(view)) => {
            let view = view.on_host(name);
            // Its directory on the host, for the record; the id and host were registered above.
            register(&id, name, &view.task_dir, &view.created_at).map_err(|err| {
                Error::new(
                    err.code,
                    format!(
                        "task {id} started on host {name}; its directory was not recorded here: {}",
                        err.message
                    ),
                )
            })?;
            Ok(SubmitOutcome::Submitted(Box::new(view)))
        }
        Ok(dry_run) => Ok(dry_run),
        Err(error) if dry_run => Err(error),
        // The host said something this cuekit cannot read: the task may be running there.
        Err(error) => Err(maybe_started(error, &id)),
    }
}

/// An error after which task `id` may be running on the host: it stays registered here, so
/// `status` and `cancel` can reach it.
fn maybe_started(error: Error, id: &str) -> Error {
    let message = format!("{}; task {id} may have started there", error.message);
    Error::new(error.code, message).with_hint(format!(
        "`cuekit status {id}` asks the host again; `cuekit cancel {id}` ends the task if it runs"
    ))
}

/// The remote `cuekit --json submit …` words for `request`, and its stdin. The objective goes
/// on stdin (`-`), byte for byte, unless the request carries argv words (the `command` agent),
/// which go as words after `--`. Values are `--flag=value`, so one starting with `-` stays one.
pub fn submit_words(request: &SubmitRequest) -> (Vec<String>, Option<Vec<u8>>) {
    // Every field named, so a new submit option fails the build here until it is sent (or
    // said to stay on this machine).
    let SubmitRequest {
        agent,
        objective,
        context,
        constraints,
        model,
        mode,
        approval_mode,
        dangerously_skip_permissions,
        // The host's directory, told apart by `submit_on_host`.
        cwd: _,
        timeout,
        stream_events,
        resume_from,
        provider_profile,
        argv,
        role,
        team,
        // A race runs its candidates on this machine (`ops::race` refuses a host).
        race: _,
        dry_run,
        worktree,
        base,
        branch,
        id,
        asked_by,
        once,
        // The host this goes to.
        host: _,
        scheduling,
        budget,
        sandbox,
        // Refused for a host (`submit::on_host`): its panes are not this machine's.
        wake_parent: _,
        check,
    } = request;
    // Dependencies name tasks of this machine (refused for a host); a team's cap and budget
    // are kept here.
    let crate::ops::Scheduling {
        after: _,
        after_ended: _,
        priority,
        now,
        retry,
        team_max: _,
        context_from: _,
        base_from: _,
        fallback,
    } = scheduling;
    let mut out = words(&["--json", "submit"]);
    let mut value = |flag: &str, value: Option<String>| {
        if let Some(value) = value {
            out.push(format!("--{flag}={value}"));
        }
    };
    value("agent", agent.clone());
    value("model", model.clone());
    value("mode", mode.map(|m| m.as_str().to_string()));
    value("approval-mode", approval_mode.clone());
    value("timeout", timeout.map(|t| t.as_secs().max(1).to_string()));
    value("resume-from", resume_from.clone());
    value("provider-profile", provider_profile.clone());
    value("role", role.clone());
    value("team", team.clone());
    value("base", base.clone());
    value("branch", branch.clone());
    value("id", id.clone());
    value("context", context.clone());
    for constraint in constraints {
        value("constraint", Some(constraint.clone()));
    }
    // The host's bubblewrap makes the sandbox, from the host's paths.
    value(
        "sandbox",
        sandbox.mode.map(|mode| mode.as_str().to_string()),
    );
    // The host runs the check on the host's checkout.
    if let Some(check) = check {
        for command in &check.run {
            value("check", Some(command.clone()));
        }
        value("check-rounds", check.rounds.map(|n| n.to_string()));
        value(
            "check-timeout",
            check.timeout.map(|t| t.as_secs().max(1).to_string()),
        );
        for glob in &check.protect {
            value("check-protect", Some(glob.clone()));
        }
    }
    // The host's own scheduler and judge hold these.
    value("priority", (*priority != 0).then(|| priority.to_string()));
    value("retry", retry.map(|n| n.to_string()));
    // The host's scheduler fails over among the host's agents.
    value(
        "fallback",
        fallback.as_ref().map(|list| {
            list.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        }),
    );
    let budget = budget.as_ref();
    value(
        "max-tokens",
        budget.and_then(|b| b.tokens).map(|n| n.to_string()),
    );
    value(
        "max-turns",
        budget.and_then(|b| b.turns).map(|n| n.to_string()),
    );
    let switches = [
        (*now, "--now"),
        (
            sandbox.network == Some(crate::domain::sandbox::Network::Off),
            "--no-network",
        ),
        (
            *dangerously_skip_permissions == Some(true),
            "--skip-permissions",
        ),
        (
            *dangerously_skip_permissions == Some(false),
            "--no-skip-permissions",
        ),
        (*stream_events == Some(false), "--no-events"),
        (*worktree == Some(true), "--worktree"),
        (*worktree == Some(false), "--no-worktree"),
        (*dry_run, "--dry-run"),
        (*asked_by == crate::ops::Asker::Delegate, "--delegated"),
        // An ACP session kept open (`once: false`) is the host's default for a lone task.
        (*once == Some(true), "--once"),
        (check.as_ref().is_some_and(|c| c.keep_open), "--keep-open"),
    ];
    out.extend(
        switches
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, s)| s.to_string()),
    );
    if argv.is_empty() {
        out.push("-".into());
        (out, Some(objective.clone().into_bytes()))
    } else {
        out.push("--".into());
        out.extend(argv.iter().cloned());
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
        facts: None,
        legacy: false,
    };
    store::stage_placement(&placement)?.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::spec::Mode;
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
            sandbox: crate::ops::SandboxRequest {
                mode: Some(crate::domain::sandbox::SandboxMode::Bwrap),
                network: Some(crate::domain::sandbox::Network::Off),
            },
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
                "--sandbox=bwrap",
                "--no-network",
                "--no-skip-permissions",
                "--worktree",
                "-"
            ]
        );
        assert_eq!(stdin.unwrap(), b"-rf $(x)\n'q'");
    }

    #[test]
    fn a_check_goes_to_the_host_as_its_flags() {
        let request = SubmitRequest {
            objective: "x".into(),
            check: Some(crate::ops::CheckRequest {
                run: vec!["make test".into(), "-x".into()],
                rounds: Some(1),
                timeout: Some(Duration::from_secs(60)),
                protect: vec!["tests/**".into()],
                keep_open: true,
            }),
            ..SubmitRequest::default()
        };
        let (words, _) = submit_words(&request);
        assert_eq!(
            words,
            [
                "--json",
                "submit",
                "--check=make test",
                "--check=-x",
                "--check-rounds=1",
                "--check-timeout=60",
                "--check-protect=tests/**",
                "--keep-open",
                "-"
            ]
        );
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
