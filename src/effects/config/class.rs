//! Trust classes: which keys a project file may set, and how. A `.cuekit.yaml` arrives with
//! whatever repository was cloned, so every key belongs to one class, decided here once, and a
//! project file's layer is sifted by this table before any getter sees it (see [`sift`]). A
//! key the table does not know is withheld as if it ran code: a new key must be classed to
//! work at all (the table is checked against the documented example in the tests).
//!
//! The same rule binds an MCP argument, a team spec and a project role: each may make a policy
//! stricter than the user's, never looser ([`within`]).

use serde::Serialize;
use serde_yaml_ng::{Mapping, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyClass {
    /// Names a program, its environment or a shell command: a project file's value applies
    /// only once the file is trusted (`cuekit trust`); until then a submit that needs it is
    /// refused.
    RunsCode,
    /// Decides where cuekit creates files or refs: a project file's value applies where it is
    /// proven harmless (the rule says how), else only once the file is trusted.
    PlacesFiles,
    /// Concerns every project of the user's, or the user's own login: only the user's file
    /// sets it; a project file's value is ignored, with a warning.
    UserOnly,
    /// A policy: a project file may make it stricter than the user's, never looser; a looser
    /// value is ignored, with a warning.
    TightenOnly,
    /// A value of a checked shape that changes nothing beyond the task itself.
    Plain,
}

impl KeyClass {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyClass::RunsCode => "runs code",
            KeyClass::PlacesFiles => "places files",
            KeyClass::UserOnly => "user only",
            KeyClass::TightenOnly => "tighten only",
            KeyClass::Plain => "plain",
        }
    }
}

/// One key (`*` stands for any one name, e.g. an adapter's kind), its class and the rule.
#[derive(Debug)]
pub struct KeyRule {
    pub key: &'static str,
    pub class: KeyClass,
    pub rule: &'static str,
    /// The proof that a value is harmless without trust. For [`KeyClass::PlacesFiles`], `None`
    /// means every value is (the checks that make it so happen where the value is used); for
    /// [`KeyClass::RunsCode`], that no value is.
    proven: Option<fn(&Value) -> bool>,
}

const fn key(key: &'static str, class: KeyClass, rule: &'static str) -> KeyRule {
    KeyRule {
        key,
        class,
        rule,
        proven: None,
    }
}

/// Every key of the config file. `docs/guides/trust-and-faults.md` prints this table.
pub const KEYS: &[KeyRule] = &[
    KeyRule {
        key: "defaults.agent",
        class: KeyClass::RunsCode,
        rule: "a known adapter; the `command` agent runs the task's own words, so it needs a trusted project file",
        proven: Some(not_the_command_agent),
    },
    key(
        "defaults.model",
        KeyClass::Plain,
        "one argument word; never starts with `-`",
    ),
    key("defaults.mode", KeyClass::Plain, "interactive or batch"),
    key("defaults.timeout", KeyClass::Plain, "a duration"),
    key(
        "defaults.approval_mode",
        KeyClass::TightenOnly,
        "no more autonomy than the user's policy (plan < default < auto_edit < yolo)",
    ),
    key(
        "defaults.worktree",
        KeyClass::PlacesFiles,
        "harmless by construction: the worktree's folder, branch, submodules and copied files are each proven",
    ),
    key(
        "adapters.*.bin",
        KeyClass::RunsCode,
        "trusted project file only",
    ),
    key(
        "adapters.*.env",
        KeyClass::RunsCode,
        "trusted project file only (PATH, LD_PRELOAD… change what runs)",
    ),
    key(
        "adapters.*.model",
        KeyClass::Plain,
        "one argument word; never starts with `-`",
    ),
    key(
        "adapters.*.permissions",
        KeyClass::TightenOnly,
        "prompt is stricter than bypass: a project may turn the bypass off, never on",
    ),
    key(
        "adapters.*.approval_mode",
        KeyClass::TightenOnly,
        "no more autonomy than the user's policy",
    ),
    key("adapters.*.steer_delay_ms", KeyClass::Plain, "milliseconds"),
    key(
        "adapters.*.provider_profile",
        KeyClass::Plain,
        "one argument word; never starts with `-`",
    ),
    key(
        "tmux.socket",
        KeyClass::UserOnly,
        "which tmux server runs every task (a project could name your own)",
    ),
    key("tmux.width", KeyClass::Plain, "columns"),
    key("tmux.height", KeyClass::Plain, "rows"),
    key("tmux.history_limit", KeyClass::Plain, "lines"),
    KeyRule {
        key: "worktree.dir",
        class: KeyClass::PlacesFiles,
        rule: "proven under `{repo}.worktrees/` (no `..`), else trusted project file only",
        proven: Some(under_default_worktree_root),
    },
    key(
        "worktree.branch_prefix",
        KeyClass::PlacesFiles,
        "harmless by construction: a new branch `<prefix><id>` git accepts, never an existing one",
    ),
    key(
        "worktree.copy",
        KeyClass::Plain,
        "untracked files of the main checkout, copied only to paths proven free of links",
    ),
    key(
        "worktree.symlink",
        KeyClass::Plain,
        "untracked files of the main checkout, linked only at paths proven free of links",
    ),
    key(
        "worktree.setup",
        KeyClass::RunsCode,
        "trusted project file only",
    ),
    key(
        "monitor.interval",
        KeyClass::UserOnly,
        "one monitor serves every project on its server",
    ),
    key(
        "monitor.dwell",
        KeyClass::UserOnly,
        "one monitor serves every project on its server",
    ),
    key(
        "hooks.on_start",
        KeyClass::RunsCode,
        "trusted project file only",
    ),
    key(
        "hooks.on_end",
        KeyClass::RunsCode,
        "trusted project file only",
    ),
    key(
        "hooks.on_input_required",
        KeyClass::RunsCode,
        "trusted project file only",
    ),
    key(
        "hooks.on_change",
        KeyClass::RunsCode,
        "trusted project file only",
    ),
    key(
        "hooks.on_conflict",
        KeyClass::RunsCode,
        "trusted project file only",
    ),
    key("hooks.timeout", KeyClass::Plain, "a duration"),
    key("check.run", KeyClass::RunsCode, "trusted project file only"),
    key("check.rounds", KeyClass::Plain, "a count of fix rounds"),
    key("check.timeout", KeyClass::Plain, "a duration"),
    key(
        "check.protect",
        KeyClass::RunsCode,
        "trusted project file only: it says what the child's check trusts",
    ),
    // `notify: [tmux]` (the list form) has no rule of its own: a list is kept whole, as
    // `notify.local` is.
    key(
        "notify.local",
        KeyClass::Plain,
        "channels to the submitter only: tmux, bell, desktop; parent from the user's file only",
    ),
    key(
        "notify.channels",
        KeyClass::UserOnly,
        "webhook, Slack, Discord, ntfy: a project file could send your tasks to its server",
    ),
    key(
        "notify.quiet_hours",
        KeyClass::UserOnly,
        "when your channels stay quiet",
    ),
    key(
        "notify.digest_at",
        KeyClass::UserOnly,
        "when your digest goes out",
    ),
    key(
        "notify.public_origin",
        KeyClass::UserOnly,
        "where your notices' links lead",
    ),
    key("notify_on", KeyClass::Plain, "statuses"),
    key(
        "hosts",
        KeyClass::UserOnly,
        "where code runs and with which login",
    ),
    key(
        "acp.permissions",
        KeyClass::TightenOnly,
        "per tool kind, reject < ask < allow: a project may make a kind stricter than yours (ask where you set none), never looser",
    ),
    key(
        "limits.running",
        KeyClass::TightenOnly,
        "a project may lower your cap for its own tasks, never raise it",
    ),
    key(
        "limits.agents.*",
        KeyClass::TightenOnly,
        "a project may lower your cap per agent for its own tasks, never raise it",
    ),
    key(
        "limits.hosts.*",
        KeyClass::TightenOnly,
        "a project may lower your cap per host for its own tasks, never raise it",
    ),
    key(
        "limits.checks",
        KeyClass::UserOnly,
        "one cap for the checks of every project on this machine",
    ),
    key(
        "retry",
        KeyClass::UserOnly,
        "each attempt spends your quota: only your own file retries tasks by default; its `fallback` picks agents that run with your credentials and bypass, so only yours fails a task over",
    ),
    key(
        "sandbox.mode",
        KeyClass::TightenOnly,
        "none < agent < bwrap: a project may sandbox its tasks where you do not, never unsandbox them",
    ),
    key(
        "sandbox.network",
        KeyClass::TightenOnly,
        "on < off: a project may take a sandboxed task's network away, never give it back",
    ),
    key(
        "sandbox.read",
        KeyClass::UserOnly,
        "what of yours a sandboxed agent may read",
    ),
    key(
        "sandbox.write",
        KeyClass::UserOnly,
        "what of yours a sandboxed agent may write",
    ),
];

/// A value the project file sets that does not apply, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Withheld {
    pub key: String,
    pub class: KeyClass,
    pub why: String,
}

impl Withheld {
    /// A value kept out because the file is not trusted (rather than by its class alone):
    /// trusting the file would make it apply.
    pub fn needs_trust(&self) -> bool {
        matches!(self.class, KeyClass::RunsCode | KeyClass::PlacesFiles)
    }
}

/// The rule for a dotted key path, `*` matching any one name.
pub fn rule_for(path: &[&str]) -> Option<&'static KeyRule> {
    KEYS.iter().find(|rule| matches(rule.key, path))
}

fn matches(pattern: &str, path: &[&str]) -> bool {
    let parts: Vec<&str> = pattern.split('.').collect();
    parts.len() == path.len()
        && parts
            .iter()
            .zip(path)
            .all(|(part, name)| *part == "*" || part == name)
}

/// Whether some rule lies below `path` (so the walk goes on into it).
fn has_rules_below(path: &[&str]) -> bool {
    KEYS.iter().any(|rule| {
        let parts: Vec<&str> = rule.key.split('.').collect();
        parts.len() > path.len()
            && parts
                .iter()
                .zip(path)
                .all(|(part, name)| *part == "*" || part == name)
    })
}

/// A project file's values as they may apply: what its class keeps out is removed (and named
/// in the second half). `trusted` says whether the file's content is the one the user trusted.
pub fn sift(mut value: Value, trusted: bool) -> (Value, Vec<Withheld>) {
    let mut withheld = Vec::new();
    if let Value::Mapping(mapping) = &mut value {
        sift_mapping(mapping, &mut Vec::new(), trusted, &mut withheld);
    }
    (value, withheld)
}

fn sift_mapping(
    mapping: &mut Mapping,
    path: &mut Vec<String>,
    trusted: bool,
    withheld: &mut Vec<Withheld>,
) {
    let names: Vec<Value> = mapping.keys().cloned().collect();
    for name in names {
        let text = match &name {
            Value::String(text) => text.clone(),
            other => serde_yaml_ng::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_string(),
        };
        path.push(text);
        let here: Vec<&str> = path.iter().map(String::as_str).collect();
        let keep = match rule_for(&here) {
            Some(rule) => {
                let (keep, why) = decide(rule, &mapping[&name], trusted);
                if !keep {
                    name_withheld(&here, &mapping[&name], rule.class, why, withheld);
                }
                keep
            }
            None if has_rules_below(&here) => {
                if let Some(Value::Mapping(inner)) = mapping.get_mut(&name) {
                    sift_mapping(inner, path, trusted, withheld);
                }
                true
            }
            // Unclassified: treated as the strictest class, so a key added to the file's
            // schema but not to the table never applies from a project unseen.
            None => {
                let why = "cuekit has no trust rule for this key".to_string();
                name_withheld(&here, &mapping[&name], KeyClass::RunsCode, why, withheld);
                false
            }
        };
        if !keep {
            mapping.remove(&name);
        }
        path.pop();
    }
}

fn decide(rule: &KeyRule, value: &Value, trusted: bool) -> (bool, String) {
    match rule.class {
        KeyClass::Plain | KeyClass::TightenOnly => (true, String::new()),
        KeyClass::UserOnly => (
            false,
            format!(
                "{}: only your own file (~/.config/cuekit/config.yaml) sets it",
                rule.rule
            ),
        ),
        KeyClass::RunsCode if trusted => (true, String::new()),
        KeyClass::RunsCode => match rule.proven {
            Some(proof) if proof(value) => (true, String::new()),
            _ => (
                false,
                "it runs code, and the file is not trusted".to_string(),
            ),
        },
        KeyClass::PlacesFiles => match rule.proven {
            None => (true, String::new()),
            Some(_) if trusted => (true, String::new()),
            Some(proof) if proof(value) => (true, String::new()),
            Some(_) => (false, format!("not {}; the file is not trusted", rule.rule)),
        },
    }
}

/// A withheld map (an environment, the hosts) is named entry by entry.
fn name_withheld(
    path: &[&str],
    value: &Value,
    class: KeyClass,
    why: String,
    withheld: &mut Vec<Withheld>,
) {
    let base = path.join(".");
    match value {
        Value::Mapping(entries) if !entries.is_empty() => {
            for name in entries.keys() {
                let name = name.as_str().map_or_else(
                    || {
                        serde_yaml_ng::to_string(name)
                            .unwrap_or_default()
                            .trim()
                            .to_string()
                    },
                    str::to_string,
                );
                withheld.push(Withheld {
                    key: format!("{base}.{name}"),
                    class,
                    why: why.clone(),
                });
            }
        }
        _ => withheld.push(Withheld {
            key: base,
            class,
            why,
        }),
    }
}

/// `defaults.agent` names one of the agents the user installed, except `command`: that one runs
/// the task's own words, which a cloned repository would then choose (`make` with its own
/// Makefile).
fn not_the_command_agent(value: &Value) -> bool {
    value.as_str().is_some_and(|agent| agent != "command")
}

/// `worktree.dir` under the default's own root: the text starts `{repo}.worktrees/` and no
/// part of it climbs out (`..`). Filled in, it can only name a folder beside the repository
/// that cuekit made for its worktrees.
fn under_default_worktree_root(value: &Value) -> bool {
    let Some(template) = value.as_str() else {
        return false;
    };
    template
        .strip_prefix("{repo}.worktrees/")
        .is_some_and(|rest| {
            !rest.is_empty() && !rest.starts_with('/') && !rest.split('/').any(|part| part == "..")
        })
}

/// How much an agent may do without asking. The order is strictness: each is stricter than
/// the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Autonomy {
    /// Plans, reads; changes nothing (`plan`, Claude's `dontAsk`).
    ReadOnly,
    /// Asks before each change (`default`, `permissions: prompt`).
    Ask,
    /// Edits files unasked, asks before running commands.
    AutoEdit,
    /// Does anything unasked (`yolo`, the bypass flag).
    Bypass,
}

impl Autonomy {
    /// An approval mode's autonomy, across the agents that have them. A mode this table does not
    /// know counts as the loosest, so it can never pass for a stricter one.
    pub fn of_approval_mode(mode: &str) -> Autonomy {
        match mode {
            "plan" | "dontAsk" => Autonomy::ReadOnly,
            "default" => Autonomy::Ask,
            "auto_edit" | "auto-edit" | "autoEdit" | "acceptEdits" => Autonomy::AutoEdit,
            _ => Autonomy::Bypass,
        }
    }

    pub fn of_bypass(bypass: bool) -> Autonomy {
        if bypass {
            Autonomy::Bypass
        } else {
            Autonomy::Ask
        }
    }
}

/// The one comparison of the tighten-only class: `asked` applies when it is no looser than
/// `allowed`. Each policy's type orders its values by strictness, stricter first (autonomy
/// levels; for a switch, off before on; for a limit, the smaller number).
pub fn within<T: Ord>(asked: T, allowed: T) -> bool {
    asked <= allowed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sifted(text: &str, trusted: bool) -> (Value, Vec<String>) {
        let (value, withheld) = sift(serde_yaml_ng::from_str(text).unwrap(), trusted);
        (value, withheld.into_iter().map(|w| w.key).collect())
    }

    #[test]
    fn an_untrusted_file_keeps_only_what_its_classes_allow() {
        let text = "defaults:\n  agent: command\n  model: flash\n  worktree: true\n\
                    adapters:\n  gemini:\n    bin: /x\n    env:\n      A: a\n      B: b\n    permissions: prompt\n\
                    tmux:\n  socket: default\n  width: 120\n\
                    worktree:\n  dir: \"{id}/../../.config/git\"\n  setup: make\n\
                    monitor:\n  interval: 1s\n\
                    hooks:\n  on_end: rm -rf ~\n  timeout: 5s\n\
                    hosts:\n  h:\n    ssh: x\n";
        let (value, withheld) = sifted(text, false);
        assert_eq!(
            withheld,
            [
                "defaults.agent",
                "adapters.gemini.bin",
                "adapters.gemini.env.A",
                "adapters.gemini.env.B",
                "tmux.socket",
                "worktree.dir",
                "worktree.setup",
                "monitor.interval",
                "hooks.on_end",
                "hosts.h",
            ]
        );
        let kept = serde_yaml_ng::to_string(&value).unwrap();
        for survivor in [
            "flash",
            "worktree: true",
            "prompt",
            "width: 120",
            "timeout: 5s",
        ] {
            assert!(kept.contains(survivor), "{survivor} in {kept}");
        }
        // Trusted, only the user-only keys stay out.
        let (_, withheld) = sifted(text, true);
        assert_eq!(withheld, ["tmux.socket", "monitor.interval", "hosts.h"]);
    }

    #[test]
    fn a_worktree_dir_is_proven_under_the_default_root() {
        let proven = |text: &str| under_default_worktree_root(&Value::String(text.into()));
        assert!(proven("{repo}.worktrees/{id}"));
        assert!(proven("{repo}.worktrees/agents/{id}"));
        for escaping in [
            "{id}/../../.config/git",
            "{repo}.worktrees/../{id}",
            "{repo}.worktrees//etc/{id}",
            "/tmp/{id}",
            "{repo}/{id}",
            "{repo}.worktrees/",
        ] {
            assert!(!proven(escaping), "{escaping}");
        }
    }

    #[test]
    fn an_unclassified_key_is_withheld_as_if_it_ran_code() {
        let value: Value = serde_yaml_ng::from_str("defaults:\n  colour: red\n").unwrap();
        let (_, withheld) = sift(value, true);
        assert_eq!(withheld[0].key, "defaults.colour");
        assert_eq!(withheld[0].class, KeyClass::RunsCode);
    }

    #[test]
    fn autonomy_is_ordered_by_strictness() {
        use Autonomy::*;
        assert!(within(ReadOnly, Ask) && within(Ask, Ask) && !within(Bypass, AutoEdit));
        assert_eq!(Autonomy::of_approval_mode("plan"), ReadOnly);
        assert_eq!(Autonomy::of_approval_mode("auto-edit"), AutoEdit);
        assert_eq!(Autonomy::of_approval_mode("yolo"), Bypass);
        assert_eq!(Autonomy::of_approval_mode("something-new"), Bypass);
        assert_eq!(Autonomy::of_bypass(false), Ask);
        // The same rule for a switch (off before on) and a limit (the smaller number).
        assert!(within(false, true) && !within(true, false));
        assert!(within(2, 4) && !within(5, 4));
    }

    #[test]
    fn the_trust_guide_tables_every_key_with_its_class_and_rule() {
        let guide = include_str!("../../../docs/guides/trust-and-faults.md");
        for rule in KEYS {
            let row = format!(
                "| `{}` | {} | {} |",
                rule.key,
                rule.class.as_str(),
                rule.rule
            );
            assert!(guide.contains(&row), "the guide lacks the row {row}");
        }
    }

    /// A file setting every key there is (it parses, so each is real).
    const EVERY_KEY: &str = "defaults:\n  agent: gemini\n  model: m\n  mode: batch\n  timeout: 1m\n  approval_mode: plan\n  worktree: true\n\
        adapters:\n  gemini:\n    bin: g\n    model: m\n    permissions: prompt\n    approval_mode: plan\n    steer_delay_ms: 1\n    env:\n      A: b\n    provider_profile: p\n\
        tmux:\n  socket: s\n  width: 1\n  height: 1\n  history_limit: 1\n\
        worktree:\n  dir: d/{id}\n  branch_prefix: p/\n  copy: [a]\n  symlink: [b]\n  setup: s\n\
        monitor:\n  interval: 1s\n  dwell: 1s\n\
        hooks:\n  on_start: a\n  on_end: b\n  on_input_required: c\n  on_change: d\n  on_conflict: e\n  timeout: 1s\n\
        notify:\n  local: [tmux]\n  channels:\n    c:\n      webhook: https://x\n  quiet_hours: 22:00-07:00\n  digest_at: '07:30'\n  public_origin: https://x\nnotify_on: [failed]\nhosts:\n  h:\n    ssh: x\nacp:\n  permissions:\n    read: allow\n\
        limits:\n  running: 2\n  agents:\n    gemini: 1\n  hosts:\n    h: 1\n  checks: 1\n\
        retry:\n  max: 1\n  on: [rate_limited]\n  backoff:\n    first: 1s\n    max: 2s\n\
        sandbox:\n  mode: bwrap\n  network: off\n  read: [~/r]\n  write: [/w]\n\
        check:\n  run: [make test]\n  rounds: 1\n  timeout: 1m\n  protect: [tests/**]\n";

    #[test]
    fn every_key_has_a_class_and_every_class_entry_is_a_key() {
        super::super::schema::parse(EVERY_KEY, std::path::Path::new("/p")).unwrap();
        let value: Value = serde_yaml_ng::from_str(EVERY_KEY).unwrap();
        let mut keys = Vec::new();
        collect_keys(&value, &mut Vec::new(), &mut keys);
        for path in &keys {
            let parts: Vec<&str> = path.split('.').collect();
            assert!(rule_for(&parts).is_some(), "{path} has no trust class");
        }
        for rule in KEYS {
            assert!(
                keys.iter()
                    .any(|path| matches(rule.key, &path.split('.').collect::<Vec<_>>())),
                "{} is classed but is no key",
                rule.key
            );
        }
    }

    /// The keys down to the classed ones (a map under `env` or `hosts` is one key).
    fn collect_keys(value: &Value, path: &mut Vec<String>, out: &mut Vec<String>) {
        let Value::Mapping(mapping) = value else {
            return;
        };
        for (name, inner) in mapping {
            path.push(name.as_str().unwrap().to_string());
            let here: Vec<&str> = path.iter().map(String::as_str).collect();
            if rule_for(&here).is_some() || !has_rules_below(&here) {
                out.push(path.join("."));
            } else {
                collect_keys(inner, path, out);
            }
            path.pop();
        }
    }
}
