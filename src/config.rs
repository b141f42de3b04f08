//! Configuration: `.cuekit.yaml` (found by walking up from the working directory) over a user
//! file (`~/.config/cuekit/config.yaml`) over built-in defaults; a command-line flag or
//! environment variable beats them all. Unknown keys and wrong types are errors that name the
//! file, line and column, so nothing runs on a config that does not say what it seems to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::adapter::ADAPTERS;
use crate::error::{Error, ErrorCode, Result};
use crate::spec::Mode;
use crate::trust::TrustState;

pub const PROJECT_FILE: &str = ".cuekit.yaml";
const USER_FILE: &str = "config.yaml";

#[derive(Debug, Default, Deserialize)]
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
    /// Where transitions are announced: `tmux`, `desktop`, `bell`.
    pub notify: Option<Vec<NotifyChannel>>,
    /// Which new statuses are announced.
    pub notify_on: Option<Vec<NotifyOn>>,
    /// Other machines tasks can run on. The user's file only: a host names where code runs.
    #[serde(default)]
    pub hosts: BTreeMap<String, HostConfig>,
}

/// A machine reached over SSH, where the same cuekit runs the tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Anything `ssh` accepts as a destination: an alias of `~/.ssh/config`, `user@host`.
    pub ssh: String,
    /// The remote cuekit binary (default: `cuekit` on the remote PATH; `~/` is the remote home).
    pub cuekit: Option<String>,
    /// The default remote working directory for `submit --host`.
    pub cwd: Option<String>,
}

/// The per-server monitor's pace. Read from the user's file only: one monitor serves every
/// project on its server.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorConfig {
    /// Time between two looks at the server.
    pub interval: Option<DurationText>,
    /// How long a child must wait on a human, with its screen unchanged, before it counts.
    pub dwell: Option<DurationText>,
}

/// Shell commands run on a task's transitions. They run code: a project file's apply only once
/// it is trusted.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    pub on_start: Option<String>,
    pub on_end: Option<String>,
    pub on_input_required: Option<String>,
    pub on_change: Option<String>,
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
    pub fn matches(self, status: crate::status::Status) -> bool {
        use crate::status::Status;
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

/// The hook commands that apply to a task, each with the file it came from.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    pub on_start: Option<Setting<String>>,
    pub on_end: Option<Setting<String>>,
    pub on_input_required: Option<Setting<String>>,
    pub on_change: Option<Setting<String>>,
    pub timeout: Duration,
}

#[derive(Debug, Default, Deserialize)]
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

#[derive(Debug, Default, Deserialize)]
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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TmuxConfig {
    pub socket: Option<String>,
    pub width: Option<u16>,
    pub height: Option<u16>,
    pub history_limit: Option<u32>,
}

/// Task worktrees: where they go, their branches, what they bring from the main checkout.
#[derive(Debug, Default, Deserialize)]
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

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum Source {
    Flag,
    Env,
    Project(PathBuf),
    User(PathBuf),
    BuiltIn,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag => write!(f, "command line"),
            Source::Env => write!(f, "environment"),
            Source::Project(path) | Source::User(path) => write!(f, "{}", path.display()),
            Source::BuiltIn => write!(f, "built-in"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting<T> {
    pub value: T,
    pub source: Source,
}

/// The config files that apply to one working directory, most specific first.
#[derive(Debug, Default)]
pub struct Config {
    layers: Vec<(Source, ConfigFile)>,
    /// The project file's trust (see [`crate::trust`]); the user's own file is always trusted.
    project_trust: Option<(PathBuf, TrustState)>,
}

impl Config {
    /// Loads the project file above `cwd` and the user file; a broken file is an error.
    pub fn load(cwd: &Path) -> Result<Config> {
        let mut layers = Vec::new();
        let mut project_trust = None;
        if let Some(path) = project_file(cwd) {
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            // Trust is judged on the very bytes that are parsed.
            let bytes = std::fs::read(&path).map_err(|err| Error::io("read", &path, err))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| invalid(&path, 1, 1, "the file is not valid UTF-8".to_string()))?;
            let file = parse(&text, &path)?;
            refuse_project_hosts(&file, &text, &path)?;
            layers.push((Source::Project(path.clone()), file));
            project_trust = Some((path.clone(), crate::trust::state(&path, text.as_bytes())));
        }
        if let Some(path) = user_file().filter(|path| path.is_file()) {
            layers.push((Source::User(path.clone()), parse_file(&path)?));
        }
        Ok(Config {
            layers,
            project_trust,
        })
    }

    /// The project file and whether it is trusted, if there is one.
    pub fn project_trust(&self) -> Option<(&Path, TrustState)> {
        self.project_trust
            .as_ref()
            .map(|(path, state)| (path.as_path(), *state))
    }

    fn project_is_trusted(&self) -> bool {
        self.project_trust
            .as_ref()
            .is_none_or(|(_, state)| *state == TrustState::Trusted)
    }

    /// Layers whose code-running keys apply: an untrusted project file's are left out.
    fn code_layers(&self) -> impl DoubleEndedIterator<Item = &(Source, ConfigFile)> {
        let trusted = self.project_is_trusted();
        self.layers
            .iter()
            .filter(move |(source, _)| trusted || !matches!(source, Source::Project(_)))
    }

    /// The code-running keys for agent `kind` that an untrusted project file sets (and that are
    /// therefore not used). A submit with any of them is refused rather than run differently
    /// from what the file says.
    pub fn untrusted_code_keys(&self, kind: &str) -> Vec<String> {
        if self.project_is_trusted() {
            return Vec::new();
        }
        let mut keys = Vec::new();
        for (source, file) in &self.layers {
            if !matches!(source, Source::Project(_)) {
                continue;
            }
            if let Some(adapter) = file.adapters.get(kind) {
                if adapter.bin.is_some() {
                    keys.push(format!("adapters.{kind}.bin"));
                }
                for name in adapter.env.iter().flat_map(|env| env.keys()) {
                    keys.push(format!("adapters.{kind}.env.{name}"));
                }
            }
            let hooks = &file.hooks;
            for (name, command) in [
                ("on_start", &hooks.on_start),
                ("on_end", &hooks.on_end),
                ("on_input_required", &hooks.on_input_required),
                ("on_change", &hooks.on_change),
            ] {
                if command.is_some() {
                    keys.push(format!("hooks.{name}"));
                }
            }
        }
        keys
    }

    /// `worktree.setup` when an untrusted project file sets it (and it is therefore not used).
    /// Apart from the adapter keys: it matters only to tasks that run in a worktree.
    pub fn untrusted_setup_key(&self) -> Option<String> {
        let set = self.layers.iter().any(|(source, file)| {
            matches!(source, Source::Project(_)) && file.worktree.setup.is_some()
        });
        (set && !self.project_is_trusted()).then(|| "worktree.setup".to_string())
    }

    /// The error a `--worktree` submit gets when the project file's `worktree.setup` is not
    /// trusted.
    pub fn refuse_untrusted_setup(&self) -> Result<()> {
        self.refuse_keys(self.untrusted_setup_key().into_iter().collect())
    }

    /// The error a submit gets when the project file's code-running keys are not trusted.
    pub fn refuse_untrusted(&self, kind: &str) -> Result<()> {
        self.refuse_keys(self.untrusted_code_keys(kind))
    }

    fn refuse_keys(&self, keys: Vec<String>) -> Result<()> {
        let Some((path, state)) = self.project_trust().filter(|_| !keys.is_empty()) else {
            return Ok(());
        };
        Err(Error::new(
            ErrorCode::ConfigUntrusted,
            format!(
                "{} is {} and sets keys that run code: {}",
                path.display(),
                state.as_str(),
                keys.join(", ")
            ),
        )
        .with_hint(format!(
            "read the file; if you trust it, run `cuekit trust {}` (only you can: MCP cannot)",
            crate::launch::single_quote(&path.to_string_lossy()).unwrap_or_default()
        )))
    }

    pub fn files(&self) -> Vec<&Source> {
        self.layers.iter().map(|(source, _)| source).collect()
    }

    /// The first layer that sets a value.
    fn pick<T>(&self, get: impl Fn(&ConfigFile) -> Option<T>) -> Option<Setting<T>> {
        self.layers.iter().find_map(|(source, file)| {
            get(file).map(|value| Setting {
                value,
                source: source.clone(),
            })
        })
    }

    /// An adapter setting, where `adapters.<kind>.X` beats `defaults.X` within one file.
    fn pick_adapter<T>(
        &self,
        kind: &str,
        adapter: impl Fn(&AdapterConfig) -> Option<T>,
        defaults: impl Fn(&Defaults) -> Option<T>,
    ) -> Option<Setting<T>> {
        self.pick(|file| {
            file.adapters
                .get(kind)
                .and_then(&adapter)
                .or_else(|| defaults(&file.defaults))
        })
    }

    pub fn agent(&self) -> Setting<String> {
        self.pick(|f| f.defaults.agent.clone())
            .unwrap_or_else(|| built_in(crate::adapter::ADAPTERS[0].kind().to_string()))
    }

    pub fn model(&self, kind: &str) -> Option<Setting<String>> {
        self.pick_adapter(kind, |a| a.model.clone(), |d| d.model.clone())
    }

    pub fn mode(&self) -> Option<Setting<Mode>> {
        self.pick(|f| f.defaults.mode)
    }

    pub fn timeout(&self) -> Option<Setting<Duration>> {
        self.pick(|f| f.defaults.timeout.map(|t| t.0))
    }

    pub fn approval_mode(&self, kind: &str) -> Option<Setting<String>> {
        self.pick_adapter(
            kind,
            |a| a.approval_mode.clone(),
            |d| d.approval_mode.clone(),
        )
    }

    pub fn permissions(&self, kind: &str) -> Option<Setting<Permissions>> {
        self.pick(|f| f.adapters.get(kind).and_then(|a| a.permissions))
    }

    pub fn provider_profile(&self, kind: &str) -> Option<Setting<String>> {
        self.pick(|f| {
            f.adapters
                .get(kind)
                .and_then(|a| a.provider_profile.clone())
        })
    }

    /// The agent's binary: runs code, so an untrusted project file's is not used.
    pub fn bin(&self, kind: &str) -> Option<Setting<String>> {
        self.code_layers().find_map(|(source, file)| {
            Some(Setting {
                value: file.adapters.get(kind)?.bin.clone()?,
                source: source.clone(),
            })
        })
    }

    pub fn steer_delay(&self, kind: &str) -> Option<Setting<Duration>> {
        self.pick(|f| {
            f.adapters
                .get(kind)
                .and_then(|a| a.steer_delay_ms)
                .map(Duration::from_millis)
        })
    }

    /// Extra environment for the agent's pane; files merge, a nearer file winning per variable.
    /// It can change what runs (`PATH`, `LD_PRELOAD`), so an untrusted project file's is not used.
    pub fn env(&self, kind: &str) -> BTreeMap<String, Setting<String>> {
        let mut merged = BTreeMap::new();
        for (source, file) in self.code_layers().rev() {
            for (name, value) in file
                .adapters
                .get(kind)
                .and_then(|a| a.env.as_ref())
                .into_iter()
                .flatten()
            {
                merged.insert(
                    name.clone(),
                    Setting {
                        value: value.clone(),
                        source: source.clone(),
                    },
                );
            }
        }
        merged
    }

    /// The tmux server: `CUEKIT_TMUX_SOCKET`, then the files, then cuekit's private default.
    pub fn socket(&self) -> Setting<String> {
        match std::env::var(crate::tmux::SOCKET_ENV) {
            Ok(value) if !value.is_empty() => Setting {
                value,
                source: Source::Env,
            },
            _ => self
                .pick(|f| f.tmux.socket.clone())
                .unwrap_or_else(|| built_in(crate::tmux::DEFAULT_SOCKET.to_string())),
        }
    }

    pub fn worktree_default(&self) -> Option<Setting<bool>> {
        self.pick(|f| f.defaults.worktree)
    }

    pub fn worktree_dir(&self) -> Setting<String> {
        self.pick(|f| f.worktree.dir.clone())
            .unwrap_or_else(|| built_in(crate::git::plan::DEFAULT_DIR.to_string()))
    }

    pub fn branch_prefix(&self) -> Setting<String> {
        self.pick(|f| f.worktree.branch_prefix.clone())
            .unwrap_or_else(|| built_in(crate::git::plan::DEFAULT_BRANCH_PREFIX.to_string()))
    }

    pub fn worktree_copy(&self) -> Option<Setting<Vec<String>>> {
        self.pick(|f| f.worktree.copy.clone())
    }

    pub fn worktree_symlink(&self) -> Option<Setting<Vec<String>>> {
        self.pick(|f| f.worktree.symlink.clone())
    }

    /// Runs code: an untrusted project file's is not used (see [`Config::refuse_untrusted_setup`]).
    pub fn worktree_setup(&self) -> Option<Setting<String>> {
        self.code_layers().find_map(|(source, file)| {
            Some(Setting {
                value: file.worktree.setup.clone()?,
                source: source.clone(),
            })
        })
    }

    /// The hook commands: they run code, so an untrusted project file's are not used.
    pub fn hooks(&self) -> Hooks {
        let pick = |get: fn(&HooksConfig) -> &Option<String>| {
            self.code_layers().find_map(|(source, file)| {
                Some(Setting {
                    value: get(&file.hooks).clone()?,
                    source: source.clone(),
                })
            })
        };
        Hooks {
            on_start: pick(|h| &h.on_start),
            on_end: pick(|h| &h.on_end),
            on_input_required: pick(|h| &h.on_input_required),
            on_change: pick(|h| &h.on_change),
            timeout: self
                .pick(|f| f.hooks.timeout.map(|t| t.0))
                .map_or(Duration::from_secs(10), |s| s.value),
        }
    }

    pub fn notify(&self) -> Setting<Vec<NotifyChannel>> {
        self.pick(|f| f.notify.clone())
            .unwrap_or_else(|| built_in(vec![NotifyChannel::Tmux]))
    }

    pub fn notify_on(&self) -> Setting<Vec<NotifyOn>> {
        self.pick(|f| f.notify_on.clone()).unwrap_or_else(|| {
            built_in(vec![
                NotifyOn::InputRequired,
                NotifyOn::Failed,
                NotifyOn::Completed,
            ])
        })
    }

    /// Time between two looks of the monitor (the user's file; default 1 s).
    pub fn monitor_interval(&self) -> Setting<Duration> {
        self.pick(|f| f.monitor.interval.map(|d| d.0))
            .unwrap_or_else(|| built_in(Duration::from_secs(1)))
    }

    /// How long a wait on a human must hold, screen unchanged, before it is announced
    /// (default 2 s).
    pub fn monitor_dwell(&self) -> Setting<Duration> {
        self.pick(|f| f.monitor.dwell.map(|d| d.0))
            .unwrap_or_else(|| built_in(Duration::from_secs(2)))
    }

    pub fn width(&self) -> Setting<u16> {
        self.pick(|f| f.tmux.width).unwrap_or_else(|| built_in(200))
    }

    pub fn height(&self) -> Setting<u16> {
        self.pick(|f| f.tmux.height).unwrap_or_else(|| built_in(50))
    }

    pub fn history_limit(&self) -> Setting<u32> {
        self.pick(|f| f.tmux.history_limit)
            .unwrap_or_else(|| built_in(50_000))
    }

    /// The configured hosts (only the user's file can set them: [`Config::load`] refuses a
    /// project file that does).
    pub fn hosts(&self) -> BTreeMap<String, HostConfig> {
        self.layers
            .iter()
            .filter(|(source, _)| matches!(source, Source::User(_)))
            .flat_map(|(_, file)| file.hosts.clone())
            .collect()
    }
}

fn built_in<T>(value: T) -> Setting<T> {
    Setting {
        value,
        source: Source::BuiltIn,
    }
}

/// The nearest `.cuekit.yaml` at or above `cwd`.
pub fn project_file(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .map(|dir| dir.join(PROJECT_FILE))
        .find(|path| path.is_file())
}

pub fn user_file() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "cuekit").map(|dirs| dirs.config_dir().join(USER_FILE))
}

pub fn parse_file(path: &Path) -> Result<ConfigFile> {
    let text = std::fs::read_to_string(path).map_err(|err| Error::io("read", path, err))?;
    parse(&text, path)
}

/// Parses a config text; `path` is only used in messages.
pub fn parse(text: &str, path: &Path) -> Result<ConfigFile> {
    if text.trim().is_empty() {
        return Ok(ConfigFile::default());
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
    Ok(file)
}

/// `hosts:` says where code runs and with which login: a project (a cloned repository) must
/// never add one, so a project file that sets it is refused rather than half-read.
fn refuse_project_hosts(file: &ConfigFile, text: &str, path: &Path) -> Result<()> {
    if file.hosts.is_empty() {
        return Ok(());
    }
    let line = text
        .lines()
        .position(|line| line.starts_with("hosts:"))
        .map_or(1, |index| index + 1);
    Err(invalid(
        path,
        line,
        1,
        "hosts: is read from the user's file only (a project cannot add hosts)".to_string(),
    )
    .with_hint("move `hosts:` to ~/.config/cuekit/config.yaml"))
}

/// A host name is part of file names (its control socket): letters, digits, `-`, `_`, `.`.
fn check_host_names(file: &ConfigFile, text: &str, path: &Path) -> Result<()> {
    for (name, host) in &file.hosts {
        let valid_name = !name.is_empty()
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        let problem = if !valid_name {
            format!("hosts: `{name}` is not a host name (letters, digits, -, _ and . only)")
        } else if host.ssh.is_empty() || host.ssh.starts_with('-') {
            format!("hosts.{name}.ssh: `{}` is not an ssh destination", host.ssh)
        } else {
            continue;
        };
        return Err(invalid(path, line_of_key(text, "hosts:", name), 3, problem));
    }
    Ok(())
}

fn invalid(path: &Path, line: usize, column: usize, message: String) -> Error {
    Error::new(
        ErrorCode::ConfigInvalid,
        format!("{}:{line}:{column}: {message}", path.display()),
    )
    .with_hint(
        "fix the file (every key is documented in .cuekit.yaml.example) or run `cuekit doctor`",
    )
}

/// The 1-based line where `key:` is first written under `section` (e.g. `adapters:`).
fn line_of_key(text: &str, section: &str, key: &str) -> usize {
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

/// The starter file `cuekit init` writes: the documented example.
pub const EXAMPLE: &str = include_str!("../.cuekit.yaml.example");

/// One effective value, for `cuekit config`.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub key: String,
    pub value: serde_json::Value,
    pub source: Source,
}

impl Config {
    /// Every key with its effective value and where it came from.
    pub fn entries(&self) -> Vec<Entry> {
        fn entry<T: Serialize>(key: impl Into<String>, setting: Option<Setting<T>>) -> Entry {
            let (value, source) = match setting {
                Some(s) => (
                    serde_json::to_value(s.value).expect("settings serialize"),
                    s.source,
                ),
                None => (serde_json::Value::Null, Source::BuiltIn),
            };
            Entry {
                key: key.into(),
                value,
                source,
            }
        }
        let secs = |s: Setting<Duration>| Setting {
            value: humantime::format_duration(s.value).to_string(),
            source: s.source,
        };
        let mut entries = vec![
            entry("defaults.agent", Some(self.agent())),
            entry("defaults.model", self.pick(|f| f.defaults.model.clone())),
            entry("defaults.mode", self.mode()),
            entry("defaults.timeout", self.timeout().map(secs)),
            entry(
                "defaults.approval_mode",
                self.pick(|f| f.defaults.approval_mode.clone()),
            ),
        ];
        for adapter in ADAPTERS {
            let kind = adapter.kind();
            let key = |name: &str| format!("adapters.{kind}.{name}");
            let bin = self
                .bin(kind)
                .unwrap_or_else(|| built_in(adapter.default_bin.to_string()));
            let permissions = self
                .permissions(kind)
                .unwrap_or_else(|| built_in(Permissions::Bypass));
            let delay = self
                .steer_delay(kind)
                .unwrap_or_else(|| built_in(adapter.steer_enter_delay));
            let delay_ms = Setting {
                value: delay.value.as_millis() as u64,
                source: delay.source,
            };
            entries.extend([
                entry(key("bin"), Some(bin)),
                entry(key("model"), self.model(kind)),
                entry(key("permissions"), Some(permissions)),
                entry(key("approval_mode"), self.approval_mode(kind)),
                entry(key("steer_delay_ms"), Some(delay_ms)),
            ]);
            for (name, setting) in self.env(kind) {
                entries.push(entry(key(&format!("env.{name}")), Some(setting)));
            }
            if let Some(profile) = self.provider_profile(kind) {
                entries.push(entry(key("provider_profile"), Some(profile)));
            }
        }
        let hooks = self.hooks();
        for (name, setting) in [
            ("on_start", hooks.on_start),
            ("on_end", hooks.on_end),
            ("on_input_required", hooks.on_input_required),
            ("on_change", hooks.on_change),
        ] {
            if setting.is_some() {
                entries.push(entry(format!("hooks.{name}"), setting));
            }
        }
        entries.extend([
            entry("notify", Some(self.notify())),
            entry("notify_on", Some(self.notify_on())),
            entry("monitor.interval", Some(secs(self.monitor_interval()))),
            entry("monitor.dwell", Some(secs(self.monitor_dwell()))),
            entry("tmux.socket", Some(self.socket())),
            entry("tmux.width", Some(self.width())),
            entry("tmux.height", Some(self.height())),
            entry("tmux.history_limit", Some(self.history_limit())),
            entry("defaults.worktree", self.worktree_default()),
            entry("worktree.dir", Some(self.worktree_dir())),
            entry("worktree.branch_prefix", Some(self.branch_prefix())),
            entry("worktree.copy", self.worktree_copy()),
            entry("worktree.symlink", self.worktree_symlink()),
            entry("worktree.setup", self.worktree_setup()),
        ]);
        entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_parses_and_documents_every_key() {
        let file = parse_str(EXAMPLE).unwrap();
        assert_eq!(file.tmux.width, Some(200));
        for key in [
            "agent:",
            "model:",
            "mode:",
            "timeout:",
            "approval_mode:",
            "bin:",
            "permissions:",
            "steer_delay_ms:",
            "env:",
            "socket:",
            "width:",
            "height:",
            "history_limit:",
            "provider_profile:",
            "monitor:",
            "interval:",
            "dwell:",
            "hooks:",
            "on_start:",
            "on_end:",
            "on_input_required:",
            "on_change:",
            "notify:",
            "notify_on:",
            "worktree:",
            "dir:",
            "branch_prefix:",
            "copy:",
            "symlink:",
            "setup:",
            "hosts:",
            "ssh:",
            "cuekit:",
            "cwd:",
        ] {
            assert!(EXAMPLE.contains(key), "{key} is not documented");
        }
    }

    #[test]
    fn hosts_parse_and_bad_names_or_destinations_are_located_errors() {
        let file = parse_str(
            "hosts:\n  gpu-1:\n    ssh: me@gpu\n    cuekit: ~/.local/bin/cuekit\n    cwd: /srv\n",
        )
        .unwrap();
        let host = &file.hosts["gpu-1"];
        assert_eq!(host.ssh, "me@gpu");
        assert_eq!(host.cuekit.as_deref(), Some("~/.local/bin/cuekit"));
        let bad_name = message("hosts:\n  ok:\n    ssh: a\n  ../x:\n    ssh: b\n");
        assert!(bad_name.contains(":4:3: hosts: `../x`"), "{bad_name}");
        let option = message("hosts:\n  h:\n    ssh: -oProxyCommand=x\n");
        assert!(option.contains("not an ssh destination"), "{option}");
        let unknown = message("hosts:\n  h:\n    ssh: a\n    port: 22\n");
        assert!(unknown.contains("unknown field `port`"), "{unknown}");
    }

    #[test]
    fn a_project_file_setting_hosts_is_refused() {
        let path = Path::new("/p/.cuekit.yaml");
        let text = "defaults:\n  agent: gemini\nhosts:\n  h:\n    ssh: evil\n";
        let err = refuse_project_hosts(&parse(text, path).unwrap(), text, path).unwrap_err();
        assert_eq!(err.code, ErrorCode::ConfigInvalid);
        assert!(
            err.message
                .contains(":3:1: hosts: is read from the user's file only")
        );
    }

    fn parse_str(text: &str) -> Result<ConfigFile> {
        parse(text, Path::new("/p/.cuekit.yaml"))
    }

    fn message(text: &str) -> String {
        let err = parse_str(text).unwrap_err();
        assert_eq!(err.code, ErrorCode::ConfigInvalid);
        err.message
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
            "/p/.cuekit.yaml:3:1: unknown field `colour`, expected one of `defaults`, `adapters`, `tmux`, `worktree`, `monitor`, `hooks`, `notify`, `notify_on`, `hosts`"
        );
        assert_eq!(
            message("adapters:\n  gemini:\n    bin: g\n  gemni:\n    bin: x\n"),
            "/p/.cuekit.yaml:4:3: adapters: unknown adapter `gemni`, expected one of `gemini`, `claude-code`, `codex`, `opencode`, `pi`, `jcode`, `qwen`, `copilot`, `command`"
        );
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

    #[test]
    fn nearer_layers_win_and_adapter_keys_beat_defaults() {
        let project = parse_str(
            "defaults:\n  model: flash\nadapters:\n  gemini:\n    env:\n      A: project\n",
        )
        .unwrap();
        let user = parse_str("defaults:\n  agent: gemini\n  model: pro\nadapters:\n  gemini:\n    model: flash-lite\n    env:\n      A: user\n      B: user\n").unwrap();
        let mut config = Config {
            layers: vec![
                (Source::Project("/p".into()), project),
                (Source::User("/u".into()), user),
            ],
            project_trust: Some(("/p".into(), TrustState::Trusted)),
        };
        assert_eq!(
            config.model("gemini").unwrap(),
            Setting {
                value: "flash".into(),
                source: Source::Project("/p".into())
            }
        );
        assert_eq!(config.agent().source, Source::User("/u".into()));
        assert_eq!(
            config.width(),
            Setting {
                value: 200,
                source: Source::BuiltIn
            }
        );
        let env = config.env("gemini");
        assert_eq!(env["A"].value, "project");
        assert_eq!(env["B"].source, Source::User("/u".into()));
        assert!(config.untrusted_code_keys("gemini").is_empty());

        // Untrusted, the project's code-running keys are named and not used; the rest apply.
        config.project_trust = Some(("/p".into(), TrustState::Changed));
        assert_eq!(
            config.untrusted_code_keys("gemini"),
            ["adapters.gemini.env.A"]
        );
        assert_eq!(config.env("gemini")["A"].value, "user");
        assert_eq!(config.model("gemini").unwrap().value, "flash");
        let refused = config.refuse_untrusted("gemini").unwrap_err();
        assert_eq!(refused.code, ErrorCode::ConfigUntrusted);
        assert!(
            refused.message.contains("adapters.gemini.env.A"),
            "{}",
            refused.message
        );
        assert!(config.refuse_untrusted("codex").is_ok());
    }
}
