//! Signed requests: keys, not bearer cookies. Every state-changing request of a session (each
//! POST but pairing, sign-in and asking for a nonce) and the start of its event stream carry a
//! signature by the session's device key — the ECDSA P-256 pair its browser made at pairing
//! (WebCrypto, the private half not extractable, kept in IndexedDB) — over a nonce this run of
//! serve gave that session, once. A cookie and CSRF token captured without the key act on
//! nothing, and a captured signed request is spent.
//!
//! What is signed (`app.js` builds the same text): `cuekit serve request`, the method, the
//! path, the nonce, the `Host`, and the SHA-256 (hex) of the request's fields — the query's,
//! then the form's, in order, without the nonce and signature fields, each name and value
//! with its line breaks as `\n` and percent-encoded as JavaScript's `encodeURIComponent`
//! does, `name=value` joined by `&` — each on a line of its own.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::domain::error::{Error, ErrorCode};
use crate::ops::web_access;

/// The form (or query) field carrying the nonce.
pub const NONCE_FIELD: &str = "ck_nonce";
/// The form (or query) field carrying the signature (raw r‖s, hex).
pub const SIGNATURE_FIELD: &str = "ck_sig";
/// How long a request nonce is good for.
const VALID: Duration = Duration::from_secs(120);
/// Nonces one session may hold open at once (its oldest goes first), and all sessions.
const OPEN_PER_SESSION: usize = 32;
const OPEN_IN_ALL: usize = 4096;

/// The request nonces this run gave out: each bound to the session (its cookie's token) it
/// was given to, with when.
#[derive(Default)]
pub struct Nonces {
    open: Mutex<HashMap<String, (String, Instant)>>,
}

impl Nonces {
    /// A fresh nonce for the session `token`; `None` when too many are open.
    pub fn issue(&self, token: &str) -> Option<String> {
        let mut open = self.open.lock().expect("not poisoned");
        open.retain(|_, (_, at)| at.elapsed() < VALID);
        let mut held: Vec<(Instant, String)> = open
            .iter()
            .filter(|(_, (owner, _))| owner == token)
            .map(|(nonce, (_, at))| (*at, nonce.clone()))
            .collect();
        if held.len() >= OPEN_PER_SESSION {
            held.sort_unstable();
            for (_, nonce) in &held[..=held.len() - OPEN_PER_SESSION] {
                open.remove(nonce);
            }
        }
        if open.len() >= OPEN_IN_ALL {
            return None;
        }
        let nonce = web_access::form_token();
        open.insert(nonce.clone(), (token.to_string(), Instant::now()));
        Some(nonce)
    }

    /// Spends `nonce`: whether this run gave it to the session `token` and it is fresh. Spent
    /// whatever the answer, so a nonce is tried once.
    fn take(&self, nonce: &str, token: &str) -> Result<(), &'static str> {
        let taken = self.open.lock().expect("not poisoned").remove(nonce);
        match taken {
            None => Err(
                "its nonce was not given out by this run of serve, or was used already (a replayed request)",
            ),
            Some((_, at)) if at.elapsed() >= VALID => Err("its nonce has expired"),
            Some((owner, _)) if owner != token => Err("its nonce was given to another session"),
            Some(_) => Ok(()),
        }
    }
}

/// A request to check: what the signature must cover.
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub host: &'a str,
    /// The query's fields, then the form's, in order (the nonce and signature among them).
    pub fields: &'a [(String, String)],
}

/// Whether the session `token`'s device (public key `key`) signed `request` over a nonce this
/// run gave that session; the nonce is spent. The refusal is `unsigned_request` with what to do.
pub fn check(
    nonces: &Nonces,
    token: &str,
    key: Option<&str>,
    request: &Request,
) -> Result<(), Error> {
    let field = |name: &str| {
        request
            .fields
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    let Some(key) = key else {
        return Err(refused(
            "this device has no key: it was paired without JavaScript or outside a secure \
             context, so it can look but not act",
            "pair it again (`cuekit serve --pair` prints a code) from a browser with JavaScript, \
             over loopback, TLS or a tunnel",
        ));
    };
    let (Some(nonce), Some(signature)) = (field(NONCE_FIELD), field(SIGNATURE_FIELD)) else {
        return Err(refused(
            "the request is not signed by the device's key (a session cookie alone acts on \
             nothing)",
            "send it from the page: its script signs each action with the key this browser made \
             at pairing",
        ));
    };
    if let Err(why) = nonces.take(nonce, token) {
        return Err(refused(
            &format!("the request's signature is spent: {why}"),
            "reload the page and send it again",
        ));
    }
    let message = message(
        request.method,
        request.path,
        nonce,
        request.host,
        request.fields,
    );
    if web_access::verifies(key, message.as_bytes(), signature) {
        Ok(())
    } else {
        Err(refused(
            "the request's signature is not the device key's over what was sent",
            "reload the page and send it again; if it persists, pair this browser again",
        ))
    }
}

fn refused(message: &str, hint: &str) -> Error {
    Error::new(ErrorCode::UnsignedRequest, message).with_hint(hint)
}

/// The text a device's key signs for a request.
pub fn message(
    method: &str,
    path: &str,
    nonce: &str,
    host: &str,
    fields: &[(String, String)],
) -> String {
    format!(
        "cuekit serve request\n{method}\n{path}\n{nonce}\n{}\n{}",
        host.to_ascii_lowercase(),
        fields_digest(fields)
    )
}

/// SHA-256 (hex) of the fields as signed: in order, without the nonce and the signature.
pub fn fields_digest(fields: &[(String, String)]) -> String {
    use sha2::Digest;
    let text = fields
        .iter()
        .filter(|(name, _)| name != NONCE_FIELD && name != SIGNATURE_FIELD)
        .map(|(name, value)| format!("{}={}", uri_component(name), uri_component(value)))
        .collect::<Vec<_>>()
        .join("&");
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// `text` with its line breaks as `\n` (a form sends a textarea's as `\r\n`), percent-encoded
/// as JavaScript's `encodeURIComponent`.
fn uri_component(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The fields of an `application/x-www-form-urlencoded` text (a form's body, a query), in
/// order: `+` is a space, `%XX` a byte, the bytes read as UTF-8 (a bad one replaced).
pub fn fields_of(text: &[u8]) -> Vec<(String, String)> {
    text.split(|byte| *byte == b'&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let at = pair.iter().position(|byte| *byte == b'=');
            let (name, value) = match at {
                Some(at) => (&pair[..at], &pair[at + 1..]),
                None => (pair, &[][..]),
            };
            (decoded(name), decoded(value))
        })
        .collect()
}

fn decoded(text: &[u8]) -> String {
    let hex = |byte: u8| (byte as char).to_digit(16);
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        match text[at] {
            b'+' => out.push(b' '),
            b'%' if at + 2 < text.len() => match (hex(text[at + 1]), hex(text[at + 2])) {
                (Some(high), Some(low)) => {
                    out.push((high * 16 + low) as u8);
                    at += 2;
                }
                _ => out.push(b'%'),
            },
            byte => out.push(byte),
        }
        at += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn a_form_body_is_read_in_order() {
        assert_eq!(
            fields_of(b"csrf=ab&text=hi+there%21%0D%0Aok&empty=&bare&bad=%zz%4"),
            pairs(&[
                ("csrf", "ab"),
                ("text", "hi there!\r\nok"),
                ("empty", ""),
                ("bare", ""),
                ("bad", "%zz%4"),
            ])
        );
        assert_eq!(fields_of(b"x=%C3%A9"), pairs(&[("x", "é")]));
    }

    #[test]
    fn the_digest_is_encode_uri_components_without_the_signature() {
        // encodeURIComponent("a b\n€!'") === "a%20b%0A%E2%82%AC!'"
        assert_eq!(uri_component("a b\r\n€!'"), "a%20b%0A%E2%82%AC!'");
        let signed = pairs(&[
            ("csrf", "c"),
            (NONCE_FIELD, "n"),
            ("text", "a\r\nb"),
            (SIGNATURE_FIELD, "s"),
        ]);
        let plain = pairs(&[("csrf", "c"), ("text", "a\nb")]);
        assert_eq!(fields_digest(&signed), fields_digest(&plain));
        // What app.js computes for the same fields (node: encodeURIComponent, then sha256 of
        // "csrf=c&text=a%0Ab%20%C3%A9%26%3D%2B%25").
        assert_eq!(
            fields_digest(&pairs(&[("csrf", "c"), ("text", "a\r\nb é&=+%")])),
            "9878051c0e9e83c498545c3ec6a609177a9abf1bdeb2e57cccc83cacbe408704"
        );
        // The order is signed.
        assert_ne!(
            fields_digest(&plain),
            fields_digest(&pairs(&[("text", "a\nb"), ("csrf", "c")]))
        );
    }

    #[test]
    fn a_nonce_is_good_once_for_its_session_only() {
        let nonces = Nonces::default();
        let nonce = nonces.issue("token").unwrap();
        assert!(nonces.take(&nonce, "other").is_err());
        let nonce = nonces.issue("token").unwrap();
        assert!(nonces.take(&nonce, "token").is_ok());
        assert!(nonces.take(&nonce, "token").is_err());
        let many: Vec<String> = (0..40).map(|_| nonces.issue("token").unwrap()).collect();
        assert!(nonces.take(&many[0], "token").is_err(), "the oldest went");
        assert!(nonces.take(&many[39], "token").is_ok());
    }
}
