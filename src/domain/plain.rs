//! One vocabulary for people: cuekit's status and reason codes as the short phrases a person
//! reads in `list`, `status`, `wait`, `top` and the web page ("waiting for you — asks to run
//! `echo hi > f.txt`", "finished its turn"). JSON keeps the codes; only text faces use this.
//! Pure: a table and the few rules that pick from it.

use crate::domain::task::Status;

/// How a task stands, in words: `word` is the status a person scans for, `detail` why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub word: &'static str,
    pub detail: Option<String>,
}

impl Said {
    /// `word — detail`, or the word alone.
    pub fn line(&self) -> String {
        match &self.detail {
            Some(detail) => format!("{} — {detail}", self.word),
            None => self.word.to_string(),
        }
    }
}

/// Whether a person must act for the task to go on (a dialog, a login, a finished turn).
pub fn needs_you(status: Status) -> bool {
    status == Status::InputRequired
}

/// The order faces show tasks in: what needs a person first, then what runs, then what waits
/// in the queue, then the rest.
pub fn urgency(status: Status) -> u8 {
    match status {
        Status::InputRequired => 0,
        Status::Untrusted | Status::Unknown => 1,
        Status::Running => 2,
        Status::Queued => 3,
        Status::Failed | Status::TimedOut => 4,
        Status::Completed | Status::Cancelled => 5,
    }
}

/// The finer order inside [`urgency`]: a dialog that holds the child (a permission, a login,
/// a trust question) before a child that finished its turn, which waits on nobody's answer.
pub fn order(status: Status, reason: Option<&str>) -> u8 {
    match (status, reason) {
        (Status::InputRequired, Some("idle_at_prompt")) => 1,
        (Status::InputRequired, _) => 0,
        (status, _) => urgency(status) + 1,
    }
}

/// The status alone, as a person says it.
pub fn status_word(status: Status) -> &'static str {
    match status {
        Status::Queued => "queued",
        Status::Running => "running",
        Status::Completed => "completed",
        Status::Failed => "failed",
        Status::Cancelled => "cancelled",
        Status::TimedOut => "timed out",
        Status::InputRequired => "waiting for you",
        Status::Untrusted => "not trusted",
        Status::Unknown => "can't tell",
    }
}

/// A reason code as a person says it; an unknown code reads as its words.
pub fn reason_phrase(reason: &str) -> String {
    let known = match reason {
        "auth_required" | "auth_missing" => "needs a login or API key",
        "trust_required" => "asks whether to trust this folder",
        "permission_prompt" => "asks a permission",
        "idle_at_prompt" => "finished its turn",
        "agent_error" => "the agent reported an error",
        "input_error" => "the agent could not read its input",
        "sandbox_error" => "the agent's own sandbox failed",
        "config_error" => "the agent's settings are wrong",
        "turn_limit" => "used up its turns",
        "tool_execution_error" => "a tool failed",
        "untrusted_workspace" => "the agent does not trust this folder",
        "cancelled" => "cancelled",
        "acp_protocol_error" => "the agent broke its protocol",
        "agent_not_executable" => "the agent's program cannot run",
        "agent_not_found" => "the agent is not installed",
        "killed" => "killed",
        "terminated" => "stopped by a signal",
        "nonzero_exit" => "exited with an error",
        "pane_disappeared" => "its window closed without an exit code",
        "launch_failed" => "could not start",
        "worktree_setup_failed" => "the worktree setup failed",
        "check_failed" => "its check failed",
        "timeout" => "ran past its time limit",
        "rate_limited" => "hit a rate limit",
        "transient" => "a passing service fault",
        "budget_exceeded" => "used up its budget",
        "sandbox_failed" => "its sandbox could not be made",
        "dependency_failed" => "a task it waited on did not finish",
        "removed" => "taken out of the queue",
        "store_corrupt" => "its record cannot be read",
        "tmux_unavailable" => "tmux does not answer",
        "tmux_socket_missing" => "its tmux socket is gone",
        "host_unreachable" => "its host does not answer",
        "conflict" => "its work conflicts with other work",
        "untrusted" => "cuekit did not write this record",
        "checking" => "checking its work",
        _ => return reason.replace('_', " "),
    };
    known.to_string()
}

/// What a permission dialog asks, as a person says it, from the line
/// [`crate::domain::permission_screen::asked`] reads off the screen: `Allow execution of
/// [Shell]? (Shell echo hi > f.txt) 1. …` → ``asks to run `echo hi > f.txt` ``.
pub fn asks(asked: &str) -> String {
    let question_end = asked.find("? ").map_or(asked.len(), |at| at + 1);
    let question = asked[..question_end].trim();
    let rest = &asked[question_end..];
    let call = rest
        .trim_start()
        .strip_prefix('(')
        .and_then(|call| call.split_once(')'))
        .map(|(call, _)| call.trim());
    match call {
        Some(call) => match call.split_once(' ') {
            Some(("Shell" | "Bash" | "run_shell_command", command)) => {
                format!("asks to run `{}`", command.trim())
            }
            Some((tool, args)) => format!("asks to use {tool} `{}`", args.trim()),
            None => format!("asks to use {call}"),
        },
        None => format!("asks: {question}"),
    }
}

/// The question a permission hint carries (`it asks: …; what to do`), if cuekit read one.
pub fn asked_in_hint(hint: &str) -> Option<&str> {
    let asked = hint.strip_prefix("it asks: ")?;
    // The options end the child's words: `… 3. No, suggest changes (esc); attach and answer…`
    // (a command may hold `; ` itself: only one after the options ends them).
    let options = asked.find(" 1. ").unwrap_or(0);
    Some(
        asked[options..]
            .find("; ")
            .map_or(asked, |end| &asked[..options + end]),
    )
}

/// How a task stands, in words. `phase` is a running task's (`checking`), `hint` the view's
/// (a permission's question rides in it), `exit_code` the ending's.
pub fn said(status: Status, reason: Option<&str>, phase: Option<&str>, hint: Option<&str>) -> Said {
    let detail = match (status, reason) {
        (Status::Running, _) => phase.map(reason_phrase),
        (Status::InputRequired, Some("idle_at_prompt")) => {
            return Said {
                word: "finished its turn",
                detail: None,
            };
        }
        (Status::InputRequired, Some("permission_prompt")) => Some(
            hint.and_then(asked_in_hint)
                .map_or_else(|| reason_phrase("permission_prompt"), asks),
        ),
        (Status::Cancelled | Status::TimedOut, Some("cancelled" | "timeout")) => None,
        (Status::Completed, _) => None,
        (_, Some(reason)) => Some(reason_phrase(reason)),
        (_, None) => None,
    };
    Said {
        word: status_word(status),
        detail,
    }
}

/// The few words (17 columns at most) a narrow column holds: `asks permission`, `needs
/// login`, `checking`.
pub fn short(status: Status, reason: Option<&str>, phase: Option<&str>) -> &'static str {
    match (status, reason, phase) {
        (Status::Running, _, Some("checking")) => "checking",
        (Status::InputRequired, Some("permission_prompt"), _) => "asks permission",
        (Status::InputRequired, Some("auth_required"), _) => "needs login",
        (Status::InputRequired, Some("trust_required"), _) => "asks trust",
        (Status::InputRequired, Some("idle_at_prompt"), _) => "finished its turn",
        (status, ..) => status_word(status),
    }
}

/// What became of a steering message, as a person says it: `steered — the child received your
/// message`, `not sent — a dialog holds the child: needs a login or API key`. `blocked_by` is a
/// blocked steer's screen.
pub fn steer_said(
    receipt: crate::domain::steer::Receipt,
    blocked_by: Option<crate::domain::attention::Attention>,
) -> Said {
    use crate::domain::steer::Receipt;
    let (word, detail) = match receipt {
        Receipt::Submitted => ("steered", "the child received your message".to_string()),
        Receipt::Queued => (
            "steered",
            "it goes in when the current turn ends".to_string(),
        ),
        Receipt::TypedNotSubmitted => (
            "typed, not sent",
            "it sits in the child's input line: attach and press Enter".to_string(),
        ),
        Receipt::Blocked => (
            "not sent",
            match blocked_by {
                Some(screen) => format!(
                    "a dialog holds the child: {}",
                    reason_phrase(screen.as_str())
                ),
                None => "a dialog holds the child".to_string(),
            },
        ),
        Receipt::NotRunning => ("not sent", "the child is not running".to_string()),
        Receipt::Rejected => ("not sent", "the agent refused it".to_string()),
    };
    Said {
        word,
        detail: Some(detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permission_reads_as_the_command_it_asks_to_run() {
        let hint = "it asks: Allow execution of [Shell]? (Shell echo hi > f.txt) 1. Allow once · \
                    2. Allow for this session · 3. No, suggest changes (esc); the child asks to \
                    approve a tool call: attach and answer";
        let said = said(
            Status::InputRequired,
            Some("permission_prompt"),
            None,
            Some(hint),
        );
        assert_eq!(
            said.line(),
            "waiting for you — asks to run `echo hi > f.txt`"
        );
    }

    #[test]
    fn a_command_with_a_semicolon_stays_whole() {
        let hint = "it asks: Allow execution of [Shell]? (Shell echo a; echo b) 1. Allow once; \
                    attach and answer; still stopping";
        assert_eq!(
            asks(asked_in_hint(hint).unwrap()),
            "asks to run `echo a; echo b`"
        );
    }

    #[test]
    fn a_permission_without_a_call_names_its_question() {
        assert_eq!(
            asks("Do you want to proceed? 1. Yes · 2. No"),
            "asks: Do you want to proceed?"
        );
        assert_eq!(
            asks("Allow? (WriteFile notes.md) 1. Yes"),
            "asks to use WriteFile `notes.md`"
        );
        let plain = said(Status::InputRequired, Some("permission_prompt"), None, None);
        assert_eq!(plain.line(), "waiting for you — asks a permission");
    }

    #[test]
    fn every_state_a_person_meets_reads_as_words() {
        let line = |status, reason: Option<&str>, phase: Option<&str>| {
            said(status, reason, phase, None).line()
        };
        assert_eq!(
            line(Status::InputRequired, Some("idle_at_prompt"), None),
            "finished its turn"
        );
        assert_eq!(
            line(Status::InputRequired, Some("auth_required"), None),
            "waiting for you — needs a login or API key"
        );
        assert_eq!(
            line(Status::Failed, Some("nonzero_exit"), None),
            "failed — exited with an error"
        );
        assert_eq!(line(Status::TimedOut, Some("timeout"), None), "timed out");
        assert_eq!(
            line(Status::Running, None, Some("checking")),
            "running — checking its work"
        );
        assert_eq!(line(Status::Completed, None, None), "completed");
        assert_eq!(
            line(Status::Failed, Some("some_new_code"), None),
            "failed — some new code"
        );
    }

    #[test]
    fn no_internal_code_reaches_a_person() {
        let codes = [
            "auth_required",
            "trust_required",
            "permission_prompt",
            "idle_at_prompt",
            "nonzero_exit",
            "pane_disappeared",
            "check_failed",
            "tmux_socket_missing",
        ];
        for status in Status::ALL {
            for code in codes {
                let line = said(status, Some(code), None, None).line();
                assert!(!line.contains('_'), "{line}");
                assert!(!short(status, Some(code), None).contains('_'));
            }
        }
    }

    #[test]
    fn what_needs_a_person_comes_first() {
        let mut statuses = [
            Status::Completed,
            Status::Running,
            Status::InputRequired,
            Status::Queued,
            Status::Failed,
        ];
        statuses.sort_by_key(|s| urgency(*s));
        assert_eq!(statuses[0], Status::InputRequired);
        assert_eq!(statuses[1], Status::Running);
        assert!(needs_you(Status::InputRequired) && !needs_you(Status::Running));
        assert!(
            order(Status::InputRequired, Some("permission_prompt"))
                < order(Status::InputRequired, Some("idle_at_prompt"))
        );
        assert!(
            order(Status::InputRequired, Some("idle_at_prompt")) < order(Status::Running, None)
        );
    }

    #[test]
    fn a_steer_receipt_reads_as_words() {
        use crate::domain::attention::Attention;
        use crate::domain::steer::Receipt;
        assert_eq!(
            steer_said(Receipt::Submitted, None).line(),
            "steered — the child received your message"
        );
        assert_eq!(
            steer_said(Receipt::Blocked, Some(Attention::AuthRequired)).line(),
            "not sent — a dialog holds the child: needs a login or API key"
        );
        for receipt in [
            Receipt::Submitted,
            Receipt::TypedNotSubmitted,
            Receipt::Blocked,
            Receipt::NotRunning,
            Receipt::Queued,
            Receipt::Rejected,
        ] {
            let line = steer_said(receipt, Some(Attention::PermissionPrompt)).line();
            assert!(!line.contains('_'), "{line}");
        }
    }
}
