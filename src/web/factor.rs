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

struct Pending {
    digits: String,
    expires: Instant,
    wrong: u32,
}

#[derive(Default)]
pub struct Codes {
    pending: Mutex<HashMap<(String, String), Pending>>,
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
}

impl Codes {
    /// Checks `given` for `device`'s `action` (a key naming exactly what runs), printing a
    /// new code with `what` to the terminal when one is needed.
    pub fn check(&self, device: &str, action: &str, what: &str, given: Option<&str>) -> Verdict {
        let key = (device.to_string(), action.to_string());
        let mut pending = self.pending.lock().expect("not poisoned");
        let given: String = given
            .unwrap_or("")
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        if given.is_empty() {
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
}
