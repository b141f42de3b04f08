//! Each agent: its binary, its version (probed under a timeout) and its credentials.

use std::path::Path;

use crate::domain::adapter::{ADAPTERS, Adapter, AuthProbe, VERSION_TIMEOUT};
use crate::effects::bounded::{Bounded, RunError, Sink};
use crate::effects::config::Config;

use super::{Check, Level};

/// Each agent's binary and version (probed in parallel, each under a timeout) and its auth:
/// every agent with `all`, else only those in use ([`agents_in_use`]), then one line naming
/// how many were left out.
pub(super) fn agent_checks(config: &Config, all: bool) -> Vec<Check> {
    let default_agent = config.agent().value;
    let in_use = agents_in_use(config);
    let (shown, left): (Vec<&Adapter>, Vec<&Adapter>) = ADAPTERS
        .iter()
        .filter(|adapter| !adapter.runs_argv)
        .partition(|adapter| all || in_use.contains(adapter.kind()));
    let mut checks = probe_agents(config, &default_agent, shown);
    if !left.is_empty() {
        let names: Vec<&str> = left.iter().map(|adapter| adapter.kind()).collect();
        checks.push(
            Check::new(
                "other agents",
                Level::Ok,
                format!(
                    "not checked (none of your config files or tasks uses them): {}",
                    names.join(", ")
                ),
            )
            .next("`cuekit doctor --all` checks every agent"),
        );
    }
    checks
}

/// The agents a person uses: the default agent (`defaults.agent`, else the built-in one), every
/// agent a config file sets `adapters.<kind>` for, and the agent of each task in the registry.
fn agents_in_use(config: &Config) -> std::collections::BTreeSet<String> {
    let mut kinds = config.configured_agents();
    kinds.insert(config.agent().value);
    for id in crate::effects::store::registered_ids().unwrap_or_default() {
        if let Ok(Some(placement)) = crate::effects::store::placement(&id)
            && let Some(facts) = placement.facts
        {
            kinds.insert(facts.agent);
        }
    }
    kinds
}

fn probe_agents(config: &Config, default_agent: &str, shown: Vec<&Adapter>) -> Vec<Check> {
    let probes: Vec<_> = shown
        .into_iter()
        .map(|adapter| {
            let bin = config
                .bin(adapter.kind())
                .map_or_else(|| adapter.default_bin.to_string(), |s| s.value);
            let path = crate::effects::which::find_on_path(&bin);
            let version = path
                .clone()
                .map(|path| std::thread::spawn(move || probe_version(&path)));
            (adapter, bin, path, version)
        })
        .collect();
    let mut checks = Vec::new();
    for (adapter, bin, path, version) in probes {
        let name = format!("{} binary", adapter.kind());
        let Some(path) = path else {
            let level = if adapter.kind() == default_agent {
                Level::Fail
            } else {
                Level::Warn
            };
            checks.push(
                Check::new(name, level, format!("'{bin}' is not on PATH")).next(format!(
                    "to install: {} (or set adapters.{}.bin)",
                    adapter.install_hint,
                    adapter.kind()
                )),
            );
            continue;
        };
        let version = version.map_or(Err("was not run".to_string()), |probe| {
            probe.join().unwrap_or(Err("crashed".into()))
        });
        checks.push(match version {
            Ok(version) => Check::new(name, Level::Ok, format!("{version} at {}", path.display())),
            Err(problem) => Check::new(
                name,
                Level::Warn,
                format!("{} is installed but `--version` {problem}", path.display()),
            )
            .next("run it by hand to see what it waits for"),
        });
        checks.push(auth_check(adapter));
    }
    checks
}

pub(super) fn auth_check(adapter: &Adapter) -> Check {
    let name = format!("{} auth", adapter.kind());
    match (adapter.auth_probe)() {
        AuthProbe::Configured(how) => Check::new(name, Level::Ok, how),
        AuthProbe::Missing(hint) => Check::new(name, Level::Warn, "no credentials found; batch tasks will fail and interactive ones wait on a login screen").next(hint),
        AuthProbe::NotServed { how, hint } => Check::new(name, Level::Warn, how).next(hint),
    }
}

/// `<bin> --version`, killed (with its process group) if it does not answer in time.
pub(super) fn probe_version(path: &Path) -> Result<String, String> {
    let ran = Bounded::new(path, VERSION_TIMEOUT)
        .arg("--version")
        .stderr(Sink::Null)
        .run()
        .map_err(|err| match err {
            RunError::TimedOut { .. } => {
                format!("did not answer within {}s", VERSION_TIMEOUT.as_secs())
            }
            RunError::Start { source, .. } => format!("cannot run: {source}"),
            other => other.to_string(),
        })?;
    let out = String::from_utf8_lossy(&ran.stdout.bytes()).into_owned();
    let version = out.lines().next().unwrap_or("").trim().to_string();
    match ran.status {
        Some(status) if status.success() && !version.is_empty() => Ok(version),
        Some(status) => Err(format!("failed ({status})")),
        None => Err("failed".to_string()),
    }
}
