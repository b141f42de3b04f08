//! Prints what a key sign-in and a signed request cost `cuekit serve` next to today's cookie
//! check; asserts nothing about time. Run with `cargo bench --bench figures -- web_sign` (release build).
//! In-process, against the real access file in a scratch HOME:
//!
//! - a cookie's session looked up (what every request costs today: `web_access::session`);
//! - a device key's ECDSA P-256 signature verified (ring, `ECDSA_P256_SHA256_FIXED`, what a
//!   signed request adds; target ≤ 2 ms);
//! - a whole key sign-in at a new run (`web_access::sign_in`: the signature checked against
//!   each paired key, a new session written);
//! - what each signed request adds (`web::signed`): its nonce given out (`POST /nonce`, after
//!   the session lookup it shares with every request), and its check — the nonce spent, the
//!   fields hashed, the device key's signature verified (target ≤ 2 ms).

use std::time::{Duration, Instant};

use cuekit::ops::web_access;
use cuekit::web::signed;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn figures(name: &str, mut times: Vec<Duration>) {
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "{name}: median {:.3} ms, p99 {:.3} ms, max {:.3} ms ({} runs)",
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        at(1.0).as_secs_f64() * 1e3,
        times.len()
    );
}

fn timed(runs: usize, mut work: impl FnMut()) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            work();
            start.elapsed()
        })
        .collect()
}

pub fn main() {
    let home = tempfile::tempdir().unwrap();
    // SAFETY: set before any thread starts.
    unsafe {
        std::env::set_var("HOME", home.path());
        std::env::set_var("XDG_DATA_HOME", home.path().join("data"));
    }
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let key =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let public = hex(key.public_key().as_ref());
    let code = web_access::new_code().unwrap();
    let session = web_access::pair(&code, "bench", Some(&public))
        .unwrap()
        .unwrap();
    let message = b"cuekit serve sign-in\nnonce\nck-0123456789ab.localhost:8377".to_vec();
    let signature = hex(key.sign(&rng, &message).unwrap().as_ref());

    figures(
        "today: a cookie's session looked up",
        timed(2000, || {
            assert!(web_access::session(&session.token).unwrap().is_some());
        }),
    );
    figures(
        "signed: the device key's signature verified",
        timed(2000, || {
            assert!(web_access::verifies(&public, &message, &signature));
        }),
    );
    // A steer as a page sends it: the CSRF token and a message of 200 characters.
    let nonces = signed::Nonces::default();
    let fields = |nonce: &str, signature: &str| {
        vec![
            ("csrf".to_string(), "c".repeat(64)),
            (
                "text".to_string(),
                "Tell me more about the failing test. ".repeat(5),
            ),
            (signed::NONCE_FIELD.to_string(), nonce.to_string()),
            (signed::SIGNATURE_FIELD.to_string(), signature.to_string()),
        ]
    };
    let host = "ck-0123456789ab.localhost:8377";
    let path = "/t/t_0123456789ab/steer";
    figures(
        "signed: a request's nonce given out (after the session lookup above)",
        timed(2000, || {
            assert!(nonces.issue(&session.token).is_some());
        }),
    );
    let mut checks = Vec::new();
    for _ in 0..2000 {
        let nonce = nonces.issue(&session.token).unwrap();
        let text = signed::message("POST", path, &nonce, host, &fields(&nonce, ""));
        let signature = hex(key.sign(&rng, text.as_bytes()).unwrap().as_ref());
        let sent = fields(&nonce, &signature);
        let request = signed::Request {
            method: "POST",
            path,
            host,
            fields: &sent,
        };
        let start = Instant::now();
        let checked = signed::check(&nonces, &session.token, Some(&public), &request);
        checks.push(start.elapsed());
        assert!(checked.is_ok(), "{checked:?}");
    }
    figures(
        "signed: a request's signature checked (nonce spent, fields hashed, ECDSA verified)",
        checks,
    );
    figures(
        "signed: a whole key sign-in (verify + new session written)",
        timed(300, || {
            assert!(web_access::sign_in(&message, &signature).unwrap().is_some());
        }),
    );
}
