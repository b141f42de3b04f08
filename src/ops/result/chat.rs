//! An interactive child's result from its agent's own session record: the answer, tool calls
//! and tokens of the session cuekit chose (the task's `agent_session_id`, from the registry),
//! for the agents that keep one where cuekit can find it (Gemini's chat file). The record is
//! the child's to write: it is read through the project door (`effects::project::
//! session_record`), and what it says is presented as the child's words. A task whose record
//! is not found gets the readable log instead (`plain_result`).

use std::path::PathBuf;

use crate::domain::events::Digest;
use crate::domain::spec::Mode;
use crate::effects::project::session_record::{GeminiPlaces, gemini_chat};
use crate::effects::store::{self, TaskRecord};
use crate::ops::result::outcome::{TaskResult, from_digest};

/// Gemini's state folder for sessions, as the adapter declares it for the sandbox.
const GEMINI_TMP: &str = ".gemini/tmp";

/// The result read from the child's own session record, `None` when this task has none
/// cuekit can read (another agent or mode, no session id, no file, a file refused).
pub(super) fn from_session_record(record: &TaskRecord) -> Option<TaskResult> {
    if record.mode != Mode::Interactive || record.spec.agent_kind != "gemini" {
        return None;
    }
    let session = record.agent_session_id.as_deref()?;
    let found = gemini_places(record)
        .iter()
        .find_map(|places| gemini_chat(places, &record.cwd, session).ok().flatten())?;
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

/// Where a Gemini child keeps its chats: a sandboxed task's own state folder first (bound
/// over `~/.gemini/tmp` inside its sandbox), then the user's.
fn gemini_places(record: &TaskRecord) -> Vec<GeminiPlaces> {
    let mut places = Vec::new();
    let own = crate::domain::adapter::lookup(&record.spec.agent_kind)
        .ok()
        .and_then(|adapter| adapter.sandbox.state.iter().position(|s| *s == GEMINI_TMP))
        .and_then(|at| Some(store::state_dir(&record.id)?.join(at.to_string())));
    if let Some(own) = own.filter(|dir| dir.is_dir()) {
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
