//! The files a task's start needs, for a submit that starts it and for the scheduler that
//! starts it later: `launch.sh`, the submitter's environment, a prompt that takes another
//! task's answer, the worktree's base from another task's work, the pane tmux reported.

use std::path::{Path, PathBuf};

use crate::domain::adapter;
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::launch::{Runner, StartGate, render_env_file, render_launch_script};
use crate::domain::spec::Mode;
use crate::effects::config::Config;
use crate::effects::git;
use crate::effects::store::{self, PaneStart};

/// The task's `launch.sh` (see [`render_launch_script`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch_script(
    id: &str,
    task_dir: &Path,
    command: &str,
    adapter: &adapter::Adapter,
    mode: Mode,
    event_stream: bool,
    gate: StartGate,
    setup: Option<&str>,
) -> Result<String> {
    let unset_env = match mode {
        Mode::Interactive | Mode::Acp => adapter.interactive_unset_env,
        Mode::Batch => &[],
    };
    let event_filter = if event_stream {
        Some(std::env::current_exe().map_err(|err| {
            Error::new(
                ErrorCode::Io,
                format!("cannot find the cuekit binary: {err}"),
            )
        })?)
    } else {
        None
    };
    let env_file = store::schedule::pane_env_path(id)
        .ok_or_else(|| Error::invalid_input(format!("{id} is not a task id")))?;
    render_launch_script(
        id,
        command,
        unset_env,
        task_dir,
        &env_file,
        match (mode, event_filter.as_deref()) {
            (Mode::Acp, _) => Runner::Client,
            (_, Some(filter)) => Runner::Filtered(filter),
            (_, None) => Runner::Plain,
        },
        gate,
        setup,
    )
}

/// The submitter's environment, then the adapter's configured `env`, then the task id. A task
/// in bubblewrap gets none of the submitter's variables whose names say secret
/// ([`crate::domain::sandbox::looks_secret`]) but the agent's own credentials: a token in a
/// variable would walk out of the sandbox that hides the file it came from. The user's
/// configured `env` is given as it is.
pub(crate) fn env_file_text(
    id: &str,
    adapter: &crate::domain::adapter::Adapter,
    config: &Config,
    bubblewrapped: bool,
) -> String {
    let inherited = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| name != crate::effects::process::TASK_ID_VARIABLE)
        .filter(|(name, value)| {
            !bubblewrapped
                || !crate::domain::sandbox::looks_secret(name, value)
                || adapter.auth_env.contains(&name.as_str())
        });
    let configured = config
        .env(adapter.kind())
        .into_iter()
        .map(|(name, s)| (name, s.value));
    render_env_file(
        inherited
            .chain(path_with_cuekit())
            .chain(configured)
            .chain([(
                crate::effects::process::TASK_ID_VARIABLE.to_string(),
                id.to_string(),
            )]),
    )
}

/// A sandboxed task's agents' own key variables from this process's environment — for each
/// of `agents` not kept yet, the secret-named variables of its `auth_env` (the ones a
/// sandboxed start's environment leaves out unless they are its agent's) — kept in the data
/// dir for a start on that agent ([`store::schedule::keys_path`]).
pub(crate) fn keep_agent_keys(id: &str, agents: &[&str]) -> Result<()> {
    let mut keys = store::schedule::agent_keys(id);
    let before = keys.len();
    for kind in agents {
        let Ok(adapter) = crate::domain::adapter::lookup(kind) else {
            continue;
        };
        keys.entry(adapter.kind().to_string()).or_insert_with(|| {
            adapter
                .auth_env
                .iter()
                .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
                .filter(|(name, value)| crate::domain::sandbox::looks_secret(name, value))
                .collect()
        });
    }
    if keys.len() == before {
        return Ok(());
    }
    store::schedule::save_agent_keys(id, &keys)
}

/// Writes an owner-only file (a prompt, a script, an environment) in place, in a task's folder,
/// which a child can write: never through a link it left there (the environment would go where
/// it points), never blocking on a FIFO ([`store::open_own_for_writing`]).
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    store::open_own_for_writing(path, true)
        .and_then(|mut file| file.write_all(bytes))
        .map_err(|err| Error::io("write", path, err))
}

/// The submitter's PATH with this binary's directory added at the end, when `cuekit` is not on
/// it: a child must be able to run `cuekit report`, also when its parent started cuekit by its
/// full path (as MCP clients do). `None` leaves PATH as inherited.
fn path_with_cuekit() -> Option<(String, String)> {
    const NAME: &str = "cuekit";
    if crate::effects::which::find_on_path(NAME).is_some() {
        return None;
    }
    let exe = std::env::current_exe().ok()?;
    if exe.file_name()? != NAME {
        return None;
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    dirs.push(exe.parent()?.to_path_buf());
    let path = std::env::join_paths(dirs).ok()?.into_string().ok()?;
    Some(("PATH".to_string(), path))
}

/// `<pane id> <pane pid>` as tmux printed it for the new pane.
pub(crate) fn parse_new_pane(stdout: &str) -> Option<PaneStart> {
    let mut words = stdout.split_whitespace();
    let pane_id = words.next()?.to_string();
    let pane_pid = words.next()?.parse().ok()?;
    Some(PaneStart {
        pane_id,
        pane_pid,
        start_ticks: crate::effects::process::start_ticks(pane_pid),
    })
}

/// The untracked files a new worktree takes from the main checkout. A sandboxed task's takes
/// only what the user's own file names: neither a project's patterns nor the repository's
/// `.worktreeinclude` choose what of the user's is copied into a sandbox.
pub(crate) fn includes(config: &Config, sandboxed: bool) -> git::include::Includes {
    if sandboxed {
        let (copy, symlink) = config.user_worktree_includes();
        return git::include::Includes {
            copy,
            symlink,
            repository_list: false,
        };
    }
    git::include::Includes {
        copy: config.worktree_copy().map(|s| s.value).unwrap_or_default(),
        symlink: config
            .worktree_symlink()
            .map(|s| s.value)
            .unwrap_or_default(),
        repository_list: true,
    }
}

/// Where a task built on `task`'s work (`--base-from`) starts: the commit its last passing
/// check ran on for a checked task (what `merge` would take; its later work is not checked
/// work), else its branch tip with its uncommitted work committed onto it first.
pub(crate) fn base_from(
    task: &crate::ops::task::Task,
    worktree: &store::WorktreePlacement,
) -> Result<String> {
    if let Some(commit) = crate::ops::work::checked::taken_commit(task)? {
        return Ok(commit);
    }
    tip_of(task, worktree)?;
    Ok(worktree.base_name())
}

/// The branch tip of a worktree task, its uncommitted work committed onto it first.
fn tip_of(task: &crate::ops::task::Task, worktree: &store::WorktreePlacement) -> Result<String> {
    git::merge::commit_work(
        &git::checkout::Checkout {
            placed: worktree,
            scratch: &task.record.task_dir,
        },
        &format!(
            "cuekit task {}: uncommitted work\n\nObjective: {}",
            task.record.id, task.record.spec.objective
        ),
    )
}

/// The most of an earlier task's answer a prompt takes.
const ANSWER_LIMIT: usize = 16 * 1024;

/// `context` followed by the answer of ended task `from`: its final text, else its last
/// report, else the end of its transcript.
pub(crate) fn with_answer_of(context: Option<&str>, from: &str) -> Result<String> {
    let source = crate::ops::task::open(from, Path::new("/"))?;
    let record = &source.record;
    let answer = crate::ops::result::outcome::written_final_text(&record.task_dir)
        .or_else(|| record.last_report.as_ref().map(|r| r.message.clone()))
        .unwrap_or_else(|| crate::ops::judge::attempt::transcript_end(record));
    let answer = match answer.char_indices().nth(ANSWER_LIMIT) {
        Some((cut, _)) => format!("{}…", &answer[..cut]),
        None => answer,
    };
    let objective = record.spec.objective.lines().next().unwrap_or_default();
    let answer = format!(
        "Task {from} ({objective}) ended {} and answered:\n{}",
        record.status.as_str(),
        answer.trim()
    );
    Ok(match context {
        Some(context) if !context.trim().is_empty() => format!("{context}\n\n{answer}"),
        _ => answer,
    })
}

/// Starts a task's pane: a session of its own on the task's server, in `cwd`, running the
/// task's script with its output piped to the transcript. The one way a pane starts, for a
/// submit and for the scheduler's start of a queued task alike. A session whose server exited
/// under it (its last session was just killed) is asked for again.
pub(crate) fn spawn_pane(
    placement: &crate::effects::store::Placement,
    cwd: &Path,
    config: &crate::effects::config::Config,
    height: u16,
    script: &Path,
    transcript: &Path,
) -> Result<crate::effects::tmux::Pending> {
    use crate::effects::tmux::{Tmux, args};
    Tmux::new(placement.socket.clone()).spawn_session(&args::new_task_session(
        &args::NewTaskSession {
            session: &placement.session,
            owner: &crate::effects::store::data_dir().unwrap_or_default(),
            cwd,
            width: config.width().value,
            height,
            history_limit: config.history_limit().value,
            script,
            transcript,
        },
    ))
}
