//! Notices beyond this machine (issue 53): a transition the monitor announced becomes one
//! notice per channel of the user's that asked for it (`notify.channels`, the user's own file
//! only), sent once per transition — the transition's id is claimed first (`store::notified`),
//! so two monitors or a restarted one never send it twice — on threads of their own, never on
//! the monitor's tick: a dead endpoint delays no transition, no ending and no other channel.
//! What became of each is appended to the task's `events.jsonl` (`cuekit_notify_sent`), and a
//! failure to `notify/failures.jsonl` too (`doctor` counts them).

use std::path::Path;
use std::thread::JoinHandle;

use crate::domain::notice::{self, Event, Notice, On, Outgoing, QuietHours};
use crate::domain::status::Status;
use crate::domain::transition::Transition;
use crate::effects::config::{Config, NotifySettings, SendChannel};
use crate::effects::outbound::{Delivery, Pace, send};
use crate::effects::store::{self, notified};
use crate::ops::task::Task;

/// ntfy's public server, when a channel names none.
pub const NTFY_SERVER: &str = "https://ntfy.sh";

/// One channel, resolved: where to, which events, whether the child's report goes too.
#[derive(Debug, Clone)]
pub struct Channel {
    pub name: String,
    pub kind: &'static str,
    on: Option<Vec<On>>,
    include_report: bool,
    target: Target,
}

#[derive(Debug, Clone)]
enum Target {
    Webhook(String),
    Slack(String),
    Discord(String),
    Ntfy {
        server: String,
        topic: String,
        token: Option<String>,
    },
}

impl Channel {
    /// Its `notify_on` (`None`: every event).
    pub fn on(&self) -> Option<&[On]> {
        self.on.as_deref()
    }
}

/// The user's outbound settings, resolved.
#[derive(Debug, Clone, Default)]
pub struct Outbound {
    pub channels: Vec<Channel>,
    pub quiet: Option<QuietHours>,
    pub digest_at: Option<u32>,
    pub origin: Option<String>,
}

impl Outbound {
    pub fn of(config: &Config) -> Outbound {
        config
            .user_notify()
            .map(|settings| resolve(&settings))
            .unwrap_or_default()
    }

    /// The user's own (no project file's).
    pub fn user() -> Outbound {
        Config::load(Path::new("/"))
            .map(|config| Outbound::of(&config))
            .unwrap_or_default()
    }

    /// The task's page on the user's `cuekit serve`, when its public origin is known.
    pub fn page(&self, task_id: &str) -> Option<String> {
        self.origin
            .as_ref()
            .map(|origin| format!("{}/t/{task_id}", origin.trim_end_matches('/')))
    }

    /// Whether now is within the quiet hours.
    pub fn quiet_now(&self) -> bool {
        let (minute, _) = crate::effects::clock::local_now();
        self.quiet.is_some_and(|quiet| quiet.contains(minute))
    }

    /// What no payload may carry: the channels' own URLs and tokens, and the values of the
    /// user's secret-named variables.
    pub fn secrets(&self) -> Vec<String> {
        let mut secrets: Vec<String> = std::env::vars()
            .filter(|(name, value)| crate::domain::sandbox::looks_secret(name, value))
            .map(|(_, value)| value)
            .collect();
        for channel in &self.channels {
            match &channel.target {
                Target::Webhook(url) | Target::Slack(url) | Target::Discord(url) => {
                    secrets.push(url.clone());
                }
                Target::Ntfy { token, .. } => secrets.extend(token.clone()),
            }
        }
        secrets
    }
}

fn resolve(settings: &NotifySettings) -> Outbound {
    let channels = settings
        .channels
        .iter()
        .filter_map(|(name, channel)| resolve_channel(name, channel))
        .collect();
    Outbound {
        channels,
        quiet: settings.quiet_hours.as_deref().and_then(QuietHours::parse),
        digest_at: settings.digest_at.as_deref().and_then(notice::parse_clock),
        origin: settings.public_origin.clone(),
    }
}

fn resolve_channel(name: &str, channel: &SendChannel) -> Option<Channel> {
    let (kind, target) = if let Some(url) = &channel.webhook {
        ("webhook", Target::Webhook(url.clone()))
    } else if let Some(url) = &channel.slack {
        ("slack", Target::Slack(url.clone()))
    } else if let Some(url) = &channel.discord {
        ("discord", Target::Discord(url.clone()))
    } else {
        let ntfy = channel.ntfy.as_ref()?;
        let token = ntfy.token.clone().or_else(|| {
            ntfy.token_env
                .as_ref()
                .and_then(|name| std::env::var(name).ok())
                .filter(|value| !value.is_empty())
        });
        (
            "ntfy",
            Target::Ntfy {
                server: ntfy.server.clone().unwrap_or_else(|| NTFY_SERVER.into()),
                topic: ntfy.topic.clone(),
                token,
            },
        )
    };
    Some(Channel {
        name: name.to_string(),
        kind,
        on: channel
            .notify_on
            .as_ref()
            .map(|words| words.iter().filter_map(|w| On::parse(w)).collect()),
        include_report: channel.include_report,
        target,
    })
}

/// The request a channel sends for `notice`, and the headers kept out of every builder.
fn request(channel: &Channel, notice: &Notice) -> (Outgoing, Vec<(String, String)>) {
    match &channel.target {
        Target::Webhook(url) => (notice::webhook(url, notice), Vec::new()),
        Target::Slack(url) => (notice::slack(url, notice), Vec::new()),
        Target::Discord(url) => (notice::discord(url, notice), Vec::new()),
        Target::Ntfy {
            server,
            topic,
            token,
        } => (
            notice::ntfy(server, topic, notice),
            token
                .iter()
                .map(|t| ("Authorization".to_string(), format!("Bearer {t}")))
                .collect(),
        ),
    }
}

/// The event a transition is, for the channels: a wait, an ending, a failed check.
fn event_of(transition: &Transition) -> Option<Event> {
    match transition.new_status {
        Status::InputRequired => Some(Event::InputRequired),
        status if status.is_terminal() => {
            if transition.reason.as_deref() == Some("check_failed") {
                Some(Event::CheckFailed)
            } else {
                Some(Event::Ended)
            }
        }
        _ => None,
    }
}

/// Starts the notices of a transition the monitor announced; `wait_screen` is the announced
/// wait's screen hash (part of the transition's id). Returns the sending threads.
pub fn on_transition(
    task: &Task,
    transition: &Transition,
    wait_screen: Option<u64>,
    config: &Config,
) -> Vec<JoinHandle<()>> {
    let Some(event) = event_of(transition) else {
        return Vec::new();
    };
    let record = &task.record;
    let outbound = Outbound::of(config);
    if outbound.channels.is_empty() || notified::is_muted(&record.id) {
        return Vec::new();
    }
    let secrets = outbound.secrets();
    let transition_id = notice::transition_id(
        &record.id,
        record.started_at.as_deref(),
        transition.old_status.map(Status::as_str),
        transition.new_status.as_str(),
        transition.reason.as_deref(),
        wait_screen.filter(|_| event == Event::InputRequired),
    );
    let base = Notice {
        event,
        task_id: record.id.clone(),
        status: transition.new_status.as_str().to_string(),
        reason: transition
            .reason
            .as_deref()
            .and_then(crate::ops::background::wake::known_reason)
            .map(str::to_string),
        objective: notice::clean(&record.spec.objective, notice::OBJECTIVE_CHARS, &secrets),
        age_secs: crate::effects::clock::seconds_since(&record.created_at).unwrap_or(0),
        url: outbound.page(&record.id),
        report: None,
        transition_id: transition_id.clone(),
    };
    let report = store::report_of(&record.id)
        .map(|report| notice::clean(&report.message, notice::REPORT_CHARS, &secrets));
    let log = record.task_dir.join(store::EVENTS_FILE);
    dispatch(
        &outbound,
        &base,
        report,
        &format!("t-{}-{transition_id}", record.id),
        &log,
    )
}

/// Sends `base` on each channel that wants it, once for `claim`: a thread per channel.
pub fn dispatch(
    outbound: &Outbound,
    base: &Notice,
    report: Option<String>,
    claim: &str,
    log: &Path,
) -> Vec<JoinHandle<()>> {
    let wanting: Vec<&Channel> = outbound
        .channels
        .iter()
        .filter(|channel| notice::wanted(channel.on.as_deref(), base))
        .collect();
    if wanting.is_empty() {
        return Vec::new();
    }
    if base.event != Event::Digest && outbound.quiet_now() {
        append(
            log,
            &serde_json::json!({"type": "cuekit_notify_sent", "event": base.event,
                "transition_id": base.transition_id, "held": "quiet_hours"}),
        );
        return Vec::new();
    }
    // Claimed once for every channel: whoever claims it sends to all of them.
    if !notified::claim(claim) {
        return Vec::new();
    }
    wanting
        .into_iter()
        .map(|channel| {
            let mut notice = base.clone();
            if channel.include_report && base.event != Event::InputRequired {
                notice.report.clone_from(&report);
            }
            let channel = channel.clone();
            let log = log.to_path_buf();
            std::thread::spawn(move || deliver(&channel, &notice, &log))
        })
        .collect()
}

fn deliver(channel: &Channel, notice: &Notice, log: &Path) {
    let (request, secret) = request(channel, notice);
    let delivery: Delivery = send(&request, &secret, Pace::default());
    let line = serde_json::json!({"type": "cuekit_notify_sent", "at": crate::effects::clock::now_rfc3339(),
        "channel": channel.name, "kind": channel.kind, "event": notice.event,
        "task_id": notice.task_id, "transition_id": notice.transition_id, "delivery": delivery});
    append(log, &line);
    if !delivery.sent {
        notified::record_failure(&line);
    }
}

fn append(path: &Path, value: &serde_json::Value) {
    let _ = store::append_line(path, &serde_json::to_vec(value).expect("values serialize"));
}

/// A race's decision, announced once (its claim is the race's) when a candidate's ending let
/// it be taken: the winner (or that none passed) in cuekit's words.
pub fn race_decided(task: &Task) -> Vec<JoinHandle<()>> {
    let Some(race) = task
        .placement
        .facts
        .as_ref()
        .and_then(|facts| facts.race.clone())
    else {
        return Vec::new();
    };
    let Ok(record) = store::race::load(&race) else {
        return Vec::new();
    };
    let Some(decision) = record.decision else {
        return Vec::new();
    };
    let outbound = Outbound::user();
    if outbound.channels.is_empty() {
        return Vec::new();
    }
    let secrets = outbound.secrets();
    let winner = decision
        .pick
        .winner
        .as_deref()
        .filter(|id| store::is_task_id(id));
    let base = Notice {
        event: Event::RaceDecided,
        task_id: race.clone(),
        status: if winner.is_some() {
            "decided"
        } else {
            "no_winner"
        }
        .to_string(),
        reason: None,
        objective: notice::clean(
            &format!(
                "{} — winner: {}",
                record.objective,
                winner.unwrap_or("none passed")
            ),
            notice::OBJECTIVE_CHARS,
            &secrets,
        ),
        age_secs: crate::effects::clock::seconds_since(&record.created_at).unwrap_or(0),
        url: winner.and_then(|id| outbound.page(id)),
        report: None,
        transition_id: notice::transition_id(&race, None, None, "decided", None, None),
    };
    let log = task.record.task_dir.join(store::EVENTS_FILE);
    dispatch(&outbound, &base, None, &format!("r-{race}"), &log)
}
