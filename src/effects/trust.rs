//! Trust in project config files, as `mise trust` and `direnv allow` do it: a `.cuekit.yaml`
//! arrives with whatever repository was cloned, and some of its keys run code (an agent binary,
//! the agent's environment, hooks and setup commands). Those keys apply only once the person
//! running cuekit has trusted that exact file content: `cuekit trust` records its SHA-256 in the
//! user's data directory, and any change to the file withdraws the trust until it is given
//! again. Trust is given on the command line only, never through MCP.

use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::domain::error::{Error, ErrorCode, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustState {
    Trusted,
    /// Never trusted on this account.
    Untrusted,
    /// Trusted once, edited since.
    Changed,
}

impl TrustState {
    pub fn as_str(self) -> &'static str {
        match self {
            TrustState::Trusted => "trusted",
            TrustState::Untrusted => "untrusted",
            TrustState::Changed => "changed since it was trusted",
        }
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn trust_dir() -> Option<PathBuf> {
    crate::effects::store::data_dir().map(|dir| dir.join("trusted"))
}

/// One file per trusted path, named after the path's hash: trusting one file never rewrites
/// another's entry.
fn entry_path(file: &Path) -> Option<PathBuf> {
    Some(trust_dir()?.join(hex_sha256(file.as_os_str().as_encoded_bytes())))
}

/// Whether `content`, read from the absolute path `file`, is what was trusted.
pub fn state(file: &Path, content: &[u8]) -> TrustState {
    let recorded = entry_path(file).and_then(|path| std::fs::read_to_string(path).ok());
    match recorded {
        None => TrustState::Untrusted,
        Some(entry) if entry.lines().next() == Some(hex_sha256(content).as_str()) => {
            TrustState::Trusted
        }
        Some(_) => TrustState::Changed,
    }
}

/// Trusts `content` as the content of `file` (the bytes the caller read and checked, so what
/// was checked is what is trusted); returns the file's absolute path.
pub fn trust(file: &Path, content: &[u8]) -> Result<PathBuf> {
    let file = std::fs::canonicalize(file).map_err(|err| Error::io("read", file, err))?;
    let dir = trust_dir().ok_or_else(|| {
        Error::new(
            ErrorCode::Io,
            "cannot find a home directory for cuekit's data",
        )
        .with_hint("set HOME (or XDG_DATA_HOME)")
    })?;
    crate::effects::store::create_private_dir(&dir)?;
    let entry = format!("{}\n{}\n", hex_sha256(content), file.display());
    let path = entry_path(&file).expect("the directory exists");
    crate::effects::store::write_atomic(&path, entry.as_bytes())?;
    Ok(file)
}

/// Withdraws trust from `file`; returns its absolute path.
pub fn revoke(file: &Path) -> Result<PathBuf> {
    let file = std::fs::canonicalize(file).map_err(|err| Error::io("read", file, err))?;
    if let Some(path) = entry_path(&file) {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(Error::io("remove", &path, err)),
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_hashes_are_sha256() {
        assert_eq!(
            hex_sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
