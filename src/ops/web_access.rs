//! Who may use `cuekit serve`: the user-only secret, the one-time pairing code and the paired
//! devices' sessions. Everything lives in `<data dir>/web/` (owner-only), in one file
//! (`access.json`) changed under `web/lock` and written atomically, so `cuekit serve
//! --revoke` from another terminal ends a session the server holds open at its next request.
//!
//! Nothing secret is kept in the clear but the secret itself (0600, never printed): a code
//! and a session token are stored as SHA-256 digests keyed by the secret, and a page's CSRF
//! token is derived from the secret and the session.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::store;

/// How long a pairing code is good for.
pub const CODE_VALID: Duration = Duration::from_secs(10 * 60);
/// Wrong codes before the code is burned (a new one needs the terminal).
pub const CODE_TRIES: u32 = 5;
/// A device session unused this long has ended.
pub const SESSION_IDLE: Duration = Duration::from_secs(7 * 24 * 3600);
/// A session's last use is written at most this often.
const TOUCH_EVERY: u64 = 60;

#[derive(Debug, Default, Serialize, Deserialize)]
struct AccessFile {
    #[serde(default)]
    code: Option<StoredCode>,
    #[serde(default)]
    devices: Vec<StoredDevice>,
}

#[derive(Debug, Serialize, Deserialize)]
struct StoredCode {
    digest: String,
    expires: u64,
    wrong: u32,
    used: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct StoredDevice {
    name: String,
    digest: String,
    paired: u64,
    last_seen: u64,
    /// The device's public key (a P-256 point, uncompressed, hex): its browser holds the
    /// private half, non-extractable, and signs in with it at each run of serve.
    #[serde(default)]
    key: Option<String>,
}

/// A paired device as `cuekit serve --devices` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct Device {
    pub name: String,
    pub paired_at: String,
    pub last_seen: String,
}

/// What a browser holds after pairing: the session token (its cookie) and its device name.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub device: String,
    pub token: String,
}

/// A request's session, proven.
#[derive(Debug, Clone)]
pub struct Session {
    pub device: String,
    /// The token every state-changing request of this session must carry.
    pub csrf: String,
    /// The device's public key (hex), which signs its state-changing requests; `None` for a
    /// device paired without one (no JavaScript, no secure context): it can look, not act.
    pub key: Option<String>,
}

/// Why a code was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// No code was made, or it was used.
    NoCode,
    Expired,
    /// Five wrong codes burned it.
    Burned,
    /// Wrong; this many tries are left.
    Wrong(u32),
}

impl Refused {
    pub fn message(self) -> String {
        match self {
            Refused::NoCode => "no pairing code is open: start `cuekit serve` again for one".into(),
            Refused::Expired => "the pairing code has expired: start `cuekit serve` again".into(),
            Refused::Burned => {
                "the pairing code was burned after 5 wrong tries: start `cuekit serve` again".into()
            }
            Refused::Wrong(left) => format!("wrong code ({left} tries left)"),
        }
    }
}

fn web_dir() -> Result<PathBuf> {
    let dir = store::data_dir()
        .ok_or_else(|| Error::new(ErrorCode::Io, "no data directory (is HOME set?)"))?
        .join("web");
    store::create_private_dir(&dir)?;
    Ok(dir)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

fn rfc3339(secs: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(secs)).to_string()
}

/// 244 random bits as hex: two version-4 UUIDs (the OS's random source, through getrandom).
fn random_hex() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// The user-only secret (`web/secret`, 0600), made on first use.
fn secret() -> Result<String> {
    let path = web_dir()?.join("secret");
    if let Ok(bytes) = store::read_small(&path) {
        let text = String::from_utf8_lossy(&bytes).trim().to_string();
        if text.len() >= 32 {
            return Ok(text);
        }
    }
    let _lock = store::lock_file(&web_dir()?.join("lock"))?;
    if let Ok(bytes) = store::read_small(&path) {
        let text = String::from_utf8_lossy(&bytes).trim().to_string();
        if text.len() >= 32 {
            return Ok(text);
        }
    }
    let made = random_hex();
    store::write_atomic(&path, made.as_bytes())?;
    Ok(made)
}

fn keyed(secret: &str, purpose: &str, text: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(secret.as_bytes());
    hasher.update([0]);
    hasher.update(purpose.as_bytes());
    hasher.update([0]);
    hasher.update(text.as_bytes());
    hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Compares without stopping at the first difference.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Runs `change` on the access file under its lock, writing it back when `change` says so.
fn with_file<T>(change: impl FnOnce(&mut AccessFile) -> (T, bool)) -> Result<T> {
    let dir = web_dir()?;
    let _lock = store::lock_file(&dir.join("lock"))?;
    let path = dir.join("access.json");
    let mut file: AccessFile = match store::read_small(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|err| {
            Error::new(
                ErrorCode::StoreCorrupt,
                format!("{} is not readable: {err}", path.display()),
            )
            .with_hint("remove it: every device pairs again")
        })?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => AccessFile::default(),
        Err(err) => return Err(Error::io("read", &path, err)),
    };
    let (value, write) = change(&mut file);
    if write {
        let bytes = serde_json::to_vec_pretty(&file).expect("access serializes");
        store::write_atomic(&path, &bytes)?;
    }
    Ok(value)
}

/// A new pairing code (`1234-5678`), replacing any earlier one: valid [`CODE_VALID`], once.
pub fn new_code() -> Result<String> {
    let secret = secret()?;
    let random = u64::from_str_radix(&random_hex()[..15], 16).expect("hex digits");
    let digits = format!("{:08}", random % 100_000_000);
    let code = format!("{}-{}", &digits[..4], &digits[4..]);
    let digest = keyed(&secret, "code", &digits);
    with_file(|file| {
        file.code = Some(StoredCode {
            digest,
            expires: now() + CODE_VALID.as_secs(),
            wrong: 0,
            used: false,
        });
        ((), true)
    })?;
    Ok(code)
}

/// Trades a pairing code for a device session named after `name` (made unique).
pub fn pair(
    code: &str,
    name: &str,
    key: Option<&str>,
) -> Result<std::result::Result<NewSession, Refused>> {
    let key = key.and_then(public_key);
    let secret = secret()?;
    let digits: String = code.chars().filter(char::is_ascii_digit).collect();
    let digest = keyed(&secret, "code", &digits);
    let token = random_hex();
    let token_digest = keyed(&secret, "session", &token);
    let name = device_name(name);
    with_file(|file| {
        let Some(stored) = file.code.as_mut() else {
            return (Err(Refused::NoCode), false);
        };
        if stored.used {
            return (Err(Refused::NoCode), false);
        }
        if stored.wrong >= CODE_TRIES {
            return (Err(Refused::Burned), false);
        }
        if now() > stored.expires {
            return (Err(Refused::Expired), false);
        }
        if !same(&stored.digest, &digest) {
            stored.wrong += 1;
            let left = CODE_TRIES - stored.wrong;
            let refused = if left == 0 {
                Refused::Burned
            } else {
                Refused::Wrong(left)
            };
            return (Err(refused), true);
        }
        stored.used = true;
        let mut unique = name.clone();
        let mut n = 2;
        while file.devices.iter().any(|device| device.name == unique) {
            unique = format!("{name}-{n}");
            n += 1;
        }
        let at = now();
        file.devices.push(StoredDevice {
            name: unique.clone(),
            digest: token_digest,
            paired: at,
            last_seen: at,
            key,
        });
        (
            Ok(NewSession {
                device: unique,
                token,
            }),
            true,
        )
    })
}

/// A device name of a safe shape: letters, digits, `-`, `_`, `.`, at most 32; `device` if
/// nothing is left.
pub fn device_name(name: &str) -> String {
    let kept: String = name
        .trim()
        .chars()
        .map(|c| if c == ' ' { '-' } else { c })
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(32)
        .collect();
    if kept.is_empty() || kept == "all" {
        "device".into()
    } else {
        kept
    }
}

/// The session a cookie's token names, if it is open: its last use noted.
pub fn session(token: &str) -> Result<Option<Session>> {
    if token.is_empty() || token.len() > 128 {
        return Ok(None);
    }
    let secret = secret()?;
    let digest = keyed(&secret, "session", token);
    let at = now();
    with_file(|file| {
        let Some(index) = file
            .devices
            .iter()
            .position(|device| same(&device.digest, &digest))
        else {
            return (None, false);
        };
        let device = &mut file.devices[index];
        if at.saturating_sub(device.last_seen) > SESSION_IDLE.as_secs() {
            file.devices.remove(index);
            return (None, true);
        }
        let touch = at.saturating_sub(device.last_seen) >= TOUCH_EVERY;
        if touch {
            device.last_seen = at;
        }
        let session = Session {
            device: device.name.clone(),
            csrf: keyed(&secret, "csrf", &digest),
            key: device.key.clone(),
        };
        (Some(session), touch)
    })
}

/// A public key as pairing sends it: an uncompressed P-256 point in hex (65 bytes).
fn public_key(hex: &str) -> Option<String> {
    let bytes = from_hex(hex)?;
    (bytes.len() == 65 && bytes[0] == 4).then(|| hex.to_ascii_lowercase())
}

fn from_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || hex.len() > 512 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
        .collect()
}

/// Whether `signature` (WebCrypto's ECDSA P-256 SHA-256: raw r||s, hex) signs `message`
/// under the device key `key` (hex).
pub fn verifies(key: &str, message: &[u8], signature: &str) -> bool {
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
    let (Some(key), Some(signature)) = (from_hex(key), from_hex(signature)) else {
        return false;
    };
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key)
        .verify(message, &signature)
        .is_ok()
}

/// Signs a paired device in at a new run of serve: the device whose key signed `message`
/// (a nonce this run gave out) gets a new session token (the old one, whoever holds it, is
/// dead). `None`: no paired device's key signed it.
pub fn sign_in(message: &[u8], signature: &str) -> Result<Option<NewSession>> {
    let secret = secret()?;
    let token = random_hex();
    let digest = keyed(&secret, "session", &token);
    let at = now();
    with_file(|file| {
        let found = file.devices.iter_mut().find(|device| {
            device
                .key
                .as_deref()
                .is_some_and(|key| verifies(key, message, signature))
        });
        let Some(device) = found else {
            return (None, false);
        };
        device.digest = digest;
        device.last_seen = at;
        let session = NewSession {
            device: device.name.clone(),
            token,
        };
        (Some(session), true)
    })
}

/// The paired devices, oldest first.
pub fn devices() -> Result<Vec<Device>> {
    with_file(|file| {
        let devices = file
            .devices
            .iter()
            .map(|device| Device {
                name: device.name.clone(),
                paired_at: rfc3339(device.paired),
                last_seen: rfc3339(device.last_seen),
            })
            .collect();
        (devices, false)
    })
}

/// Ends the session of device `name`, or every one (`all`); how many ended.
pub fn revoke(name: &str) -> Result<usize> {
    let ended = with_file(|file| {
        let before = file.devices.len();
        file.devices
            .retain(|device| name != "all" && device.name != name);
        let ended = before - file.devices.len();
        (ended, ended > 0)
    })?;
    if ended == 0 && name != "all" {
        return Err(
            Error::invalid_input(format!("no paired device is named {name}"))
                .with_hint("`cuekit serve --devices` lists them"),
        );
    }
    Ok(ended)
}

/// Who listens on `port` at `ip` as /proc shows it (pids and commands of this user's
/// processes, else the owner's uid), for a refusal that names the holder.
pub fn port_holders(ip: std::net::IpAddr, port: u16) -> Vec<String> {
    crate::effects::process::tcp_listeners(ip, port)
}

/// This install's own loopback name, `ck-<random>.localhost` (RFC 6761: every `*.localhost`
/// is loopback; browsers resolve it so without DNS), made once and kept in `web/host`. A
/// cookie set for it goes to no other local server (cookies ignore ports, not names).
pub fn host_name() -> Result<String> {
    let path = web_dir()?.join("host");
    let valid = |text: &str| {
        text.strip_prefix("ck-")
            .and_then(|rest| rest.strip_suffix(".localhost"))
            .is_some_and(|middle| {
                middle.len() >= 8 && middle.bytes().all(|b| b.is_ascii_hexdigit())
            })
    };
    if let Ok(bytes) = store::read_small(&path) {
        let text = String::from_utf8_lossy(&bytes).trim().to_ascii_lowercase();
        if valid(&text) {
            return Ok(text);
        }
    }
    let _lock = store::lock_file(&web_dir()?.join("lock"))?;
    if let Ok(bytes) = store::read_small(&path) {
        let text = String::from_utf8_lossy(&bytes).trim().to_ascii_lowercase();
        if valid(&text) {
            return Ok(text);
        }
    }
    let made = format!("ck-{}.localhost", &random_hex()[..12]);
    store::write_atomic(&path, made.as_bytes())?;
    Ok(made)
}

/// Notes the URL a starting `cuekit serve` prints, for `serve --pair` to name.
pub fn note_served_url(url: &str) -> Result<()> {
    store::write_atomic(&web_dir()?.join("url"), url.as_bytes())
}

/// The URL the last `cuekit serve` printed, if any.
pub fn served_url() -> Option<String> {
    let bytes = store::read_small(&web_dir().ok()?.join("url")).ok()?;
    let text = String::from_utf8_lossy(&bytes).trim().to_string();
    let safe = text.starts_with("http") || text.starts_with("unix:");
    (safe && !text.chars().any(char::is_control)).then_some(text)
}

/// Six random digits: a destructive step's confirmation code (`web::factor`).
pub fn confirm_digits() -> String {
    let random = u64::from_str_radix(&random_hex()[..15], 16).expect("hex digits");
    format!("{:06}", random % 1_000_000)
}

/// A token for a form shown before any session (the pairing form): its cookie and its field
/// must match.
pub fn form_token() -> String {
    random_hex()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_keep_a_safe_shape() {
        assert_eq!(device_name("my phone"), "my-phone");
        assert_eq!(device_name("<script>"), "script");
        assert_eq!(device_name("all"), "device");
        assert_eq!(device_name("  "), "device");
        assert_eq!(device_name(&"x".repeat(50)).len(), 32);
    }

    #[test]
    fn comparison_is_exact() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
    }

    #[test]
    fn keyed_digests_differ_by_purpose_and_secret() {
        assert_ne!(keyed("s", "code", "1"), keyed("s", "session", "1"));
        assert_ne!(keyed("s", "code", "1"), keyed("t", "code", "1"));
        assert_eq!(keyed("s", "code", "1").len(), 64);
    }
}
