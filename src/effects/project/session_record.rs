//! An agent's own session record, found and read as data a child can write: the Gemini CLI's
//! chat file, Claude Code's session record or Qwen Code's chat, for the session id cuekit
//! chose; Codex's rollout, found by the task's folder, start and prompt (Codex takes no session
//! id). Every step goes through [`Root`]: the folder
//! listings are proven inside the agent's folder, the file is opened following no link at any
//! level, as a regular file of this user's, and read streamed within [`CHAT_READ_LIMIT`] (a
//! longer chat is read from its end, where the answer is).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::files::Root;
use crate::domain::chat::{
    ChatDigest, GeminiChat, gemini_chat_file_matches, gemini_chat_session,
    gemini_project_short_name,
};
use crate::domain::chat_claude::{ClaudeSession, claude_session_of};
use crate::domain::chat_qwen::QwenChat;
use crate::domain::error::{Error, Result};

/// The most of one chat file read: its last bytes when it is longer.
pub const CHAT_READ_LIMIT: u64 = 64 * 1024 * 1024;
/// Project folders under `tmp/` looked through for the chat when `projects.json` does not name
/// the project (a sandboxed child's `projects.json` does not survive its sandbox).
const FOLDERS_LIMIT: usize = 1024;
/// The first line of a chat file (its header) is read up to this.
const HEADER_LIMIT: u64 = 64 * 1024;

/// Where a Gemini child kept its sessions.
#[derive(Debug, Clone)]
pub struct GeminiPlaces {
    /// The folder that holds the project folders (`~/.gemini/tmp`, or the task's own state).
    pub tmp: PathBuf,
    /// `~/.gemini/projects.json`, naming each project's folder, where there is one.
    pub projects: Option<PathBuf>,
}

/// The chat file found for a session and what it says.
#[derive(Debug, Clone)]
pub struct FoundChat {
    pub path: PathBuf,
    pub digest: ChatDigest,
}

/// The chat of session `session_id`, kept for the project at `cwd`: the file named for the
/// session's first 8 characters whose first line names the whole id (the latest such file).
/// `None` when there is none.
pub fn gemini_chat(
    places: &GeminiPlaces,
    cwd: &Path,
    session_id: &str,
) -> Result<Option<FoundChat>> {
    let (Some(parent), Some(tmp_name)) = (places.tmp.parent(), places.tmp.file_name()) else {
        return Ok(None);
    };
    if !places.tmp.is_dir() {
        return Ok(None);
    }
    let root = Root::new(parent)?;
    let tmp = Path::new(tmp_name);
    let named = places
        .projects
        .as_deref()
        .and_then(|path| project_short_name(path, cwd));
    let mut folders: Vec<PathBuf> = named.into_iter().map(PathBuf::from).collect();
    folders.extend(
        root.list(tmp)?
            .into_iter()
            .take(FOLDERS_LIMIT)
            .map(PathBuf::from),
    );
    for folder in folders {
        let chats = tmp.join(&folder).join("chats");
        let Ok(names) = root.list(&chats) else {
            continue;
        };
        let mut matching: Vec<String> = names
            .into_iter()
            .filter_map(|name| name.into_string().ok())
            .filter(|name| gemini_chat_file_matches(name, session_id))
            .collect();
        matching.sort();
        for name in matching.iter().rev() {
            let relative = chats.join(name);
            if let Some(digest) = read_if_session(&root, &relative, session_id)? {
                return Ok(Some(FoundChat {
                    path: root.path().join(relative),
                    digest,
                }));
            }
        }
    }
    Ok(None)
}

/// The project's folder name from `projects.json`, read as project data (a child may have
/// written it).
fn project_short_name(path: &Path, cwd: &Path) -> Option<String> {
    let bytes = super::files::read_named(path).ok()?;
    gemini_project_short_name(&bytes, cwd.to_str()?)
}

/// The chat at `relative`, folded, if its first line names `session_id`.
fn read_if_session(root: &Root, relative: &Path, session_id: &str) -> Result<Option<ChatDigest>> {
    let Some((mut file, len)) = root.open_unlinked(relative)? else {
        return Ok(None);
    };
    let path = root.path().join(relative);
    let mut head = Vec::new();
    (&mut file)
        .take(HEADER_LIMIT)
        .read_to_end(&mut head)
        .map_err(|err| Error::io("read", &path, err))?;
    let first = head.split(|&b| b == b'\n').next().unwrap_or_default();
    if gemini_chat_session(first).as_deref() != Some(session_id) {
        return Ok(None);
    }
    let from = len.saturating_sub(CHAT_READ_LIMIT);
    file.seek(SeekFrom::Start(from))
        .map_err(|err| Error::io("read", &path, err))?;
    let mut chat = GeminiChat::default();
    crate::effects::store::for_each_line(file.take(CHAT_READ_LIMIT), |line| {
        chat.push_line(line);
    })
    .map_err(|err| Error::io("read", &path, err))?;
    let mut digest = chat.finish();
    digest.session_id = Some(session_id.to_string());
    Ok(Some(digest))
}

/// The agents that keep a session's record as `projects/<project folder>/[chats/]<id>.jsonl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectsRecord {
    /// Claude Code: `~/.claude/projects/<folder>/<id>.jsonl`.
    Claude,
    /// Qwen Code: `~/.qwen/projects/<folder>/chats/<id>.jsonl`.
    Qwen,
}

/// The record of session `session_id`, kept under `projects` (`~/.claude/projects`,
/// `~/.qwen/projects`) for the project at `cwd`: the folder both CLIs name after the path
/// (each character not a letter or digit made `-`) first, then every folder (≤
/// [`FOLDERS_LIMIT`]: a long path's folder is named otherwise); the file named for the whole
/// id, whose first line naming a session names this one. `None` when there is none.
pub fn projects_record(
    kind: ProjectsRecord,
    projects: &Path,
    cwd: &Path,
    session_id: &str,
) -> Result<Option<FoundChat>> {
    let plain = !session_id.is_empty()
        && session_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let (Some(parent), Some(name)) = (projects.parent(), projects.file_name()) else {
        return Ok(None);
    };
    if !plain || !projects.is_dir() {
        return Ok(None);
    }
    let root = Root::new(parent)?;
    let top = Path::new(name);
    let mut folders = vec![std::ffi::OsString::from(mangled(cwd))];
    folders.extend(root.list(top)?.into_iter().take(FOLDERS_LIMIT));
    let file = format!("{session_id}.jsonl");
    for folder in folders {
        let mut relative = top.join(folder);
        if kind == ProjectsRecord::Qwen {
            relative.push("chats");
        }
        relative.push(&file);
        if let Some(digest) = fold_if_session(&root, &relative, session_id, kind)? {
            return Ok(Some(FoundChat {
                path: root.path().join(relative),
                digest,
            }));
        }
    }
    Ok(None)
}

/// A folder's path as both CLIs name its folder of sessions: each character not an ASCII
/// letter or digit made `-`.
fn mangled(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// The record at `relative`, folded, if the first of its first lines that names a session
/// names `session_id`.
fn fold_if_session(
    root: &Root,
    relative: &Path,
    session_id: &str,
    kind: ProjectsRecord,
) -> Result<Option<ChatDigest>> {
    let Some((mut file, len)) = root.open_unlinked(relative)? else {
        return Ok(None);
    };
    let path = root.path().join(relative);
    let mut head = Vec::new();
    (&mut file)
        .take(HEADER_LIMIT)
        .read_to_end(&mut head)
        .map_err(|err| Error::io("read", &path, err))?;
    let named = head.split(|&b| b == b'\n').find_map(claude_session_of);
    if named.as_deref() != Some(session_id) {
        return Ok(None);
    }
    let from = len.saturating_sub(CHAT_READ_LIMIT);
    file.seek(SeekFrom::Start(from))
        .map_err(|err| Error::io("read", &path, err))?;
    let lines = file.take(CHAT_READ_LIMIT);
    let digest = match kind {
        ProjectsRecord::Claude => {
            let mut session = ClaudeSession::default();
            crate::effects::store::for_each_line(lines, |line| session.push_line(line))
                .map_err(|err| Error::io("read", &path, err))?;
            session.finish()
        }
        ProjectsRecord::Qwen => {
            let mut chat = QwenChat::default();
            crate::effects::store::for_each_line(lines, |line| chat.push_line(line))
                .map_err(|err| Error::io("read", &path, err))?;
            chat.finish()
        }
    };
    Ok(Some(ChatDigest {
        session_id: Some(session_id.to_string()),
        ..digest
    }))
}

/// Rollout files looked at in one day's folder of Codex sessions.
const ROLLOUTS_LIMIT: usize = 10_000;
/// A rollout's first line (its `session_meta`, which carries the CLI's instructions: 22 KiB in
/// 0.171.0) is read up to this.
const ROLLOUT_HEADER_LIMIT: u64 = 1024 * 1024;
/// How much of a rollout is read for its first typed message.
const FIRST_PROMPT_LIMIT: u64 = 4 * 1024 * 1024;

/// What a task's Codex rollout must show: kept for one of `cwds`, started with the task (at
/// `started`, RFC 3339), its first typed message `prompt`.
#[derive(Debug, Clone, Copy)]
pub struct CodexTask<'a> {
    pub cwds: &'a [&'a Path],
    pub started: &'a str,
    pub prompt: &'a str,
}

/// The task's rollout under `sessions` (`~/.codex/sessions`): looked for in the day folders
/// around its start, each `rollout-*.jsonl` proven to be a regular file reached through no
/// link; taken only when exactly one fits (two tasks of the same prompt in the same folder
/// started together are told apart by nothing in the file: neither is read).
pub fn codex_rollout(sessions: &Path, task: CodexTask<'_>) -> Result<Option<FoundChat>> {
    let (Some(parent), Some(name)) = (sessions.parent(), sessions.file_name()) else {
        return Ok(None);
    };
    if !sessions.is_dir() {
        return Ok(None);
    }
    let root = Root::new(parent)?;
    let mut found: Vec<PathBuf> = Vec::new();
    for day in crate::domain::chat_codex::codex_day_folders(task.started) {
        let folder = Path::new(name).join(day);
        let names = root.list(&folder).unwrap_or_default();
        for file in names.into_iter().take(ROLLOUTS_LIMIT) {
            let file = file.to_string_lossy().into_owned();
            if !(file.starts_with("rollout-") && file.ends_with(".jsonl")) {
                continue;
            }
            let relative = folder.join(&file);
            if is_tasks_rollout(&root, &relative, task)? {
                found.push(relative);
            }
        }
    }
    let [relative] = found.as_slice() else {
        return Ok(None);
    };
    let Some((file, len)) = root.open_unlinked(relative)? else {
        return Ok(None);
    };
    let path = root.path().join(relative);
    let mut file = file;
    file.seek(SeekFrom::Start(len.saturating_sub(CHAT_READ_LIMIT)))
        .map_err(|err| Error::io("read", &path, err))?;
    let mut rollout = crate::domain::chat_codex::CodexRollout::default();
    crate::effects::store::for_each_line(file.take(CHAT_READ_LIMIT), |line| {
        rollout.push_line(line);
    })
    .map_err(|err| Error::io("read", &path, err))?;
    Ok(Some(FoundChat {
        path,
        digest: rollout.finish(),
    }))
}

/// Whether the rollout at `relative` is the task's: its `session_meta` names one of its
/// folders and a start with it, and its first typed message is its prompt.
fn is_tasks_rollout(root: &Root, relative: &Path, task: CodexTask<'_>) -> Result<bool> {
    use crate::domain::chat_codex::{FirstPrompt, codex_rollout_meta, started_with};
    let Ok(Some((file, _))) = root.open_unlinked(relative) else {
        return Ok(false);
    };
    let path = root.path().join(relative);
    let mut reader = std::io::BufReader::new(file.take(FIRST_PROMPT_LIMIT));
    let mut first = Vec::new();
    std::io::BufRead::read_until(
        &mut (&mut reader).take(ROLLOUT_HEADER_LIMIT),
        b'\n',
        &mut first,
    )
    .map_err(|err| Error::io("read", &path, err))?;
    let Some(meta) = codex_rollout_meta(&first) else {
        return Ok(false);
    };
    let here = task
        .cwds
        .iter()
        .any(|cwd| cwd.to_str() == Some(meta.cwd.as_str()));
    if !here || !started_with(task.started, meta.started) {
        return Ok(false);
    }
    let mut prompt = FirstPrompt::default();
    crate::effects::store::for_each_line(reader, |line| prompt.push_line(line))
        .map_err(|err| Error::io("read", &path, err))?;
    Ok(prompt.text.as_deref().map(str::trim) == Some(task.prompt.trim()))
}
