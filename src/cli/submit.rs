use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use super::render::{print_json, say, say_err, task_details};
use crate::domain::error::{Error, ErrorCode};
use crate::domain::spec::Mode;
use crate::ops::{self, SubmitOutcome, SubmitRequest};

/// `submit --help`'s groups of flags, in the order a person decides them.
const RUN: &str = "What to run";
const WHERE: &str = "Where it runs";
const ENDS: &str = "How it ends (and how you follow it)";
const SCHEDULING: &str = "Scheduling";
const CHECKS: &str = "Checks and races";

/// `submit --help`'s examples, after the flags: each runs as written.
pub const EXAMPLES: &str = "\
Examples:
  # A first task without an API key: a command in a batch pane, waited on, its output read
  id=$(cuekit submit --agent command --mode batch -- sh -c 'echo hello' | cut -d' ' -f1)
  cuekit wait \"$id\" && cuekit result \"$id\"

  # An agent in its own worktree, watched live (detach: tmux prefix, then d)
  cuekit submit --worktree --attach \"Add a --verbose flag to the CLI\"

  # Unattended, checked (in a worktree of its own): it completes only when `cargo test` passes
  cuekit submit --mode batch --check 'cargo test' \"Fix the failing test\"

  # A reviewer that starts once the first task completed, with its answer in the prompt
  cuekit submit --after t_0123456789ab --context-from t_0123456789ab --role reviewer \"Review the change\"

  # Two agents race; the one whose check passes wins
  cuekit submit --best-of 2 --agents gemini,claude-code --check 'make test' \"Fix issue 12\"";

#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// Agent to run (default: `defaults.agent` in the config, else gemini).
    #[arg(long)]
    #[arg(help_heading = RUN)]
    agent: Option<String>,
    /// Model name passed to the agent (e.g. gemini-2.5-flash).
    #[arg(long, short = 'm')]
    #[arg(help_heading = RUN)]
    model: Option<String>,
    /// interactive (attachable, steerable TUI), batch (single shot) or acp (the agent's
    /// Agent Client Protocol: attachable, steered over the protocol, permissions answered).
    #[arg(long, value_parser = ["interactive", "batch", "acp"])]
    #[arg(help_heading = RUN)]
    mode: Option<String>,
    /// ACP: end after the first turn that ends (default: the session stays open for steering).
    #[arg(long)]
    #[arg(help_heading = RUN)]
    once: bool,
    /// Agent approval mode (Gemini: default, auto_edit, yolo, plan); replaces the bypass flag.
    #[arg(long)]
    #[arg(help_heading = RUN)]
    approval_mode: Option<String>,
    /// Do not pass the agent's permission-bypass flag (an unattended child may then stall).
    #[arg(long, conflicts_with = "skip_permissions")]
    #[arg(help_heading = RUN)]
    no_skip_permissions: bool,
    /// Pass the agent's permission-bypass flag even where the config says `permissions: prompt`.
    #[arg(long)]
    #[arg(help_heading = RUN)]
    skip_permissions: bool,
    /// Directory the agent works in (default: the current directory; with --host, a directory
    /// on the host, default its configured `cwd`, else the remote home).
    #[arg(long)]
    #[arg(help_heading = WHERE)]
    cwd: Option<PathBuf>,
    /// Run the task on a configured host, over SSH (`cuekit hosts` lists them).
    #[arg(long, value_name = "NAME")]
    #[arg(help_heading = WHERE)]
    host: Option<String>,
    /// The new task's id (t_ and 12 lowercase hex digits), chosen by the caller so a retry is
    /// safe: the same request again answers with the task it started.
    #[arg(long, value_name = "ID")]
    #[arg(help_heading = RUN)]
    id: Option<String>,
    /// The permission flags come from a delegate (an MCP client on another machine): they may
    /// tighten this machine's policy, never loosen it.
    #[arg(long, hide = true)]
    delegated: bool,
    /// Stop the task and mark it timed_out after this long (e.g. 30m).
    #[arg(long, value_parser = super::parse_duration)]
    #[arg(help_heading = ENDS)]
    timeout: Option<Duration>,
    /// Batch: plain-text output instead of the agent's event stream (no result.json details).
    #[arg(long)]
    #[arg(help_heading = RUN)]
    no_events: bool,
    /// jcode: the provider profile to run with (default: adapters.jcode.provider_profile).
    #[arg(long, value_name = "PROFILE")]
    #[arg(help_heading = RUN)]
    provider_profile: Option<String>,
    /// Continue the agent session of an earlier task (its directory is the default --cwd).
    #[arg(long, value_name = "TASK_ID")]
    #[arg(help_heading = RUN)]
    resume_from: Option<String>,
    /// A role (agent profile): its defaults and instructions (`cuekit roles` lists them).
    #[arg(long, value_name = "NAME")]
    #[arg(help_heading = RUN)]
    role: Option<String>,
    /// Tag the task with a team, to follow it with `--team` on list, status, wait, cancel, …
    #[arg(long, value_name = "NAME")]
    #[arg(help_heading = SCHEDULING)]
    team: Option<String>,
    /// Run the task in its own git worktree, on a new branch (see docs/guides/worktrees.md).
    #[arg(long, conflicts_with = "no_worktree")]
    #[arg(help_heading = WHERE)]
    worktree: bool,
    /// Run in the current checkout even where the config sets defaults.worktree.
    #[arg(long)]
    #[arg(help_heading = WHERE)]
    no_worktree: bool,
    /// The worktree's starting point (default: the current branch, else HEAD).
    #[arg(long, value_name = "REF")]
    #[arg(help_heading = WHERE)]
    base: Option<String>,
    /// The worktree's new branch (default: worktree.branch_prefix + the task id).
    #[arg(long, value_name = "NAME")]
    #[arg(help_heading = WHERE)]
    branch: Option<String>,
    /// Start once these tasks completed (comma-separated ids); the task waits `queued` until
    /// then, and is cancelled (`dependency_failed`) if one of them fails or is cancelled.
    #[arg(long, value_name = "ID,…", value_delimiter = ',')]
    #[arg(help_heading = SCHEDULING)]
    after: Vec<String>,
    /// Put this task's answer (its final text) into the prompt, so a reviewer reads what the
    /// implementer said; a task not ended yet is waited for, as with --after.
    #[arg(long, value_name = "ID")]
    #[arg(help_heading = SCHEDULING)]
    context_from: Option<String>,
    /// Run in a worktree that starts from this worktree task's branch tip (its uncommitted
    /// work committed first), made when this task starts: a tester sees the implementer's
    /// changes. Implies --worktree; waits for the task, as with --after.
    #[arg(long, value_name = "ID", conflicts_with = "base")]
    #[arg(help_heading = SCHEDULING)]
    base_from: Option<String>,
    /// With --after: start once they ended, whatever their status.
    #[arg(long, requires = "after")]
    #[arg(help_heading = SCHEDULING)]
    after_ended: bool,
    /// Higher starts first when the queue holds several (default 0; may be negative).
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        default_value_t = 0
    )]
    #[arg(help_heading = SCHEDULING)]
    priority: i32,
    /// Start now whatever the limits (dependencies still hold).
    #[arg(long)]
    #[arg(help_heading = SCHEDULING)]
    now: bool,
    /// Start the task again, continuing its session, when an attempt ends rate_limited,
    /// transient or pane_disappeared, at most N more times (0: never; default: `retry` in
    /// your config).
    #[arg(long, value_name = "N")]
    #[arg(help_heading = ENDS)]
    retry: Option<u32>,
    /// When an attempt ends rate_limited and its retries on its agent are spent (or its reset
    /// is further off than `retry.fallback_after`, default 10m), go on with the next of these
    /// agents in the same work dir, told a recap of the work so far (default: `retry.fallback`
    /// in your config).
    #[arg(long, value_name = "K[:MODEL],…")]
    #[arg(help_heading = ENDS)]
    fallback: Option<String>,
    /// Stop the task (failed, budget_exceeded) once its agent reports more tokens than this
    /// (batch with its event stream, or acp: the modes that report usage).
    #[arg(long, value_name = "N")]
    #[arg(help_heading = ENDS)]
    max_tokens: Option<u64>,
    /// Stop the task once its agent reports more turns than this (batch or acp).
    #[arg(long, value_name = "N")]
    #[arg(help_heading = ENDS)]
    max_turns: Option<u32>,
    /// Run the agent in a sandbox: `--sandbox` (bubblewrap: the machine read-only, HOME hidden,
    /// writable only the work dir, a private /tmp and the agent's own state; its own pid
    /// namespace, no outside unix socket), `--sandbox=agent` (the agent's own flag: Gemini -s,
    /// agy --sandbox), `--sandbox=none`. Default: `sandbox.mode` in your config. Fails
    /// (sandbox_unavailable) before anything starts where none can be made.
    #[arg(long, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "bwrap")]
    #[arg(help_heading = WHERE)]
    sandbox: Option<SandboxArg>,
    /// With the bubblewrap sandbox: no network at all (a namespace of its own, loopback only).
    #[arg(long)]
    #[arg(help_heading = WHERE)]
    no_network: bool,
    /// When the task ends or waits on a human, type one line of cuekit's into the pane of the
    /// agent that submits it (`[cuekit] t_… completed (exit 0): …`), once that agent sits idle
    /// at an empty prompt: for an AI parent that runs in tmux. Fails (no_parent_agent) when
    /// the submitter is not an agent in the foreground of a tmux pane.
    #[arg(long)]
    #[arg(help_heading = ENDS)]
    wake_parent: bool,
    /// Run this command (`/bin/sh -c`) on the task's work when the agent is done, in a scratch
    /// checkout whose test files and runner configuration are restored from the base
    /// (repeatable; all must pass). A failure goes back to the child for a fix round; the task
    /// completes only when the last check passed, else fails `check_failed`. In a git
    /// repository without --worktree, the task gets a worktree of its own.
    #[arg(long = "check", value_name = "CMD")]
    #[arg(help_heading = CHECKS)]
    check: Vec<String>,
    /// Fix rounds after a failed check (default 2; 0: the first verdict is final).
    #[arg(long, value_name = "N", requires = "check")]
    #[arg(help_heading = CHECKS)]
    check_rounds: Option<u32>,
    /// The limit on each check command (default 10m); past it, its process group is killed.
    #[arg(long, value_parser = super::parse_duration, requires = "check")]
    #[arg(help_heading = CHECKS)]
    check_timeout: Option<Duration>,
    /// A path glob restored from the base before each check, in place of the defaults
    /// (repeatable; e.g. 'tests/**', 'conftest.py').
    #[arg(long, value_name = "GLOB", requires = "check")]
    #[arg(help_heading = CHECKS)]
    check_protect: Vec<String>,
    /// Interactive: leave the child at its prompt once its check passed (else it is told to
    /// quit, and the task completes).
    #[arg(long, requires = "check")]
    #[arg(help_heading = CHECKS)]
    keep_open: bool,
    /// Race N candidates of this task (2 to 16), each in a checkout of its own, and pick the
    /// one whose check passed (fewer fix rounds, smaller diff, fewer tokens, earlier ending
    /// break ties). Needs a check. Prints the race id, which status, wait, result, merge,
    /// diff, cancel and rm accept.
    #[arg(long, value_name = "N", conflicts_with = "attach")]
    #[arg(help_heading = CHECKS)]
    best_of: Option<u32>,
    /// The agents the candidates take in turn (comma-separated).
    #[arg(long, value_name = "A,B", value_delimiter = ',', requires = "best_of")]
    #[arg(help_heading = CHECKS)]
    agents: Vec<String>,
    /// The models the candidates take in turn (comma-separated).
    #[arg(
        long,
        value_name = "M1,M2",
        value_delimiter = ',',
        requires = "best_of"
    )]
    #[arg(help_heading = CHECKS)]
    models: Vec<String>,
    /// Decide the race at the first candidate that passes (the rest are cancelled).
    #[arg(long, requires = "best_of")]
    #[arg(help_heading = CHECKS)]
    first: bool,
    /// Merge the winner as soon as the race is decided, when it merges cleanly.
    #[arg(long, requires = "best_of")]
    #[arg(help_heading = CHECKS)]
    merge: bool,
    /// Print the launch command without running anything (without the per-task --session-id).
    #[arg(long)]
    #[arg(help_heading = RUN)]
    dry_run: bool,
    /// Attach this terminal to the task as soon as it starts (detach: tmux prefix, then d).
    #[arg(long, conflicts_with = "dry_run")]
    #[arg(help_heading = ENDS)]
    attach: bool,
    /// Read the objective from a file.
    #[arg(long, short = 'f')]
    #[arg(help_heading = RUN)]
    file: Option<PathBuf>,
    /// Background the agent should know, added to the prompt.
    #[arg(long)]
    #[arg(help_heading = RUN)]
    context: Option<String>,
    /// A constraint the agent must respect (repeatable).
    #[arg(long = "constraint")]
    #[arg(help_heading = RUN)]
    constraints: Vec<String>,
    /// What the agent should do (`-` reads it from stdin). A flag counts wherever it stands;
    /// text that starts with `-` goes after `--` (for `--agent command`, its program and
    /// arguments: `-- sh -c 'make test'`).
    #[arg(value_name = "OBJECTIVE")]
    #[arg(help_heading = RUN)]
    objective: Vec<String>,
}

pub fn run(args: &SubmitArgs, cwd: &Path, json: bool) -> anyhow::Result<i32> {
    // Refused before anything starts, rather than a task nobody can attach to.
    if args.attach && !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return Err(Error::new(
            ErrorCode::NotATerminal,
            "submit --attach needs a terminal to attach",
        )
        .with_hint("drop --attach, and attach later with `cuekit attach <id>`")
        .into());
    }
    let objective = super::read_text(&args.objective, args.file.as_ref(), "objective")?;
    let bypass = match (args.skip_permissions, args.no_skip_permissions) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    let request = SubmitRequest {
        agent: args.agent.clone(),
        objective,
        context: args.context.clone(),
        constraints: args.constraints.clone(),
        model: args.model.clone(),
        mode: args.mode.as_deref().map(Mode::parse).transpose()?,
        approval_mode: args.approval_mode.clone(),
        dangerously_skip_permissions: bypass,
        cwd: args.cwd.clone(),
        timeout: args.timeout,
        stream_events: args.no_events.then_some(false),
        resume_from: args.resume_from.clone(),
        provider_profile: args.provider_profile.clone(),
        // The words as given: the `command` agent runs them as program and arguments.
        argv: if args.file.is_none() && args.objective != ["-"] {
            args.objective.clone()
        } else {
            Vec::new()
        },
        role: args.role.clone(),
        team: args.team.clone(),
        // A race's candidates are submitted by `ops::race`, which names the race.
        race: None,
        dry_run: args.dry_run,
        worktree: match (args.worktree, args.no_worktree) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        base: args.base.clone(),
        branch: args.branch.clone(),
        id: args.id.clone(),
        once: args.once.then_some(true),
        asked_by: if args.delegated {
            ops::Asker::Delegate
        } else {
            ops::Asker::User
        },
        host: args.host.clone(),
        wake_parent: args.wake_parent,
        check: (!args.check.is_empty()).then(|| ops::CheckRequest {
            run: args.check.clone(),
            rounds: args.check_rounds,
            timeout: args.check_timeout,
            protect: args.check_protect.clone(),
            keep_open: args.keep_open,
        }),
        sandbox: ops::SandboxRequest {
            mode: args.sandbox.map(|arg| match arg {
                SandboxArg::Bwrap => crate::domain::sandbox::SandboxMode::Bwrap,
                SandboxArg::Agent => crate::domain::sandbox::SandboxMode::Agent,
                SandboxArg::None => crate::domain::sandbox::SandboxMode::None,
            }),
            network: args
                .no_network
                .then_some(crate::domain::sandbox::Network::Off),
        },
        budget: (args.max_tokens.is_some() || args.max_turns.is_some()).then_some({
            crate::ops::Budget {
                tokens: args.max_tokens,
                turns: args.max_turns,
                team_tokens: None,
            }
        }),
        scheduling: ops::Scheduling {
            after: args.after.clone(),
            after_ended: args.after_ended,
            priority: args.priority,
            now: args.now,
            retry: args.retry,
            team_max: None,
            context_from: args.context_from.clone(),
            base_from: args.base_from.clone(),
            fallback: args
                .fallback
                .as_deref()
                .map(ops::parse_fallback)
                .transpose()?,
        },
    };
    if let Some(best_of) = args.best_of {
        let race = ops::submit_race(
            ops::RaceRequest {
                task: request,
                best_of,
                agents: args.agents.clone(),
                models: args.models.clone(),
                first: args.first,
                merge: args.merge,
            },
            cwd,
        )?;
        if json {
            print_json(&race);
        } else {
            println!("race {}: {} candidates", race.race, race.candidates.len());
            race.candidates.iter().for_each(print_text);
        }
        return Ok(0);
    }
    let outcome = ops::submit(request, cwd)?;
    if json {
        print_json(&outcome);
    } else {
        print_text(&outcome);
    }
    if let (true, SubmitOutcome::Submitted(task)) = (args.attach, &outcome) {
        return super::attach::run(&task.id, cwd);
    }
    Ok(0)
}

fn print_text(outcome: &SubmitOutcome) {
    match outcome {
        SubmitOutcome::DryRun {
            launch_command,
            warnings,
            ..
        } => {
            say(launch_command);
            for warning in warnings {
                say_err(&format!("warning: {warning}"));
            }
        }
        SubmitOutcome::Submitted(task) => println!("{}", task_details(task)),
    }
}

/// `--sandbox[=MODE]`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum SandboxArg {
    Bwrap,
    Agent,
    None,
}
