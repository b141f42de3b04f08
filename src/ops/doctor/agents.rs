//! Each agent: its binary, its version (probed under a timeout) and its credentials.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::domain::adapter::{ADAPTERS, Adapter, AuthProbe, VERSION_TIMEOUT};
use crate::effects::config::Config;

use super::{Check, Level};

/// Each agent's binary and version (probed in parallel, each under a timeout) and its auth.
pub(super) fn agent_checks(config: &Config) -> Vec<Check> {
    let default_agent = config.agent().value;
    let probes: Vec<_> = ADAPTERS
        .iter()
        .filter(|adapter| !adapter.runs_argv)
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
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|err| format!("cannot run: {err}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                let _ = child.stdout.take().expect("piped").read_to_string(&mut out);
                let version = out.lines().next().unwrap_or("").trim().to_string();
                return if status.success() && !version.is_empty() {
                    Ok(version)
                } else {
                    Err(format!("failed ({status})"))
                };
            }
            Ok(None) if started.elapsed() < VERSION_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
                let _ = child.wait();
                return Err(format!(
                    "did not answer within {}s",
                    VERSION_TIMEOUT.as_secs()
                ));
            }
        }
    }
}
