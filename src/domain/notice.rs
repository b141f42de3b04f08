//! A notification that leaves this machine (issue 53): what it says and the requests that carry
//! it to a webhook, Slack, Discord or ntfy — pure builders, sent by `effects::outbound`.
//!
//! What a notice may hold is decided here once: cuekit's own words and closed-set values (the
//! event, the task id, the status, a reason from cuekit's set), the objective the user wrote
//! (bounded, control characters stripped, planted secrets masked), the task's age, the task
//! page's URL when the user configured a public origin, and a child's words only where the
//! channel opted in (`include_report`), bounded and cleaned the same way. A token never enters a
//! payload: ntfy's goes in the `Authorization` header, added by the sender.

use serde::Serialize;
use serde_json::{Value, json};

/// The events a channel may ask for (`notify_on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// The child waits on a human; the notice names the kind (its reason).
    InputRequired,
    /// The task ended (any terminal status).
    Ended,
    /// The task ended because its check failed.
    CheckFailed,
    /// A best-of-N race was decided.
    RaceDecided,
    /// The digest (`notify.digest_at`, the queue drained, `cuekit digest --send`).
    Digest,
}

impl Event {
    pub fn as_str(self) -> &'static str {
        match self {
            Event::InputRequired => "input_required",
            Event::Ended => "ended",
            Event::CheckFailed => "check_failed",
            Event::RaceDecided => "race_decided",
            Event::Digest => "digest",
        }
    }
}

/// One word of a channel's `notify_on`: an event, or `input_required:<kind>` for one kind of
/// wait (`permission_prompt`, `idle_at_prompt`, `auth_required`, `trust_required`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum On {
    Event(Event),
    InputKind(String),
}

impl On {
    /// The events a channel gets when its `notify_on` is not set (the digest is asked for by
    /// name).
    pub const DEFAULT: &'static [Event] = &[
        Event::InputRequired,
        Event::Ended,
        Event::CheckFailed,
        Event::RaceDecided,
    ];

    /// Reads one word; `None` for a word cuekit does not know.
    pub fn parse(word: &str) -> Option<On> {
        if let Some(kind) = word.strip_prefix("input_required:") {
            let plain = !kind.is_empty()
                && kind.len() <= 40
                && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
            return plain.then(|| On::InputKind(kind.to_string()));
        }
        let event = match word {
            "input_required" => Event::InputRequired,
            "ended" => Event::Ended,
            "check_failed" => Event::CheckFailed,
            "race_decided" => Event::RaceDecided,
            "digest" => Event::Digest,
            _ => return None,
        };
        Some(On::Event(event))
    }
}

/// Whether a channel whose `notify_on` is `on` (`None`: the default) takes `notice`. A check
/// that failed is an ending too: a channel that asked for endings hears of it.
pub fn wanted(on: Option<&[On]>, notice: &Notice) -> bool {
    let Some(on) = on else {
        return On::DEFAULT.contains(&notice.event);
    };
    on.iter().any(|word| match word {
        On::Event(Event::Ended) => matches!(notice.event, Event::Ended | Event::CheckFailed),
        On::Event(event) => *event == notice.event,
        On::InputKind(kind) => {
            notice.event == Event::InputRequired && notice.reason.as_deref() == Some(kind.as_str())
        }
    })
}

/// What a notice says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notice {
    pub event: Event,
    /// The task (or race) it is about.
    pub task_id: String,
    /// The task's status word (`input_required`, `completed`, `failed`, …).
    pub status: String,
    /// A reason of cuekit's closed set, or none.
    pub reason: Option<String>,
    /// The objective, bounded and cleaned.
    pub objective: String,
    pub age_secs: u64,
    /// The task's page on the user's `cuekit serve`, when a public origin is configured.
    pub url: Option<String>,
    /// The child's report, only where the channel opted in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<String>,
    /// The transition it announces (stable: the same transition, the same id).
    pub transition_id: String,
}

/// The most of an objective a notice carries.
pub const OBJECTIVE_CHARS: usize = 300;
/// The most of a child's report a notice carries (`include_report`).
pub const REPORT_CHARS: usize = 1000;

/// `text` made safe to show anywhere: control characters (escapes, bells, carriage returns,
/// bidirectional overrides) dropped, runs of whitespace made one space, at most `max` characters
/// (an ellipsis says it was cut), and each of `secrets` masked.
pub fn clean(text: &str, max: usize, secrets: &[String]) -> String {
    let mut masked = strip_escapes(text);
    for secret in secrets.iter().filter(|s| s.len() >= 6) {
        masked = masked.replace(secret.as_str(), "[secret]");
    }
    let words: Vec<String> = masked
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
        .map(|word| {
            let kept: String = word.chars().filter(|c| !invisible(*c)).collect();
            if looks_like_token(&kept) {
                "[secret]".to_string()
            } else {
                kept
            }
        })
        .filter(|word| !word.is_empty())
        .collect();
    let joined = words.join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let mut cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `text` without terminal escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL or ST`,
/// any other `ESC x`): their words would show as noise, or act on a terminal.
fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Characters that change how text shows without being seen: every Unicode format character
/// (general category Cf, Unicode 16: bidirectional controls, zero-width ones, the word joiner,
/// invisible operators, soft hyphen, prepended concatenation marks…), the whole tag block
/// U+E0000–E007F (invisible text a model reads: "ASCII smuggling"), and the variation selectors
/// (which can carry hidden bytes the same way).
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E007F}'
            | '\u{E0100}'..='\u{E01EF}'
    )
}

/// `line` (a child's or an objective's words) with Discord's markdown escaped: a masked link
/// (`[label](url)`), emphasis, spoilers, code, and a heading, quote or list at its start all
/// show as the characters typed, so the notice's own link stays the only one that hides its
/// address.
fn discord_plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 8);
    for (i, c) in line.chars().enumerate() {
        let special = matches!(
            c,
            '\\' | '*'
                | '_'
                | '~'
                | '`'
                | '|'
                | '['
                | ']'
                | '('
                | ')'
                | '<'
                | '>'
                | '#'
                | '@'
                | ':'
        ) || (i == 0 && matches!(c, '-' | '+'));
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A word shaped like a well-known credential (an API key, a chat or forge token).
fn looks_like_token(word: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sk-",
        "sk_live_",
        "ghp_",
        "gho_",
        "ghs_",
        "ghu_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "xoxa-",
        "AKIA",
        "AIza",
        "tk_",
    ];
    let word = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    word.len() >= 16
        && PREFIXES.iter().any(|prefix| word.starts_with(prefix))
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The transition's id: the task, its attempt, the statuses, the reason and the screen of a
/// wait. A monitor restarted, or a second one, computes the same id for the same transition.
pub fn transition_id(
    task_id: &str,
    attempt: Option<&str>,
    old: Option<&str>,
    new: &str,
    reason: Option<&str>,
    wait_screen: Option<u64>,
) -> String {
    let text = format!(
        "{task_id}\n{}\n{}\n{new}\n{}\n{}",
        attempt.unwrap_or(""),
        old.unwrap_or(""),
        reason.unwrap_or(""),
        wait_screen.map(|h| h.to_string()).unwrap_or_default()
    );
    format!("{:016x}", crate::domain::transition::screen_hash(&text))
}

/// The one line a person reads.
pub fn headline(notice: &Notice) -> String {
    let reason = notice
        .reason
        .as_deref()
        .map(|r| format!(" ({})", r.replace('_', " ")))
        .unwrap_or_default();
    match notice.event {
        Event::InputRequired => format!("{} needs you{reason}", notice.task_id),
        Event::CheckFailed => format!("{} failed its check", notice.task_id),
        Event::Ended => format!("{} {}{reason}", notice.task_id, notice.status),
        Event::RaceDecided => format!("race {} decided{reason}", notice.task_id),
        Event::Digest => format!("cuekit digest: {}", notice.status),
    }
}

/// The message's body: the objective, the age, the report (when opted in).
fn body_lines(notice: &Notice) -> Vec<String> {
    let mut lines = Vec::new();
    if !notice.objective.is_empty() {
        lines.push(notice.objective.clone());
    }
    if notice.event != Event::Digest {
        lines.push(format!("after {}", age(notice.age_secs)));
    }
    if let Some(report) = &notice.report {
        lines.push(format!("report: {report}"));
    }
    lines
}

fn age(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    }
}

/// A request to send: the method is always POST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

fn json_request(url: &str, body: &Value) -> Outgoing {
    Outgoing {
        url: url.to_string(),
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: serde_json::to_vec(body).expect("values serialize"),
    }
}

/// cuekit's own JSON, for a webhook of the user's.
pub fn webhook(url: &str, notice: &Notice) -> Outgoing {
    let mut body = serde_json::to_value(notice).expect("notices serialize");
    body["source"] = json!("cuekit");
    body["text"] = json!(headline(notice));
    json_request(url, &body)
}

/// Slack's incoming webhook: `{"text": …}` in mrkdwn, `&`, `<` and `>` escaped as Slack asks,
/// the page as a `<url|label>` link.
pub fn slack(url: &str, notice: &Notice) -> Outgoing {
    let escape = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut text = format!("*{}*", escape(&headline(notice)));
    for line in body_lines(notice) {
        text.push('\n');
        text.push_str(&escape(&line));
    }
    if let Some(page) = &notice.url {
        text.push_str(&format!("\n<{}|open in cuekit>", escape(page)));
    }
    json_request(url, &json!({ "text": text }))
}

/// Discord's webhook: `content` (at most 2000 characters), mentions parsed from none of it,
/// so a child's `@everyone` pings nobody, and the objective's and the report's markdown escaped
/// (a child's `[open in cuekit](https://elsewhere)` is no masked link).
pub fn discord(url: &str, notice: &Notice) -> Outgoing {
    let mut content = format!("**{}**", headline(notice));
    for line in body_lines(notice) {
        content.push('\n');
        content.push_str(&discord_plain(&line));
    }
    if let Some(page) = &notice.url {
        content.push_str(&format!("\n<{page}>"));
    }
    let content: String = content.chars().take(2000).collect();
    json_request(
        url,
        &json!({ "username": "cuekit", "content": content, "allowed_mentions": { "parse": [] } }),
    )
}

/// ntfy: a POST of the message to `<server>/<topic>` with `Title`, `Priority`, `Tags` and, when
/// the page is known, `Click`. Header values are kept to printable ASCII.
pub fn ntfy(server: &str, topic: &str, notice: &Notice) -> Outgoing {
    let ascii = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_graphic() || c == ' ' {
                    c
                } else {
                    '?'
                }
            })
            .collect()
    };
    let (priority, tags) = match notice.event {
        Event::InputRequired => ("4", "bell"),
        Event::CheckFailed => ("4", "x"),
        Event::Ended if notice.status == "completed" => ("3", "white_check_mark"),
        Event::Ended => ("3", "warning"),
        Event::RaceDecided => ("3", "checkered_flag"),
        Event::Digest => ("2", "memo"),
    };
    let mut headers = vec![
        ("Title".to_string(), ascii(&headline(notice))),
        ("Priority".to_string(), priority.to_string()),
        ("Tags".to_string(), format!("cuekit,{tags}")),
    ];
    if let Some(page) = &notice.url {
        headers.push(("Click".to_string(), ascii(page)));
    }
    Outgoing {
        url: format!("{}/{topic}", server.trim_end_matches('/')),
        headers,
        body: body_lines(notice).join("\n").into_bytes(),
    }
}

/// `HH:MM` as minutes after midnight.
pub fn parse_clock(text: &str) -> Option<u32> {
    let (hours, minutes) = text.trim().split_once(':')?;
    let (hours, minutes): (u32, u32) = (hours.parse().ok()?, minutes.parse().ok()?);
    (hours < 24 && minutes < 60 && text.trim().len() == 5).then_some(hours * 60 + minutes)
}

/// `HH:MM-HH:MM`: the minutes of a day nothing is sent (the digest says what happened). It may
/// span midnight (`22:00-07:00`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    pub start: u32,
    pub end: u32,
}

impl QuietHours {
    pub fn parse(text: &str) -> Option<QuietHours> {
        let (start, end) = text.split_once('-')?;
        Some(QuietHours {
            start: parse_clock(start)?,
            end: parse_clock(end)?,
        })
    }

    /// Whether `minute` (of the local day) is quiet.
    pub fn contains(self, minute: u32) -> bool {
        if self.start <= self.end {
            (self.start..self.end).contains(&minute)
        } else {
            minute >= self.start || minute < self.end
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(event: Event) -> Notice {
        Notice {
            event,
            task_id: "t-1".into(),
            status: "input_required".into(),
            reason: Some("permission_prompt".into()),
            objective: "fix the <b>parser</b> & tests".into(),
            age_secs: 125,
            url: Some("https://box.example/t/t-1".into()),
            report: None,
            transition_id: "00ff".into(),
        }
    }

    #[test]
    fn cleaning_drops_controls_bounds_and_masks() {
        let text = "a\x1b[31mred\x07 \u{202E}evil\r\nnext sk-abcdefghijklmnopqrstu hunter2secret \x1b]0;title\x07x";
        let cleaned = clean(text, 200, &["hunter2secret".to_string()]);
        assert_eq!(cleaned, "ared evil next [secret] [secret] x");
        assert!(!cleaned.chars().any(|c| c.is_control() || invisible(c)));
        assert!(!cleaned.contains("sk-abc"), "{cleaned}");
        assert!(!cleaned.contains("hunter2"), "{cleaned}");
        let long = clean(&"x".repeat(50), 10, &[]);
        assert_eq!(long.chars().count(), 10);
        assert!(long.ends_with('…'));
    }

    /// Verification round, reach V4: a child's report put a masked link ("open in cuekit", to
    /// any site) and invisible characters (the word joiner, Unicode tags) into a Discord notice.
    #[test]
    fn a_discord_notice_shows_a_childs_markdown_as_typed_and_drops_invisible_text() {
        let report = clean(
            "[open in cuekit](https://evil.example/pair?next=/t/x) \u{2060}hid\u{2060}den \
             \u{E0041}\u{E0042} soft\u{00AD}hyphen \u{061C}x \u{FE0F}",
            REPORT_CHARS,
            &[],
        );
        assert_eq!(
            report,
            "[open in cuekit](https://evil.example/pair?next=/t/x) hidden softhyphen x"
        );
        let mut n = notice(Event::Ended);
        n.objective = clean("# Big *bold* ||spoiler|| `code` > quote", 300, &[]);
        n.report = Some(report);
        let sent: Value = serde_json::from_slice(&discord("http://d", &n).body).unwrap();
        let content = sent["content"].as_str().unwrap();
        assert!(
            content.contains(
                r"report\: \[open in cuekit\]\(https\://evil.example/pair?next=/t/x\) hidden"
            ),
            "{content}"
        );
        assert!(
            content.contains(r"\# Big \*bold\* \|\|spoiler\|\| \`code\` \> quote"),
            "{content}"
        );
        assert!(!content.contains("](http"), "{content}");
        assert!(
            content.ends_with("\n<https://box.example/t/t-1>"),
            "{content}"
        );
        // Every format character of Unicode is dropped, not a hand-picked few.
        for c in [
            '\u{2061}',
            '\u{2064}',
            '\u{206A}',
            '\u{FFF9}',
            '\u{1D173}',
            '\u{E0001}',
            '\u{E007F}',
        ] {
            assert_eq!(
                clean(&format!("a{c}b"), 10, &[]),
                "ab",
                "U+{:04X}",
                c as u32
            );
        }
    }

    #[test]
    fn notify_on_words_and_defaults() {
        assert_eq!(On::parse("ended"), Some(On::Event(Event::Ended)));
        assert_eq!(
            On::parse("input_required:permission_prompt"),
            Some(On::InputKind("permission_prompt".into()))
        );
        assert_eq!(On::parse("input_required:Bad Kind"), None);
        assert_eq!(On::parse("running"), None);
        let wait = notice(Event::InputRequired);
        assert!(wanted(None, &wait));
        assert!(wanted(
            Some(&[On::InputKind("permission_prompt".into())]),
            &wait
        ));
        assert!(!wanted(
            Some(&[On::InputKind("idle_at_prompt".into())]),
            &wait
        ));
        assert!(wanted(
            Some(&[On::Event(Event::Ended)]),
            &notice(Event::CheckFailed)
        ));
        assert!(!wanted(
            Some(&[On::Event(Event::CheckFailed)]),
            &notice(Event::Ended)
        ));
    }

    #[test]
    fn each_service_gets_its_documented_shape() {
        let n = notice(Event::InputRequired);
        let hook = webhook("http://h/x", &n);
        let body: Value = serde_json::from_slice(&hook.body).unwrap();
        assert_eq!(body["event"], "input_required");
        assert_eq!(body["task_id"], "t-1");
        assert_eq!(body["reason"], "permission_prompt");
        assert_eq!(body["url"], "https://box.example/t/t-1");
        let slack: Value = serde_json::from_slice(&slack("http://s", &n).body).unwrap();
        let text = slack["text"].as_str().unwrap();
        assert!(
            text.contains("&lt;b&gt;parser&lt;/b&gt; &amp; tests"),
            "{text}"
        );
        assert!(text.contains("<https://box.example/t/t-1|open in cuekit>"));
        let discord: Value = serde_json::from_slice(&discord("http://d", &n).body).unwrap();
        assert_eq!(discord["allowed_mentions"]["parse"], json!([]));
        let ntfy = ntfy("https://ntfy.sh/", "topic", &n);
        assert_eq!(ntfy.url, "https://ntfy.sh/topic");
        let header = |name: &str| {
            ntfy.headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(header("Priority").as_deref(), Some("4"));
        assert_eq!(
            header("Click").as_deref(),
            Some("https://box.example/t/t-1")
        );
        assert!(header("Title").unwrap().contains("t-1 needs you"));
    }

    #[test]
    fn quiet_hours_may_span_midnight() {
        let night = QuietHours::parse("22:00-07:00").unwrap();
        assert!(night.contains(23 * 60));
        assert!(night.contains(6 * 60 + 59));
        assert!(!night.contains(7 * 60));
        let lunch = QuietHours::parse("12:00-13:00").unwrap();
        assert!(lunch.contains(12 * 60 + 30) && !lunch.contains(13 * 60));
        assert_eq!(QuietHours::parse("25:00-07:00"), None);
        assert_eq!(parse_clock("7:30"), None);
        assert_eq!(parse_clock("07:30"), Some(450));
    }

    #[test]
    fn a_transition_keeps_its_id() {
        let a = transition_id(
            "t",
            Some("s"),
            Some("running"),
            "input_required",
            None,
            Some(7),
        );
        let b = transition_id(
            "t",
            Some("s"),
            Some("running"),
            "input_required",
            None,
            Some(7),
        );
        let c = transition_id(
            "t",
            Some("s"),
            Some("running"),
            "input_required",
            None,
            Some(8),
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
