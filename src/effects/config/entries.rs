//! `cuekit config`: every key with its effective value and where it came from.

use std::time::Duration;

use serde::Serialize;

use super::{Config, Permissions, Setting, Source, built_in};
use crate::domain::adapter::ADAPTERS;

/// One effective value.
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
            let policy = self.policy(adapter);
            let permissions = policy
                .permissions
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
                entry(key("approval_mode"), policy.approval_mode),
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
            ("on_conflict", hooks.on_conflict),
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

    /// What the project file sets that does not apply: the keys its classes withhold, and the
    /// policy values looser than the user's, each with its class and why.
    pub fn ignored(&self) -> Vec<super::Withheld> {
        let mut ignored = self.withheld.clone();
        for adapter in ADAPTERS {
            ignored.extend(self.policy(adapter).ignored);
        }
        ignored.extend(self.sandbox_ignored());
        ignored
    }
}
