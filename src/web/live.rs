//! What every browser shares: one board, refreshed at most once per tick whatever the number
//! of pages open (the cost of `top`'s refresh: one `list-panes -a` and one batched capture per
//! server), and one watcher thread that turns the transitions the monitors record, and the
//! growth of the transcripts of the tasks open in a page, into server-sent events.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::broadcast;

use crate::domain::error::Result;
use crate::ops::{self, Board, EventScope, ScreenCache};

/// How old the shared board may be before a page asks for a new one.
pub const TICK: Duration = Duration::from_secs(1);
/// How long the watcher waits for transitions before it looks at the open tasks' transcripts.
const WATCH: Duration = Duration::from_millis(150);

pub struct Live {
    cwd: PathBuf,
    cached: Mutex<Cached>,
    /// The rows of tasks on remote hosts: asked of the hosts in a thread of their own (a round
    /// trip each), at most once per [`TICK`] and only while pages ask for the board, and laid
    /// over each local refresh, as `top` does.
    hosts: Arc<Mutex<Hosts>>,
    /// The board's refreshes so far (a benchmark reads it).
    pub refreshes: AtomicU64,
    news: broadcast::Sender<String>,
    /// Tasks open in a page, with how many pages.
    watched: Mutex<HashMap<String, usize>>,
}

#[derive(Default)]
struct Hosts {
    rows: Vec<ops::BoardRow>,
    asked: Option<Instant>,
    asking: bool,
}

struct Cached {
    at: Option<Instant>,
    board: Arc<Board>,
    screens: ScreenCache,
}

impl Live {
    pub fn new(cwd: PathBuf) -> Arc<Live> {
        let (news, _) = broadcast::channel(256);
        Arc::new(Live {
            cwd,
            cached: Mutex::new(Cached {
                at: None,
                board: Arc::new(Board::default()),
                screens: ScreenCache::default(),
            }),
            hosts: Arc::default(),
            refreshes: AtomicU64::new(0),
            news,
            watched: Mutex::new(HashMap::new()),
        })
    }

    /// The board, refreshed when older than [`TICK`] or changed since (blocking: call it off
    /// the async threads). Pages asking at once wait for one refresh and share it.
    pub fn board(self: &Arc<Self>) -> Result<Arc<Board>> {
        let mut cached = self.cached.lock().expect("not poisoned");
        if cached.at.is_some_and(|at| at.elapsed() < TICK) {
            return Ok(Arc::clone(&cached.board));
        }
        let mut board = ops::board(true, &self.cwd, None, 0, &mut cached.screens)?;
        self.refreshes.fetch_add(1, Ordering::Relaxed);
        board.rows.extend(
            self.hosts
                .lock()
                .expect("not poisoned")
                .rows
                .iter()
                .cloned(),
        );
        self.ask_hosts();
        cached.board = Arc::new(board);
        cached.at = Some(Instant::now());
        Ok(Arc::clone(&cached.board))
    }

    /// Asks the hosts for their tasks' rows in a thread, unless asked within [`TICK`] or an
    /// answer is awaited; a new answer makes the next board a fresh one.
    fn ask_hosts(self: &Arc<Self>) {
        {
            let mut hosts = self.hosts.lock().expect("not poisoned");
            if hosts.asking || hosts.asked.is_some_and(|at| at.elapsed() < TICK) {
                return;
            }
            hosts.asking = true;
        }
        let live = Arc::clone(self);
        std::thread::spawn(move || {
            let rows = ops::host_board(&live.cwd);
            let mut hosts = live.hosts.lock().expect("not poisoned");
            hosts.asking = false;
            hosts.asked = Some(Instant::now());
            // A host that cannot be asked now keeps the rows it gave last.
            if let Ok(rows) = rows
                && !(rows.is_empty() && hosts.rows.is_empty())
            {
                hosts.rows = rows;
                drop(hosts);
                live.invalidate();
            }
        });
    }

    /// The next [`Self::board`] refreshes.
    pub fn invalidate(&self) {
        self.cached.lock().expect("not poisoned").at = None;
    }

    pub fn subscribe(self: &Arc<Live>, task: Option<String>) -> Watch {
        if let Some(task) = &task {
            *self
                .watched
                .lock()
                .expect("not poisoned")
                .entry(task.clone())
                .or_default() += 1;
        }
        Watch {
            live: Arc::clone(self),
            task,
            news: self.news.subscribe(),
        }
    }

    /// Starts the watcher thread, for the life of the process.
    pub fn start_watching(self: &Arc<Live>) {
        let live = Arc::clone(self);
        std::thread::spawn(move || live.watch());
    }

    fn watch(&self) {
        let scope = EventScope::new(true, &self.cwd);
        let mut cursor = None;
        let mut seen: HashMap<String, (SystemTime, u64)> = HashMap::new();
        let mut stops_told = HashSet::new();
        loop {
            match ops::next_events(&scope, cursor, WATCH) {
                Ok((events, next)) => {
                    cursor = Some(next);
                    if !events.is_empty() {
                        self.invalidate();
                    }
                    for event in events {
                        let line = serde_json::json!({
                            "kind": "transition",
                            "task": event.task_id,
                            "status": event.new_status.as_str(),
                            "at": event.at,
                        });
                        let _ = self.news.send(line.to_string());
                    }
                }
                Err(_) => std::thread::sleep(WATCH),
            }
            self.look_at_transcripts(&mut seen);
            self.look_at_stops(&mut stops_told);
        }
    }

    /// A task the board shows still stopping (its ending on record, its processes being
    /// ended) whose stop is over: its pages are told, once. The stop's end records no
    /// transition, and a page drawn while it went on (the ending's transition redraws it at
    /// once) read `stopping` until something else changed: seen so in a loaded run. A `stat`
    /// per stopping task, no tmux call.
    fn look_at_stops(&self, told: &mut HashSet<String>) {
        let board = Arc::clone(&self.cached.lock().expect("not poisoned").board);
        let stopping: Vec<&str> = board
            .rows
            .iter()
            // A host's task stops on that host: its rows come with the host's next answer.
            .filter(|row| row.view.stopping && row.view.host.is_none())
            .map(|row| row.view.id.as_str())
            .collect();
        told.retain(|id| stopping.contains(&id.as_str()));
        for id in stopping {
            if told.contains(id) || ops::stop_in_progress(id) {
                continue;
            }
            told.insert(id.to_string());
            self.invalidate();
            let line = serde_json::json!({"kind": "stopped", "task": id});
            let _ = self.news.send(line.to_string());
        }
    }

    /// A task open in a page whose transcript grew: its page reloads its screen. A `stat` per
    /// open task, no tmux call.
    fn look_at_transcripts(&self, seen: &mut HashMap<String, (SystemTime, u64)>) {
        let watched: Vec<String> = self
            .watched
            .lock()
            .expect("not poisoned")
            .keys()
            .cloned()
            .collect();
        seen.retain(|id, _| watched.contains(id));
        if watched.is_empty() {
            return;
        }
        let board = Arc::clone(&self.cached.lock().expect("not poisoned").board);
        for id in watched {
            let Some(row) = board.rows.iter().find(|row| row.view.id == id) else {
                continue;
            };
            let Ok(meta) = std::fs::metadata(&row.view.transcript) else {
                continue;
            };
            let now = (
                meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                meta.len(),
            );
            // A task seen for the first time is announced too: its page may have been drawn
            // before the watcher's first look, and what was written between is not lost.
            if seen
                .insert(id.clone(), now)
                .is_none_or(|before| before != now)
            {
                let line = serde_json::json!({"kind": "screen", "task": id});
                let _ = self.news.send(line.to_string());
            }
        }
    }
}

/// One page's subscription: what it hears, and its place among the watched tasks until it is
/// dropped.
pub struct Watch {
    live: Arc<Live>,
    task: Option<String>,
    pub news: broadcast::Receiver<String>,
}

impl Watch {
    /// Whether a news line concerns this page: every line for the list, its task's for a task
    /// page.
    pub fn wants(&self, line: &str) -> bool {
        match &self.task {
            None => !line.contains("\"kind\":\"screen\""),
            Some(task) => line.contains(&format!("\"task\":\"{task}\"")),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            let mut watched = self.live.watched.lock().expect("not poisoned");
            if let Some(count) = watched.get_mut(task) {
                *count -= 1;
                if *count == 0 {
                    watched.remove(task);
                }
            }
        }
    }
}
