//! What people expect of a clap tool beyond its commands: shell completion and a man page.

use std::io::Write;

use clap::{Args, CommandFactory};
use clap_complete::env::Shells;

use super::Cli;
use crate::domain::error::{Error, ErrorCode};

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_parser = ["bash", "zsh", "fish", "elvish", "powershell"])]
    shell: String,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// A subcommand's page instead of the main one (e.g. `submit`).
    subcommand: Option<String>,
}

/// Prints the registration script. It calls cuekit back at each <Tab> (`COMPLETE=<shell>
/// cuekit -- …`), so task ids come from the registry as it is at that moment.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<i32> {
    let shells = Shells::builtins();
    let shell = shells
        .completer(&args.shell)
        .expect("the value parser admits only built-in shells");
    let exe = std::env::current_exe()
        .map(|path| path.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "cuekit".into());
    let mut script = Vec::new();
    shell.write_registration("COMPLETE", "cuekit", "cuekit", &exe, &mut script)?;
    std::io::stdout().write_all(&script)?;
    Ok(0)
}

pub fn man(args: &ManArgs) -> anyhow::Result<i32> {
    let mut command = Cli::command();
    command.build();
    let page = match &args.subcommand {
        None => command,
        Some(name) => command
            .find_subcommand(name)
            .filter(|sub| !sub.is_hide_set())
            .cloned()
            .map(|sub| {
                let full = format!("cuekit-{}", sub.get_name());
                sub.name(full.leak() as &'static str)
                    .version(env!("CARGO_PKG_VERSION"))
            })
            .ok_or_else(|| {
                Error::new(ErrorCode::Usage, format!("no subcommand '{name}'"))
                    .with_hint("`cuekit --help` lists them")
            })?,
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page).render(&mut roff)?;
    std::io::stdout().write_all(&roff)?;
    Ok(0)
}
