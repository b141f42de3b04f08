//! Failover: when an attempt ends on its agent's rate limit, the task may go on with the next
//! agent of its `--fallback` list, in the same work dir, told the recap
//! ([`crate::domain::recap`]). Pure: the list as written, the decision, the line a view shows.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::domain::error::{Error, Result};

/// The endings a failover follows: the agent's rate limit or spent quota.
pub const FAILS_OVER: &[&str] = &["rate_limited", "quota_exhausted"];

/// `retry.fallback_after` when the user's file says nothing: a reset further off than this
/// is not waited for.
pub const DEFAULT_AFTER: Duration = Duration::from_secs(600);

/// One agent to fall back to (`codex` or `codex:gpt-5`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.model {
            Some(model) => write!(f, "{}:{model}", self.agent),
            None => f.write_str(&self.agent),
        }
    }
}

/// `K[:MODEL],…`, each agent one `known` names (the agents cuekit has adapters for).
pub fn parse_list(text: &str, known: &[&str]) -> Result<Vec<Fallback>> {
    let mut list = Vec::new();
    for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let (agent, model) = match word.split_once(':') {
            Some((agent, model)) => (agent.trim(), Some(model.trim())),
            None => (word, None),
        };
        if !known.contains(&agent) {
            return Err(Error::invalid_input(format!(
                "--fallback: '{agent}' is not an agent cuekit knows"
            ))
            .with_hint(format!("agents: {}", known.join(", "))));
        }
        if agent == "command" {
            return Err(Error::invalid_input(
                "--fallback: the command agent runs its own program, not a task's recap",
            )
            .with_hint("name agents that take a prompt (gemini, codex, claude-code, …)"));
        }
        if model.is_some_and(|m| m.is_empty() || m.starts_with('-') || m.contains(char::is_control))
        {
            return Err(Error::invalid_input(format!(
                "--fallback: '{word}' names no usable model"
            ))
            .with_hint("write K or K:MODEL, e.g. codex:gpt-5"));
        }
        list.push(Fallback {
            agent: agent.to_string(),
            model: model.map(String::from),
        });
    }
    if list.is_empty() {
        return Err(Error::invalid_input("--fallback names no agent")
            .with_hint("write K[:MODEL],…, e.g. --fallback codex,claude-code"));
    }
    Ok(list)
}

/// What follows an attempt's ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Not this module's: the retry policy decides as before.
    NotMine,
    /// Another attempt on the same agent (its retries are not spent and its reset is near).
    Retry,
    /// The next attempt runs the fallback at this index of the list.
    Failover(usize),
    /// The fallback may not run this task: it ends (fails closed).
    Refused(usize),
}

/// The facts the decision is taken on.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    /// The attempt's ending reason.
    pub reason: &'a str,
    /// The wait the agent asked for, if it named one.
    pub reset: Option<Duration>,
    /// Whether the retry policy allows one more attempt on this agent.
    pub retry_left: bool,
    pub fallback_after: Duration,
    /// The list, and how many of it earlier failovers used.
    pub fallbacks: &'a [Fallback],
    pub used: usize,
}

/// The decision: a failover when the ending is a rate limit, a fallback is left, and either
/// the retries on this agent are spent or its reset is further off than `fallback_after`.
/// `may_run` says whether a fallback agent may take this task (an approvals task's sandbox
/// verified for it): one that may not ends the task.
pub fn decide(facts: &Facts, may_run: impl Fn(&Fallback) -> bool) -> Decision {
    if !FAILS_OVER.contains(&facts.reason) {
        return Decision::NotMine;
    }
    let Some(next) = facts.fallbacks.get(facts.used) else {
        return Decision::NotMine;
    };
    let reset_far = facts
        .reset
        .is_some_and(|reset| reset > facts.fallback_after);
    if facts.retry_left && !reset_far {
        return Decision::Retry;
    }
    if may_run(next) {
        Decision::Failover(facts.used)
    } else {
        Decision::Refused(facts.used)
    }
}

/// The most attempts a task may make: its retries on each of its agents.
pub fn attempts_max(retries: Option<u32>, fallbacks: usize) -> Option<usize> {
    match (retries, fallbacks) {
        (None, 0) => None,
        (retries, n) => Some((retries.unwrap_or(0) as usize + 1) * (n + 1)),
    }
}

/// How an attempt is shown: `attempt 3 of 4: codex, after gemini rate_limited, resets 02:40`.
pub fn attempt_line(
    attempt: usize,
    of: Option<usize>,
    agent: &str,
    after: Option<(&str, &str)>,
    resets: Option<&str>,
) -> String {
    let mut line = format!("attempt {attempt}");
    if let Some(of) = of {
        line.push_str(&format!(" of {of}"));
    }
    line.push_str(&format!(": {agent}"));
    if let Some((previous, reason)) = after {
        line.push_str(&format!(", after {previous} {reason}"));
    }
    if let Some(resets) = resets {
        line.push_str(&format!(", resets {resets}"));
    }
    line
}

/// A kept environment file (shell, sourced by the launch script) for the task's next agent:
/// `unset` of the names the previous agent alone was given (its own key variables, its
/// configured variables), then the next agent's. Names that are not shell names are left out.
pub fn env_for_next_agent(kept: &str, unset: &[String], add: Vec<(String, String)>) -> String {
    let names: Vec<&str> = unset
        .iter()
        .map(String::as_str)
        .filter(|name| {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .collect();
    let mut text = kept.to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !names.is_empty() {
        text.push_str(&format!("unset {}\n", names.join(" ")));
    }
    text.push_str(&crate::domain::launch::render_env_file(add));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_agents_environment_unsets_the_previous_agents_keys_and_adds_its_own() {
        let kept = "export PATH='/bin'\nexport GEMINI_API_KEY='g'\n";
        let text = super::env_for_next_agent(
            kept,
            &["GEMINI_API_KEY".into(), "BAD NAME; rm -rf /".into()],
            vec![("OPENAI_API_KEY".into(), "o'k".into())],
        );
        assert_eq!(
            text,
            "export PATH='/bin'\nexport GEMINI_API_KEY='g'\nunset GEMINI_API_KEY\n\
             export OPENAI_API_KEY='o'\\''k'\n"
        );
    }

    const KNOWN: &[&str] = &["gemini", "codex", "claude-code", "command"];

    fn list(text: &str) -> Vec<Fallback> {
        parse_list(text, KNOWN).unwrap()
    }

    #[test]
    fn a_list_names_agents_and_models() {
        assert_eq!(
            list("codex:gpt-5, claude-code"),
            vec![
                Fallback {
                    agent: "codex".into(),
                    model: Some("gpt-5".into())
                },
                Fallback {
                    agent: "claude-code".into(),
                    model: None
                }
            ]
        );
        assert_eq!(
            list("codex:gpt-5,claude-code")[0].to_string(),
            "codex:gpt-5"
        );
        for bad in ["nope", "", "codex:", "codex:-x", "command", ","] {
            assert!(parse_list(bad, KNOWN).is_err(), "{bad}");
        }
    }

    fn facts<'a>(fallbacks: &'a [Fallback], reset: Option<u64>, retry_left: bool) -> Facts<'a> {
        Facts {
            reason: "rate_limited",
            reset: reset.map(Duration::from_secs),
            retry_left,
            fallback_after: DEFAULT_AFTER,
            fallbacks,
            used: 0,
        }
    }

    #[test]
    fn a_rate_limit_fails_over_once_retries_are_spent_or_the_reset_is_far() {
        let fallbacks = list("codex,claude-code");
        let yes = |_: &Fallback| true;
        assert_eq!(
            decide(&facts(&fallbacks, Some(30), true), yes),
            Decision::Retry
        );
        assert_eq!(decide(&facts(&fallbacks, None, true), yes), Decision::Retry);
        assert_eq!(
            decide(&facts(&fallbacks, Some(3 * 3600), true), yes),
            Decision::Failover(0)
        );
        assert_eq!(
            decide(&facts(&fallbacks, Some(30), false), yes),
            Decision::Failover(0)
        );
        let second = Facts {
            used: 1,
            ..facts(&fallbacks, None, false)
        };
        assert_eq!(decide(&second, yes), Decision::Failover(1));
        let spent = Facts {
            used: 2,
            ..facts(&fallbacks, None, false)
        };
        assert_eq!(decide(&spent, yes), Decision::NotMine);
        let transient = Facts {
            reason: "transient",
            ..facts(&fallbacks, None, false)
        };
        assert_eq!(decide(&transient, yes), Decision::NotMine);
        assert_eq!(decide(&facts(&[], None, false), yes), Decision::NotMine);
        assert_eq!(
            decide(&facts(&fallbacks, None, false), |f| f.agent != "codex"),
            Decision::Refused(0)
        );
    }

    #[test]
    fn attempts_are_counted_and_shown() {
        assert_eq!(attempts_max(Some(1), 1), Some(4));
        assert_eq!(attempts_max(None, 2), Some(3));
        assert_eq!(attempts_max(Some(2), 0), Some(3));
        assert_eq!(attempts_max(None, 0), None);
        assert_eq!(
            attempt_line(
                3,
                Some(4),
                "codex",
                Some(("gemini", "rate_limited")),
                Some("02:40")
            ),
            "attempt 3 of 4: codex, after gemini rate_limited, resets 02:40"
        );
        assert_eq!(
            attempt_line(1, None, "gemini", None, None),
            "attempt 1: gemini"
        );
    }
}
