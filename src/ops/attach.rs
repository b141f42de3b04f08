use std::path::Path;
use std::process::Command;

/// How long the outer tmux may take to name its prefix key.
const PREFIX_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::tmux::{Socket, args};
use crate::ops::task::route::{Route, route_one};

/// How an attach ended, for the line a face prints after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachEnd {
    /// The person detached; the task's session is still there (`cuekit attach` comes back).
    Detached,
    /// The task's session is gone: it ended while attached.
    Ended,
    /// A host's task, attached over ssh: its exit status.
    Host(i32),
}

/// Runs `tmux attach` on the task's server and session, on this terminal, and returns when the
/// person detaches (or the task's session ends). Inside the user's own tmux the task opens in a
/// popup of it (as `top` opens it), else, when that tmux opens none (no client, no popups), in a
/// client nested in this pane. The task's status line names the task and the detach key first. A host's task is attached over ssh (the host's `cuekit attach`, on a
/// terminal of its own there), and its exit status returned when the person detaches.
pub fn attach(task_id: &str, cwd: &Path) -> Result<AttachEnd> {
    if let Route::Host(host) = route_one(task_id)? {
        return on_host(&host, task_id, cwd).map(AttachEnd::Host);
    }
    let (socket, session) = live_session(task_id, cwd)?;
    if in_users_tmux() {
        // A popup of the user's tmux: its keys reach the task's client first, so the detach
        // key is the task server's own, and the user's window is there when it closes.
        label(&socket, &session, task_id, false);
        let shown = popup_command(&socket, &session)?
            .output()
            .map_err(cannot_run)?;
        // The user's tmux opened none when it says why (no client on this terminal, a tmux
        // without popups): then a client nested in this pane, as outside tmux.
        if shown.status.success() || shown.stderr.is_empty() {
            return Ok(attach_end(task_id, cwd));
        }
    }
    label(&socket, &session, task_id, in_users_tmux());
    let status = Command::new(crate::effects::tmux::binary())
        .args(socket.args())
        .args(args::attach(&session))
        // Attaching from inside another tmux is what the user asked for here.
        .env_remove("TMUX")
        .status()
        .map_err(cannot_run)?;
    if !status.success() {
        return Err(Error::new(
            ErrorCode::TmuxFailed,
            format!("tmux attach for task {task_id} ended with {status}"),
        ));
    }
    Ok(attach_end(task_id, cwd))
}

/// How an attach of this machine's task ended: detached, or the session is gone.
fn attach_end(task_id: &str, cwd: &Path) -> AttachEnd {
    if live_session(task_id, cwd).is_ok() {
        AttachEnd::Detached
    } else {
        AttachEnd::Ended
    }
}

/// `tmux display-popup` on the user's tmux (`$TMUX`), running a client of the task's server.
fn popup_command(socket: &Socket, session: &str) -> Result<Command> {
    let tmux =
        crate::domain::launch::single_quote(&crate::effects::tmux::binary().to_string_lossy())?;
    let attach = socket.attach_command(session);
    let inner = format!(
        "env -u TMUX {tmux}{}",
        attach.strip_prefix("tmux").unwrap_or(&attach)
    );
    let mut command = Command::new(crate::effects::tmux::binary());
    command.args(args::popup(&inner));
    Ok(command)
}

/// The task session's status line says which task it is and how to leave it:
/// `[cuekit t_…, detach: C-b d]`. A client `nested` in the user's own tmux whose prefix is the
/// same key gets that key first from the outer tmux, which sends it on when pressed twice (its
/// default `send-prefix` binding): `C-b C-b d`. Best effort: a status line is no reason to
/// refuse an attach.
fn label(socket: &Socket, session: &str, task_id: &str, nested: bool) {
    let key = |output: Result<String>| {
        output
            .map(|key| key.trim().to_string())
            .ok()
            .filter(|key| !key.is_empty() && key != "None")
    };
    let tmux = crate::effects::tmux::Tmux::new(socket.clone());
    let prefix = key(tmux.run(&args::prefix_key())).unwrap_or_else(|| "C-b".to_string());
    let outer = nested
        .then(|| {
            crate::effects::bounded::Bounded::new(crate::effects::tmux::binary(), PREFIX_WITHIN)
                .args(args::prefix_key())
                .run()
                .ok()
                .filter(|out| out.success())
                .map(|out| String::from_utf8_lossy(&out.stdout.bytes()).into_owned())
        })
        .flatten();
    let detach = if outer.is_some_and(|outer| outer.trim() == prefix) {
        format!("{prefix} {prefix} d")
    } else {
        format!("{prefix} d")
    };
    let _ = tmux.run(&args::label_session(
        session,
        &format!("[cuekit {task_id}, detach: {detach}] "),
    ));
}

/// Attaches this terminal to the task and returns when the person detaches (a dashboard comes
/// back afterwards). Inside the user's own tmux (`$TMUX` set), the task opens in a popup of
/// the user's server instead, so two tmux clients never fight over one terminal. A host's task
/// takes this terminal over ssh.
pub fn attach_and_return(task_id: &str, cwd: &Path) -> Result<()> {
    if let Route::Host(host) = route_one(task_id)? {
        return on_host(&host, task_id, cwd).map(|_| ());
    }
    let (socket, session) = live_session(task_id, cwd)?;
    label(&socket, &session, task_id, false);
    let mut command = if in_users_tmux() {
        popup_command(&socket, &session)?
    } else {
        let mut command = Command::new(crate::effects::tmux::binary());
        command.args(socket.args()).args(args::attach(&session));
        command
    };
    let status = command.status().map_err(cannot_run)?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::new(
            ErrorCode::TmuxFailed,
            format!("tmux attach for task {task_id} ended with {status}"),
        ))
    }
}

/// Whether [`attach_and_return`] opens this task in a popup and leaves the terminal to the
/// caller's screen: this process runs inside the user's tmux, and the task is this machine's.
pub fn attach_opens_popup(task_id: &str) -> Result<bool> {
    Ok(route_one(task_id)? == Route::Here && in_users_tmux())
}

fn in_users_tmux() -> bool {
    std::env::var_os("TMUX").is_some_and(|v| !v.is_empty())
}

/// The host's `cuekit attach`, on this terminal.
fn on_host(host: &str, task_id: &str, cwd: &Path) -> Result<i32> {
    super::remote::relay(host, &["attach".into(), task_id.to_string()], cwd)
}

/// The task's server and session (as the registry placed it), if its pane is still there.
fn live_session(task_id: &str, cwd: &Path) -> Result<(Socket, String)> {
    let task = super::task::open(task_id, cwd)?;
    let refreshed = super::judge::refresh(vec![task])?;
    let task = &refreshed.tasks[0];
    if refreshed.pane(task)?.is_none() {
        return Err(Error::new(
            ErrorCode::InvalidState,
            format!("task {task_id} has no tmux session any more"),
        )
        .with_hint("read what it printed with `cuekit logs <id>`"));
    }
    Ok((
        task.placement.socket.clone(),
        task.placement.session.clone(),
    ))
}

fn cannot_run(err: std::io::Error) -> Error {
    Error::new(
        ErrorCode::TmuxUnavailable,
        format!("cannot run tmux: {err}"),
    )
}
