//! The command line: clap definitions here, one small file per subcommand (parse → op →
//! render). Errors become `error[code]: message` (or JSON) and the code's exit status.

mod acp;
mod approve;
mod attach;
mod cancel;
mod check;
mod conflicts;
mod diff;
mod digest;
mod events;
mod extras;
mod handoff;
mod hosts;
mod list_table;
mod logs;
mod mcp;
mod merge;
mod prune;
mod render;
mod report;
mod result;
mod rm;
mod roles;
mod serve;
mod setup;
mod status;
mod steer;
mod style;
mod submit;
mod team;
mod wait;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};
use clap_complete::engine::{ArgValueCandidates, CompletionCandidate};

use crate::domain::error::{Error, ErrorCode};

#[derive(Debug, Parser)]
#[command(
    name = "cuekit",
    version,
    about = "Delegate work to child coding agents running in tmux"
)]
pub struct Cli {
    /// Print machine-readable JSON (errors as {"error":{"code","message","hint"}}).
    #[arg(long, global = true)]
    json: bool,
    /// Colour status words: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    color: style::ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start a task: render the prompt, launch the agent in a new tmux session.
    #[command(after_help = submit::EXAMPLES)]
    Submit(Box<submit::SubmitArgs>),
    /// Show the status of tasks (or a team's summary with --team).
    Status {
        #[arg(required_unless_present = "team", value_name = "ID", add = task_ids())]
        ids: Vec<String>,
        /// A team's summary: members per status, who waits on a human or the parent.
        #[arg(long, value_name = "NAME", conflicts_with = "ids")]
        team: Option<String>,
    },
    /// List this project's tasks (or every task with --all, or a team's with --team).
    List {
        /// Every task cuekit knows, from any project.
        #[arg(long)]
        all: bool,
        /// The members of a team, whichever project they work in.
        #[arg(long, value_name = "NAME", conflicts_with = "all")]
        team: Option<String>,
    },
    /// Attach this terminal to a task's tmux session (detach with the tmux prefix, then d).
    Attach {
        #[arg(value_name = "ID", add = task_ids())]
        id: String,
    },
    /// Print a task's transcript (readable by default).
    Logs(logs::LogsArgs),
    /// What a task did: status, final text, tool calls, tokens, files changed, reports.
    Result {
        #[arg(value_name = "ID", required_unless_present = "team", add = task_ids())]
        id: Option<String>,
        /// Every member's result, in one document.
        #[arg(long, value_name = "NAME", conflicts_with = "id")]
        team: Option<String>,
    },
    /// Send a message to a running interactive or ACP task.
    Steer(steer::SteerArgs),
    /// Answer the permission request an ACP task waits on, or an interactive Gemini child's
    /// permission dialog (allow, allow always, reject).
    Approve(approve::ApproveArgs),
    /// Start an ended task again (a new attempt, continuing its agent's session).
    Retry {
        #[arg(value_name = "ID", add = task_ids())]
        id: String,
    },
    /// Hand a running task to another agent: its attempt ends (its work stays) and the next
    /// runs on `--agent K`, told a recap of the work so far and your message.
    Handoff(handoff::HandoffArgs),
    /// Run a task's check (`submit --check`) on its work now and record the verdict (exit 35,
    /// check_failed, when it fails).
    Check(check::CheckArgs),
    /// Wait until tasks end; exit status says whether all completed.
    Wait(wait::WaitArgs),
    /// Cancel running tasks (whole process tree), or clean up ended ones' sessions.
    Cancel(cancel::CancelArgs),
    /// Transitions of this project's tasks (or all), as the monitor announced them.
    Events(events::EventsArgs),
    /// What ended (by status, checked or not), what waits on you, what conflicts: since the
    /// last digest (or --since); --send also sends it to your notify channels.
    Digest(digest::DigestArgs),
    /// Stop (or with --off, resume) a task's notices to webhook, Slack, Discord, ntfy.
    Mute(digest::MuteArgs),
    /// A worktree task's work against its base: commits, uncommitted and untracked changes.
    Diff(diff::DiffArgs),
    /// Which worktree tasks' work would conflict with each other or with their target branch.
    Conflicts(conflicts::ConflictsArgs),
    /// Merge an ended worktree task's branch into the target branch (where it is checked out).
    Merge(merge::MergeArgs),
    /// Remove ended tasks: record, transcript, worktree and branch (work in a worktree keeps it).
    Rm(rm::RmArgs),
    /// Remove this project's ended tasks, keeping worktrees that hold work.
    Prune(prune::PruneArgs),
    /// List the agents cuekit can run, with their capabilities and models.
    Adapters,
    /// List the roles (agent profiles) for `submit --role`, with the files they come from.
    Roles,
    /// Teams of tasks: `cuekit team submit NAME --spec FILE`.
    #[command(subcommand)]
    Team(team::TeamCommand),
    /// Inside a task's pane: tell the parent how the task stands (progress, blocked, done, failed).
    Report(report::ReportArgs),
    /// Check the configured hosts: reachable, cuekit and tmux versions, task counts.
    Hosts,
    /// Manage a configured host: `cuekit host install NAME`.
    #[command(subcommand)]
    Host(hosts::HostCommand),
    /// Print the effective configuration and where each value comes from.
    Config,
    /// Write a starter .cuekit.yaml here and add .cuekit/ to .gitignore.
    Init {
        /// Replace an existing .cuekit.yaml.
        #[arg(long)]
        force: bool,
        /// The project's default agent (defaults.agent), e.g. antigravity.
        #[arg(long, value_name = "KIND")]
        agent: Option<String>,
    },
    /// Check what is missing before anything runs (exit status 1 if a check fails).
    Doctor {
        /// Repair what is safe to repair: create directories, add the .gitignore entry.
        #[arg(long)]
        fix: bool,
        /// Check every agent (default: the default agent, those a config file sets
        /// `adapters.<kind>` for, and those of your tasks).
        #[arg(long)]
        all: bool,
    },
    /// Every task on one screen: look, steer, stop or review each with one key.
    #[command(after_long_help = crate::top::MAN_KEYS)]
    Top {
        /// Every task cuekit knows, not only this project's (`a` switches while running).
        #[arg(long)]
        all: bool,
        /// How often the screen is brought up to date.
        #[arg(long, default_value = "1s", value_parser = parse_duration)]
        refresh: Duration,
    },
    /// Print the shell script that completes cuekit's commands and task ids.
    Completions(extras::CompletionsArgs),
    /// Print cuekit's man page (roff), or a subcommand's: `cuekit man | man -l -`.
    Man(extras::ManArgs),
    /// Serve every task on a web page a paired phone or browser can use (look, steer, approve).
    Serve(serve::ServeArgs),
    /// Serve the Model Context Protocol on stdio (`cuekit mcp config` prints client setup).
    Mcp(mcp::McpArgs),
    /// Internal: the filter an agent's event stream is piped through in its pane.
    #[command(name = "__events", hide = true)]
    EventFilter { task_dir: PathBuf },
    /// Trust the project's .cuekit.yaml (or FILE) as it is now, so its keys that run code apply.
    Trust(setup::TrustArgs),
    /// Internal: a batch task's check, run by its launch when the agent exited 0.
    #[command(name = "__check", hide = true)]
    LaunchCheck(check::LaunchCheckArgs),
    /// Internal: the monitor of one tmux server (endings, timeouts, transitions, hooks).
    #[command(name = "__monitor", hide = true)]
    Monitor { socket: String },
    /// Internal: the user's scheduler (starts queued tasks while any wait).
    #[command(name = "__scheduler", hide = true)]
    Scheduler,
    /// Internal: the ACP client of an ACP task, in its pane.
    #[command(name = "__acp", hide = true)]
    Acp(acp::AcpArgs),
    /// Internal: runs a sandbox's bubblewrap with no way to the machine's abstract sockets.
    #[command(name = "__scope", hide = true)]
    Scope {
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Internal: runs a sandbox's bubblewrap in a network namespace of its own, slirp4netns
    /// attached before the child runs.
    #[command(name = "__net", hide = true)]
    Net {
        #[arg(long)]
        slirp: PathBuf,
        /// slirp4netns's own sandbox and seccomp filter.
        #[arg(long)]
        confined: bool,
        #[arg(last = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Internal: ends a task's processes and session, detached from its caller.
    #[command(name = "__stop", hide = true)]
    Stop {
        task_id: String,
        #[arg(long)]
        after: Option<u32>,
    },
}

/// Parses, runs, and returns the process exit status.
pub fn run() -> i32 {
    // Output piped into `head` must end the process quietly, not panic on a broken pipe.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // A shell asking for completions (the script `cuekit completions` prints) ends here.
    clap_complete::CompleteEnv::with_factory(Cli::command).complete();
    // `args_os`: an argument that is not UTF-8 is clap's usage error, never a panic here.
    // Words after `--` are text, whatever they say.
    let wants_json = std::env::args_os()
        .take_while(|arg| arg != "--")
        .any(|arg| arg == "--json");
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // --help and --version.
            let _ = err.print();
            return 0;
        }
        Err(err) => return usage_error(&err, wants_json),
    };
    match dispatch(&cli) {
        Ok(status) => status,
        Err(err) => report(&err, cli.json),
    }
}

fn dispatch(cli: &Cli) -> anyhow::Result<i32> {
    let cwd = std::env::current_dir().map_err(|err| {
        Error::new(
            ErrorCode::Io,
            format!("cannot read the current directory: {err}"),
        )
        .with_hint("cd to a directory that exists, and run it again")
    })?;
    let json = cli.json;
    style::init(cli.color);
    match &cli.command {
        Command::Submit(args) => submit::run(args, &cwd, json),
        Command::Status { ids, team: None } => status::status(ids, &cwd, json),
        Command::Status {
            team: Some(team), ..
        } => status::team_status(team, &cwd, json),
        Command::List { all, team } => status::list(*all, team.as_deref(), &cwd, json),
        Command::Attach { id } => attach::run(id, &cwd),
        Command::Logs(args) => logs::run(args, &cwd),
        Command::Steer(args) => steer::run(args, &cwd, json),
        Command::Approve(args) => approve::run(args, &cwd, json),
        Command::Check(args) => check::run(args, &cwd, json),
        Command::LaunchCheck(args) => Ok(check::from_launch(args, &cwd)),
        Command::Wait(args) => wait::run(args, &cwd, json),
        Command::Cancel(args) => cancel::run(args, &cwd, json),
        Command::Events(args) => events::run(args, &cwd, json),
        Command::Digest(args) => digest::run(args, &cwd, json),
        Command::Mute(args) => digest::mute(args, json),
        Command::Diff(args) => diff::run(args, &cwd, json),
        Command::Conflicts(args) => conflicts::run(args, &cwd, json),
        Command::Merge(args) => merge::run(args, &cwd, json),
        Command::Rm(args) => rm::run(args, &cwd, json),
        Command::Prune(args) => prune::run(args, &cwd, json),
        Command::Adapters => setup::adapters(json),
        Command::Roles => roles::run(&cwd, json),
        Command::Team(command) => team::run(command, &cwd, json),
        Command::Report(args) => report::run(args, &cwd, json),
        Command::Hosts => hosts::run(&cwd, json),
        Command::Host(command) => hosts::host(command, &cwd, json),
        Command::Config => setup::config(&cwd, json),
        Command::Init { force, agent } => setup::init(&cwd, *force, agent.as_deref(), json),
        Command::Doctor { fix, all } => setup::doctor(&cwd, *fix, *all, json),
        Command::Top { all, refresh } => {
            if *refresh < Duration::from_millis(100) {
                return Err(Error::invalid_input("--refresh must be at least 100ms")
                    .with_hint("e.g. --refresh 500ms or --refresh 2s")
                    .into());
            }
            let options = crate::top::Options {
                all: *all,
                refresh: *refresh,
                color: style::enabled_for_terminal(cli.color),
            };
            crate::top::run(&options, &cwd)?;
            Ok(0)
        }
        Command::Completions(args) => extras::completions(args),
        Command::Man(args) => extras::man(args),
        Command::Mcp(args) => mcp::run(args, &cwd),
        Command::Serve(args) => serve::run(args, &cwd, json),
        Command::Result { id, team } => result::run(id.as_deref(), team.as_deref(), &cwd, json),
        Command::EventFilter { task_dir } => {
            crate::ops::run_event_filter(task_dir)?;
            Ok(0)
        }
        Command::Trust(args) => setup::trust(args, &cwd, json),
        Command::Monitor { socket } => {
            crate::ops::run_monitor(socket)?;
            Ok(0)
        }
        Command::Scheduler => {
            crate::ops::run_scheduler()?;
            Ok(0)
        }
        Command::Scope { command } => {
            crate::ops::run_scoped(command)?;
            Ok(0)
        }
        Command::Net {
            slirp,
            confined,
            command,
        } => Ok(crate::ops::run_net(slirp, *confined, command)?),
        Command::Handoff(args) => handoff::run(args, &cwd, json),
        Command::Retry { id } => {
            let view = crate::ops::retry(id, &cwd)?;
            if json {
                render::print_json(&view);
            } else {
                println!("{}", render::task_details(&view));
            }
            Ok(0)
        }
        Command::Acp(args) => acp::run(args),
        Command::Stop { task_id, after } => {
            crate::ops::run_stopper(task_id, *after)?;
            Ok(0)
        }
    }
}

/// clap's complaint, with what to do about the commonest one: a word starting with `-` that
/// is no flag of the command, whether a misspelt flag or text (which goes after `--`).
fn usage_error(err: &clap::Error, json: bool) -> i32 {
    let hint = match err.kind() {
        clap::error::ErrorKind::UnknownArgument => {
            "a flag counts wherever it stands: text that starts with `-` goes after `--` \
             (`cuekit submit -- -fix this`), and a flag's value that starts with `-` after `=` \
             (`--context=-x`); `cuekit help <command>` lists the flags"
        }
        _ => "run `cuekit --help`",
    };
    if json {
        let rendered = err.render().to_string();
        let first = rendered.lines().next().unwrap_or_default();
        let message = first.strip_prefix("error: ").unwrap_or(first).to_string();
        return report(
            &Error::new(ErrorCode::Usage, message).with_hint(hint).into(),
            true,
        );
    }
    let _ = err.print();
    eprintln!("  hint: {hint}");
    ErrorCode::Usage.exit_status()
}

fn report(err: &anyhow::Error, json: bool) -> i32 {
    let (code, message, hint) = match err.downcast_ref::<Error>() {
        Some(known) => (known.code, known.message.clone(), known.hint.clone()),
        None => (ErrorCode::Internal, format!("{err:#}"), None),
    };
    if json {
        let error =
            serde_json::json!({"error": {"code": code.as_str(), "message": message, "hint": hint}});
        println!("{}", render::json_line(&error));
    } else {
        render::say_err(&format!("error[{}]: {message}", code.as_str()));
        if let Some(hint) = hint {
            render::say_err(&format!("  hint: {hint}"));
        }
    }
    code.exit_status()
}

/// Completion of task ids from the registry, newest first, each with its objective.
fn task_ids() -> ArgValueCandidates {
    ArgValueCandidates::new(|| {
        crate::ops::known_tasks()
            .into_iter()
            .map(|(id, objective)| {
                let help = render::visible(&render::first_line(&objective, 50)).into_owned();
                CompletionCandidate::new(id).help(Some(help.into()))
            })
            .collect()
    })
}

/// `30s`, `10m`, `1h30m`, or plain seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    humantime::parse_duration(text).map_err(|err| format!("{err} (use e.g. 90s, 10m, 1h30m)"))
}

/// Text from the words given, `-` for stdin, or a file: shared by submit and steer.
fn read_text(words: &[String], file: Option<&PathBuf>, what: &str) -> Result<String, Error> {
    use std::io::Read;
    match (file, words) {
        (Some(_), [_, ..]) => Err(Error::new(
            ErrorCode::Usage,
            format!("give the {what} as words or with --file, not both"),
        )),
        (Some(path), []) => read_utf8(path, &format!("the {what}")),
        (None, [dash]) if dash == "-" => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .take(TEXT_LIMIT + 1)
                .read_to_end(&mut bytes)
                .map_err(|err| {
                    Error::new(
                        ErrorCode::Io,
                        format!("cannot read the {what} from stdin: {err}"),
                    )
                })?;
            if bytes.len() as u64 > TEXT_LIMIT {
                return Err(too_large(&format!("the {what} on stdin")));
            }
            utf8(bytes, &format!("the {what} on stdin"))
        }
        (None, words) => Ok(words.join(" ")),
    }
}

/// The most a text the user names (`--file`, `-` for stdin) may hold: more is no prompt or
/// message, and reading on would grow without end (`--file /dev/zero`).
const TEXT_LIMIT: u64 = 4 * 1024 * 1024;

fn too_large(what: &str) -> Error {
    Error::invalid_input(format!(
        "{what} holds more than the {TEXT_LIMIT} bytes cuekit reads of a text"
    ))
    .with_hint("shorten it, or name the file in the text for the agent to read")
}

/// A file that must hold text (an objective, a message): a regular file (a FIFO or a device
/// is refused at once, never waited on or read without end), up to [`TEXT_LIMIT`] bytes.
fn read_utf8(path: &Path, what: &str) -> Result<String, Error> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|err| Error::io("read", path, err))?;
    let meta = file
        .metadata()
        .map_err(|err| Error::io("read", path, err))?;
    let whose = format!("{what} in {}", path.display());
    if !meta.is_file() {
        return Err(Error::invalid_input(format!(
            "{} is not a regular file (a FIFO, a device or a folder): cuekit reads {what} only \
             from a file",
            path.display()
        ))
        .with_hint("save the text into a file first, or give it on stdin with `-`"));
    }
    if meta.len() > TEXT_LIMIT {
        return Err(too_large(&whose));
    }
    let mut bytes = Vec::new();
    file.take(TEXT_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| Error::io("read", path, err))?;
    if bytes.len() as u64 > TEXT_LIMIT {
        return Err(too_large(&whose));
    }
    utf8(bytes, &whose)
}

/// Bytes that are not UTF-8 are a bad value, not a failed read: prompts, messages and records
/// are text.
fn utf8(bytes: Vec<u8>, what: &str) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|err| {
        Error::invalid_input(format!(
            "{what} is not UTF-8 text (the byte at offset {} is not valid UTF-8)",
            err.utf8_error().valid_up_to()
        ))
        .with_hint("convert it to UTF-8 first, e.g. `iconv -f LATIN1 -t UTF-8 FILE`")
    })
}
