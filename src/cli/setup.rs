//! The commands that prepare and inspect rather than run tasks: adapters, config, init, doctor,
//! trust.

use std::path::{Path, PathBuf};

use super::render::{print_json, say, say_err};
use crate::domain::adapter::ADAPTERS;
use crate::ops;
use crate::ops::doctor::{self, Level};

pub fn adapters(json: bool) -> anyhow::Result<i32> {
    let infos: Vec<_> = ADAPTERS.iter().map(|adapter| adapter.info()).collect();
    if json {
        print_json(&infos);
        return Ok(0);
    }
    for info in infos {
        let caps = &info.capabilities;
        let modes: Vec<&str> = caps.supported_modes.iter().map(|m| m.as_str()).collect();
        println!(
            "{}  (binary: {}; install: {})",
            caps.agent_kind, info.default_bin, info.install_hint
        );
        println!(
            "  modes: {} (default {})",
            modes.join(", "),
            caps.default_mode.as_str()
        );
        println!(
            "  steering: {}  attach: {}  model selection: {}  artifacts: {}  live progress: {}",
            caps.supports_steering,
            caps.supports_attach,
            caps.supports_model_selection,
            caps.supports_artifacts,
            caps.supports_live_progress
        );
        println!("  models: {}", info.available_models.join(", "));
    }
    Ok(0)
}

pub fn config(cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let (entries, ignored) = ops::config_entries(cwd)?;
    if json {
        print_json(&entries);
        return Ok(0);
    }
    for entry in entries {
        if entry.key == "trust" {
            let state = entry.value.get("state").unwrap_or(&entry.value);
            say(&format!(
                "{:<36} {:<24} ({})",
                "trust",
                state.as_str().unwrap_or("-"),
                entry.source
            ));
            for withheld in &ignored {
                say(&format!(
                    "  ignored {:<28} {}: {}",
                    withheld.key,
                    withheld.class.as_str(),
                    withheld.why
                ));
            }
            continue;
        }
        let value = match &entry.value {
            serde_json::Value::String(text) => text.clone(),
            serde_json::Value::Null => "-".to_string(),
            other => other.to_string(),
        };
        say(&format!(
            "{:<36} {:<24} ({})",
            entry.key, value, entry.source
        ));
    }
    Ok(0)
}

pub fn init(cwd: &Path, force: bool, agent: Option<&str>, json: bool) -> anyhow::Result<i32> {
    let outcome = ops::init(cwd, force, agent)?;
    if json {
        print_json(&outcome);
    } else {
        let verb = if outcome.overwritten {
            "replaced"
        } else {
            "wrote"
        };
        say(&format!("{verb} {}", outcome.config.display()));
        say(&format!("{} ignores .cuekit/", outcome.gitignore.display()));
    }
    Ok(0)
}

/// Exit status 1 when any check failed, 0 otherwise (warnings included).
pub fn doctor(cwd: &Path, fix: bool, all: bool, json: bool) -> anyhow::Result<i32> {
    // Submits that were cut short are undone first, so what is left to report is real.
    let undone = ops::reap_orphans();
    let mut checks = doctor::doctor(cwd, fix, all);
    if !undone.is_empty() {
        checks.push(doctor::Check::new(
            "interrupted submits",
            Level::Ok,
            format!("undone: {}", undone.join(", ")),
        ));
    }
    checks.extend(ops::hosts(cwd).unwrap_or_default().iter().map(host_check));
    if json {
        print_json(&checks);
    } else {
        for check in &checks {
            let level = match check.level {
                Level::Ok => "ok  ",
                Level::Warn => "warn",
                Level::Fail => "FAIL",
            };
            say(&format!("{level}  {}: {}", check.name, check.message));
            if let Some(fixed) = &check.fixed {
                say(&format!("      fixed: {fixed}"));
            }
            if let Some(next) = &check.next_step {
                say(&format!("      next: {next}"));
            }
        }
    }
    Ok(i32::from(
        checks.iter().any(|check| check.level == Level::Fail),
    ))
}

#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// The config file (default: the project's .cuekit.yaml, found from here upwards), a team
    /// spec, or a file an agent's CLI loads from the project (`.qwen/settings.json`,
    /// `opencode.json`, `.pi/extensions/*.ts`…).
    #[arg(value_name = "FILE")]
    file: Option<PathBuf>,
    /// Withdraw the trust instead.
    #[arg(long)]
    revoke: bool,
    /// Trust without asking (what it trusts is still shown).
    #[arg(long, short = 'y')]
    yes: bool,
}

pub fn trust(args: &TrustArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    let yes = args.yes;
    let mut confirm = |preview: &ops::TrustPreview| {
        show_trust_preview(preview);
        yes || ask("Trust it as it is now? [y/N] ")
    };
    let (path, state) = ops::trust_by_person(args.file.as_deref(), args.revoke, cwd, &mut confirm)?;
    if json {
        print_json(&serde_json::json!({"file": path, "state": state}));
    } else {
        say(&format!("{}: {state}", path.display()));
    }
    Ok(0)
}

/// What `cuekit trust` would make apply, on stderr (stdout stays the answer, text or JSON).
fn show_trust_preview(preview: &ops::TrustPreview) {
    let file = preview.file.display();
    match (&preview.text, preview.keys.is_empty()) {
        (Some(text), _) if preview.kind == "agent file" => {
            say_err(&format!(
                "{file} is loaded by an agent's own CLI when a task starts, and can run code: \
                 trusting it lets the agent load it as it is:\n{text}"
            ));
        }
        (Some(text), _) => {
            say_err(&format!(
                "{file} is a team spec: trusting it lets its members run as written:\n{text}"
            ));
        }
        (None, true) => say_err(&format!(
            "{file} sets no key that runs code or places files: trusting it changes nothing that runs"
        )),
        (None, false) => {
            say_err(&format!(
                "{file}: trusting it lets these keys apply (they run code or place files):"
            ));
            for (key, value) in &preview.keys {
                say_err(&format!("  {key}: {value}"));
            }
        }
    }
}

/// Asks on stderr and reads one answer from stdin: yes only for `y` or `yes`.
fn ask(question: &str) -> bool {
    use std::io::Write;
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// A configured host as `doctor` sees it: `cuekit hosts`' report, and a warning where the
/// host's systemd could end its tmux server at logout.
fn host_check(report: &ops::HostReport) -> doctor::Check {
    let name = format!("host {}", report.name);
    if let Some(error) = &report.error {
        let mut check = doctor::Check::new(name, Level::Fail, error.message.clone());
        check.next_step = error.hint.clone();
        return check;
    }
    let versions = [&report.cuekit_version, &report.tmux_version]
        .into_iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if report.linger == Some(false) {
        let mut check = doctor::Check::new(
            name,
            Level::Warn,
            format!("{versions}; systemd does not keep your processes there after logout"),
        );
        check.next_step = Some(format!(
            "where logind's KillUserProcesses=yes, tasks end with the ssh session: run \
             `loginctl enable-linger` on {}",
            report.ssh
        ));
        return check;
    }
    doctor::Check::new(name, Level::Ok, versions)
}
