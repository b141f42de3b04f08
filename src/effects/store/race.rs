//! Races on disk, in the user's data directory (never a project's: a candidate can write its
//! project): `races/<race>.json` is the [`RaceRecord`], written whole and atomically;
//! `races/<race>.lock` is held by whoever decides it, so a race is decided once;
//! `races/<race>.again` asks that holder to look once more.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::domain::error::{Error, ErrorCode, Result};
use crate::domain::race::{Candidate, Pick, is_race_id};

/// A race as its submit made it, and its decision once taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceRecord {
    pub id: String,
    pub created_at: String,
    /// The objective's first line, for people.
    pub objective: String,
    /// The candidates' task ids, in submit order.
    pub candidates: Vec<String>,
    /// The repository the candidates' checkouts come from (where the race keeps its refs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<PathBuf>,
    /// Decide at the first pass, not when every candidate ended.
    #[serde(default)]
    pub first: bool,
    /// Merge the winner at once when it passed and conflicts with nothing.
    #[serde(default)]
    pub merge: bool,
    /// Set once every candidate was submitted: a race is never decided on part of its field.
    #[serde(default)]
    pub complete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// The pick, the candidates as they stood when it was taken, and what was done after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub at: String,
    pub pick: Pick,
    pub candidates: Vec<Candidate>,
    /// Candidates still running at the pick, cancelled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cancelled: Vec<String>,
    /// The refs the losers' work is kept at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<String>,
    /// `--merge`: the winner's merge, or why it was not merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<String>,
    /// What could not be done after the pick (a checkout that would not go), for people.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

fn dir() -> Result<PathBuf> {
    super::data_dir()
        .map(|data| data.join("races"))
        .ok_or_else(|| {
            Error::new(ErrorCode::Io, "cannot find cuekit's data directory")
                .with_hint("set HOME (or XDG_DATA_HOME)")
        })
}

fn file(race: &str, suffix: &str) -> Result<PathBuf> {
    if !is_race_id(race) {
        return Err(not_found(race));
    }
    Ok(dir()?.join(format!("{race}.{suffix}")))
}

fn not_found(race: &str) -> Error {
    Error::new(ErrorCode::TaskNotFound, format!("no race '{race}'"))
        .with_hint("a race id is r_ and 12 hex digits, as `cuekit submit --best-of N` printed it")
}

/// Writes the record (owner-only, atomically).
pub fn save(record: &RaceRecord) -> Result<()> {
    let path = file(&record.id, "json")?;
    if let Some(parent) = path.parent() {
        super::create_private_dir(parent)?;
    }
    super::write_atomic(
        &path,
        &serde_json::to_vec_pretty(record).expect("a race record serializes"),
    )
}

/// The race's record; `task_not_found` for an unknown id.
pub fn load(race: &str) -> Result<RaceRecord> {
    let path = file(race, "json")?;
    let bytes = super::read_small(&path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => not_found(race),
        _ => Error::io("read", &path, err),
    })?;
    serde_json::from_slice(&bytes).map_err(|err| {
        Error::new(
            ErrorCode::Io,
            format!("the race record {} is not readable: {err}", path.display()),
        )
        .with_hint("remove it with `cuekit rm RACE`")
    })
}

/// The lock a race's decider holds (blocking until it is free).
pub fn lock(race: &str) -> Result<std::fs::File> {
    let path = file(race, "lock")?;
    if let Some(parent) = path.parent() {
        super::create_private_dir(parent)?;
    }
    super::lock_file(&path)
}

/// Forgets a race: its record, its lock and any request to look again.
pub fn remove(race: &str) -> Result<()> {
    for suffix in ["json", "lock", "again"] {
        let path = file(race, suffix)?;
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(Error::io("remove", &path, err)),
        }
    }
    Ok(())
}

/// Who is submitting a race's candidates, written before the record and removed once it is
/// complete: a submit killed part-way leaves this behind, and the next listing finishes the
/// race with the candidates that were registered (or forgets it, none were)
/// (`ops::reap`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submitting {
    #[serde(skip)]
    pub race: String,
    pub pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<u64>,
}

fn submitting_dir() -> Result<PathBuf> {
    Ok(dir()?.join("submitting"))
}

/// Says this process is submitting `race`'s candidates.
pub fn mark_submitting(race: &str) -> Result<()> {
    let path = submitting_dir()?.join(file(race, "json")?.file_name().expect("a race's file"));
    super::create_private_dir(&submitting_dir()?)?;
    let me = std::process::id();
    let mark = Submitting {
        race: race.to_string(),
        pid: me,
        start: crate::effects::process::start_ticks(me),
    };
    super::write_atomic(&path, &serde_json::to_vec(&mark).expect("serializes"))
}

/// The race's submit is over (complete, or undone).
pub fn done_submitting(race: &str) {
    if let (Ok(dir), Ok(path)) = (submitting_dir(), file(race, "json")) {
        let _ = std::fs::remove_file(dir.join(path.file_name().expect("a race's file")));
    }
}

/// Every race whose submit has not finished (one directory read; empty nearly always).
pub fn submitting() -> Vec<Submitting> {
    let Ok(entries) = submitting_dir()
        .and_then(|dir| std::fs::read_dir(&dir).map_err(|err| Error::io("read", &dir, err)))
    else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let race = name.strip_suffix(".json").filter(|race| is_race_id(race))?;
            let bytes = super::read_small(&entry.path()).ok()?;
            let mark: Submitting = serde_json::from_slice(&bytes).ok()?;
            Some(Submitting {
                race: race.to_string(),
                ..mark
            })
        })
        .collect()
}

/// A fresh race id: `r_` and 12 hex digits.
pub fn new_race_id() -> String {
    let uuid = uuid::Uuid::new_v4().simple().to_string();
    format!("r_{}", &uuid[..12])
}

/// The lock, if nobody holds it now.
pub fn try_lock(race: &str) -> Result<Option<std::fs::File>> {
    let path = file(race, "lock")?;
    if let Some(parent) = path.parent() {
        super::create_private_dir(parent)?;
    }
    super::lock_file_try(&path)
}

/// Asks whoever holds the lock to look at the race again once done (a candidate ended while
/// it decided): see `ops::race::settle`.
pub fn ask_again(race: &str) -> Result<()> {
    let path = file(race, "again")?;
    super::write_atomic(&path, b"")
}

/// Takes the request to look again: whether there was one.
pub fn take_again(race: &str) -> bool {
    file(race, "again").is_ok_and(|path| std::fs::remove_file(path).is_ok())
}

/// Whether a request to look again waits.
pub fn asked_again(race: &str) -> bool {
    file(race, "again").is_ok_and(|path| path.exists())
}

/// The ids given, each race's replaced by its candidates (in submit order): what `status`,
/// `wait`, `cancel` and `rm` act on.
pub fn expand(ids: &[String]) -> Result<Vec<String>> {
    if !ids.iter().any(|id| is_race_id(id)) {
        return Ok(ids.to_vec());
    }
    let mut expanded = Vec::new();
    for id in ids {
        if is_race_id(id) {
            expanded.extend(load(id)?.candidates);
        } else {
            expanded.push(id.clone());
        }
    }
    Ok(expanded)
}
