//! The clock, as cuekit writes times: RFC 3339 with milliseconds, UTC.

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// The local time of day, in minutes after midnight, and the local date (`YYYY-MM-DD`), as the
/// C library's time zone says (`TZ`, `/etc/localtime`): quiet hours and the digest's hour are the
/// user's.
pub fn local_now() -> (u32, String) {
    // SAFETY: time() with a null pointer only returns the time.
    let now = unsafe { libc::time(std::ptr::null_mut()) };
    // SAFETY: tm is plain data; all zeroes is a valid value that localtime_r overwrites.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals of the right types (the re-entrant call).
    if unsafe { libc::localtime_r(&now, &mut tm) }.is_null() {
        return (0, String::new());
    }
    let minute = u32::try_from(tm.tm_hour * 60 + tm.tm_min).unwrap_or(0);
    let date = format!(
        "{:04}-{:02}-{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday
    );
    (minute, date)
}

/// Seconds since an RFC 3339 time, when it reads as one.
pub fn seconds_since(rfc3339: &str) -> Option<u64> {
    let then = humantime::parse_rfc3339_weak(rfc3339).ok()?;
    std::time::SystemTime::now()
        .duration_since(then)
        .ok()
        .map(|d| d.as_secs())
}
