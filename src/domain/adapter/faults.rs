//! Passing faults an agent's final words name: a rate limit or quota (retried after a wait,
//! the one the agent asks for where it names one) and transient service errors. Data per
//! adapter, matched without regard to case in the end of what the agent printed (its final
//! error, its stderr, its pane).

use std::time::Duration;

/// The texts that mark an attempt's ending as a passing fault.
#[derive(Debug)]
pub struct Faults {
    pub rate_limited: &'static [&'static str],
    pub transient: &'static [&'static str],
    /// How the agent's TUI shows an error it will not retry on its own (Gemini CLI:
    /// `[API Error: …]`): an idle screen whose error line names a fault is a stuck attempt. A
    /// screen is never read for faults without one, so an answer that merely talks of rate
    /// limits is never taken for one.
    pub screen_error_markers: &'static [&'static str],
}

/// What the model APIs behind the agents answer (HTTP 429 and Google's `RESOURCE_EXHAUSTED`,
/// Anthropic's and OpenAI's `rate_limit_error` / "Rate limit reached", Gemini CLI's own quota
/// message), and their overload and network failures.
pub const API_FAULTS: Faults = Faults {
    rate_limited: &[
        "resource_exhausted",
        "resource has been exhausted",
        "\"code\":429",
        "\"code\": 429",
        "status 429",
        "429 too many requests",
        "too many requests",
        "quota exceeded",
        "exceeded your current quota",
        "exhausted your capacity",
        "exhausted your daily quota",
        "capacity exceeded",
        "model_capacity_exhausted",
        "hit its quota limits",
        "request a quota increase",
        "rate limit",
        "rate_limit",
        "ratelimitexceeded",
        "usage limit",
    ],
    transient: &[
        "\"code\":503",
        "\"code\": 503",
        "status 503",
        "service unavailable",
        "\"status\":\"unavailable\"",
        "overloaded",
        "econnreset",
        "etimedout",
        "eai_again",
        "socket hang up",
        "fetch failed",
    ],
    screen_error_markers: &["[api error:"],
};

/// A program of the user's own (`command`): its words are its own, never read as a fault.
pub const NO_FAULTS: Faults = Faults {
    rate_limited: &[],
    transient: &[],
    screen_error_markers: &[],
};

/// The passing fault `text` names, if any, and the wait it asks for.
pub fn classify(faults: &Faults, text: &str) -> Option<(&'static str, Option<Duration>)> {
    let lower = text.to_ascii_lowercase();
    if faults.rate_limited.iter().any(|t| lower.contains(t)) {
        return Some(("rate_limited", wait_hint(&lower)));
    }
    if faults.transient.iter().any(|t| lower.contains(t)) {
        return Some(("transient", wait_hint(&lower)));
    }
    None
}

/// The passing fault an idle screen's error lines name (only lines with one of the agent's
/// error markers are read).
pub fn on_screen(faults: &Faults, screen: &str) -> Option<(&'static str, Option<Duration>)> {
    let errors: Vec<&str> = screen
        .lines()
        .filter(|line| {
            let lower = line.to_ascii_lowercase();
            faults
                .screen_error_markers
                .iter()
                .any(|m| lower.contains(m))
        })
        .collect();
    if errors.is_empty() {
        return None;
    }
    classify(faults, &errors.join("\n"))
}

/// The wait a message asks for: "retry in 37.5s", "reset after 1h2m3s", `"retryDelay": "20s"`,
/// "try again in 5 minutes". The last one named counts (the latest message).
fn wait_hint(lower: &str) -> Option<Duration> {
    const LEADS: &[&str] = &[
        "retry in ",
        "retry after ",
        "reset after ",
        "resets after ",
        "try again in ",
        "\"retrydelay\":\"",
        "\"retrydelay\": \"",
    ];
    LEADS
        .iter()
        .filter_map(|lead| {
            let at = lower.rfind(lead)?;
            Some((at, parse_wait(&lower[at + lead.len()..])?))
        })
        .max_by_key(|(at, _)| *at)
        .map(|(_, wait)| wait)
}

/// `1h2m3.5s`, `37s`, `5 minutes`, `2 hours`: the leading duration of `text`.
fn parse_wait(text: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut rest = text;
    let mut any = false;
    loop {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let Some(number) = rest[..digits]
            .parse::<f64>()
            .ok()
            .filter(|_| rest.starts_with(|c: char| c.is_ascii_digit()))
        else {
            break;
        };
        let after = rest[digits..].trim_start();
        let Some((unit, len)) = [
            ("hours", 3600.0),
            ("hour", 3600.0),
            ("h", 3600.0),
            ("minutes", 60.0),
            ("minute", 60.0),
            ("min", 60.0),
            ("ms", 0.001),
            ("m", 60.0),
            ("seconds", 1.0),
            ("second", 1.0),
            ("s", 1.0),
        ]
        .iter()
        .find(|(word, _)| after.starts_with(word))
        .map(|(word, secs)| (*secs, word.len())) else {
            break;
        };
        total += number * unit;
        any = true;
        rest = &after[len..];
    }
    (any && total.is_finite() && total >= 0.0).then(|| Duration::from_secs_f64(total.ceil()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_quota_texts_are_rate_limits_with_their_wait() {
        let api = r#"[API Error: {"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota). Please retry in 37.5s.","status":"RESOURCE_EXHAUSTED"}}]"#;
        assert_eq!(
            classify(&API_FAULTS, api),
            Some(("rate_limited", Some(Duration::from_secs(38))))
        );
        let terminal =
            "You have exhausted your capacity on this model. Your quota will reset after 1h2m3s.";
        assert_eq!(
            classify(&API_FAULTS, terminal),
            Some(("rate_limited", Some(Duration::from_secs(3723))))
        );
        assert_eq!(
            classify(&API_FAULTS, "Rate limit reached; try again in 5 minutes"),
            Some(("rate_limited", Some(Duration::from_secs(300))))
        );
    }

    #[test]
    fn a_screen_names_a_fault_only_on_an_error_line() {
        let stuck =
            "✕ [API Error: {\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\"}}]\n > ";
        assert_eq!(on_screen(&API_FAULTS, stuck), Some(("rate_limited", None)));
        let talk = "I added a rate limit of 429 requests per minute.\n > ";
        assert_eq!(on_screen(&API_FAULTS, talk), None);
    }

    #[test]
    fn overload_is_transient_and_an_ordinary_failure_is_no_fault() {
        assert_eq!(
            classify(
                &API_FAULTS,
                "Error: 503 Service Unavailable: the model is overloaded"
            ),
            Some(("transient", None))
        );
        assert_eq!(
            classify(&API_FAULTS, "Error: file not found: src/main.rs"),
            None
        );
        assert_eq!(classify(&NO_FAULTS, "429 Too Many Requests"), None);
    }
}
