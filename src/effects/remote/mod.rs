//! Other machines over SSH: OpenSSH carries the request and the same cuekit on the far side
//! does the work. No daemon, no protocol of our own: a remote call is `ssh HOST 'cuekit' …`
//! with one level of shell quoting, and its JSON reply.
//!
//! `args` builds argv and the remote command line (pure); `run` spawns ssh with a deadline on
//! every call; `connection` keeps one multiplexed connection per host, replaces a stale control
//! socket and does the version handshake.

pub mod args;
pub mod connection;
pub mod run;

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::config::{Config, HostConfig};

/// A configured host, ready to be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    /// The ssh destination, as configured.
    pub ssh: String,
    /// The remote cuekit binary.
    pub cuekit: String,
    /// The default remote working directory.
    pub cwd: Option<String>,
    /// The multiplexed connection's socket, in a private directory of this user's.
    pub control_path: PathBuf,
}

impl Host {
    pub fn new(name: &str, config: &HostConfig, control_dir: &std::path::Path) -> Host {
        Host {
            name: name.to_string(),
            ssh: config.destination(name),
            cuekit: config.cuekit.clone().unwrap_or_else(|| "cuekit".into()),
            cwd: config.cwd.clone(),
            control_path: control_dir.join(name),
        }
    }
}

/// Every configured host, by name.
pub fn hosts(config: &Config) -> Result<BTreeMap<String, Host>> {
    let configured = config.hosts();
    if configured.is_empty() {
        return Ok(BTreeMap::new());
    }
    let dir = control_dir()?;
    Ok(configured
        .iter()
        .map(|(name, host)| (name.clone(), Host::new(name, host, &dir)))
        .collect())
}

/// The host called `name`, or an error listing the configured ones.
pub fn host(config: &Config, name: &str) -> Result<Host> {
    let mut hosts = hosts(config)?;
    hosts.remove(name).ok_or_else(|| {
        let known: Vec<&String> = hosts.keys().collect();
        Error::new(ErrorCode::InvalidInput, format!("no host named `{name}`")).with_hint(
            if known.is_empty() {
                "add it under `hosts:` in ~/.config/cuekit/config.yaml (docs/guides/remote-hosts.md)"
                    .to_string()
            } else {
                format!("configured hosts: {known:?}; `cuekit hosts` checks them")
            },
        )
    })
}

/// Owner-only: a control socket is a live login to the host. `$XDG_RUNTIME_DIR/cuekit-ssh`
/// (short, cleared at logout), else under cuekit's data directory.
fn control_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(runtime) if runtime.is_absolute() && runtime.is_dir() => runtime.join("cuekit-ssh"),
        _ => crate::effects::store::data_dir()
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::Io,
                    "cannot find a home directory for ssh sockets",
                )
                .with_hint("set HOME (or XDG_RUNTIME_DIR)")
            })?
            .join("ssh"),
    };
    crate::effects::store::create_private_dir(&dir)?;
    Ok(dir)
}
