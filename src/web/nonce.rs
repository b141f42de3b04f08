//! Sign-in nonces (`/unlock`) that cost the server nothing to give out (issue 48, F8): each is
//! its time and a random part, MAC'd with a key of this run, so anyone may ask for as many as
//! they like without crowding out a device's. Only a nonce spent by a device's valid signature
//! is remembered (until it would have expired anyway), which makes each one good once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ring::hmac;

/// How long a sign-in nonce is good for.
pub const VALID: Duration = Duration::from_secs(120);

pub struct Nonces {
    key: hmac::Key,
    started: Instant,
    /// Nonces a device's key signed, and when: refused a second time.
    spent: Mutex<HashMap<String, Instant>>,
}

impl Default for Nonces {
    fn default() -> Nonces {
        Nonces {
            key: hmac::Key::generate(hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
                .expect("the system's random source works"),
            started: Instant::now(),
            spent: Mutex::default(),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

impl Nonces {
    /// A new nonce: `<ms since the run began, hex>.<random>.<MAC of both>`.
    pub fn issue(&self) -> String {
        let body = format!(
            "{:x}.{}",
            self.started.elapsed().as_millis(),
            uuid::Uuid::new_v4().simple()
        );
        let tag = hmac::sign(&self.key, body.as_bytes());
        format!("{body}.{}", hex(tag.as_ref()))
    }

    /// Whether `nonce` is one this run gave out less than [`VALID`] ago and not yet spent.
    pub fn fresh(&self, nonce: &str) -> bool {
        let Some((body, tag)) = nonce.rsplit_once('.') else {
            return false;
        };
        let Some(tag) = unhex(tag) else {
            return false;
        };
        if hmac::verify(&self.key, body.as_bytes(), &tag).is_err() {
            return false;
        }
        let Some(ms) = body
            .split_once('.')
            .and_then(|(ms, _)| u64::from_str_radix(ms, 16).ok())
        else {
            return false;
        };
        let age = self
            .started
            .elapsed()
            .saturating_sub(Duration::from_millis(ms));
        age < VALID && !self.spent.lock().expect("not poisoned").contains_key(nonce)
    }

    /// Marks `nonce` used (a device's key signed it); false when it already was.
    pub fn spend(&self, nonce: &str) -> bool {
        let mut spent = self.spent.lock().expect("not poisoned");
        spent.retain(|_, at| at.elapsed() < VALID);
        spent.insert(nonce.to_string(), Instant::now()).is_none()
    }
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_good_once_and_only_from_its_run() {
        let run = Nonces::default();
        let nonce = run.issue();
        assert!(run.fresh(&nonce));
        assert!(
            !Nonces::default().fresh(&nonce),
            "another run's key took it"
        );
        let last = if nonce.ends_with('0') { '1' } else { '0' };
        let forged = format!("{}{last}", &nonce[..nonce.len() - 1]);
        assert!(!run.fresh(&forged), "a changed MAC passed");
        assert!(!run.fresh("0.abc.00"));
        assert!(run.spend(&nonce));
        assert!(!run.fresh(&nonce));
        assert!(!run.spend(&nonce));
    }

    #[test]
    fn giving_out_many_keeps_nothing() {
        let run = Nonces::default();
        for _ in 0..1000 {
            run.issue();
        }
        assert!(run.spent.lock().unwrap().is_empty());
        assert!(run.fresh(&run.issue()));
    }
}
