use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::domain::display::tail::Tail;
use crate::domain::error::{Error, Result};
use crate::domain::transcript::Renderer;
use crate::effects::store::TaskRecord;
use crate::ops::task::route::{Route, route_one};

const CHUNK: usize = 64 * 1024;

/// Streams a transcript to `out`: raw bytes, or the readable rendering. Memory stays bounded
/// by one chunk and one screen whatever the transcript's size. A host's task's log is what its
/// host's `cuekit logs` prints.
pub fn read_logs(task_id: &str, cwd: &Path, raw: bool, out: &mut dyn Write) -> Result<()> {
    if let Route::Host(host) = route_one(task_id)? {
        return super::remote::text(&host, &logs_words(task_id, raw, None), cwd, out);
    }
    read_logs_of(&super::task::open(task_id, cwd)?.record, raw, out)
}

/// The last `lines` lines of the readable transcript (blank lines at its very end left out).
/// A host tails its own log: only those lines cross the connection.
pub fn tail_logs(task_id: &str, cwd: &Path, lines: usize) -> Result<Vec<String>> {
    if let Route::Host(host) = route_one(task_id)? {
        let mut text = Vec::new();
        let words = logs_words(task_id, false, Some(&format!("--tail={lines}")));
        super::remote::text(&host, &words, cwd, &mut text)?;
        return Ok(String::from_utf8_lossy(&text)
            .lines()
            .map(String::from)
            .collect());
    }
    tail_of(task_id, cwd, lines, Form::Readable)
}

/// [`tail_logs`] with the screen's colours, as normalized SGR ([`Renderer::styled`]): what the
/// web face draws. A host's task: its host's plain tail.
pub fn tail_screen(task_id: &str, cwd: &Path, lines: usize) -> Result<Vec<String>> {
    if let Route::Host(_) = route_one(task_id)? {
        return tail_logs(task_id, cwd, lines);
    }
    tail_of(task_id, cwd, lines, Form::Coloured)
}

/// The most of a transcript's end a tail reads: a tail (a task page's screen, `logs --tail`)
/// costs the same for a transcript of 193 MB as for one of 4 MiB.
const TAIL_WINDOW: u64 = 4 * 1024 * 1024;

fn tail_of(task_id: &str, cwd: &Path, lines: usize, form: Form) -> Result<Vec<String>> {
    let record = super::task::open(task_id, cwd)?.record;
    let path = crate::effects::store::transcript_path(&record);
    let mut file =
        crate::effects::store::open_own(&path).map_err(|err| Error::io("open", &path, err))?;
    let size = file
        .metadata()
        .map_err(|err| Error::io("read", &path, err))?
        .len();
    let mut tail = Tail::new(lines);
    let mut sink = Sink::new(&mut tail, form, screen_height(&record));
    if size > TAIL_WINDOW {
        skip_to_window(&mut file, size - TAIL_WINDOW, &path)?;
    }
    copy_available(&mut file, &mut sink, &path)?;
    sink.finish()
        .map_err(|err| Error::io("write", &path, err))?;
    Ok(tail.finish())
}

/// Seeks to `from`, then past the end of the line it falls in (within one chunk): the tail
/// starts on a whole line.
fn skip_to_window(file: &mut File, from: u64, path: &Path) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(from))
        .map_err(|err| Error::io("read", path, err))?;
    let mut buffer = vec![0; CHUNK];
    let read = file
        .read(&mut buffer)
        .map_err(|err| Error::io("read", path, err))?;
    let start = buffer[..read]
        .iter()
        .position(|byte| *byte == b'\n')
        .map_or(0, |at| at + 1);
    file.seek(SeekFrom::Start(from + start as u64))
        .map_err(|err| Error::io("read", path, err))?;
    Ok(())
}

/// A host's `cuekit logs` words for this task.
fn logs_words(task_id: &str, raw: bool, how: Option<&str>) -> Vec<String> {
    let mut words = vec!["logs".to_string(), task_id.to_string()];
    words.extend(raw.then(|| "--raw".to_string()));
    words.extend(how.map(String::from));
    words
}

pub(crate) fn read_logs_of(record: &TaskRecord, raw: bool, out: &mut dyn Write) -> Result<()> {
    read_form(record, Form::of(raw), out)
}

fn read_form(record: &TaskRecord, form: Form, out: &mut dyn Write) -> Result<()> {
    let path = crate::effects::store::transcript_path(record);
    let mut file =
        crate::effects::store::open_own(&path).map_err(|err| Error::io("open", &path, err))?;
    let mut sink = Sink::new(out, form, screen_height(record));
    copy_available(&mut file, &mut sink, &path)?;
    sink.finish().map_err(|err| Error::io("write", &path, err))
}

/// Like [`read_logs`], then keeps printing what the pane prints until the task ends (a host's
/// task: streamed from its host as it comes).
pub fn follow_logs(task_id: &str, cwd: &Path, raw: bool, out: &mut dyn Write) -> Result<()> {
    if let Route::Host(host) = route_one(task_id)? {
        return super::remote::stream(&host, &logs_words(task_id, raw, Some("--follow")), cwd, out);
    }
    let task = super::task::open(task_id, cwd)?;
    let record = &task.record;
    let path = crate::effects::store::transcript_path(record);
    let mut file =
        crate::effects::store::open_own(&path).map_err(|err| Error::io("open", &path, err))?;
    let mut sink = Sink::new(out, Form::of(raw), screen_height(record));
    let mut last_check = Instant::now() - Duration::from_secs(1);
    let mut ended_at: Option<Instant> = None;
    loop {
        let copied = copy_available(&mut file, &mut sink, &path)?;
        if let Some(ended) = ended_at {
            // The pipe's reader may flush its last bytes just after the pane's exit.
            if copied == 0 && ended.elapsed() > Duration::from_millis(300) {
                break;
            }
        } else if last_check.elapsed() >= Duration::from_millis(250) {
            last_check = Instant::now();
            if super::judge::has_ended(&task)? {
                ended_at = Some(Instant::now());
            }
        }
        if copied == 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    sink.finish().map_err(|err| Error::io("write", &path, err))
}

fn screen_height(record: &TaskRecord) -> u16 {
    record.tmux.as_ref().map_or(50, |tmux| tmux.height)
}

fn copy_available(file: &mut File, sink: &mut Sink, path: &Path) -> Result<usize> {
    let mut buffer = vec![0; CHUNK];
    let mut total = 0;
    loop {
        let read = file
            .read(&mut buffer)
            .map_err(|err| Error::io("read", path, err))?;
        if read == 0 {
            return Ok(total);
        }
        sink.write(&buffer[..read])
            .map_err(|err| Error::io("write", path, err))?;
        total += read;
    }
}

/// How a transcript is read: its bytes as the pane printed them, the text a person saw, or that
/// text with its colours.
#[derive(Clone, Copy)]
enum Form {
    Raw,
    Readable,
    Coloured,
}

impl Form {
    fn of(raw: bool) -> Form {
        if raw { Form::Raw } else { Form::Readable }
    }
}

enum Sink<'a> {
    Raw(&'a mut dyn Write),
    Readable(Renderer<&'a mut dyn Write>),
}

impl<'a> Sink<'a> {
    fn new(out: &'a mut dyn Write, form: Form, height: u16) -> Self {
        match form {
            Form::Raw => Sink::Raw(out),
            Form::Readable => Sink::Readable(Renderer::new(out, height as usize)),
            Form::Coloured => Sink::Readable(Renderer::styled(out, height as usize)),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Raw(out) => {
                out.write_all(bytes)?;
                out.flush()
            }
            Sink::Readable(renderer) => renderer.feed(bytes),
        }
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Sink::Raw(out) => out.flush(),
            Sink::Readable(renderer) => renderer.finish()?.flush(),
        }
    }
}
