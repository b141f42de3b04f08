//! `doctor`'s word on the notify channels beyond this machine (issue 53): how many there are,
//! and the deliveries that failed (`notify/failures.jsonl`), with the last failure's channel
//! and why — never its URL.

use super::{Check, Level};
use crate::effects::config::Config;
use crate::ops::background::outbound::Outbound;

pub fn outbound_check(config: &Config) -> Option<Check> {
    let outbound = Outbound::of(config);
    let (failed, last) = crate::effects::store::notified::failures();
    if outbound.channels.is_empty() && failed == 0 {
        return None;
    }
    let names: Vec<String> = outbound
        .channels
        .iter()
        .map(|c| format!("{} ({})", c.name, c.kind))
        .collect();
    if failed == 0 {
        return Some(Check::new(
            "notify channels",
            Level::Ok,
            format!("{}; no delivery failed", names.join(", ")),
        ));
    }
    let why = last
        .map(|line| {
            format!(
                "; the last: {} ({})",
                line["channel"].as_str().unwrap_or("?"),
                line["delivery"]["error"].as_str().unwrap_or("failed")
            )
        })
        .unwrap_or_default();
    Some(
        Check::new(
            "notify channels",
            Level::Warn,
            format!("{failed} deliveries failed{why}"),
        )
        .next("check the channel's URL or token; each task's events.jsonl has a `cuekit_notify_sent` line per delivery"),
    )
}
