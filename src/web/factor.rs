//! The factor a destructive step needs beyond the device's session: a short code `cuekit
//! serve` prints in its own terminal for that one action (allowing an `execute`, `delete` or
//! `move` tool, merging work that needs review, submitting a shell command). Whatever took
//! the page (a squatter that answered on the port, a worker it left, a stolen session) cannot
//! read that terminal. A code is bound to the device and the action, good for
//! [`CODE_VALID`], used once, and burned after [`TRIES`] wrong ones: a replayed form finds it
//! used.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::domain::display::terminal_text::visible;

/// How long a printed code is good for.
pub const CODE_VALID: Duration = Duration::from_secs(5 * 60);
/// Wrong codes before one is burned.
pub const TRIES: u32 = 3;
/// Wrong codes a device may give in a run of serve, all its codes together: past them the
/// web confirms nothing more for it until serve restarts (issue 48, F3: fresh codes on demand
/// made 3 tries per code a brute force of ≈20 minutes; now a run allows 10 guesses in 10^6).
pub const WRONG_PER_RUN: u32 = 10;
/// Codes a device may have printed in a minute.
pub const ASKS_PER_MINUTE: usize = 5;

struct Pending {
    digits: String,
    expires: Instant,
    wrong: u32,
}

#[derive(Default)]
pub struct Codes {
    pending: Mutex<HashMap<(String, String), Pending>>,
    /// Per device: its wrong codes this run, and when its last codes were printed.
    devices: Mutex<HashMap<String, Spent>>,
}

#[derive(Default)]
struct Spent {
    wrong: u32,
    asked: Vec<Instant>,
}

/// What the code given with an action says.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The right code: the action may run (the code is spent).
    Passed,
    /// No code was given: one was printed.
    Asked,
    /// Refused; a reason for the page (a new code printed where it says so).
    Refused(String),
    /// Refused, and no code is worth typing now: the device's limit for a minute or for the run
    /// (the page offers no code field).
    Limited(String),
}

impl Codes {
    /// Checks `given` for `device`'s `action` (a key naming exactly what runs), printing a
    /// new code with `what` to the terminal when one is needed.
    pub fn check(&self, device: &str, action: &str, what: &str, given: Option<&str>) -> Verdict {
        let key = (device.to_string(), action.to_string());
        let mut devices = self.devices.lock().expect("not poisoned");
        let spent = devices.entry(device.to_string()).or_default();
        if spent.wrong >= WRONG_PER_RUN {
            return Verdict::Limited(format!(
                "{WRONG_PER_RUN} wrong codes from this device: the web confirms nothing more for it \
                 until serve restarts (do it in the terminal, or revoke the device if it was not you)"
            ));
        }
        let mut pending = self.pending.lock().expect("not poisoned");
        let given: String = given
            .unwrap_or("")
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        if given.is_empty() {
            spent
                .asked
                .retain(|at| at.elapsed() < Duration::from_secs(60));
            if spent.asked.len() >= ASKS_PER_MINUTE {
                return Verdict::Limited(format!(
                    "{ASKS_PER_MINUTE} codes asked in a minute: wait a minute and send it again"
                ));
            }
            spent.asked.push(Instant::now());
            pending.insert(key, issue(device, what));
            return Verdict::Asked;
        }
        let Some(open) = pending.get_mut(&key) else {
            return Verdict::Refused(
                "no code is open for this (it was used, or never asked): send it again without one for a new code".into(),
            );
        };
        if Instant::now() > open.expires {
            pending.insert(key, issue(device, what));
            return Verdict::Refused("the code expired: a new one was printed".into());
        }
        if same(&open.digits, &given) {
            pending.remove(&key);
            return Verdict::Passed;
        }
        open.wrong += 1;
        spent.wrong += 1;
        if spent.wrong >= WRONG_PER_RUN {
            pending.retain(|(holder, _), _| holder != device);
            let mut out = std::io::stdout().lock();
            let _ = writeln!(
                out,
                "device {} gave {WRONG_PER_RUN} wrong confirm codes: the web confirms nothing more for it until serve restarts (cuekit serve --revoke it if that was not you)",
                visible(device)
            );
            let _ = out.flush();
            return Verdict::Limited(format!(
                "wrong code, {WRONG_PER_RUN} times from this device: the web confirms nothing more for it until serve restarts"
            ));
        }
        if open.wrong >= TRIES {
            pending.remove(&key);
            return Verdict::Refused(format!(
                "wrong code, {TRIES} times: it was burned; send it again without one for a new code"
            ));
        }
        Verdict::Refused(format!("wrong code ({} tries left)", TRIES - open.wrong))
    }
}

fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A new code, printed to serve's terminal with what it allows.
fn issue(device: &str, what: &str) -> Pending {
    let digits = crate::ops::web_access::confirm_digits();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "confirm code {digits}: device {} asks to {} (valid {} minutes, once)",
        visible(device),
        visible(what),
        CODE_VALID.as_secs() / 60
    );
    let _ = out.flush();
    Pending {
        digits,
        expires: Instant::now() + CODE_VALID,
        wrong: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_asked_used_once_and_burned_by_wrong_tries() {
        let codes = Codes::default();
        assert_eq!(
            codes.check("phone", "merge ta1", "merge", None),
            Verdict::Asked
        );
        let digits = codes.pending.lock().unwrap()[&("phone".into(), "merge ta1".into())]
            .digits
            .clone();
        assert!(
            matches!(
                codes.check("tablet", "merge ta1", "merge", Some(&digits)),
                Verdict::Refused(_)
            ),
            "another device's code"
        );
        assert!(
            matches!(
                codes.check("phone", "merge ta2", "merge", Some(&digits)),
                Verdict::Refused(_)
            ),
            "another action's code"
        );
        assert_eq!(
            codes.check("phone", "merge ta1", "merge", Some(&digits)),
            Verdict::Passed
        );
        assert!(
            matches!(
                codes.check("phone", "merge ta1", "merge", Some(&digits)),
                Verdict::Refused(_)
            ),
            "a replay"
        );
        codes.check("phone", "x", "x", None);
        for _ in 0..TRIES {
            assert!(matches!(
                codes.check("phone", "x", "x", Some("0")),
                Verdict::Refused(_)
            ));
        }
        assert!(codes.pending.lock().unwrap().is_empty(), "burned");
    }

    #[test]
    fn a_device_gets_few_codes_a_minute_and_few_wrong_tries_a_run() {
        let codes = Codes::default();
        for n in 0..ASKS_PER_MINUTE {
            assert_eq!(
                codes.check("phone", &format!("a{n}"), "x", None),
                Verdict::Asked
            );
        }
        assert!(matches!(
            codes.check("phone", "b", "x", None),
            Verdict::Limited(_)
        ));
        assert_eq!(codes.check("tablet", "b", "x", None), Verdict::Asked);
        let mut wrong = 0;
        'run: for n in 0..ASKS_PER_MINUTE {
            for _ in 0..TRIES {
                codes.check("phone", &format!("a{n}"), "x", Some("0000000"));
                wrong += 1;
                if wrong == WRONG_PER_RUN {
                    break 'run;
                }
            }
        }
        assert_eq!(wrong, WRONG_PER_RUN);
        codes
            .devices
            .lock()
            .unwrap()
            .get_mut("phone")
            .unwrap()
            .asked
            .clear();
        assert!(
            matches!(codes.check("phone", "c", "x", None), Verdict::Limited(_)),
            "a new code after the run's wrong tries"
        );
        assert_eq!(codes.check("tablet", "c", "x", None), Verdict::Asked);
    }
}
