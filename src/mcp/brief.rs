//! What an MCP answer says of a task by default: what a parent acts on, not the whole view.
//! A parent pays for every byte of an answer in tokens, on every call: the full view (paths,
//! launch command, capabilities, attach hint) is a kilobyte a task, which a `wait` on twenty
//! children repeats twenty times. `detail: "full"` gives the whole view.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::acp::session::Pending;
use crate::ops::TaskView;
use crate::spec::Mode;
use crate::status::Status;

/// How much of each task an answer carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    /// What a parent acts on (the default).
    #[default]
    Brief,
    /// The whole view: paths, launch command, capabilities, attach hint, progress, …
    Full,
}

/// The first characters of the objective and of the final text a brief answer carries.
const OBJECTIVE_CHARS: usize = 120;
const FINAL_TEXT_CHARS: usize = 400;

#[derive(Debug, Serialize)]
pub struct Brief {
    pub id: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub agent_kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    pub objective: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// A worktree task's checkout, where its work is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<std::path::PathBuf>,
    /// The kind of the child's last `cuekit report` (`blocked`: it waits on the parent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stopping: bool,
    /// An ACP task's permission request, with the option ids to answer it with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<Box<Pending>>,
    /// The start of an ended task's answer, where it wrote one (`get_task_result` has it all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
}

fn head(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// For a child an MCP server started without its agent's credentials: which variables the
/// server's environment lacks, and how to hand them over. `None` when it has one of them.
pub fn missing_credentials(agent_kind: &str) -> Option<String> {
    let adapter = crate::adapter::lookup(agent_kind).ok()?;
    if adapter.auth_env.is_empty() || crate::adapter::env_set(adapter.auth_env).is_some() {
        return None;
    }
    Some(format!(
        "this MCP server's environment has none of {}: name them in the server's `env` in your \
         client's config, by reference (`cuekit mcp config --client <yours>` prints it)",
        adapter.auth_env.join(", ")
    ))
}

impl From<TaskView> for Brief {
    fn from(mut view: TaskView) -> Brief {
        if view.reason.as_deref() == Some("auth_missing")
            && let Some(missing) = missing_credentials(&view.agent_kind)
        {
            view.hint = Some(match view.hint.take() {
                Some(hint) => format!("{hint}; {missing}"),
                None => missing,
            });
        }
        let final_text = view
            .status
            .is_terminal()
            .then(|| crate::ops::written_final_text(&view.task_dir))
            .flatten()
            .map(|text| head(&text, FINAL_TEXT_CHARS));
        Brief {
            objective: head(&view.objective, OBJECTIVE_CHARS),
            report: view
                .last_report
                .map(|report| report.kind.as_str().to_string()),
            id: view.id,
            status: view.status,
            reason: view.reason,
            hint: view.hint,
            exit_code: view.exit_code,
            agent_kind: view.agent_kind,
            mode: view.mode,
            team: view.team,
            role: view.role,
            host: view.host,
            branch: view.branch,
            worktree: view.worktree,
            stopping: view.stopping,
            request: view.request,
            final_text,
        }
    }
}

/// The tasks as `detail` asks.
pub fn tasks(views: Vec<TaskView>, detail: Detail) -> serde_json::Value {
    match detail {
        Detail::Full => serde_json::to_value(views),
        Detail::Brief => {
            serde_json::to_value(views.into_iter().map(Brief::from).collect::<Vec<_>>())
        }
    }
    .expect("views serialize")
}

#[cfg(test)]
mod tests {
    #[test]
    fn heads_cut_on_characters_and_say_so() {
        assert_eq!(super::head("ééé", 2), "éé…");
        assert_eq!(super::head("short", 10), "short");
    }
}
