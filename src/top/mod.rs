//! `cuekit top`: every task on one screen. The shape ratatui recommends keeps it testable:
//! one [`State`], a pure [`update`] turning messages into state and effects, a [`view`] that
//! only draws; this file is the event loop and the terminal's effects (raw mode, suspending
//! for an attach or a pager). Tasks are reached through `ops` only.
//!
//! Refreshes run on a thread of their own, one at a time: the loop posts a request each tick,
//! a newer request replaces one not yet started, so a refresh that falls behind is dropped,
//! never queued, and keys are answered while tmux is being asked.

#[cfg(test)]
mod fixtures;
mod state;
mod update;
mod view;

pub use view::MAN_KEYS;

use state::State;
use update::{Effect, Key, Msg, update};
use view::{table_rows, view};

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

use crate::domain::error::{Error, ErrorCode, Result};
use crate::ops;

/// How long the loop waits for a key before looking at finished background work: what a
/// refresh's arrival on screen may lag by, at the price of this many wake-ups a second.
const WAKE: Duration = Duration::from_millis(25);
/// Lines of the selected task kept for the preview.
const PREVIEW_LINES: usize = 200;

pub struct Options {
    pub all: bool,
    pub refresh: Duration,
    pub color: bool,
}

/// Runs the dashboard until `q`; the terminal is restored on every way out.
pub fn run(options: &Options, cwd: &Path) -> Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(
            Error::new(ErrorCode::NotATerminal, "cuekit top needs a terminal")
                .with_hint("run it in a terminal; scripts can use `cuekit list --json`"),
        );
    }
    // A pager quitting before it read everything must not end the dashboard.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let project = crate::ops::project_tasks_root(cwd)
        .and_then(|tasks| Some(tasks.parent()?.parent()?.to_path_buf()))
        .unwrap_or_else(|| cwd.to_path_buf());
    let mut state = State::new(
        options.all,
        project.display().to_string(),
        options.color,
        SystemTime::now(),
    );
    state.agents = ops::agents_here()
        .into_iter()
        .filter(|agent| agent.installed && agent.kind != "command")
        .map(|agent| agent.kind.to_string())
        .collect();
    let (sender, inbox) = mpsc::channel();
    let refresher = Refresher::start(cwd.to_path_buf(), sender.clone());
    let mut terminal = ratatui::try_init().map_err(terminal_error)?;
    let mut actions = Vec::new();
    let outcome = event_loop(
        &mut state,
        &mut terminal,
        (&refresher, &mut actions),
        (&sender, &inbox),
        options.refresh,
        cwd,
    );
    ratatui::restore();
    // A cancel under way has recorded its ending and must still end the process tree; a steer
    // must not stop half-typed. An action another process finishes without this one
    // (`ops::finishes_without_caller`) is not waited for.
    for action in actions {
        let _ = action.join();
    }
    outcome
}

fn event_loop(
    state: &mut State,
    terminal: &mut DefaultTerminal,
    (refresher, actions): (&Refresher, &mut Vec<JoinHandle<()>>),
    (sender, inbox): (&Sender<Msg>, &Receiver<Msg>),
    every: Duration,
    cwd: &Path,
) -> Result<()> {
    let mut next_tick = Instant::now();
    let mut dirty = true;
    let mut height = 0;
    let mut effects: Vec<Effect> = Vec::new();
    loop {
        if Instant::now() >= next_tick {
            update(state, Msg::Tick(SystemTime::now()));
            refresher.request(state);
            if state.all {
                refresher.request_hosts();
            }
            next_tick = Instant::now() + every;
            dirty = true;
        }
        if dirty {
            let size = terminal.size().map_err(terminal_error)?;
            if size.height != height {
                height = size.height;
                update(state, Msg::Page(table_rows(height)));
            }
            terminal
                .draw(|frame| view(state, frame))
                .map_err(terminal_error)?;
            dirty = false;
        }
        // Effects start once the key's own change is on screen: a refresh the key asked for
        // then does not compete with drawing it.
        for effect in effects.drain(..) {
            if carry_out(effect, state, terminal, (refresher, actions), sender, cwd)? {
                // The screen was handed to someone else: draw all of it again.
                terminal.clear().map_err(terminal_error)?;
                dirty = true;
            }
        }
        let wait = WAKE.min(next_tick.saturating_duration_since(Instant::now()));
        if event::poll(wait).map_err(terminal_error)? {
            match event::read().map_err(terminal_error)? {
                Event::Key(press) if press.kind != KeyEventKind::Release => {
                    if let Some(key) = key_of(press.code, press.modifiers) {
                        effects.extend(update(state, Msg::Key(key)));
                        dirty = true;
                    }
                }
                Event::Resize(..) => dirty = true,
                _ => {}
            }
        }
        while let Ok(msg) = inbox.try_recv() {
            effects.extend(update(state, msg));
            dirty = true;
        }
        if state.quit {
            return Ok(());
        }
    }
}

/// Does what `update` asked; `true` when the terminal was lent out meanwhile.
fn carry_out(
    effect: Effect,
    state: &State,
    terminal: &mut DefaultTerminal,
    (refresher, actions): (&Refresher, &mut Vec<JoinHandle<()>>),
    sender: &Sender<Msg>,
    cwd: &Path,
) -> Result<bool> {
    match effect {
        Effect::Refresh => refresher.request(state),
        Effect::Steer { task_id, text } => {
            let waited_for = !ops::finishes_without_caller(&task_id);
            let action = in_background(sender, cwd, move |cwd| {
                let receipt = ops::steer(&task_id, cwd, &text)?;
                Ok(view::steer_receipt(&task_id, &receipt))
            });
            actions.extend(waited_for.then_some(action));
        }
        Effect::Cancel(task_id) => {
            let waited_for = !ops::finishes_without_caller(&task_id);
            let action = in_background(sender, cwd, move |cwd| {
                let views = ops::cancel(std::slice::from_ref(&task_id), cwd, ops::DEFAULT_GRACE)?;
                let status = views.first().map_or("cancelled", |view| {
                    crate::domain::plain::status_word(view.status)
                });
                Ok(format!("{task_id}: {status}"))
            });
            actions.extend(waited_for.then_some(action));
        }
        Effect::HandOff {
            task_id,
            agent,
            model,
            message,
        } => {
            // The attempt's processes end within the grace: waited for on the way out.
            actions.push(in_background(sender, cwd, move |cwd| {
                let request = ops::HandoffRequest {
                    id: task_id.clone(),
                    agent: agent.clone(),
                    model,
                    message,
                };
                let view = ops::handoff(&request, cwd)?;
                Ok(format!(
                    "{task_id} handed off to {agent}: {}",
                    view.status.as_str()
                ))
            }));
        }
        Effect::Answer { task_id, answer } => {
            actions.push(in_background(sender, cwd, move |cwd| {
                let approval = ops::approve(&task_id, cwd, answer)?;
                Ok(format!("{task_id}: {}", approval.option.name))
            }));
        }
        Effect::Attach(task_id) => {
            // An unreadable registry entry is this row's problem, not the dashboard's.
            let popup = match ops::attach_opens_popup(&task_id) {
                Ok(popup) => popup,
                Err(err) => {
                    report(sender, Err(err));
                    return Ok(false);
                }
            };
            // A popup opens over this screen; otherwise the attach takes the terminal.
            let outcome =
                lend_terminal(terminal, !popup, || ops::attach_and_return(&task_id, cwd))?;
            report(sender, outcome.map(|()| format!("back from {task_id}")));
            return Ok(true);
        }
        Effect::Logs(task_id) => {
            return paged(terminal, sender, || {
                page(|out| ops::read_logs(&task_id, cwd, false, out))
            });
        }
        Effect::Diff(task_id) => {
            return paged(terminal, sender, || {
                let diff = ops::diff(&task_id, cwd, true)?;
                let patch = diff.patch.unwrap_or_default();
                // The pager may pass escapes through (`less -R`): a child's file must not.
                page_text(crate::domain::display::terminal_text::visible(&patch).as_bytes())
            });
        }
        Effect::Result(task_id) => {
            return paged(terminal, sender, || {
                let result = ops::result(&task_id, cwd)?;
                let text = crate::domain::display::result_text::text(&result);
                page_text(crate::domain::display::terminal_text::visible(&text).as_bytes())
            });
        }
    }
    Ok(false)
}

/// Runs `show` (it pages something) with the terminal lent out, and reports how it went.
/// Always `true`: the terminal was lent.
fn paged(
    terminal: &mut DefaultTerminal,
    sender: &Sender<Msg>,
    show: impl FnOnce() -> Result<()>,
) -> Result<bool> {
    let outcome = lend_terminal(terminal, true, show)?;
    report(sender, outcome.map(|()| String::new()));
    Ok(true)
}

/// Runs an action that takes seconds (a steer waits for its receipt, a cancel for the grace
/// period) off the loop; its outcome comes back as a message.
fn in_background(
    sender: &Sender<Msg>,
    cwd: &Path,
    action: impl FnOnce(&Path) -> Result<String> + Send + 'static,
) -> JoinHandle<()> {
    let sender = sender.clone();
    let cwd = cwd.to_path_buf();
    std::thread::spawn(move || report(&sender, action(&cwd)))
}

fn report(sender: &Sender<Msg>, outcome: Result<String>) {
    let message = match outcome {
        Ok(message) => message,
        Err(err) => format!("error[{}]: {}", err.code.as_str(), err.message),
    };
    let _ = sender.send(Msg::Done(message));
}

/// Gives the terminal back to the shell's normal mode while `action` runs (an attach, a
/// pager), then takes it again. `suspend: false` keeps the dashboard on screen (a popup).
fn lend_terminal<T>(
    terminal: &mut DefaultTerminal,
    suspend: bool,
    action: impl FnOnce() -> Result<T>,
) -> Result<Result<T>> {
    if !suspend {
        return Ok(action());
    }
    ratatui::restore();
    let outcome = action();
    *terminal = ratatui::try_init().map_err(terminal_error)?;
    Ok(outcome)
}

fn page_text(text: &[u8]) -> Result<()> {
    page(|out| {
        out.write_all(text)
            .map_err(|err| Error::new(ErrorCode::Io, format!("pager: {err}")))
    })
}

/// Feeds `write` into the user's pager (`$PAGER`, else `less`), and waits for it to close.
fn page(write: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
    let pager = std::env::var("PAGER")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "less".into());
    // $PAGER is a command line the user wrote for their shell (`less -R`), as git runs it.
    let written = ops::page(&pager, write);
    match written {
        // The pager quitting before the end is the person's choice.
        Err(err) if err.message.contains("Broken pipe") => Ok(()),
        other => other,
    }
}

fn key_of(code: KeyCode, modifiers: KeyModifiers) -> Option<Key> {
    Some(match code {
        KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => Key::Interrupt,
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        _ => return None,
    })
}

fn terminal_error(err: std::io::Error) -> Error {
    Error::new(ErrorCode::Io, format!("terminal: {err}"))
}

/// What one refresh is asked for.
#[derive(Debug, Clone)]
struct Request {
    all: bool,
    selected: Option<String>,
}

/// The refresh threads, this machine's and the hosts', each with the one request that may
/// wait for it.
struct Refresher {
    pending: Arc<Latest<Request>>,
    hosts: Arc<Latest<()>>,
}

impl Refresher {
    fn start(cwd: PathBuf, sender: Sender<Msg>) -> Refresher {
        // Screens unchanged since the last refresh are not captured again.
        let mut screens = ops::ScreenCache::default();
        let pending =
            serve(
                cwd.clone(),
                sender.clone(),
                move |cwd, request: Request| match ops::board(
                    request.all,
                    cwd,
                    request.selected.as_deref(),
                    PREVIEW_LINES,
                    &mut screens,
                ) {
                    Ok(board) => Msg::Refreshed(board),
                    Err(err) => Msg::RefreshFailed(err.message),
                },
            );
        let hosts = serve(cwd, sender, |cwd, ()| match ops::host_board(cwd) {
            Ok(rows) => Msg::HostsRefreshed(rows),
            Err(err) => Msg::RefreshFailed(err.message),
        });
        Refresher { pending, hosts }
    }

    fn request(&self, state: &State) {
        self.pending.put(Request {
            all: state.all,
            selected: state.selected.clone(),
        });
    }

    fn request_hosts(&self) {
        self.hosts.put(());
    }
}

/// A thread that answers the latest request with `work`'s message, until the loop is gone.
fn serve<T: Send + 'static>(
    cwd: PathBuf,
    sender: Sender<Msg>,
    mut work: impl FnMut(&Path, T) -> Msg + Send + 'static,
) -> Arc<Latest<T>> {
    let pending: Arc<Latest<T>> = Arc::new(Latest::default());
    let shared = Arc::clone(&pending);
    std::thread::spawn(move || {
        loop {
            let msg = work(&cwd, shared.take());
            if sender.send(msg).is_err() {
                return;
            }
        }
    });
    pending
}

/// At most one value waiting: a newer one replaces it, so work that falls behind is dropped,
/// never queued.
struct Latest<T> {
    value: Mutex<Option<T>>,
    signal: Condvar,
}

impl<T> Default for Latest<T> {
    fn default() -> Self {
        Latest {
            value: Mutex::new(None),
            signal: Condvar::new(),
        }
    }
}

impl<T> Latest<T> {
    fn put(&self, value: T) {
        *self.value.lock().expect("not poisoned") = Some(value);
        self.signal.notify_one();
    }

    /// Waits for a value and takes it.
    fn take(&self) -> T {
        let mut slot = self.value.lock().expect("not poisoned");
        loop {
            match slot.take() {
                Some(value) => return value,
                None => slot = self.signal.wait(slot).expect("not poisoned"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_that_were_not_started_give_way_to_the_latest() {
        let latest = Arc::new(Latest::default());
        latest.put(1);
        latest.put(2);
        latest.put(3);
        assert_eq!(latest.take(), 3);
        // Nothing else was kept: a waiting taker gets the next value put, and only it.
        let taker = {
            let latest = Arc::clone(&latest);
            std::thread::spawn(move || latest.take())
        };
        latest.put(4);
        assert_eq!(taker.join().unwrap(), 4);
    }
}
