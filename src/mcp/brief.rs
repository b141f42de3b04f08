//! What an MCP answer says of a task by default: what a parent acts on, not the whole view.
//! A parent pays for every byte of an answer in tokens, on every call: the full view (paths,
//! launch command, capabilities, attach hint) is a kilobyte a task, which a `wait` on twenty
//! children repeats twenty times. `detail: "full"` gives the whole view.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::ops::TaskView;

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

/// The view's fields a brief answer keeps (each only when the view has it): what a parent acts
/// on. `conflicts` (present only when non-empty) names whose work a worktree task's would
/// conflict with, from the last check. `request` is an ACP task's permission request with the option ids to answer it with;
/// `last_report` the child's last `cuekit report` (`blocked`: it waits on the parent).
const BRIEF_FIELDS: [&str; 20] = [
    "id",
    "status",
    "phase",
    "reason",
    "hint",
    "exit_code",
    "agent_kind",
    "mode",
    "objective",
    "team",
    "role",
    "host",
    "branch",
    "worktree",
    "conflicts",
    "last_report",
    "stopping",
    "request",
    "queue",
    "sandbox",
];

fn head(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// For a child an MCP server started without its agent's credentials: which variables the
/// server's environment lacks, and how to hand them over. `None` when it has one of them.
fn missing_credentials(agent_kind: &str) -> Option<String> {
    let adapter = crate::domain::adapter::lookup(agent_kind).ok()?;
    if adapter.auth_env.is_empty() || crate::domain::adapter::env_set(adapter.auth_env).is_some() {
        return None;
    }
    Some(format!(
        "this MCP server's environment has none of {}: name them in the server's `env` in your \
         client's config, by reference (`cuekit mcp config --client <yours>` prints it)",
        adapter.auth_env.join(", ")
    ))
}

/// One task as `detail` asks: in brief, [`BRIEF_FIELDS`], the objective's start, and the start
/// of an ended task's answer where it wrote one (`get_task_result` has it all).
pub fn task(mut view: TaskView, detail: Detail) -> Value {
    if view.reason.as_deref() == Some("auth_missing")
        && let Some(missing) = missing_credentials(&view.agent_kind)
    {
        view.hint = Some(match view.hint.take() {
            Some(hint) => format!("{hint}; {missing}"),
            None => missing,
        });
    }
    if detail == Detail::Full {
        return serde_json::to_value(view).expect("views serialize");
    }
    let final_text = view
        .status
        .is_terminal()
        .then(|| crate::ops::written_final_text(&view.task_dir))
        .flatten();
    view.objective = head(&view.objective, OBJECTIVE_CHARS);
    // A check in one line: round k of N and the verdict (`detail: full` has every verdict).
    let check = view.check.take().map(|check| {
        if check.changed_since_check {
            format!("{}; changed since its check", check.summary)
        } else {
            check.summary
        }
    });
    let Value::Object(mut fields) = serde_json::to_value(view).expect("views serialize") else {
        unreachable!("a view is an object")
    };
    fields.retain(|key, value| {
        BRIEF_FIELDS.contains(&key.as_str()) && !value.is_null() && *value != Value::Bool(false)
    });
    if let Some(check) = check {
        fields.insert("check".into(), Value::String(check));
    }
    if let Some(text) = final_text {
        fields.insert(
            "final_text".into(),
            Value::String(head(&text, FINAL_TEXT_CHARS)),
        );
    }
    Value::Object(fields)
}

/// The tasks as `detail` asks.
pub fn tasks(views: Vec<TaskView>, detail: Detail) -> Value {
    Value::Array(views.into_iter().map(|view| task(view, detail)).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn heads_cut_on_characters_and_say_so() {
        assert_eq!(super::head("ééé", 2), "éé…");
        assert_eq!(super::head("short", 10), "short");
    }

    #[test]
    fn a_brief_says_where_a_check_stands_in_one_line() {
        let mut view = crate::ops::TaskView::bare("t_0123456789ab", std::path::Path::new("/d"));
        let mut state = crate::domain::check::CheckState::new(2);
        state.phase = crate::domain::check::Phase::Checking;
        view.check = Some(Box::new(crate::ops::CheckView {
            summary: state.summary(),
            changed_since_check: false,
            state,
        }));
        view.phase = Some("checking".into());
        let brief = super::task(view, super::Detail::Brief);
        assert_eq!(brief["check"], "checking, round 1 of 3", "{brief}");
        assert_eq!(brief["phase"], "checking", "{brief}");
    }

    #[test]
    fn a_brief_carries_conflicts_only_when_there_are_some() {
        let mut view = crate::ops::TaskView::bare("t_0123456789ab", std::path::Path::new("/d"));
        let brief = super::task(view.clone(), super::Detail::Brief);
        assert!(brief.get("conflicts").is_none(), "{brief}");
        view.conflicts = vec!["t_aaaaaaaaaaaa".into(), "target main".into()];
        let brief = super::task(view, super::Detail::Brief);
        assert_eq!(
            brief["conflicts"],
            serde_json::json!(["t_aaaaaaaaaaaa", "target main"])
        );
    }
}
