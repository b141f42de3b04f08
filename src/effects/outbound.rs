//! Sending a notice beyond this machine (issue 53): one HTTPS POST (ureq, rustls with the ring
//! provider cuekit already builds, Mozilla's roots bundled by webpki-roots), 5 s at most per
//! try, at most 3 tries. A 429 or a 5xx is tried again after the service's `Retry-After` (capped)
//! or a growing pause; any other answer is final. The desktop notifications beside it are
//! `effects::notify`'s.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::domain::notice::Outgoing;

/// Time any one try may take, connecting included.
pub const TRY_LIMIT: Duration = Duration::from_secs(5);
/// Tries per notice and channel.
pub const TRIES: u32 = 3;
/// The longest `Retry-After` honoured: a service asking for more is given up on.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// What became of one notice on one channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Delivery {
    pub sent: bool,
    /// The last HTTP status, when an answer came.
    pub status: Option<u16>,
    pub tries: u32,
    /// Why it was not sent (the last try's failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub elapsed_ms: u64,
}

/// How the tries are paced: the pause before try `n` (1-based) when the service named none.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    pub try_limit: Duration,
    pub tries: u32,
    pub backoff: Duration,
}

impl Default for Pace {
    fn default() -> Self {
        Pace {
            try_limit: TRY_LIMIT,
            tries: TRIES,
            backoff: Duration::from_millis(500),
        }
    }
}

/// POSTs `request`, with `secret_headers` (a token) added to it only here, so no payload
/// builder ever holds them.
pub fn send(request: &Outgoing, secret_headers: &[(String, String)], pace: Pace) -> Delivery {
    let started = Instant::now();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(pace.try_limit))
        .http_status_as_error(false)
        .max_redirects(0)
        .user_agent(concat!("cuekit/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut delivery = Delivery {
        sent: false,
        status: None,
        tries: 0,
        error: None,
        elapsed_ms: 0,
    };
    while delivery.tries < pace.tries {
        delivery.tries += 1;
        let mut call = agent.post(&request.url);
        for (name, value) in request.headers.iter().chain(secret_headers) {
            call = call.header(name.as_str(), value.as_str());
        }
        let wait = match call.send(&request.body[..]) {
            Ok(response) => {
                let status = response.status().as_u16();
                delivery.status = Some(status);
                if (200..300).contains(&status) {
                    delivery.sent = true;
                    delivery.error = None;
                    break;
                }
                delivery.error = Some(format!("the service answered {status}"));
                if status != 429 && status < 500 {
                    break;
                }
                retry_after(response.headers().get("retry-after"))
            }
            Err(err) => {
                delivery.status = None;
                delivery.error = Some(describe(&err));
                None
            }
        };
        if delivery.tries >= pace.tries {
            break;
        }
        let wait = match wait {
            Some(asked) if asked > MAX_RETRY_AFTER => {
                delivery.error = Some(format!(
                    "the service asked to wait {}s, more than cuekit waits",
                    asked.as_secs()
                ));
                break;
            }
            Some(asked) => asked,
            None => pace.backoff * 2u32.pow(delivery.tries - 1),
        };
        std::thread::sleep(wait);
    }
    delivery.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    delivery
}

/// `Retry-After` in seconds (the HTTP-date form is taken as no advice).
fn retry_after(value: Option<&ureq::http::HeaderValue>) -> Option<Duration> {
    let seconds: u64 = value?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds))
}

/// A failure in words that name no URL (a webhook's URL is its secret).
fn describe(err: &ureq::Error) -> String {
    match err {
        ureq::Error::Timeout(_) => "timed out".to_string(),
        ureq::Error::Io(io) => format!("connection failed: {}", io.kind()),
        ureq::Error::HostNotFound => "host not found".to_string(),
        ureq::Error::ConnectionFailed => "connection failed".to_string(),
        ureq::Error::Tls(_) | ureq::Error::Rustls(_) => "TLS failed".to_string(),
        ureq::Error::BadUri(_) => "not a valid URL".to_string(),
        _ => "the request failed".to_string(),
    }
}
