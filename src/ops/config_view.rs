//! `cuekit config`: every setting in effect, each with where it came from.

use std::path::Path;

use crate::domain::error::Result;
use crate::effects::config::{Config, Entry, Source, Withheld};

/// The settings in effect for `cwd`, the project file's trust first, and what an untrusted
/// project file asked for and was refused.
pub fn config_entries(cwd: &Path) -> Result<(Vec<Entry>, Vec<Withheld>)> {
    let config = Config::load(cwd)?;
    let mut entries = config.entries();
    let ignored = config.ignored();
    if let Some((path, state)) = config.project_trust() {
        entries.insert(
            0,
            Entry {
                key: "trust".into(),
                value: if ignored.is_empty() {
                    serde_json::json!(state)
                } else {
                    serde_json::json!({"state": state, "ignored": ignored})
                },
                source: Source::Project(path.to_path_buf()),
            },
        );
    }
    Ok((entries, ignored))
}
