//! An interactive child's result from its agent's own session record: the answer, tool calls
//! and tokens of the session cuekit chose (the task's `agent_session_id`, from the registry),
//! for the agents that keep one where cuekit can find it (Gemini's chat file, Claude Code's
//! session record, Qwen Code's chat; Codex's rollout, found by the task's folder, start and
//! prompt, as Codex takes no session id). The record is
//! the child's to write: it is read through the project door (`effects::project::
//! session_record`), and what it says is presented as the child's words. A task whose record
//! is not found gets the readable log instead (`plain_result`).

use std::path::PathBuf;

use crate::domain::events::Digest;
use crate::domain::spec::Mode;
use crate::effects::project::session_record::{
    CodexTask, FoundChat, GeminiPlaces, ProjectsRecord, codex_rollout, gemini_chat, projects_record,
};
use crate::effects::store::{self, TaskRecord};
use crate::ops::result::outcome::{TaskResult, from_digest};

/// Gemini's state folder for sessions, as the adapter declares it for the sandbox.
const GEMINI_TMP: &str = ".gemini/tmp";
/// Claude Code's folder of sessions, as the adapter declares it for the sandbox.
const CLAUDE_PROJECTS: &str = ".claude/projects";
/// Codex's folder of rollouts, as the adapter declares it for the sandbox.
const CODEX_SESSIONS: &str = ".codex/sessions";
/// Qwen Code's folder of chats (0.15.10).
const QWEN_PROJECTS: &str = ".qwen/projects";

/// The result read from the child's own session record, `None` when this task has none
/// cuekit can read (another agent or mode, no session id, no file, a file refused).
pub(super) fn from_session_record(record: &TaskRecord) -> Option<TaskResult> {
    if record.mode != Mode::Interactive {
        return None;
    }
    // Codex takes no session id: its rollout is found by the task's folder, start and prompt.
    let session = record.agent_session_id.as_deref().unwrap_or_default();
    if session.is_empty() && record.spec.agent_kind != "codex" {
        return None;
    }
    let found = match record.spec.agent_kind.as_str() {
        "gemini" => gemini_places(record)
            .iter()
            .find_map(|places| gemini_chat(places, &record.cwd, session).ok().flatten()),
        "claude-code" => projects_places(record, ".claude", CLAUDE_PROJECTS)
            .iter()
            .find_map(|projects| {
                projects_record(ProjectsRecord::Claude, projects, &record.cwd, session)
                    .ok()
                    .flatten()
            }),
        "qwen" => projects_places(record, ".qwen", QWEN_PROJECTS)
            .iter()
            .find_map(|projects| {
                projects_record(ProjectsRecord::Qwen, projects, &record.cwd, session)
                    .ok()
                    .flatten()
            }),
        "codex" => codex_rollout_of(record),
        _ => None,
    }?;
    let digest = found.digest;
    let mut result = from_digest(&record.id, Digest::default(), record.exit_code, None);
    result.agent_session_id = digest.session_id.clone();
    result.model = digest.model.clone();
    result.stats = Some(digest.stats());
    result.final_text = digest.final_text.clone();
    result.tool_calls = digest.tool_calls;
    result.session_record = Some(found.path);
    Some(result)
}

/// Where a Codex child keeps its rollouts (`sessions/`: a sandboxed task's own first, then
/// `$CODEX_HOME` or `~/.codex`), and the one of this task, if exactly one fits.
fn codex_rollout_of(record: &TaskRecord) -> Option<FoundChat> {
    let mut places: Vec<PathBuf> = own_state(record, CODEX_SESSIONS).into_iter().collect();
    let home = std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(std::env::var_os("HOME")?).join(".codex")));
    places.extend(home.map(|home| home.join("sessions")));
    let mut cwds = vec![record.cwd.as_path()];
    cwds.extend(record.worktree.as_ref().map(|w| w.path.as_path()));
    let prompt = crate::domain::spec::render_prompt(&record.spec);
    let task = CodexTask {
        cwds: &cwds,
        started: record.started_at.as_deref().unwrap_or(&record.created_at),
        prompt: &prompt,
    };
    places
        .iter()
        .find_map(|sessions| codex_rollout(sessions, task).ok().flatten())
}

/// Where a Claude Code or Qwen Code child keeps its sessions (`projects`, under `dir` in the
/// home): a sandboxed task's own state folder first, where the adapter keeps that folder
/// apart, then the user's (Claude Code's `CLAUDE_CONFIG_DIR` stands for `~/.claude`).
fn projects_places(record: &TaskRecord, dir: &str, projects: &str) -> Vec<PathBuf> {
    let mut places: Vec<PathBuf> = own_state(record, projects).into_iter().collect();
    let own_home = (dir == ".claude")
        .then(|| std::env::var_os("CLAUDE_CONFIG_DIR"))
        .flatten()
        .map(PathBuf::from);
    let home = own_home.or_else(|| Some(PathBuf::from(std::env::var_os("HOME")?).join(dir)));
    places.extend(home.map(|home| home.join("projects")));
    places
}

/// A sandboxed task's own copy of the agent's state folder `state`, if it has one.
fn own_state(record: &TaskRecord, state: &str) -> Option<PathBuf> {
    crate::domain::adapter::lookup(&record.spec.agent_kind)
        .ok()
        .and_then(|adapter| adapter.sandbox.state.iter().position(|s| *s == state))
        .and_then(|at| Some(store::state_dir(&record.id)?.join(at.to_string())))
        .filter(|dir| dir.is_dir())
}

/// Where a Gemini child keeps its chats: a sandboxed task's own state folder first (bound
/// over `~/.gemini/tmp` inside its sandbox), then the user's.
fn gemini_places(record: &TaskRecord) -> Vec<GeminiPlaces> {
    let mut places = Vec::new();
    if let Some(own) = own_state(record, GEMINI_TMP) {
        places.push(GeminiPlaces {
            tmp: own,
            projects: None,
        });
    }
    // The CLI's own override of its home, else HOME.
    let home = std::env::var_os("GEMINI_CLI_HOME")
        .or_else(|| std::env::var_os("HOME"))
        .map(PathBuf::from);
    if let Some(gemini) = home.map(|home| home.join(".gemini")) {
        places.push(GeminiPlaces {
            tmp: gemini.join("tmp"),
            projects: Some(gemini.join("projects.json")),
        });
    }
    places
}
