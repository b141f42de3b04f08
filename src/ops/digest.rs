//! The digest (issue 53): `cuekit digest [--since]` in the terminal, and the one message sent
//! to the user's channels when the queue drains, at `notify.digest_at`, or on `--send`. Every
//! task of this machine is looked at once (the same listing as `list --all`, hosts left out:
//! a digest never waits on ssh).

use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::domain::digest::{self, Digest, Item};
use crate::domain::error::{Error, Result};
use crate::domain::notice::{self, Event, Notice};
use crate::effects::store::{self, notified};
use crate::ops::background::outbound::{Outbound, dispatch};

/// How far back a digest looks when none went out before and `--since` is not given.
pub const DEFAULT_SPAN: Duration = Duration::from_secs(24 * 3600);

/// What `cuekit digest` shows.
#[derive(Debug, Clone, Serialize)]
pub struct DigestReport {
    pub since: String,
    pub headline: String,
    pub lines: Vec<String>,
    pub digest: Digest,
    /// With `--send`: the channels it went to (nothing when another sender had it first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_to: Option<Vec<String>>,
}

/// The moment a digest starts from: `--since` (a duration back, or an RFC 3339 time), else
/// the last digest sent, else a day back.
pub fn since(text: Option<&str>) -> Result<SystemTime> {
    if let Some(text) = text {
        if let Ok(span) = humantime::parse_duration(text) {
            return Ok(SystemTime::now() - span);
        }
        return humantime::parse_rfc3339_weak(text).map_err(|_| {
            Error::invalid_input(format!("--since {text}: not a duration or a time"))
                .with_hint("e.g. --since 12h, or --since 2026-01-31T07:30:00Z")
        });
    }
    Ok(notified::last_digest()
        .and_then(|at| humantime::parse_rfc3339_weak(&at).ok())
        .unwrap_or_else(|| SystemTime::now() - DEFAULT_SPAN))
}

/// The digest of every task of this machine since `from`.
pub fn digest(from: SystemTime, cwd: &Path) -> Result<DigestReport> {
    let views = crate::ops::list::listing(true, cwd, None, None)?.views;
    let items: Vec<Item> = views
        .iter()
        .map(|view| Item {
            task_id: view.id.clone(),
            status: view.status.as_str().to_string(),
            reason: view.reason.clone(),
            ended_since: view.status.is_terminal()
                && view
                    .ended_at
                    .as_deref()
                    .and_then(|at| humantime::parse_rfc3339_weak(at).ok())
                    .is_some_and(|at| at >= from),
            checked: view.check.is_some(),
            conflicts_with: view
                .conflicts
                .iter()
                .filter(|other| store::is_task_id(other))
                .cloned()
                .collect(),
        })
        .collect();
    let digest = digest::summarize(&items);
    Ok(DigestReport {
        since: humantime::format_rfc3339_seconds(from).to_string(),
        headline: digest.headline(),
        lines: digest.lines(),
        digest,
        sent_to: None,
    })
}

/// Sends `report` to the user's channels that take digests, once for `claim`; the channels'
/// names, and their threads.
pub fn send(report: &DigestReport, claim: &str) -> (Vec<String>, Vec<JoinHandle<()>>) {
    let outbound = Outbound::user();
    let secrets = outbound.secrets();
    let base = Notice {
        event: Event::Digest,
        task_id: "digest".to_string(),
        status: report.headline.clone(),
        reason: None,
        objective: notice::clean(&report.lines.join("\n"), 1500, &secrets),
        age_secs: 0,
        url: outbound.origin.clone(),
        report: None,
        transition_id: claim.to_string(),
    };
    let wanting: Vec<String> = outbound
        .channels
        .iter()
        .filter(|channel| notice::wanted(channel.on(), &base))
        .map(|channel| channel.name.clone())
        .collect();
    let Some(log) = store::data_dir().map(|dir| dir.join("notify/digest.jsonl")) else {
        return (Vec::new(), Vec::new());
    };
    let threads = dispatch(&outbound, &base, None, claim, &log);
    if threads.is_empty() {
        return (Vec::new(), threads);
    }
    let _ = notified::set_last_digest(&crate::effects::clock::now_rfc3339());
    (wanting, threads)
}

/// `cuekit digest --send`: today's digest at most once (a claim per day, shared with
/// `notify.digest_at`), waiting for its sends.
pub fn send_now(from: SystemTime, cwd: &Path) -> Result<DigestReport> {
    let mut report = digest(from, cwd)?;
    let (_, date) = crate::effects::clock::local_now();
    let (to, threads) = send(&report, &format!("digest-{date}"));
    for thread in threads {
        let _ = thread.join();
    }
    report.sent_to = Some(to);
    Ok(report)
}

/// The digest when nothing is left running or queued: sent once for that state of the
/// registry (a second monitor seeing the same state claims the same key). Called beside the
/// monitor's tick after an ending.
pub fn on_drain() -> Vec<JoinHandle<()>> {
    // Only a channel that takes digests makes the registry worth reading.
    let outbound = Outbound::user();
    let takes = |channel: &crate::ops::background::outbound::Channel| {
        channel
            .on()
            .is_some_and(|on| on.contains(&notice::On::Event(Event::Digest)))
    };
    if !outbound.channels.iter().any(takes) {
        return Vec::new();
    }
    let Ok(ids) = store::registered_ids() else {
        return Vec::new();
    };
    let mut state = String::new();
    for id in &ids {
        let Some(lifecycle) = store::lifecycle(id) else {
            continue;
        };
        if !lifecycle.status.is_terminal() {
            return Vec::new();
        }
        state.push_str(&format!(
            "{id}:{}\n",
            lifecycle.ended_at.unwrap_or_default()
        ));
    }
    if state.is_empty() || store::schedule::any_queued() {
        return Vec::new();
    }
    let Ok(report) = digest(
        since(None).unwrap_or(SystemTime::UNIX_EPOCH),
        Path::new("/"),
    ) else {
        return Vec::new();
    };
    if report.digest.ended.is_empty() {
        return Vec::new();
    }
    let key = format!(
        "drain-{:016x}",
        crate::domain::transition::screen_hash(&state)
    );
    send(&report, &key).1
}

/// At `notify.digest_at` (local time), once a day: called by the monitor's tick.
pub fn when_due(digest_at: u32, last_day: &mut String) -> Vec<JoinHandle<()>> {
    let (minute, date) = crate::effects::clock::local_now();
    if minute < digest_at || *last_day == date {
        return Vec::new();
    }
    last_day.clone_from(&date);
    let report = match digest(
        since(None).unwrap_or(SystemTime::UNIX_EPOCH),
        Path::new("/"),
    ) {
        Ok(report) => report,
        Err(_) => return Vec::new(),
    };
    send(&report, &format!("digest-{date}")).1
}
