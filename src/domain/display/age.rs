//! Relative times as people read them on a terminal ("3m ago"): the JSON keeps RFC 3339.

use std::time::{Duration, SystemTime};

/// `then` relative to `now`, in the largest whole unit: `12s`, `3m`, `5h`, `2d`. A time in
/// the future (clocks of two machines) reads as `0s`.
pub fn compact(then: SystemTime, now: SystemTime) -> String {
    let secs = now.duration_since(then).unwrap_or(Duration::ZERO).as_secs();
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}

/// An RFC 3339 time as `3m ago`; text that is not one is returned as it is.
pub fn ago(rfc3339: &str, now: SystemTime) -> String {
    match humantime::parse_rfc3339_weak(rfc3339) {
        Ok(then) => format!("{} ago", compact(then, now)),
        Err(_) => rfc3339.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_largest_whole_unit() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let before = |secs| now - Duration::from_secs(secs);
        assert_eq!(compact(before(0), now), "0s");
        assert_eq!(compact(before(59), now), "59s");
        assert_eq!(compact(before(60), now), "1m");
        assert_eq!(compact(before(3599), now), "59m");
        assert_eq!(compact(before(7200), now), "2h");
        assert_eq!(compact(before(3 * 86400 + 5), now), "3d");
        assert_eq!(compact(now + Duration::from_secs(5), now), "0s");
    }

    #[test]
    fn rfc3339_reads_as_ago_and_anything_else_passes_through() {
        let now = humantime::parse_rfc3339("2026-01-01T00:10:00Z").unwrap();
        assert_eq!(ago("2026-01-01T00:06:59.500Z", now), "3m ago");
        assert_eq!(ago("yesterday", now), "yesterday");
    }
}
