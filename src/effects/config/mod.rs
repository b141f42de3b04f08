//! Configuration: `.cuekit.yaml` (found by walking up from the working directory) over a user
//! file (`~/.config/cuekit/config.yaml`) over built-in defaults; a command-line flag or
//! environment variable beats them all.
//!
//! - [`schema`]: every key, its type and shape checks, with located errors;
//! - [`class`]: which keys a project file may set, and how (the trust classes);
//! - this module: the layers, each value with its source, and what the project file sets that
//!   does not apply ([`Config::withheld`]);
//! - [`entries`]: `cuekit config`'s listing.
//!
//! The project file enters through [`crate::effects::project`] (a link out of the project is refused)
//! and is sifted by its keys' classes before any getter reads it: a getter cannot forget the
//! trust rule, because the values it must not use are not in its layer.

pub mod class;
mod entries;
pub mod schema;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

pub use class::{Autonomy, KeyClass, Withheld};
pub use entries::Entry;
pub use schema::{
    AdapterConfig, ConfigFile, Defaults, DurationText, HooksConfig, HostConfig, MonitorConfig,
    NotifyChannel, NotifyFile, NotifyOn, NotifySettings, NtfyChannel, Permissions, SendChannel,
    TmuxConfig, WorktreeConfig,
};

use crate::domain::adapter::Adapter;
use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::spec::Mode;
use crate::effects::trust::TrustState;

pub const PROJECT_FILE: &str = ".cuekit.yaml";
const AGENT_KEY: &str = "defaults.agent";
const USER_FILE: &str = "config.yaml";

/// The hook commands that apply to a task, each with the file it came from.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    pub on_start: Option<Setting<String>>,
    pub on_end: Option<Setting<String>>,
    pub on_input_required: Option<Setting<String>>,
    pub on_change: Option<Setting<String>>,
    /// A new conflict between worktree tasks (or with their target) the monitor found.
    pub on_conflict: Option<Setting<String>>,
    pub timeout: Duration,
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

/// The widest, tallest and longest-remembering pane a config may ask for.
pub const MAX_WIDTH: u16 = 1000;
pub const MAX_HEIGHT: u16 = 500;
pub const MAX_HISTORY: u32 = 200_000;

/// A setting (or the built-in) no larger than `max`.
fn capped<T: Ord + Copy>(setting: Option<Setting<T>>, built: T, max: T) -> Setting<T> {
    let setting = setting.unwrap_or_else(|| built_in(built));
    Setting {
        value: setting.value.min(max),
        ..setting
    }
}

/// An agent's permission policy as the config gives it: the two keys that set it, each with
/// its source, and how much autonomy the user's own settings allow (the ceiling that a project
/// file, a project role, a team spec or an MCP argument may lower but never raise).
#[derive(Debug, Clone)]
pub struct Policy {
    pub permissions: Option<Setting<Permissions>>,
    pub approval_mode: Option<Setting<String>>,
    pub allowed: Autonomy,
    /// The project file's values that would have raised it.
    pub ignored: Vec<Withheld>,
}

/// The config files that apply to one working directory, most specific first.
#[derive(Debug, Default)]
pub struct Config {
    layers: Vec<(Source, ConfigFile)>,
    /// The project file's trust (see [`crate::effects::trust`]); the user's own file is always trusted.
    project_trust: Option<(PathBuf, TrustState)>,
    /// What the project file sets that its classes keep out.
    withheld: Vec<Withheld>,
}

impl Config {
    /// Loads the project file above `cwd` and the user file; a broken file is an error, and so
    /// is a project file that is not a regular file inside its project.
    pub fn load(cwd: &Path) -> Result<Config> {
        let mut config = Config::default();
        if let Some(dir) = project_dir(cwd) {
            let (path, text) = read_project_file(&dir)?;
            // The whole file must be valid, also the parts that will not apply.
            let full = schema::parse(&text, &path)?;
            // Trust is judged on the very bytes that are parsed.
            let trust = crate::effects::trust::state(&path, text.as_bytes());
            let value: serde_yaml_ng::Value = if text.trim().is_empty() {
                serde_yaml_ng::Value::Null
            } else {
                serde_yaml_ng::from_str(&text)
                    .map_err(|err| schema::invalid(&path, 1, 1, format!("cannot be read: {err}")))?
            };
            let (sifted, withheld) = class::sift(value, trust == TrustState::Trusted);
            let file = if withheld.is_empty() {
                full
            } else {
                // Only keys were taken out of a file that parsed whole.
                serde_yaml_ng::from_value(sifted)
                    .map_err(|err| schema::invalid(&path, 1, 1, format!("cannot be read: {err}")))?
            };
            config.layers.push((Source::Project(path.clone()), file));
            config.project_trust = Some((path, trust));
            config.withheld = withheld;
        }
        if let Some(path) = user_file().filter(|path| path.is_file()) {
            config
                .layers
                .push((Source::User(path.clone()), parse_file(&path)?));
        }
        Ok(config)
    }

    /// The project file and whether it is trusted, if there is one.
    pub fn project_trust(&self) -> Option<(&Path, TrustState)> {
        self.project_trust
            .as_ref()
            .map(|(path, state)| (path.as_path(), *state))
    }

    /// What the project file sets that does not apply (by its keys' classes), in file order.
    pub fn withheld(&self) -> &[Withheld] {
        &self.withheld
    }

    /// The withheld keys that matter to a task of agent `kind`: its adapter's, and the rest
    /// (another adapter's keys do not).
    fn withheld_for<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Withheld> + 'a {
        self.withheld.iter().filter(move |withheld| {
            withheld
                .key
                .strip_prefix("adapters.")
                .is_none_or(|rest| rest.split('.').next() == Some(kind))
        })
    }

    /// The keys an untrusted project file sets for agent `kind` that run code, and are
    /// therefore not used (trusting the file would make them apply).
    pub fn untrusted_code_keys(&self, kind: &str) -> Vec<String> {
        self.withheld_for(kind)
            .filter(|w| {
                w.class == KeyClass::RunsCode
                    && !w.key.starts_with("worktree.")
                    && w.key != AGENT_KEY
            })
            .map(|w| w.key.clone())
            .collect()
    }

    /// The error a submit gets when its agent would come from the project file's
    /// `defaults.agent` and that names the `command` agent without the file being trusted.
    pub fn refuse_untrusted_agent(&self) -> Result<()> {
        let withheld = self.withheld.iter().any(|w| w.key == AGENT_KEY);
        self.refuse_keys(if withheld {
            vec![AGENT_KEY.to_string()]
        } else {
            Vec::new()
        })
    }

    /// Warnings for a task of agent `kind`: what the project file sets that is ignored without
    /// refusing the task (user-only keys, looser policies).
    pub fn warnings_for(&self, adapter: &Adapter) -> Vec<String> {
        self.warnings_under(adapter, &self.policy(adapter))
    }

    /// [`Self::warnings_for`] with the policy a submit computed (under its request's ceiling).
    pub fn warnings_under(&self, adapter: &Adapter, policy: &Policy) -> Vec<String> {
        let sandbox = self.sandbox_ignored();
        self.withheld_for(adapter.kind())
            .filter(|w| !w.needs_trust())
            .chain(&policy.ignored)
            .chain(&sandbox)
            .map(|w| self.describe(w))
            .collect()
    }

    /// The project file's sandbox values looser than the user's (which the strictest-wins
    /// merge of [`Config::sandbox`] leaves out): named, so the user hears what was ignored.
    fn sandbox_ignored(&self) -> Vec<Withheld> {
        let user = || {
            self.layers
                .iter()
                .filter(|(source, _)| !matches!(source, Source::Project(_)))
                .map(|(_, file)| &file.sandbox)
        };
        let user_mode = user().filter_map(|s| s.mode).max().unwrap_or_default();
        let user_network = user().filter_map(|s| s.network).max().unwrap_or_default();
        let mut ignored = Vec::new();
        for (source, file) in &self.layers {
            if !matches!(source, Source::Project(_)) {
                continue;
            }
            if let Some(mode) = file.sandbox.mode.filter(|mode| *mode < user_mode) {
                ignored.push(Withheld {
                    key: "sandbox.mode".into(),
                    class: KeyClass::TightenOnly,
                    why: format!(
                        "{} (from {source}) is looser than your own ({})",
                        mode.as_str(),
                        user_mode.as_str()
                    ),
                });
            }
            if file
                .sandbox
                .network
                .is_some_and(|network| network < user_network)
            {
                ignored.push(Withheld {
                    key: "sandbox.network".into(),
                    class: KeyClass::TightenOnly,
                    why: format!("on (from {source}) is looser than your own (off)"),
                });
            }
        }
        ignored
    }

    fn describe(&self, withheld: &Withheld) -> String {
        // A policy value names its own file in its why (it may be the user's).
        let file = match self.project_trust() {
            Some((path, _)) if withheld.class != KeyClass::TightenOnly => {
                format!(" in {}", path.display())
            }
            _ => String::new(),
        };
        format!(
            "{}{file} is ignored ({}): {}",
            withheld.key,
            withheld.class.as_str(),
            withheld.why
        )
    }

    /// The error a submit gets when the project file sets keys that run code for agent `kind`
    /// and is not trusted: it is refused rather than run differently from what the file says.
    pub fn refuse_untrusted(&self, kind: &str) -> Result<()> {
        self.refuse_keys(self.untrusted_code_keys(kind))
    }

    /// The same for a task in its own worktree: `worktree.setup`, and a `worktree.dir` that is
    /// not proven harmless.
    pub fn refuse_untrusted_worktree(&self) -> Result<()> {
        self.refuse_keys(
            self.withheld
                .iter()
                .filter(|w| w.needs_trust() && w.key.starts_with("worktree."))
                .map(|w| w.key.clone())
                .collect(),
        )
    }

    fn refuse_keys(&self, keys: Vec<String>) -> Result<()> {
        let Some((path, state)) = self.project_trust().filter(|_| !keys.is_empty()) else {
            return Ok(());
        };
        Err(Error::new(
            ErrorCode::ConfigUntrusted,
            format!(
                "{} is {} and sets keys that run code or place files: {}",
                path.display(),
                state.as_str(),
                keys.join(", ")
            ),
        )
        .with_hint(format!(
            "read the file; if you trust it, run `cuekit trust {}` (only you can: MCP cannot)",
            crate::domain::launch::single_quote(&path.to_string_lossy()).unwrap_or_default()
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
            .unwrap_or_else(|| built_in(crate::domain::adapter::ADAPTERS[0].kind().to_string()))
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

    /// The agent's permission policy: `permissions` and `approval_mode` by precedence, where a
    /// project file's value applies only if it allows no more autonomy than the user's own
    /// settings (the tighten-only class).
    pub fn policy(&self, adapter: &Adapter) -> Policy {
        self.policy_under(adapter, None)
    }

    /// The permission policy under a request's own ceiling: what the submit itself asked for
    /// (the user's `--no-skip-permissions`, `--approval-mode`; a delegate's stricter choice).
    /// That ceiling replaces the user's files' for this task, and then binds every file's
    /// approval mode (the user's own file too: the command line is the user's latest word) and
    /// the project file's permissions.
    pub fn policy_under(&self, adapter: &Adapter, ceiling: Option<Autonomy>) -> Policy {
        let kind = adapter.kind();
        let user_layers = || {
            self.layers
                .iter()
                .filter(|(source, _)| !matches!(source, Source::Project(_)))
        };
        let approval_of = |file: &ConfigFile| {
            file.adapters
                .get(kind)
                .and_then(|a| a.approval_mode.clone())
                .or_else(|| file.defaults.approval_mode.clone())
        };
        // An approval mode the agent does not take is ignored by its builder: it allows
        // whatever `permissions` does.
        let valid_approval = |mode: &String| adapter.approval_modes.contains(&mode.as_str());
        let allowed = user_layers()
            .find_map(|(_, file)| {
                approval_of(file)
                    .filter(valid_approval)
                    .map(|mode| Autonomy::of_approval_mode(&mode))
                    .or_else(|| {
                        let permissions = file.adapters.get(kind)?.permissions?;
                        Some(Autonomy::of_bypass(permissions == Permissions::Bypass))
                    })
            })
            .unwrap_or(Autonomy::Bypass);
        let allowed = ceiling.unwrap_or(allowed);
        let whose = if ceiling.is_some() {
            "what this submit asked for"
        } else {
            "your own policy"
        };
        let mut ignored = Vec::new();
        let mut first_within = |key: String,
                                binds_user: bool,
                                found: Vec<(Source, Autonomy, Setting<String>)>|
         -> Option<Setting<String>> {
            for (source, autonomy, setting) in found {
                let bound = matches!(source, Source::Project(_)) || binds_user;
                if bound && !class::within(autonomy, allowed) {
                    ignored.push(Withheld {
                        key: key.clone(),
                        class: KeyClass::TightenOnly,
                        why: format!(
                            "{} (from {source}) allows more than {whose} ({allowed:?})",
                            setting.value
                        ),
                    });
                    continue;
                }
                return Some(setting);
            }
            None
        };
        let setting = |source: &Source, value: String| Setting {
            value,
            source: source.clone(),
        };
        let approvals = self
            .layers
            .iter()
            .filter_map(|(source, file)| {
                let mode = approval_of(file)?;
                let autonomy = if valid_approval(&mode) {
                    Autonomy::of_approval_mode(&mode)
                } else {
                    Autonomy::Bypass
                };
                Some((source.clone(), autonomy, setting(source, mode)))
            })
            .collect();
        let approval_mode = first_within(
            format!("adapters.{kind}.approval_mode"),
            ceiling.is_some(),
            approvals,
        );
        let permissions = self
            .layers
            .iter()
            .filter_map(|(source, file)| {
                let permissions = file.adapters.get(kind)?.permissions?;
                let name = match permissions {
                    Permissions::Prompt => "prompt",
                    Permissions::Bypass => "bypass",
                };
                Some((
                    source.clone(),
                    Autonomy::of_bypass(permissions == Permissions::Bypass),
                    setting(source, name.to_string()),
                ))
            })
            .collect();
        let permissions = first_within(format!("adapters.{kind}.permissions"), false, permissions)
            .map(|setting| Setting {
                value: if setting.value == "prompt" {
                    Permissions::Prompt
                } else {
                    Permissions::Bypass
                },
                source: setting.source,
            });
        Policy {
            permissions,
            approval_mode,
            allowed,
            ignored,
        }
    }

    /// What an ACP task's client answers by itself, per tool kind, when the bypass is off: the
    /// user's file decides, a project file may only make a kind stricter (tighten-only, per item).
    pub fn acp_permissions(
        &self,
    ) -> std::collections::BTreeMap<
        crate::domain::acp::policy::ToolKind,
        crate::domain::acp::policy::Decision,
    > {
        let mut merged = std::collections::BTreeMap::new();
        for (source, file) in self.layers.iter().rev() {
            let project = matches!(source, Source::Project(_));
            for (kind, decision) in &file.acp.permissions {
                match merged.get(kind) {
                    Some(allowed) if project && !class::within(*decision, *allowed) => {}
                    None if project && *decision == crate::domain::acp::policy::Decision::Allow => {
                    }
                    _ => {
                        merged.insert(*kind, *decision);
                    }
                }
            }
        }
        merged
    }

    /// The caps on live agents, each the lowest any layer sets: a project's file only ever
    /// lowers the user's (the class table keeps a higher value from mattering).
    pub fn limits(&self) -> crate::effects::store::schedule::Limits {
        self.layers
            .iter()
            .fold(Default::default(), |limits, (_, file)| {
                limits.lowered_by(&crate::effects::store::schedule::Limits {
                    running: file.limits.running,
                    agents: file.limits.agents.clone(),
                })
            })
    }

    /// Live agents per host for `--host '*'` placement, each the lowest any layer sets.
    pub fn host_limits(&self) -> BTreeMap<String, u32> {
        let mut caps = BTreeMap::new();
        for (_, file) in &self.layers {
            for (host, cap) in &file.limits.hosts {
                let lowest = caps
                    .get(host)
                    .map_or(*cap, |known: &u32| (*known).min(*cap));
                caps.insert(host.clone(), lowest);
            }
        }
        caps
    }

    /// The caps of the user's own file (for the scheduler, which serves every project).
    /// [`Config::check_slots`] of the user's own file (the cap serves every project).
    pub fn user_check_slots() -> u32 {
        Config::load(Path::new("/")).map_or(1, |config| config.check_slots())
    }

    pub fn user_limits() -> crate::effects::store::schedule::Limits {
        Config::load(Path::new("/"))
            .map(|config| config.limits())
            .unwrap_or_default()
    }

    /// The sandbox every task gets unless its submit says otherwise: the strictest mode and
    /// network of the files (a project's may only raise yours), the paths of yours (a
    /// project's `read` and `write` are withheld by their class), `~/` expanded.
    pub fn sandbox(&self) -> crate::domain::sandbox::Policy {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let expand = |text: &String| match (text.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(text),
        };
        let mut policy = crate::domain::sandbox::Policy::default();
        for (_, file) in &self.layers {
            let sandbox = &file.sandbox;
            policy.mode = policy.mode.max(sandbox.mode.unwrap_or_default());
            policy.network = policy.network.max(sandbox.network.unwrap_or_default());
            policy.read.extend(sandbox.read.iter().map(expand));
            policy.write.extend(sandbox.write.iter().map(expand));
        }
        policy
    }

    /// The user's retry policy (a project file's `retry` is withheld by its class).
    pub fn retry(&self) -> Option<crate::effects::store::schedule::RetryPolicy> {
        let retry = self.pick(|f| f.retry.clone())?.value;
        Some(crate::effects::store::schedule::RetryPolicy {
            max: retry.max,
            on: retry.on.unwrap_or_else(|| {
                crate::effects::store::schedule::RETRYABLE
                    .iter()
                    .map(|r| r.to_string())
                    .collect()
            }),
            backoff_first: retry.backoff.first.map_or(30, |d| d.0.as_secs()),
            backoff_max: retry.backoff.max.map_or(900, |d| d.0.as_secs()),
        })
    }

    /// The user's `retry.fallback` (a project file's `retry` never applies: [`class`]) and
    /// `retry.fallback_after`. An entry that names no agent cuekit knows is left out.
    pub fn fallback(&self) -> (Vec<crate::domain::failover::Fallback>, Duration) {
        let Some(retry) = self.pick(|f| f.retry.clone()).map(|s| s.value) else {
            return (Vec::new(), crate::domain::failover::DEFAULT_AFTER);
        };
        let known: Vec<&str> = crate::domain::adapter::ADAPTERS
            .iter()
            .map(|a| a.kind())
            .collect();
        let list = retry.fallback.unwrap_or_default().join(",");
        let fallback = if list.trim().is_empty() {
            Vec::new()
        } else {
            crate::domain::failover::parse_list(&list, &known).unwrap_or_default()
        };
        let after = retry
            .fallback_after
            .map_or(crate::domain::failover::DEFAULT_AFTER, |d| d.0);
        (fallback, after)
    }

    pub fn provider_profile(&self, kind: &str) -> Option<Setting<String>> {
        self.pick(|f| {
            f.adapters
                .get(kind)
                .and_then(|a| a.provider_profile.clone())
        })
    }

    /// The agents some config file has an `adapters.<kind>` entry for.
    pub fn configured_agents(&self) -> std::collections::BTreeSet<String> {
        self.layers
            .iter()
            .flat_map(|(_, file)| file.adapters.keys().cloned())
            .collect()
    }

    /// The agent's binary (a project file's only when trusted: [`class`]).
    pub fn bin(&self, kind: &str) -> Option<Setting<String>> {
        self.pick(|f| f.adapters.get(kind)?.bin.clone())
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
    pub fn env(&self, kind: &str) -> BTreeMap<String, Setting<String>> {
        let mut merged = BTreeMap::new();
        for (source, file) in self.layers.iter().rev() {
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

    /// The tmux server: `CUEKIT_TMUX_SOCKET`, then the user's file, then cuekit's private
    /// default.
    pub fn socket(&self) -> Setting<String> {
        match std::env::var(crate::effects::tmux::SOCKET_ENV) {
            Ok(value) if !value.is_empty() => Setting {
                value,
                source: Source::Env,
            },
            _ => self
                .pick(|f| f.tmux.socket.clone())
                .unwrap_or_else(|| built_in(crate::effects::tmux::DEFAULT_SOCKET.to_string())),
        }
    }

    pub fn worktree_default(&self) -> Option<Setting<bool>> {
        self.pick(|f| f.defaults.worktree)
    }

    pub fn worktree_dir(&self) -> Setting<String> {
        self.pick(|f| f.worktree.dir.clone())
            .unwrap_or_else(|| built_in(crate::effects::git::plan::DEFAULT_DIR.to_string()))
    }

    pub fn branch_prefix(&self) -> Setting<String> {
        self.pick(|f| f.worktree.branch_prefix.clone())
            .unwrap_or_else(|| {
                built_in(crate::effects::git::plan::DEFAULT_BRANCH_PREFIX.to_string())
            })
    }

    /// `worktree.branch_prefix` as the user's own file (or the built-in) sets it: what decides
    /// which worktrees `doctor --fix` may take for cuekit's.
    pub fn user_branch_prefix(&self) -> String {
        self.layers
            .iter()
            .filter(|(source, _)| !matches!(source, Source::Project(_)))
            .find_map(|(_, file)| file.worktree.branch_prefix.clone())
            .unwrap_or_else(|| crate::effects::git::plan::DEFAULT_BRANCH_PREFIX.to_string())
    }

    /// `sandbox.mode` as the user's own file sets it (never a project's): the user's choice of
    /// no sandbox for tasks that ask for approvals (`ops::sandbox::for_approvals`).
    pub fn user_sandbox_mode(&self) -> Option<crate::domain::sandbox::SandboxMode> {
        self.layers
            .iter()
            .filter(|(source, _)| !matches!(source, Source::Project(_)))
            .find_map(|(_, file)| file.sandbox.mode)
    }

    /// `worktree.copy` and `worktree.symlink` from the user's own file alone: what a sandboxed
    /// task's checkout takes (a repository must not choose what of the user's is copied into
    /// a sandbox).
    pub fn user_worktree_includes(&self) -> (Vec<String>, Vec<String>) {
        let user = || {
            self.layers
                .iter()
                .filter(|(source, _)| !matches!(source, Source::Project(_)))
        };
        (
            user()
                .find_map(|(_, file)| file.worktree.copy.clone())
                .unwrap_or_default(),
            user()
                .find_map(|(_, file)| file.worktree.symlink.clone())
                .unwrap_or_default(),
        )
    }

    pub fn worktree_copy(&self) -> Option<Setting<Vec<String>>> {
        self.pick(|f| f.worktree.copy.clone())
    }

    pub fn worktree_symlink(&self) -> Option<Setting<Vec<String>>> {
        self.pick(|f| f.worktree.symlink.clone())
    }

    /// How many task checks may run at once on this machine (`limits.checks`, default 1).
    pub fn check_slots(&self) -> u32 {
        self.pick(|f| f.limits.checks).map_or(1, |s| s.value).max(1)
    }

    /// The configured check (`check:`), if one names commands to run.
    pub fn check(&self) -> Option<CheckSettings> {
        let run = self
            .pick(|f| f.check.run.clone().filter(|run| !run.is_empty()))?
            .value;
        Some(CheckSettings {
            run,
            rounds: self.pick(|f| f.check.rounds).map(|s| s.value),
            timeout: self.pick(|f| f.check.timeout.map(|t| t.0)).map(|s| s.value),
            protect: self
                .pick(|f| f.check.protect.clone())
                .map(|s| s.value)
                .unwrap_or_default(),
        })
    }

    pub fn worktree_setup(&self) -> Option<Setting<String>> {
        self.pick(|f| f.worktree.setup.clone())
    }

    pub fn hooks(&self) -> Hooks {
        let pick = |get: fn(&HooksConfig) -> &Option<String>| self.pick(|f| get(&f.hooks).clone());
        Hooks {
            on_start: pick(|h| &h.on_start),
            on_end: pick(|h| &h.on_end),
            on_input_required: pick(|h| &h.on_input_required),
            on_change: pick(|h| &h.on_change),
            on_conflict: pick(|h| &h.on_conflict),
            timeout: self
                .pick(|f| f.hooks.timeout.map(|t| t.0))
                .map_or(Duration::from_secs(10), |s| s.value),
        }
    }

    pub fn notify(&self) -> Setting<Vec<NotifyChannel>> {
        self.pick(|f| f.notify.as_ref().and_then(NotifyFile::local))
            .unwrap_or_else(|| built_in(vec![NotifyChannel::Tmux]))
    }

    /// `notify:`'s channels beyond this machine and their times, from the user's own file only
    /// (a project file's are withheld by their class, and never read here either: a project
    /// must not send your tasks to its server).
    pub fn user_notify(&self) -> Option<schema::NotifySettings> {
        self.layers
            .iter()
            .filter(|(source, _)| !matches!(source, Source::Project(_)))
            .find_map(|(_, file)| file.notify.as_ref()?.settings().cloned())
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

    /// Time between two looks of the monitor (default 1 s).
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

    /// A pane's size and history are capped ([`MAX_WIDTH`], [`MAX_HEIGHT`],
    /// [`MAX_HISTORY`]): every pane lives in one shared tmux server, and a file asking for
    /// 65535 columns or two billion lines of history lets one child's output grow that server
    /// by gigabytes, for every task on it.
    pub fn width(&self) -> Setting<u16> {
        capped(self.pick(|f| f.tmux.width), 200, MAX_WIDTH)
    }

    pub fn height(&self) -> Setting<u16> {
        capped(self.pick(|f| f.tmux.height), 50, MAX_HEIGHT)
    }

    pub fn history_limit(&self) -> Setting<u32> {
        capped(self.pick(|f| f.tmux.history_limit), 50_000, MAX_HISTORY)
    }

    /// The configured hosts (a project file's are withheld: [`class`]).
    pub fn hosts(&self) -> BTreeMap<String, HostConfig> {
        self.layers
            .iter()
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

/// The nearest folder at or above `cwd` holding a `.cuekit.yaml` (of any type: what it is gets
/// proven when it is read).
pub fn project_dir(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(PROJECT_FILE)).is_ok())
        .map(Path::to_path_buf)
}

/// The nearest `.cuekit.yaml` at or above `cwd`.
pub fn project_file(cwd: &Path) -> Option<PathBuf> {
    project_dir(cwd).map(|dir| dir.join(PROJECT_FILE))
}

/// The project file in `dir`, through the one door: its real path and its text.
pub fn read_project_file(dir: &Path) -> Result<(PathBuf, String)> {
    let root = crate::effects::project::Root::new(dir)?;
    let shown = root.path().join(PROJECT_FILE);
    let bytes = root
        .read(Path::new(PROJECT_FILE))?
        .ok_or_else(|| Error::io("read", &shown, std::io::ErrorKind::NotFound.into()))?;
    // A link inside the project names the file it leads to: trust is kept by that path.
    let path = std::fs::canonicalize(&shown).unwrap_or(shown);
    let text = String::from_utf8(bytes)
        .map_err(|_| schema::invalid(&path, 1, 1, "the file is not valid UTF-8".to_string()))?;
    Ok((path, text))
}

pub fn user_file() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "cuekit").map(|dirs| dirs.config_dir().join(USER_FILE))
}

/// The user's own file (or any file the user names): read as it is, links and all.
/// A config file's text, checked as a file at `path` (its errors name that path).
pub fn parse_text(text: &str, path: &Path) -> Result<ConfigFile> {
    schema::parse(text, path)
}

pub fn parse_file(path: &Path) -> Result<ConfigFile> {
    let text = std::fs::read_to_string(path).map_err(|err| Error::io("read", path, err))?;
    schema::parse(&text, path)
}

/// The starter file `cuekit init` writes: the documented example.
/// A check as the config sets it (`check:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckSettings {
    pub run: Vec<String>,
    pub rounds: Option<u32>,
    pub timeout: Option<Duration>,
    pub protect: Vec<String>,
}

pub const EXAMPLE: &str = include_str!("../../../.cuekit.yaml.example");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_parses_and_documents_every_key() {
        let file = schema::parse(EXAMPLE, Path::new("/p/.cuekit.yaml")).unwrap();
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
            "on_conflict:",
            "notify:",
            "notify_on:",
            "worktree:",
            "dir:",
            "branch_prefix:",
            "copy:",
            "symlink:",
            "setup:",
            "hosts:",
            "limits:",
            "running:",
            "agents:",
            "retry:",
            "backoff:",
            "ssh:",
            "cuekit:",
            "cwd:",
        ] {
            assert!(EXAMPLE.contains(key), "{key} is not documented");
        }
        // As `cuekit init` writes it, a project file sets no key its classes would ignore.
        let value = serde_yaml_ng::from_str(EXAMPLE).unwrap();
        let (_, withheld) = class::sift(value, true);
        assert!(withheld.is_empty(), "{withheld:?}");
    }

    fn layer(text: &str) -> ConfigFile {
        schema::parse(text, Path::new("/p/.cuekit.yaml")).unwrap()
    }

    /// A config of a project file (sifted as `load` does) over a user file.
    fn config(project: &str, trusted: bool, user: &str) -> Config {
        let (sifted, withheld) = class::sift(serde_yaml_ng::from_str(project).unwrap(), trusted);
        Config {
            layers: vec![
                (
                    Source::Project("/p".into()),
                    serde_yaml_ng::from_value(sifted).unwrap(),
                ),
                (Source::User("/u".into()), layer(user)),
            ],
            project_trust: Some((
                "/p".into(),
                if trusted {
                    TrustState::Trusted
                } else {
                    TrustState::Changed
                },
            )),
            withheld,
        }
    }

    #[test]
    fn nearer_layers_win_and_adapter_keys_beat_defaults() {
        let project =
            "defaults:\n  model: flash\nadapters:\n  gemini:\n    env:\n      A: project\n";
        let user = "defaults:\n  agent: gemini\n  model: pro\nadapters:\n  gemini:\n    model: flash-lite\n    env:\n      A: user\n      B: user\n";
        let trusted = config(project, true, user);
        assert_eq!(
            trusted.model("gemini").unwrap(),
            Setting {
                value: "flash".into(),
                source: Source::Project("/p".into())
            }
        );
        assert_eq!(trusted.agent().source, Source::User("/u".into()));
        assert_eq!(
            trusted.width(),
            Setting {
                value: 200,
                source: Source::BuiltIn
            }
        );
        let env = trusted.env("gemini");
        assert_eq!(env["A"].value, "project");
        assert_eq!(env["B"].source, Source::User("/u".into()));
        assert!(trusted.untrusted_code_keys("gemini").is_empty());

        // Untrusted, the project's code-running keys are named and not used; the rest apply.
        let untrusted = config(project, false, user);
        assert_eq!(
            untrusted.untrusted_code_keys("gemini"),
            ["adapters.gemini.env.A"]
        );
        assert_eq!(untrusted.env("gemini")["A"].value, "user");
        assert_eq!(untrusted.model("gemini").unwrap().value, "flash");
        let refused = untrusted.refuse_untrusted("gemini").unwrap_err();
        assert_eq!(refused.code, ErrorCode::ConfigUntrusted);
        assert!(
            refused.message.contains("adapters.gemini.env.A"),
            "{}",
            refused.message
        );
        assert!(untrusted.refuse_untrusted("codex").is_ok());
    }

    #[test]
    fn a_project_may_tighten_the_permission_policy_never_loosen_it() {
        let gemini = crate::domain::adapter::lookup("gemini").unwrap();
        // The user keeps prompts; the project turns the bypass on and asks for yolo: ignored.
        let user = "adapters:\n  gemini:\n    permissions: prompt\n";
        let loose = config(
            "adapters:\n  gemini:\n    permissions: bypass\n    approval_mode: yolo\n",
            true,
            user,
        );
        let policy = loose.policy(gemini);
        assert_eq!(policy.allowed, Autonomy::Ask);
        assert_eq!(policy.permissions.unwrap().value, Permissions::Prompt);
        assert_eq!(policy.approval_mode, None);
        let ignored: Vec<&str> = policy.ignored.iter().map(|w| w.key.as_str()).collect();
        assert_eq!(
            ignored,
            [
                "adapters.gemini.approval_mode",
                "adapters.gemini.permissions"
            ]
        );
        assert_eq!(loose.warnings_for(gemini).len(), 2);
        // Stricter values apply.
        let strict = config("defaults:\n  approval_mode: plan\n", false, user);
        let policy = strict.policy(gemini);
        assert_eq!(policy.approval_mode.unwrap().value, "plan");
        assert!(policy.ignored.is_empty());
        // With no policy of the user's, the built-in bypass is the ceiling: anything applies.
        let free = config("adapters:\n  gemini:\n    approval_mode: yolo\n", false, "");
        assert_eq!(free.policy(gemini).approval_mode.unwrap().value, "yolo");
    }

    #[test]
    fn user_only_keys_of_a_project_are_ignored_with_a_warning() {
        let project =
            "tmux:\n  socket: default\nmonitor:\n  interval: 1ms\nhosts:\n  evil:\n    ssh: x\n";
        let config = config(project, true, "");
        assert_eq!(config.socket().source, Source::BuiltIn);
        assert!(config.hosts().is_empty());
        assert_eq!(config.monitor_interval().value, Duration::from_secs(1));
        let gemini = crate::domain::adapter::lookup("gemini").unwrap();
        let warnings = config.warnings_for(gemini);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].starts_with("tmux.socket in /p is ignored (user only)"));
        assert!(config.refuse_untrusted("gemini").is_ok());
    }
}
