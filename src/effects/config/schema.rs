//! The config file's shape: every key, its type, and the checks that make a value safe to hand
//! on. Unknown keys, wrong types and unsafe shapes are errors naming file, line and column, so
//! nothing runs on a config that does not say what it seems to. Which keys a *project* file may
//! set, and how, is [`super::class`]'s decision.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::domain::adapter::ADAPTERS;
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::spec::Mode;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub defaults: Defaults,
    #[serde(default)]
    pub adapters: BTreeMap<String, AdapterConfig>,
    #[serde(default)]
    pub tmux: TmuxConfig,
    #[serde(default)]
    pub worktree: WorktreeConfig,
    #[serde(default)]
    pub monitor: MonitorConfig,
    #[serde(default)]
    pub hooks: HooksConfig,
    /// Where transitions are announced: a list of this machine's channels (`tmux`, `desktop`,
    /// `bell`, `parent`), or a mapping that also names channels beyond it (issue 53).
    pub notify: Option<NotifyFile>,
    /// Which new statuses are announced.
    pub notify_on: Option<Vec<NotifyOn>>,
    /// Other machines tasks can run on. The user's file only: a host names where code runs.
    #[serde(default)]
    pub hosts: BTreeMap<String, HostConfig>,
    /// ACP tasks (`--mode acp`).
    #[serde(default)]
    pub acp: AcpConfig,
    /// Caps on live agents: tasks past them wait in the queue.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Attempts that end for a passing reason start again, continuing the agent's session.
    pub retry: Option<RetryConfig>,
    /// Every task's sandbox (`--sandbox`), unless the submit says otherwise.
    #[serde(default)]
    pub sandbox: SandboxConfig,
    /// A check every task here gets when its submit names none (`submit --check`).
    #[serde(default)]
    pub check: CheckConfig,
}

/// `check: {run, rounds, timeout, protect}`: `run` and `protect` decide what code runs and what
/// it trusts, so from a project file they apply once it is trusted.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckConfig {
    pub run: Option<Vec<String>>,
    pub rounds: Option<u32>,
    pub timeout: Option<DurationText>,
    pub protect: Option<Vec<String>>,
}

/// `sandbox: {mode, network, read, write}`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    pub mode: Option<crate::domain::sandbox::SandboxMode>,
    pub network: Option<crate::domain::sandbox::Network>,
    /// Absolute paths (or `~/…`) shown read-only inside.
    #[serde(default)]
    pub read: Vec<String>,
    /// Absolute paths (or `~/…`) the agent may write.
    #[serde(default)]
    pub write: Vec<String>,
}

/// How many agents may run at once, user-wide: in all, and per agent kind.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    pub running: Option<u32>,
    #[serde(default)]
    pub agents: BTreeMap<String, u32>,
    /// Live agents per configured host, for `submit --host '*'` (or `a,b`) placement.
    #[serde(default)]
    pub hosts: BTreeMap<String, u32>,
    /// Task checks (`--check`) running at once on this machine.
    pub checks: Option<u32>,
}

/// The retry policy of every task that does not give its own `--retry`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Further attempts at most (default 3: a `retry:` section says the user wants them).
    #[serde(default = "default_retry_max")]
    pub max: u32,
    /// The endings retried (default: all of `rate_limited`, `transient`, `pane_disappeared`).
    pub on: Option<Vec<String>>,
    #[serde(default)]
    pub backoff: BackoffConfig,
    /// The agents a rate-limited task goes on with (`K[:MODEL]` each), when the task's submit
    /// names none (`--fallback`).
    pub fallback: Option<Vec<String>>,
    /// A reset further off than this is not waited for: the task fails over (default 10m).
    pub fallback_after: Option<DurationText>,
}

fn default_retry_max() -> u32 {
    3
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackoffConfig {
    pub first: Option<DurationText>,
    pub max: Option<DurationText>,
}

/// What an ACP task's client answers by itself when the agent asks for a permission and the
/// bypass is off: per ACP tool kind, allow, ask (the parent answers) or reject.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcpConfig {
    #[serde(default)]
    pub permissions:
        BTreeMap<crate::domain::acp::policy::ToolKind, crate::domain::acp::policy::Decision>,
}

/// A machine reached over SSH, where the same cuekit runs the tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Anything `ssh` accepts as a destination: an alias of `~/.ssh/config`, `user@host`
    /// (default: the host's own name, as an alias).
    pub ssh: Option<String>,
    /// The remote cuekit binary (default: `cuekit` on the remote PATH; `~/` is the remote home).
    pub cuekit: Option<String>,
    /// The default remote working directory for `submit --host`.
    pub cwd: Option<String>,
}

impl HostConfig {
    /// The ssh destination of the host named `name`: its `ssh`, else the name itself.
    pub fn destination(&self, name: &str) -> String {
        self.ssh.clone().unwrap_or_else(|| name.to_string())
    }
}

/// The per-server monitor's pace. The user's file only: one monitor serves every project on
/// its server.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorConfig {
    /// Time between two looks at the server.
    pub interval: Option<DurationText>,
    /// How long a child must wait on a human, with its screen unchanged, before it counts.
    pub dwell: Option<DurationText>,
}

/// Shell commands run on a task's transitions. They run code: a project file's apply only once
/// it is trusted.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    pub on_start: Option<String>,
    pub on_end: Option<String>,
    pub on_input_required: Option<String>,
    pub on_change: Option<String>,
    pub on_conflict: Option<String>,
    /// A hook still running after this is killed (default 10s).
    pub timeout: Option<DurationText>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyChannel {
    /// A message on the tmux client the task was submitted from.
    Tmux,
    /// A freedesktop notification over the D-Bus session bus.
    Desktop,
    /// A terminal bell in the pane the task was submitted from.
    Bell,
    /// One line typed into the submitting agent's pane as a new message when a task ends or
    /// waits on a human (`--wake-parent`); from the user's file only.
    Parent,
}

/// `notify:` as written: `[tmux, desktop]`, or a mapping (`local`, `channels`, `quiet_hours`,
/// `digest_at`, `public_origin`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyFile {
    Local(Vec<NotifyChannel>),
    Full(Box<NotifySettings>),
}

impl<'de> Deserialize<'de> for NotifyFile {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = serde_yaml_ng::Value::deserialize(deserializer)?;
        if value.is_sequence() {
            return serde_yaml_ng::from_value(value)
                .map(NotifyFile::Local)
                .map_err(|err| D::Error::custom(format!("notify: {err}")));
        }
        serde_yaml_ng::from_value(value)
            .map(|settings| NotifyFile::Full(Box::new(settings)))
            .map_err(|err| D::Error::custom(format!("notify: {err}")))
    }
}

impl NotifyFile {
    /// This machine's channels it names.
    pub fn local(&self) -> Option<Vec<NotifyChannel>> {
        match self {
            NotifyFile::Local(list) => Some(list.clone()),
            NotifyFile::Full(settings) => settings.local.clone(),
        }
    }

    pub fn settings(&self) -> Option<&NotifySettings> {
        match self {
            NotifyFile::Local(_) => None,
            NotifyFile::Full(settings) => Some(settings),
        }
    }
}

/// `notify:`'s mapping form. Everything but `local` is the user's own file's only.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifySettings {
    pub local: Option<Vec<NotifyChannel>>,
    /// Channels beyond this machine, by a name of the user's.
    #[serde(default)]
    pub channels: BTreeMap<String, SendChannel>,
    /// `HH:MM-HH:MM` (local time): nothing is sent then; the digest tells.
    pub quiet_hours: Option<String>,
    /// `HH:MM` (local time): the digest goes out then (at the first monitor tick or
    /// `cuekit digest --send` after it).
    pub digest_at: Option<String>,
    /// The origin `cuekit serve` is reached at from elsewhere (`https://box.example.ts.net`):
    /// a notice links to the task's page there.
    pub public_origin: Option<String>,
}

/// One outbound channel: exactly one of `webhook`, `slack`, `discord`, `ntfy`.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendChannel {
    /// A URL that gets cuekit's JSON.
    pub webhook: Option<String>,
    /// A Slack incoming webhook's URL.
    pub slack: Option<String>,
    /// A Discord webhook's URL.
    pub discord: Option<String>,
    pub ntfy: Option<NtfyChannel>,
    /// Which events (`input_required`, `input_required:<kind>`, `ended`, `check_failed`,
    /// `race_decided`, `digest`); all of them when unset.
    pub notify_on: Option<Vec<String>>,
    /// Whether the child's report (bounded, cleaned) goes with an ending.
    #[serde(default)]
    pub include_report: bool,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NtfyChannel {
    /// `https://ntfy.sh` unless set.
    pub server: Option<String>,
    pub topic: String,
    /// An access token, written here…
    pub token: Option<String>,
    /// …or the name of the variable that holds it.
    pub token_env: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotifyOn {
    Running,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
    TimedOut,
}

impl NotifyOn {
    pub fn matches(self, status: crate::domain::status::Status) -> bool {
        use crate::domain::status::Status;
        matches!(
            (self, status),
            (NotifyOn::Running, Status::Running)
                | (NotifyOn::InputRequired, Status::InputRequired)
                | (NotifyOn::Completed, Status::Completed)
                | (NotifyOn::Failed, Status::Failed)
                | (NotifyOn::Cancelled, Status::Cancelled)
                | (NotifyOn::TimedOut, Status::TimedOut)
        )
    }
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    pub agent: Option<String>,
    pub model: Option<String>,
    pub mode: Option<Mode>,
    pub timeout: Option<DurationText>,
    pub approval_mode: Option<String>,
    /// Every task in its own git worktree unless `--no-worktree`.
    pub worktree: Option<bool>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterConfig {
    pub bin: Option<String>,
    pub model: Option<String>,
    pub permissions: Option<Permissions>,
    pub approval_mode: Option<String>,
    pub steer_delay_ms: Option<u64>,
    pub env: Option<BTreeMap<String, String>>,
    /// jcode's `--provider-profile`; other agents have none.
    pub provider_profile: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TmuxConfig {
    pub socket: Option<String>,
    pub width: Option<u16>,
    pub height: Option<u16>,
    pub history_limit: Option<u32>,
}

/// Task worktrees: where they go, their branches, what they bring from the main checkout.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreeConfig {
    /// Folder of a task's worktree, with `{repo}` and `{id}` placeholders.
    pub dir: Option<String>,
    pub branch_prefix: Option<String>,
    /// Untracked files copied into a new worktree (gitignore-style patterns).
    pub copy: Option<Vec<String>>,
    /// Untracked files or folders linked into a new worktree.
    pub symlink: Option<Vec<String>>,
    /// A shell command run in the new worktree before the agent starts. It runs code: from a
    /// project file it is subject to the trust rule for code-running keys.
    pub setup: Option<String>,
}

/// `prompt` keeps the agent's approval prompts (no bypass flag) unless a task asks otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permissions {
    Prompt,
    Bypass,
}

/// A duration written as `90s`, `10m`, `1h30m` or plain seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationText(pub Duration);

impl<'de> Deserialize<'de> for DurationText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = DurationText;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration such as 90s, 10m or 1h30m, or a number of seconds")
            }

            fn visit_u64<E: serde::de::Error>(
                self,
                secs: u64,
            ) -> std::result::Result<DurationText, E> {
                Ok(DurationText(Duration::from_secs(secs)))
            }

            fn visit_str<E: serde::de::Error>(
                self,
                text: &str,
            ) -> std::result::Result<DurationText, E> {
                humantime::parse_duration(text)
                    .map(DurationText)
                    .map_err(|err| {
                        E::custom(format!(
                            "invalid duration '{text}': {err} (use e.g. 90s, 10m, 1h30m)"
                        ))
                    })
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Parses a config text; `path` is only used in messages.
pub fn parse(text: &str, path: &Path) -> Result<ConfigFile> {
    if text.trim().is_empty() {
        return Ok(ConfigFile::default());
    }
    if let Some((line, column)) =
        crate::domain::yaml_depth::too_deep(text, crate::domain::yaml_depth::MAX_DEPTH)
    {
        return Err(invalid(
            path,
            line,
            column,
            crate::domain::yaml_depth::message(),
        ));
    }
    let file: ConfigFile = serde_yaml_ng::from_str(text).map_err(|err| {
        let (line, column) = err.location().map_or((1, 1), |at| (at.line(), at.column()));
        let message = err.to_string();
        let message = message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_string();
        invalid(path, line, column, message)
    })?;
    check_host_names(&file, text, path)?;
    for kind in file.adapters.keys() {
        if !ADAPTERS.iter().any(|adapter| adapter.kind() == kind) {
            let line = line_of_key(text, "adapters:", kind);
            let known: Vec<String> = ADAPTERS.iter().map(|a| format!("`{}`", a.kind())).collect();
            return Err(invalid(
                path,
                line,
                3,
                format!(
                    "adapters: unknown adapter `{kind}`, expected one of {}",
                    known.join(", ")
                ),
            ));
        }
    }
    check_option_values(&file, text, path)?;
    check_retry_reasons(&file, text, path)?;
    check_notify(&file, text, path)?;
    Ok(file)
}

/// `notify:`'s channels: each names one service by an http(s) URL (ntfy: a server URL and a
/// plain topic), its `notify_on` words are known ones, and the times read as times.
fn check_notify(file: &ConfigFile, text: &str, path: &Path) -> Result<()> {
    use crate::domain::notice::{On, QuietHours, parse_clock};
    let Some(settings) = file.notify.as_ref().and_then(NotifyFile::settings) else {
        return Ok(());
    };
    let line = |key: &str| line_of_key(text, "notify:", key);
    let url = |u: &str| {
        (u.starts_with("https://") || u.starts_with("http://"))
            && !u.chars().any(|c| c.is_whitespace() || c.is_control())
    };
    for (name, channel) in &settings.channels {
        let fail = |why: String| {
            Err(invalid(
                path,
                line(name),
                5,
                format!("notify.channels.{name}: {why}"),
            ))
        };
        let named_ok = !name.is_empty()
            && name.len() <= 40
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !named_ok {
            return fail("a channel's name is letters, digits, `_` and `-`".into());
        }
        let urls = [&channel.webhook, &channel.slack, &channel.discord];
        let kinds =
            urls.iter().filter(|u| u.is_some()).count() + usize::from(channel.ntfy.is_some());
        if kinds != 1 {
            return fail("name exactly one of webhook, slack, discord, ntfy".into());
        }
        if urls.iter().flat_map(|u| u.as_deref()).any(|u| !url(u)) {
            return fail("the URL must start with https:// (or http://)".into());
        }
        if let Some(ntfy) = &channel.ntfy {
            let topic_ok = !ntfy.topic.is_empty()
                && ntfy.topic.len() <= 64
                && ntfy
                    .topic
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !topic_ok {
                return fail("ntfy.topic is 1 to 64 letters, digits, `_` or `-`".into());
            }
            if ntfy.server.as_deref().is_some_and(|s| !url(s)) {
                return fail("ntfy.server must start with https:// (or http://)".into());
            }
        }
        if let Some(word) = channel
            .notify_on
            .iter()
            .flatten()
            .find(|w| On::parse(w).is_none())
        {
            return fail(format!(
                "notify_on: unknown `{word}`, expected input_required, input_required:<kind>, \
                 ended, check_failed, race_decided or digest"
            ));
        }
    }
    if let Some(quiet) = &settings.quiet_hours
        && QuietHours::parse(quiet).is_none()
    {
        return Err(invalid(
            path,
            line("quiet_hours"),
            3,
            "notify.quiet_hours: `HH:MM-HH:MM`, e.g. 22:00-07:00".into(),
        ));
    }
    if let Some(at) = &settings.digest_at
        && parse_clock(at).is_none()
    {
        return Err(invalid(
            path,
            line("digest_at"),
            3,
            "notify.digest_at: `HH:MM`, e.g. 07:30".into(),
        ));
    }
    if let Some(origin) = &settings.public_origin
        && !url(origin)
    {
        return Err(invalid(
            path,
            line("public_origin"),
            3,
            "notify.public_origin: an https:// origin".into(),
        ));
    }
    Ok(())
}

/// Values that become one word of an agent's command line (a model, an approval mode, a
/// profile) or a git branch name: one starting with `-` would be read as an option there.
fn check_option_values(file: &ConfigFile, text: &str, path: &Path) -> Result<()> {
    let mut values = vec![
        ("defaults:", "model", file.defaults.model.as_deref()),
        (
            "defaults:",
            "approval_mode",
            file.defaults.approval_mode.as_deref(),
        ),
        (
            "worktree:",
            "branch_prefix",
            file.worktree.branch_prefix.as_deref(),
        ),
    ];
    for adapter in file.adapters.values() {
        values.extend([
            ("adapters:", "model", adapter.model.as_deref()),
            (
                "adapters:",
                "approval_mode",
                adapter.approval_mode.as_deref(),
            ),
            (
                "adapters:",
                "provider_profile",
                adapter.provider_profile.as_deref(),
            ),
        ]);
    }
    for (section, key, value) in values {
        let Some(value) = value else { continue };
        if let Err(err) = crate::effects::project::names::option_value(key, value) {
            return Err(invalid(
                path,
                line_of_key(text, section, key),
                1,
                format!("{}: {}", key, err.message),
            ));
        }
    }
    Ok(())
}

/// A host name is part of file names (its control socket): letters, digits, `-`, `_`, `.`.
/// A retry for an ending that is no passing fault (a cancel, a timeout, a login that is
/// missing) would run the same failure again: only the retryable reasons are accepted.
fn check_retry_reasons(file: &ConfigFile, text: &str, path: &Path) -> Result<()> {
    let Some(reasons) = file.retry.as_ref().and_then(|retry| retry.on.as_ref()) else {
        return Ok(());
    };
    for reason in reasons {
        if !crate::effects::store::schedule::RETRYABLE.contains(&reason.as_str()) {
            return Err(invalid(
                path,
                line_of_key(text, "retry:", "on"),
                1,
                format!(
                    "retry.on: '{reason}' is not retried; expected some of {}",
                    crate::effects::store::schedule::RETRYABLE.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn check_host_names(file: &ConfigFile, text: &str, path: &Path) -> Result<()> {
    for (name, host) in &file.hosts {
        let valid_name = !name.is_empty()
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        let problem = if !valid_name {
            format!("hosts: `{name}` is not a host name (letters, digits, -, _ and . only)")
        } else if let destination = host.destination(name)
            && (destination.is_empty() || destination.starts_with('-'))
        {
            format!("hosts.{name}.ssh: `{destination}` is not an ssh destination")
        } else {
            continue;
        };
        return Err(invalid(path, line_of_key(text, "hosts:", name), 3, problem));
    }
    Ok(())
}

pub(super) fn invalid(path: &Path, line: usize, column: usize, message: String) -> Error {
    Error::new(
        ErrorCode::ConfigInvalid,
        format!("{}:{line}:{column}: {message}", path.display()),
    )
    .with_hint(
        "fix the file (every key is documented in .cuekit.yaml.example) or run `cuekit doctor`",
    )
}

/// The 1-based line where `key:` is first written under `section` (e.g. `adapters:`).
pub(super) fn line_of_key(text: &str, section: &str, key: &str) -> usize {
    let adapters = text
        .lines()
        .position(|line| line.trim_start().starts_with(section))
        .unwrap_or(0);
    text.lines()
        .enumerate()
        .skip(adapters)
        .find(|(_, line)| {
            line.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map_or(adapters + 1, |(index, _)| index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<ConfigFile> {
        parse(text, Path::new("/p/.cuekit.yaml"))
    }

    fn message(text: &str) -> String {
        let err = parse_str(text).unwrap_err();
        assert_eq!(err.code, ErrorCode::ConfigInvalid);
        err.message
    }

    #[test]
    fn hosts_parse_and_bad_names_or_destinations_are_located_errors() {
        let file = parse_str(
            "hosts:\n  gpu-1:\n    ssh: me@gpu\n    cuekit: ~/.local/bin/cuekit\n    cwd: /srv\n",
        )
        .unwrap();
        let host = &file.hosts["gpu-1"];
        assert_eq!(host.ssh.as_deref(), Some("me@gpu"));
        assert_eq!(host.cuekit.as_deref(), Some("~/.local/bin/cuekit"));
        let bad_name = message("hosts:\n  ok:\n    ssh: a\n  ../x:\n    ssh: b\n");
        assert!(bad_name.contains(":4:3: hosts: `../x`"), "{bad_name}");
        let option = message("hosts:\n  h:\n    ssh: -oProxyCommand=x\n");
        assert!(option.contains("not an ssh destination"), "{option}");
        let unknown = message("hosts:\n  h:\n    ssh: a\n    port: 22\n");
        assert!(unknown.contains("unknown field `port`"), "{unknown}");
    }

    #[test]
    fn parses_every_key() {
        let file = parse_str(
            "defaults:\n  agent: gemini\n  model: flash\n  mode: batch\n  timeout: 30m\n  approval_mode: plan\n\
             adapters:\n  gemini:\n    bin: /opt/gemini\n    model: pro\n    permissions: prompt\n    approval_mode: auto_edit\n    steer_delay_ms: 150\n    env:\n      FOO: bar\n\
             tmux:\n  socket: mine\n  width: 120\n  height: 40\n  history_limit: 1000\n\
             worktree:\n  dir: /trees/{id}\n  branch_prefix: agents/\n  copy: [.env]\n  symlink: [node_modules]\n  setup: npm ci\n",
        )
        .unwrap();
        assert_eq!(file.worktree.setup.as_deref(), Some("npm ci"));
        assert_eq!(
            file.worktree.symlink,
            Some(vec!["node_modules".to_string()])
        );
        assert_eq!(
            file.defaults.timeout,
            Some(DurationText(Duration::from_secs(1800)))
        );
        assert_eq!(file.defaults.mode, Some(Mode::Batch));
        assert_eq!(
            file.adapters["gemini"].permissions,
            Some(Permissions::Prompt)
        );
        assert_eq!(file.tmux.history_limit, Some(1000));
    }

    #[test]
    fn unknown_keys_name_file_line_column_and_allowed_keys() {
        assert_eq!(
            message("defaults:\n  agent: gemini\n  modle: flash\n"),
            "/p/.cuekit.yaml:3:3: defaults: unknown field `modle`, expected one of `agent`, `model`, `mode`, `timeout`, `approval_mode`, `worktree`"
        );
        assert_eq!(
            message("tmux:\n  width: 10\ncolour: red\n"),
            "/p/.cuekit.yaml:3:1: unknown field `colour`, expected one of `defaults`, `adapters`, `tmux`, `worktree`, `monitor`, `hooks`, `notify`, `notify_on`, `hosts`, `acp`, `limits`, `retry`, `sandbox`, `check`"
        );
        assert_eq!(
            message("adapters:\n  gemini:\n    bin: g\n  gemni:\n    bin: x\n"),
            "/p/.cuekit.yaml:4:3: adapters: unknown adapter `gemni`, expected one of `gemini`, `claude-code`, `codex`, `opencode`, `pi`, `jcode`, `qwen`, `copilot`, `antigravity`, `command`"
        );
    }

    #[test]
    fn values_that_would_read_as_options_are_located_errors() {
        let model = message("defaults:\n  agent: gemini\n  model: --yolo\n");
        assert!(model.starts_with("/p/.cuekit.yaml:3:1: model:"), "{model}");
        let prefix = message("worktree:\n  branch_prefix: -x/\n");
        assert!(prefix.contains(":2:1: branch_prefix:"), "{prefix}");
        let profile = message("adapters:\n  jcode:\n    provider_profile: \"a\\nb\"\n");
        assert!(profile.contains("provider_profile"), "{profile}");
    }

    #[test]
    fn wrong_types_are_errors_with_a_position() {
        let width = message("tmux:\n  width: wide\n");
        assert!(
            width.starts_with("/p/.cuekit.yaml:2:10: tmux.width: invalid type: string \"wide\""),
            "{width}"
        );
        let mode = message("defaults:\n  mode: sideways\n");
        assert!(
            mode.starts_with("/p/.cuekit.yaml:2:9: defaults.mode: unknown variant `sideways`"),
            "{mode}"
        );
        let timeout = message("defaults:\n  timeout: soon\n");
        assert!(timeout.contains("invalid duration 'soon'"), "{timeout}");
        let permissions = message("adapters:\n  gemini:\n    permissions: ask\n");
        assert!(
            permissions.contains("unknown variant `ask`, expected `prompt` or `bypass`"),
            "{permissions}"
        );
        let yaml = message("defaults:\n\tagent: x\n");
        assert!(yaml.starts_with("/p/.cuekit.yaml:"), "{yaml}");
    }
}
