//! What of the disk one task's sandbox shows, found at submit (and at each later start) and
//! handed to the pure builder in `domain::sandbox`: the hidden roots, the programs, the agent's
//! settings and state, the work, and the sockets of the outside to cover.

use std::path::{Path, PathBuf};

use super::{Subject, unavailable};
use crate::domain::error::{Error, Result};
use crate::domain::sandbox::{self, Mount, Network, Plan, Policy, SandboxMode};
use crate::domain::spec::Mode;
use crate::effects::store::{self, WorktreePlacement};

/// How many entries below an in-place work dir are looked at for a repository before the
/// sandbox is refused as too large to prove it holds none.
const NESTED_REPOSITORY_LOOK: usize = 200_000;

fn home() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(|home| home.canonicalize().ok())
        .ok_or_else(|| unavailable("HOME is not set to a directory", "set HOME"))
}

/// The roots a sandbox hides on this machine: the fixed ones, and cuekit's own folders and the
/// user's runtime directory wherever the XDG variables put them.
fn hidden_roots() -> Result<Vec<PathBuf>> {
    Ok(sandbox::hidden_roots(&home()?, &store::private_dirs()))
}

fn is_hidden(hidden: &[PathBuf], path: &Path) -> bool {
    hidden.iter().any(|root| path.starts_with(root))
}

/// A folder shown again must not be a hidden root or above one (`~/prog`'s folder is HOME,
/// with `~/.ssh`; `/tmp/prog`'s is /tmp, with every socket in it).
fn may_show(hidden: &[PathBuf], dir: &Path) -> bool {
    !hidden.iter().any(|root| root.starts_with(dir))
}

/// Refuses a sandboxed task whose work dir would show HOME, /tmp, /run, cuekit's data or an
/// XDG folder again: checked at submit before anything is made, and again by every launch.
pub(crate) fn check_work_dir(policy: &Policy, work_dir: &Path) -> Result<()> {
    if policy.mode != SandboxMode::Bwrap {
        return Ok(());
    }
    refuse_unsafe_work_dir(&hidden_roots()?, work_dir)
}

fn refuse_unsafe_work_dir(hidden: &[PathBuf], work_dir: &Path) -> Result<()> {
    let work = work_dir
        .canonicalize()
        .unwrap_or_else(|_| work_dir.to_path_buf());
    if may_show(hidden, &work) {
        return Ok(());
    }
    Err(Error::invalid_input(format!(
        "the sandbox's work dir {} holds your HOME, /tmp, /run, cuekit's data or an XDG \
         folder: the agent would see all of it",
        work.display()
    ))
    .with_hint("run the task in a project folder (--cwd), or without --sandbox"))
}

/// Everything one task's sandbox is.
pub(crate) fn plan(policy: &Policy, subject: &Subject) -> Result<Plan> {
    let home = home()?;
    // Made first: cuekit's data dir is hidden only if it is there to be found (a first
    // submit's plan comes before anything else is written in it).
    let drop = store::drop_dir(subject.id)
        .ok_or_else(|| unavailable("no data directory for the report drop", "set HOME"))?;
    store::create_private_dir(&drop)?;
    let run_as = run_as()?;
    crate::effects::owner::hand_over(&drop)?;
    let hidden = sandbox::hidden_roots(&home, &store::private_dirs());
    refuse_unsafe_work_dir(&hidden, subject.work_dir)?;
    // First, so nothing shown later (the agent's program, the work dir) is hidden again.
    let mut mounts = other_checkouts(&hidden, subject);
    mounts.extend(program_mounts(&hidden, subject));
    mounts.extend(agent_mounts(&home, subject)?);
    mounts.extend(work_mounts(policy, subject)?);
    mounts.push(Mount::Writable(drop.clone()));
    mounts.extend(outside_mounts(&hidden, subject));
    mounts.extend(other_records(&hidden, &mounts, subject));
    mounts.extend(checkouts_shown_again(&hidden, &mounts, subject));
    let sockets = bound_sockets(&hidden, &mounts);
    mounts.extend(sockets);
    // A child of root's runs as the sandbox's uid, which reaches only the sockets every local
    // user may reach (the listed ones are covered above): the walk, about a second of this
    // machine's CPU in a debug build, is made for a child that runs as its user.
    if run_as.is_none() {
        let own = own_folders(subject, &drop);
        mounts.extend(socket_files(&hidden, &mounts, &own)?);
    }
    Ok(Plan {
        hidden,
        mounts,
        network: policy.network,
        chdir: subject.start_dir.to_path_buf(),
        setenv: vec![
            (
                sandbox::REPORT_DROP_VARIABLE.to_string(),
                drop.to_string_lossy().into_owned(),
            ),
            // The private one: the submitter's may lie in a hidden directory.
            ("TMPDIR".to_string(), "/tmp".to_string()),
        ],
        new_session: subject.mode != Mode::Interactive,
        scope: scope(),
        stack: None,
        run_as,
    })
}

/// What of the user's checkouts and other tasks' the child was not given, hidden before
/// anything is shown again: its repository's main checkout (its untracked `.env`, its files
/// and the sockets of whatever runs there), the folder of its task checkouts
/// (`<repo>.worktrees`), and every other task's checkout the registry knows, wherever it lies
/// (their uncommitted work, and a socket a process of theirs listens on). A folder that holds a
/// hidden root (a repository at `/` or HOME) is left to the roots: a private folder over it
/// would hide what the roots let through.
fn other_checkouts(hidden: &[PathBuf], subject: &Subject) -> Vec<Mount> {
    // Not made yet at submit (the plan comes first): named as it will be.
    let own = real_path(subject.work_dir);
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(worktree) = subject.worktree {
        let repo = worktree.repo_root.canonicalize().ok();
        // The folder beside the repository that holds the checkout (`{repo}.worktrees`, at any
        // depth of the pattern): its other checkouts hidden, and, a private one (`0700`, as a
        // private repository's is), passable on the way to the child's own.
        let beside = repo.as_deref().and_then(Path::parent).and_then(|parent| {
            own.as_deref()?
                .ancestors()
                .find(|dir| dir.parent() == Some(parent))
        });
        let beside =
            beside.filter(|dir| Some(*dir) != repo.as_deref() && Some(*dir) != own.as_deref());
        dirs.extend(beside.map(Path::to_path_buf));
        dirs.extend(repo.clone());
    }
    // Every other repository's folder of task checkouts (`<repo>.worktrees`) whole, not its
    // checkouts one by one: a task started there after this sandbox is out of sight too.
    let checkouts = store::projects::task_checkouts();
    dirs.extend(
        checkouts
            .iter()
            .filter_map(|checkout| checkout.parent())
            .filter(|dir| dir.extension().is_some_and(|ext| ext == "worktrees"))
            .map(Path::to_path_buf),
    );
    dirs.extend(checkouts);
    let mut mounts = Vec::new();
    for dir in dirs {
        let hide = Mount::Private(dir.clone());
        // One inside a folder hidden already (another checkout in `<repo>.worktrees`) is not
        // there at all: no empty folder of its name is made.
        let not_hidden_yet = in_sight(&[], &mounts, &dir);
        if Some(&dir) != own.as_ref() && may_show(hidden, &dir) && not_hidden_yet {
            mounts.push(hide);
        }
    }
    mounts
}

/// Another task's checkout that a later mount shows again (a `sandbox.read` folder above it):
/// hidden again.
fn checkouts_shown_again(hidden: &[PathBuf], mounts: &[Mount], subject: &Subject) -> Vec<Mount> {
    let own = real_path(subject.work_dir);
    store::projects::task_checkouts()
        .into_iter()
        .filter(|dir| Some(dir) != own.as_ref() && in_sight(hidden, mounts, dir))
        .filter(|dir| !own.as_ref().is_some_and(|own| own.starts_with(dir)))
        .map(Mount::Private)
        .collect()
}

/// Whether `path` of the machine is in the child's sight once the hidden roots and `mounts`
/// are laid: the last mount above it decides.
pub(super) fn in_sight(hidden: &[PathBuf], mounts: &[Mount], path: &Path) -> bool {
    let mut seen = !is_hidden(hidden, path);
    for mount in mounts {
        match mount {
            Mount::ReadOnly(dir) | Mount::Writable(dir) if path.starts_with(dir) => seen = true,
            Mount::Private(dir) | Mount::Masked(dir) if path.starts_with(dir) => seen = false,
            Mount::Bound { to, .. } if path.starts_with(to) => seen = false,
            _ => {}
        }
    }
    seen
}

/// Every unix socket bound at a path on this machine (the kernel's list, `/proc/net/unix`)
/// that the child would see: covered by an empty file. A read-only mount does not stop a
/// `connect()` (it needs write permission on the socket, which a read-only mount leaves), and
/// an unprivileged user's child is that user: a tmux server of theirs on a socket outside
/// HOME and /tmp (a second cuekit's, `tmux -S <path>`) would run its `run-shell` outside the
/// sandbox. Landlock before `LANDLOCK_ACCESS_FS_RESOLVE_UNIX` cannot refuse such a connect,
/// and seccomp sees no path; a socket bound after the sandbox started is not in this list.
fn bound_sockets(hidden: &[PathBuf], mounts: &[Mount]) -> Vec<Mount> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(list) = std::fs::read_to_string("/proc/net/unix") else {
        return Vec::new();
    };
    let mut masks: Vec<Mount> = Vec::new();
    // `Num RefCount Protocol Flags Type St Inode Path`: only the path holds a `/`.
    for path in list
        .lines()
        .skip(1)
        .filter_map(|line| line.find('/').map(|at| &line[at..]))
    {
        let Ok(real) = Path::new(path).canonicalize() else {
            continue;
        };
        let socket =
            std::fs::symlink_metadata(&real).is_ok_and(|meta| meta.file_type().is_socket());
        let mask = Mount::Masked(real.clone());
        if socket
            && in_sight(hidden, mounts, &real)
            && !mounts.contains(&mask)
            && !masks.contains(&mask)
        {
            masks.push(mask);
        }
    }
    masks
}

/// The task's own folders, whose sockets its child made: its checkout (made for it), its report
/// drop and its state.
fn own_folders(subject: &Subject, drop: &Path) -> Vec<PathBuf> {
    let mut own = vec![drop.to_path_buf()];
    own.extend(store::state_dir(subject.id));
    if subject.worktree.is_some() {
        own.push(subject.work_dir.to_path_buf());
        own.extend(real_path(subject.work_dir));
    }
    own
}

/// Every socket file the child would see, whatever name it was bound with, in whichever network
/// namespace: covered ([`super::sockets`]). Refused when the machine shows more entries than
/// can be looked at.
fn socket_files(hidden: &[PathBuf], mounts: &[Mount], own: &[PathBuf]) -> Result<Vec<Mount>> {
    let sight = super::sockets::Sight {
        hidden,
        mounts,
        own,
    };
    super::sockets::socket_covers(Path::new("/"), &sight, super::sockets::SOCKET_LOOK).map_err(
        |looked| {
            unavailable(
                format!(
                    "the sandbox would show more than {looked} entries of this machine: too \
                     many to prove that no unix socket of the outside is among them"
                ),
                "submit without --sandbox, or on a machine with fewer files outside HOME",
            )
        },
    )
}

/// A path as the kernel names it, also before it is made (a task's checkout at submit): the
/// nearest folder there is, resolved, and the rest of the path as it is.
fn real_path(path: &Path) -> Option<PathBuf> {
    if let Ok(real) = path.canonicalize() {
        return Some(real);
    }
    path.ancestors()
        .find_map(|dir| Some((dir.canonicalize().ok()?, path.strip_prefix(dir).ok()?)))
        .map(|(there, rest)| there.join(rest))
}

/// Who the child runs as: the sandbox's unprivileged uid when cuekit is root (never root,
/// which owns `/etc/shadow`), else cuekit's own user.
fn run_as() -> Result<Option<crate::domain::sandbox_user::RunAs>> {
    crate::effects::owner::sandbox_identity().map_err(|why| {
        unavailable(
            why,
            "install util-linux (setpriv), or run cuekit as an unprivileged user",
        )
    })
}

/// cuekit's program, to run bubblewrap under the abstract-socket scope, where this kernel has
/// it (Landlock ABI 6, Linux 6.12) and bubblewrap is not setuid (the scope sets
/// no_new_privs, which a setuid bubblewrap cannot start under).
pub(crate) fn scope() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let bwrap = crate::effects::which::find_on_path("bwrap")?;
    let setuid = std::fs::metadata(bwrap).ok()?.permissions().mode() & 0o4000 != 0;
    if setuid || !crate::effects::scope::available() {
        return None;
    }
    std::env::current_exe().ok()
}

/// What a sandboxed child of root's cannot do in an in-place work dir (no checkout of its own,
/// which cuekit hands to the sandbox's uid): the folder is the user's, and cuekit never changes
/// its owner. `None` when the child runs as the user, or may write it.
pub(crate) fn unwritable_warning(plan: &Plan, subject: &Subject) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let run_as = plan.run_as.as_ref()?;
    if subject.worktree.is_some() {
        return None;
    }
    let meta = std::fs::metadata(subject.work_dir).ok()?;
    let writable = meta.uid() == run_as.uid || meta.mode() & 0o002 != 0;
    (!writable).then(|| {
        format!(
            "cuekit runs as root, so this sandboxed child runs as uid {} (nobody), which cannot \
             write {}: submit from a git repository (the task gets a checkout of its own, \
             handed to that uid), or give the folder to uid {}",
            run_as.uid,
            subject.work_dir.display(),
            run_as.uid
        )
    })
}

/// What a sandbox without the scope leaves open, said on the task (`None` when nothing is).
pub(crate) fn unscoped_warning(plan: &Plan) -> Option<&'static str> {
    (plan.scope.is_none() && plan.network == Network::On).then_some(
        "this kernel cannot keep the sandbox from the machine's abstract unix sockets (an X \
         server, a session bus): add --no-network to cut them off",
    )
}

/// The programs the task runs (the agent and what interprets it, the shell, cuekit), shown
/// again where they live in a hidden root.
fn program_mounts(hidden: &[PathBuf], subject: &Subject) -> Vec<Mount> {
    let mut mounts = Vec::new();
    let mut programs: Vec<PathBuf> = Vec::new();
    if let Some(agent) = crate::effects::which::find_on_path(subject.bin) {
        programs.extend(interpreter_of(&agent));
        programs.push(agent);
    }
    programs.extend(std::env::current_exe().ok());
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        // Spelled with `..` or `.` (`~/.local/bin/../share`, `~/.cargo/bin/..`), a folder is
        // not the one it names: never shown. The rest as the kernel names them (a link to HOME
        // is HOME).
        let plain = dir.components().all(|part| {
            !matches!(
                part,
                std::path::Component::ParentDir | std::path::Component::CurDir
            )
        });
        let Some(dir) = dir.canonicalize().ok().filter(|_| plain) else {
            continue;
        };
        if dir.is_dir() && is_hidden(hidden, &dir) && may_show(hidden, &dir) {
            mounts.push(Mount::ReadOnly(dir));
        }
    }
    for program in programs {
        let real = program.canonicalize().unwrap_or(program);
        if is_hidden(hidden, &real) {
            let package = package_root(&real);
            mounts.push(Mount::ReadOnly(if may_show(hidden, &package) {
                package
            } else {
                real
            }));
        }
    }
    mounts
}

/// The agent's settings, read-only over a private directory; its state, writable, from a
/// folder of the task's own: the user's state (sessions, memory, shell snapshots of every
/// project) is what the user's own runs of the agent read and run.
fn agent_mounts(home: &Path, subject: &Subject) -> Result<Vec<Mount>> {
    let mut mounts = Vec::new();
    let needs = subject.adapter.sandbox;
    let kept_out = kept_out(needs);
    for dir in needs.config_dirs {
        show_settings(home, &home.join(dir), &kept_out, &mut mounts);
    }
    if needs.state.is_empty() {
        return Ok(mounts);
    }
    let own = store::state_dir(subject.id)
        .ok_or_else(|| unavailable("no data directory for the agent's state", "set HOME"))?;
    for (at, state) in needs.state.iter().enumerate() {
        let (from, to) = (own.join(at.to_string()), home.join(state));
        store::create_private_dir(&from)?;
        crate::effects::owner::hand_over(&from)?;
        std::fs::create_dir_all(&to).map_err(|err| Error::io("create", &to, err))?;
        mounts.push(Mount::Bound { from, to });
    }
    for shared in needs.shared {
        let path = home.join(shared);
        if path.is_file() {
            mounts.push(Mount::ReadOnly(path));
        }
    }
    Ok(mounts)
}

/// What of a settings folder no sandbox shows (relative to HOME): every agent's state and
/// private entries, not this one's alone (`~/.gemini` holds Antigravity's conversations too,
/// and `~/.claude` every project's prompt history and plans); another agent's settings folder
/// inside this one's (Antigravity's `~/.gemini/antigravity-cli`, its login among them), and
/// what other programs keep there (`OTHERS_STATE`).
fn kept_out(needs: &sandbox::Needs) -> Vec<&'static Path> {
    crate::domain::adapter::ADAPTERS
        .iter()
        .flat_map(|adapter| adapter.sandbox.state.iter().chain(adapter.sandbox.private))
        .chain(
            crate::domain::adapter::ADAPTERS
                .iter()
                .filter(|adapter| !std::ptr::eq(adapter.sandbox, needs))
                .flat_map(|adapter| adapter.sandbox.config_dirs.iter())
                .filter(|dir| !needs.config_dirs.contains(dir)),
        )
        .chain(OTHERS_STATE)
        .map(Path::new)
        .collect()
}

/// What agents and their kin keep in a settings folder that is no adapter's own (relative to
/// HOME), left out of every sandbox: the Antigravity IDE's conversations and plans
/// (`~/.gemini/antigravity`), its ACP server's sign-in and state (`~/.gemini/antigravity-acp`),
/// and Copilot's prompt history across projects.
const OTHERS_STATE: &[&str] = &[
    ".gemini/antigravity",
    ".gemini/antigravity-acp",
    ".copilot/command-history-state.json",
];

/// A settings folder shown entry by entry, read-only, over a private writable one; what any
/// agent keeps as state or private (`kept_out`, relative to HOME) left out, and a folder that
/// holds some of it shown the same way.
fn show_settings(home: &Path, dir: &Path, kept_out: &[&Path], mounts: &mut Vec<Mount>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    mounts.push(Mount::Private(dir.to_path_buf()));
    for entry in entries.flatten() {
        let path = entry.path();
        let relative = path.strip_prefix(home).unwrap_or(&path);
        if kept_out.contains(&relative) {
            continue;
        }
        if kept_out.iter().any(|kept| kept.starts_with(relative)) && path.is_dir() {
            show_settings(home, &path, kept_out, mounts);
        } else {
            mounts.push(Mount::ReadOnly(path));
        }
    }
}

/// The work dir, writable, with cuekit's records hidden but for the task's own folder; the
/// task's repository of its own, or the proof that no repository's `.git` is in reach; the
/// user's `sandbox.read` and `sandbox.write`.
fn work_mounts(policy: &Policy, subject: &Subject) -> Result<Vec<Mount>> {
    let mut mounts = vec![Mount::Writable(subject.work_dir.to_path_buf())];
    // cuekit's records: the project's `.cuekit/` hidden whole, other tasks' prompts and
    // environments (`env.sh` until their pane starts) with it, whether or not it is there yet
    // (the task's folder is made after the plan); the task's own folder shown read-only.
    let records = subject.task_dir.ancestors().nth(2).map(Path::to_path_buf);
    let in_work_dir = Some(subject.work_dir.join(".cuekit")).filter(|dir| dir.is_dir());
    for dir in records.iter().chain(in_work_dir.iter()) {
        let hide = Mount::Private(dir.clone());
        if dir.ends_with(".cuekit") && !mounts.contains(&hide) {
            mounts.push(hide);
        }
    }
    mounts.push(Mount::ReadOnly(subject.task_dir.to_path_buf()));
    match subject.worktree {
        Some(worktree) => mounts.extend(own_repo_mounts(worktree)?),
        None => {
            refuse_in_place_repository(subject.work_dir)?;
            refuse_nested_repository(subject.work_dir)?;
        }
    }
    for (paths, writable) in [(&policy.read, false), (&policy.write, true)] {
        for path in paths.iter() {
            let path = path.canonicalize().map_err(|err| {
                Error::invalid_input(format!(
                    "sandbox.{}: {}: {err}",
                    if writable { "write" } else { "read" },
                    path.display()
                ))
                .with_hint("list only paths that exist, absolute or under ~/")
            })?;
            mounts.push(if writable {
                Mount::Writable(path)
            } else {
                Mount::ReadOnly(path)
            });
        }
    }
    Ok(mounts)
}

/// The records of every other project cuekit has tasks in (task records, prompts,
/// transcripts, and an `env.sh` an older cuekit left), hidden wherever they lie: the hidden
/// roots cover those in HOME or /tmp, not a project under `/srv` or `/opt`. One that a mount
/// shows again (a work dir, `sandbox.read`) is hidden too; the task's own is already hidden but
/// for its own folder, which comes after it.
fn other_records(hidden: &[PathBuf], mounts: &[Mount], subject: &Subject) -> Vec<Mount> {
    let own =
        store::projects::records_dir_of(subject.task_dir).and_then(|dir| dir.canonicalize().ok());
    let shown = |dir: &Path| {
        mounts.iter().any(|mount| match mount {
            Mount::Writable(path) | Mount::ReadOnly(path) => dir.starts_with(path),
            Mount::Bound { to, .. } => dir.starts_with(to),
            Mount::Private(_) | Mount::Masked(_) => false,
        })
    };
    store::projects::task_records_dirs()
        .into_iter()
        .filter(|dir| own.as_ref() != Some(dir))
        .filter(|dir| !is_hidden(hidden, dir) || shown(dir))
        .map(Mount::Private)
        .filter(|hide| !mounts.contains(hide))
        .collect()
}

/// What the hidden roots took that every program needs (the resolver's file), and the sockets
/// of the outside they may not cover: the ssh agent's, the session bus's, docker's and cuekit's
/// own tmux server's.
fn outside_mounts(hidden: &[PathBuf], subject: &Subject) -> Vec<Mount> {
    let mut mounts = Vec::new();
    if let Ok(resolv) = Path::new("/etc/resolv.conf").canonicalize()
        && is_hidden(hidden, &resolv)
    {
        mounts.push(Mount::ReadOnly(resolv));
    }
    let bus = std::env::var("DBUS_SESSION_BUS_ADDRESS")
        .ok()
        .and_then(|address| {
            address.split(';').find_map(|part| {
                part.strip_prefix("unix:path=")
                    .map(|p| p.split(',').next().unwrap_or(p).to_string())
            })
        });
    let sockets = [
        std::env::var("SSH_AUTH_SOCK").ok(),
        bus,
        Some("/var/run/docker.sock".to_string()),
    ];
    let present = sockets
        .into_iter()
        .flatten()
        .filter_map(|socket| Path::new(&socket).canonicalize().ok());
    let tmux = tmux_socket(subject.tmux_socket, subject.server_first);
    for real in present.chain(tmux) {
        if !is_hidden(hidden, &real) {
            mounts.push(Mount::Masked(real));
        }
    }
    mounts
}

/// Where cuekit's tmux socket is, to be covered. A sandbox started in a pane (`server_first`)
/// starts after the server made its socket, which the first submit's plan comes before: its
/// path is covered whether or not the socket is there yet.
fn tmux_socket(socket: &Path, server_first: bool) -> Option<PathBuf> {
    if let Ok(real) = socket.canonicalize() {
        return Some(real);
    }
    if !server_first {
        return None;
    }
    // Its folder may be missing too (a new `CUEKIT_TMUX_SOCKET` folder): the nearest folder
    // there is, as the kernel names it, and the rest of the path as it is.
    let (there, rest) = socket
        .ancestors()
        .find_map(|dir| Some((dir.canonicalize().ok()?, socket.strip_prefix(dir).ok()?)))?;
    Some(there.join(rest))
}

/// A task repository's mounts: its own git dir writable; of the user's repository only the
/// objects its alternates borrow, read-only, over an empty folder where the rest of the
/// user's git dir was (config, hooks, refs, `commondir`, other worktrees' admin files: out of
/// sight, so nothing there can be written or renamed).
fn own_repo_mounts(worktree: &WorktreePlacement) -> Result<Vec<Mount>> {
    let git_dir = worktree
        .git_dir
        .as_ref()
        .filter(|_| worktree.own_repo())
        .ok_or_else(|| {
            unavailable(
                "a sandboxed task needs a repository of its own",
                "submit it again: its checkout was not made by this cuekit",
            )
        })?;
    let common = &worktree.common_dir;
    Ok(vec![
        Mount::Private(common.clone()),
        Mount::ReadOnly(common.join("objects")),
        Mount::Writable(git_dir.clone()),
    ])
}

/// Refuses an in-place sandbox in a folder of a git repository cuekit did not take for one
/// (git could not read it): its `.git` would be the child's to rewrite. A folder of cuekit's
/// own data dir (a check's scratch checkout) is looked at only up to the data dir: a
/// repository above it (a HOME kept in git) is none of the work's, and hidden whole.
fn refuse_in_place_repository(work_dir: &Path) -> Result<()> {
    let data = store::data_dir().and_then(|dir| dir.canonicalize().ok());
    let real = work_dir.canonicalize().ok();
    let in_data = data
        .as_ref()
        .filter(|data| real.as_ref().is_some_and(|real| real.starts_with(data)));
    let found = match (in_data, &real) {
        (Some(data), Some(real)) => real
            .ancestors()
            .take_while(|dir| dir.starts_with(data))
            .find(|dir| dir.join(".git").symlink_metadata().is_ok())
            .map(Path::to_path_buf),
        _ => work_dir
            .ancestors()
            .find(|dir| dir.join(".git").symlink_metadata().is_ok())
            .map(Path::to_path_buf),
    };
    match found.as_deref() {
        None => Ok(()),
        Some(repo) => Err(unavailable(
            format!(
                "{} is in the git repository {}, which git cannot read here: a sandboxed task \
                 needs a repository of its own",
                work_dir.display(),
                repo.display()
            ),
            "check `git -C <dir> status` (a safe.directory refusal?), or submit without --sandbox",
        )),
    }
}

/// Refuses an in-place sandbox over a folder that holds repositories (`~/src` of clones): the
/// work dir is writable whole, so each one's `.git` (its config, hooks) would be the child's
/// to rewrite, and the user's next `git status` there would run what the child put in. Links
/// are not followed (a link is not the repository's own `.git`, and leads out of the work dir).
fn refuse_nested_repository(work_dir: &Path) -> Result<()> {
    let mut folders = vec![work_dir.to_path_buf()];
    let mut looked = 0;
    let refused = |why: String| {
        unavailable(
            why,
            "submit from inside the repository (a sandboxed task there gets a repository of \
             its own), or without --sandbox",
        )
    };
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        // A bare repository (`mirror.git/`) is a git dir whatever its name: HEAD, objects/ and
        // refs/ side by side.
        let mut git_dir_parts = 0;
        for entry in entries.flatten() {
            looked += 1;
            if ["HEAD", "objects", "refs"]
                .iter()
                .any(|part| entry.file_name() == *part)
            {
                git_dir_parts += 1;
            }
            if git_dir_parts == 3 {
                return Err(refused(format!(
                    "{} holds the git repository {}: a sandboxed child could rewrite its config",
                    work_dir.display(),
                    folder.display()
                )));
            }
            if entry.file_name() == ".git" {
                return Err(refused(format!(
                    "{} holds the git repository {}: a sandboxed child could rewrite its .git",
                    work_dir.display(),
                    folder.display()
                )));
            }
            if looked > NESTED_REPOSITORY_LOOK {
                return Err(refused(format!(
                    "{} holds more than {NESTED_REPOSITORY_LOOK} entries: too many to prove \
                     that no git repository lies below it",
                    work_dir.display()
                )));
            }
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                folders.push(entry.path());
            }
        }
    }
    Ok(())
}

/// A script's interpreter, from its `#!` line (`#!/usr/bin/env node`: node on PATH).
fn interpreter_of(program: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let read = {
        use std::io::Read;
        std::fs::File::open(program).ok()?.read(&mut head).ok()?
    };
    let line = String::from_utf8_lossy(&head[..read]);
    let line = line.strip_prefix("#!")?.lines().next()?.trim().to_string();
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if first.ends_with("/env") {
        crate::effects::which::find_on_path(words.find(|word| !word.starts_with('-'))?)
    } else {
        Some(PathBuf::from(first))
    }
}

/// What to show of a program that lives in a hidden directory: its whole package (the
/// outermost `node_modules` above it, for a script that loads its siblings), else its folder.
fn package_root(real: &Path) -> PathBuf {
    real.ancestors()
        .filter(|dir| dir.file_name().is_some_and(|name| name == "node_modules"))
        .last()
        .or_else(|| real.parent())
        .unwrap_or(real)
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_that_holds_a_hidden_root_is_never_shown_again() {
        let data = PathBuf::from("/data/cuekit");
        let hidden = sandbox::hidden_roots(Path::new("/home/u"), std::slice::from_ref(&data));
        for holds in [
            "/",
            "/tmp",
            "/run",
            "/home",
            "/home/u",
            "/data",
            "/data/cuekit",
        ] {
            assert!(!may_show(&hidden, Path::new(holds)), "{holds}");
        }
        for inside in [
            "/home/u/src/p",
            "/tmp/work",
            "/usr/bin",
            "/data/cuekit/repos",
        ] {
            assert!(may_show(&hidden, Path::new(inside)), "{inside}");
        }
        assert!(refuse_unsafe_work_dir(&hidden, Path::new("/tmp")).is_err());
        assert!(refuse_unsafe_work_dir(&hidden, Path::new("/home/u")).is_err());
        assert!(refuse_unsafe_work_dir(&hidden, Path::new("/data")).is_err());
        assert!(refuse_unsafe_work_dir(&hidden, Path::new("/home/u/p")).is_ok());
    }

    #[test]
    fn a_tmux_socket_not_made_yet_is_covered_when_the_server_comes_first() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        let real = dir.path().canonicalize().unwrap().join("tmux.sock");
        assert_eq!(tmux_socket(&socket, true), Some(real.clone()));
        assert_eq!(tmux_socket(&socket, false), None);
        std::fs::write(&socket, "").unwrap();
        assert_eq!(tmux_socket(&socket, false), Some(real));
    }

    #[test]
    fn a_work_dir_holding_a_repository_is_refused_at_any_depth() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b/c")).unwrap();
        std::fs::write(dir.path().join("a/b/file"), "x").unwrap();
        assert!(refuse_nested_repository(dir.path()).is_ok());
        // A gitfile counts as much as a git dir: it leads the user's git elsewhere.
        std::fs::write(dir.path().join("a/b/c/.git"), "gitdir: /x").unwrap();
        let err = refuse_nested_repository(dir.path()).unwrap_err();
        assert_eq!(
            err.code,
            crate::domain::error::ErrorCode::SandboxUnavailable
        );
        assert!(err.message.contains("a/b/c"), "{}", err.message);
    }

    /// What Codex and Claude Code keep of every project in their folders (archived rollouts,
    /// the session index, plan mode's plans) is not shown; their settings are.
    #[test]
    fn every_projects_agent_history_is_left_out_of_the_settings_shown() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        for (file, text) in [
            (".codex/config.toml", "model = 'x'"),
            (
                ".codex/archived_sessions/2026/rollout-other.jsonl",
                "SECRET",
            ),
            (".codex/session_index.jsonl", "SECRET"),
            (".claude/settings.json", "{}"),
            (".claude/plans/other-project-plan.md", "SECRET"),
        ] {
            let path = home.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
        }
        for kind in ["codex", "claude-code"] {
            let needs = crate::domain::adapter::lookup(kind).unwrap().sandbox;
            let mut mounts = Vec::new();
            for config in needs.config_dirs {
                show_settings(home, &home.join(config), &kept_out(needs), &mut mounts);
            }
            let hidden = vec![home.to_path_buf()];
            for shown in [".codex/config.toml", ".claude/settings.json"]
                .iter()
                .filter(|file| file.starts_with(needs.config_dirs[0]))
            {
                assert!(
                    in_sight(&hidden, &mounts, &home.join(shown)),
                    "{kind}: {shown}"
                );
            }
            for secret in [
                ".codex/archived_sessions/2026/rollout-other.jsonl",
                ".codex/session_index.jsonl",
                ".claude/plans/other-project-plan.md",
            ] {
                assert!(
                    !in_sight(&hidden, &mounts, &home.join(secret)),
                    "{kind}: {secret}"
                );
            }
        }
    }

    #[test]
    fn a_package_is_shown_whole() {
        assert_eq!(
            package_root(Path::new(
                "/h/.npm/lib/node_modules/@google/gemini-cli/node_modules/x/bin.js"
            )),
            Path::new("/h/.npm/lib/node_modules")
        );
        assert_eq!(
            package_root(Path::new("/h/.local/share/claude/versions/2.1")),
            Path::new("/h/.local/share/claude/versions")
        );
    }
}
