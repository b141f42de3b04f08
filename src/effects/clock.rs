//! The clock, as cuekit writes times: RFC 3339 with milliseconds, UTC.

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}
