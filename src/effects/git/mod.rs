//! Git, run as a real process: the task worktrees (create, diff, merge, cleanup) and the
//! files-changed snapshots. `args` holds the pure argv builders and `plan` the pure naming
//! rules; everything else here runs git through [`Git`].

pub mod args;
pub mod changes;
pub mod checked;
pub mod checkout;
pub mod cleanup;
pub mod conflicts;
pub mod create;
pub mod diff;
pub mod drivers;
pub mod fingerprint;
pub mod ignore_rules;
pub mod include;
pub mod inventory;
pub mod land;
pub mod merge;
pub mod place;
pub mod plan;
pub mod private;
pub mod review;
pub mod submodules;
pub mod task_repo;
pub mod worktrees;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::domain::error::{Error, ErrorCode, Result};
use crate::effects::bounded::{Bounded, Input, RunError};

/// The environment entry that marks the git processes a submit runs for task `id`: a submit
/// killed mid-way leaves them running, and its undo (`ops::reap`) waits for them to end before
/// it looks for what they made.
pub const SUBMITTING_VARIABLE: &str = "CUEKIT_SUBMITTING";

thread_local! {
    static SUBMITTING: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// While this lives, every git this thread runs carries `CUEKIT_SUBMITTING=<task id>`.
pub struct Submitting(());

impl Submitting {
    pub fn mark(task_id: &str) -> Submitting {
        SUBMITTING.with(|marked| *marked.borrow_mut() = Some(task_id.to_string()));
        Submitting(())
    }
}

impl Drop for Submitting {
    fn drop(&mut self) {
        SUBMITTING.with(|marked| *marked.borrow_mut() = None);
    }
}

/// Git run inside one directory (`git -C <dir> …`), never through a shell, and never past
/// its deadline ([`deadline`]).
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    /// Options before the subcommand (`--attr-source=…`).
    global: Vec<OsString>,
    /// Variables set for every call (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`).
    env: Vec<(String, OsString)>,
    /// How long each call may take.
    deadline: Duration,
    /// The repository's own programs' overrides ([`drivers`]), read once for this git.
    neutral: std::sync::Arc<std::sync::OnceLock<Vec<(String, OsString)>>>,
}

/// How long one git call may take before its process group is killed: a child's tree can
/// hold a FIFO where git expects a file (`.gitignore`, a submodule's `HEAD`), and git would
/// wait on it forever. 20 s for a call that reads a task's tree ([`Git::over`], the fetch of
/// its commits), 60 s for the rest; `CUEKIT_GIT_TIMEOUT` (seconds) sets both.
pub fn deadline(on_task_tree: bool) -> Duration {
    std::env::var("CUEKIT_GIT_TIMEOUT")
        .ok()
        .and_then(|secs| secs.trim().parse::<f64>().ok())
        .filter(|secs| secs.is_finite() && *secs > 0.0)
        .map_or(
            Duration::from_secs(if on_task_tree { 20 } else { 60 }),
            Duration::from_secs_f64,
        )
}

impl Git {
    pub fn new(dir: impl Into<PathBuf>) -> Git {
        Git {
            dir: dir.into(),
            global: Vec::new(),
            env: Vec::new(),
            deadline: deadline(false),
            neutral: std::sync::Arc::default(),
        }
    }

    /// The same git, with the shorter deadline of a call that reads a task's tree.
    pub fn on_task_tree(self) -> Git {
        Git {
            deadline: deadline(true),
            ..self
        }
    }

    /// Git over a task's work tree with a git dir and an index cuekit names: nothing is
    /// discovered from the tree (whose `.git` the child can rewrite), and the tree's own
    /// `.gitattributes` are never read (`GIT_ATTR_SOURCE`, git 2.40+, names the empty tree), so
    /// no filter, diff driver or text conversion the child asked for runs. (An older git reads
    /// them, but can select only the filters the user's own config defines: `doctor` asks for
    /// git 2.45.1 or later.)
    pub fn over(git_dir: &Path, work_tree: &Path, index: &Path) -> Git {
        Git {
            dir: work_tree.to_path_buf(),
            global: Vec::new(),
            env: vec![
                ("GIT_ATTR_SOURCE".to_string(), OsString::from(EMPTY_TREE)),
                ("GIT_DIR".to_string(), git_dir.as_os_str().to_owned()),
                (
                    "GIT_WORK_TREE".to_string(),
                    work_tree.as_os_str().to_owned(),
                ),
                ("GIT_INDEX_FILE".to_string(), index.as_os_str().to_owned()),
            ],
            deadline: deadline(true),
            neutral: std::sync::Arc::default(),
        }
    }

    /// Git in the repository whose git dir is `git_dir`, named, never discovered.
    pub fn at_git_dir(git_dir: &Path) -> Git {
        Git {
            dir: git_dir.to_path_buf(),
            global: Vec::new(),
            env: vec![("GIT_DIR".to_string(), git_dir.as_os_str().to_owned())],
            deadline: deadline(false),
            neutral: std::sync::Arc::default(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn command<I, S>(&self, args: I) -> Bounded
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command_with(args, &[])
    }

    /// git with the repository's own programs overridden, then cuekit's own config entries,
    /// then `extra`, all out of band.
    ///
    /// cuekit runs git in folders a repository filled: a bare repository tracked inside it
    /// (`evil/HEAD`, `evil/config`) would be found as the repository and its `core.fsmonitor`
    /// run. `safe.bareRepository=explicit` finds only the work tree's own repository, and no
    /// fsmonitor or hook runs for cuekit's calls.
    fn command_with<I, S>(&self, args: I, extra: &[(String, OsString)]) -> Bounded
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        // The repository's own filter, diff and merge drivers, ssh command, credential helper
        // and gpg program run nothing in cuekit's calls ([`drivers`]); cuekit's own entries
        // come after them.
        let mut config = self.neutral_config().clone();
        config.extend(Self::own_config());
        config.extend(extra.iter().cloned());
        self.bounded(args, &config)
    }

    /// What [`drivers::neutralised`] overrides in this repository's own config, listed once
    /// (nothing where git finds no repository).
    fn neutral_config(&self) -> &Vec<(String, OsString)> {
        self.neutral.get_or_init(|| {
            let listing = self.bounded(
                ["config", "--list", "--show-scope", "--includes", "-z"],
                &Self::own_config(),
            );
            match finish(listing, None, self.deadline) {
                Ok(output) if output.status.success() => drivers::neutralised(&output.stdout),
                _ => Vec::new(),
            }
        })
    }

    /// cuekit's own config entries for every call.
    fn own_config() -> Vec<(String, OsString)> {
        vec![
            (
                "safe.bareRepository".to_string(),
                OsString::from("explicit"),
            ),
            ("core.fsmonitor".to_string(), OsString::from("false")),
            ("submodule.recurse".to_string(), OsString::from("false")),
            // No hook of the repository's runs for cuekit's own calls (`post-checkout` on a
            // worktree's creation, `reference-transaction` on every ref it moves): a
            // repository's hooks run nothing before it is trusted, and only your own git
            // commands run yours.
            ("core.hooksPath".to_string(), OsString::from("/dev/null")),
        ]
    }

    /// git with exactly `config` given out of band.
    fn bounded<I, S>(&self, args: I, config: &[(String, OsString)]) -> Bounded
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let command = Bounded::new("git", self.deadline)
            .arg("-C")
            .arg(&self.dir)
            .args(&self.global)
            .args(args)
            .envs(args::config_env(config))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            // A promisor remote is never asked for a missing object (CVE-2024-32004's kin).
            .env("GIT_NO_LAZY_FETCH", "1")
            // Never wait on an editor or a credential prompt: nobody is at this terminal.
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true")
            .keep(OUTPUT_KEPT / 2, OUTPUT_KEPT / 2);
        SUBMITTING.with(|marked| match marked.borrow().as_deref() {
            Some(id) => command.env(SUBMITTING_VARIABLE, id),
            None => command,
        })
    }

    /// Runs git and returns its output whatever the exit status; `Err` only if git cannot run.
    pub fn output<I, S>(&self, args: I) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.output_with_env(args, &[])
    }

    pub fn output_with_env<I, S>(&self, args: I, env: &[(&str, &OsStr)]) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let command = self.command(args).envs(env.iter().copied());
        finish(command, None, self.deadline)
    }

    /// Runs git with the config entries `config` added (out of band) and `input` on its stdin;
    /// a non-zero exit is an error quoting git's stderr.
    pub fn run_with(
        &self,
        args: &[OsString],
        config: &[(String, OsString)],
        input: &[u8],
    ) -> Result<String> {
        let output = finish(
            self.command_with(args, config),
            Some(input.to_vec()),
            self.deadline,
        )?;
        if !output.status.success() {
            return Err(failed(args, &output));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Runs git and returns its stdout; a non-zero exit is an error quoting git's stderr.
    pub fn run<I, S>(&self, args: I) -> Result<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let output = self.output(&args)?;
        if !output.status.success() {
            return Err(failed(&args, &output));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// [`Git::run`] with `lock` held by git too: the lock is cuekit's worktree lock, and a git
    /// that outlives a killed cuekit (a `worktree add` under way) keeps it until it ends, so an
    /// undo waiting for the lock sees what that git made. Only this git inherits it: the
    /// descriptor stays close-on-exec in this process.
    pub fn run_holding(&self, args: &[OsString], lock: &std::fs::File) -> Result<String> {
        use std::os::fd::AsRawFd;
        let command = self.command(args).keep_open(lock.as_raw_fd());
        let output = finish(command, None, self.deadline)?;
        if !output.status.success() {
            return Err(failed(args, &output));
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// `run`, first line trimmed.
    pub fn line<I, S>(&self, args: I) -> Result<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Ok(self.run(args)?.trim_end_matches('\n').to_string())
    }

    /// The object `rev` names (a ref, `REV^{commit}`…); `Err` when it names none. `rev` is
    /// never read as an option.
    pub fn resolve(&self, rev: &str) -> Result<String> {
        self.line(["rev-parse", "--verify", "--quiet", "--end-of-options", rev])
    }

    /// Whether git exits 0 (a question such as `merge-base --is-ancestor`); `Err` when it
    /// answers neither yes (0) nor no (1).
    pub fn yes<I, S>(&self, args: I) -> Result<bool>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let output = self.output(&args)?;
        match output.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(failed(&args, &output)),
        }
    }
}

/// The empty tree's id, which every repository knows without holding it.
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// What git may print on each stream before a call fails (`process_output_too_large`) rather
/// than answer with part of it.
const OUTPUT_KEPT: usize = 256 * 1024 * 1024;

/// Runs `command` (stdin from `input`, else nothing) through the bounded runner, in a process
/// group of its own killed when git ends or outlives [`deadline`]: `git_timed_out`, never a
/// hang.
fn finish(command: Bounded, input: Option<Vec<u8>>, limit: Duration) -> Result<Output> {
    let command = command.deadline(limit).stdin(match input {
        Some(bytes) => Input::Bytes(bytes),
        None => Input::Closed,
    });
    let cap = command.cap();
    match command.run() {
        Ok(ran) => {
            let stdout = ran.stdout.whole(&ran.command, cap)?;
            Ok(Output {
                status: ran.status.expect("a run that ended has a status"),
                stdout,
                stderr: ran.stderr.bytes(),
            })
        }
        Err(RunError::TimedOut { command, .. }) => Err(Error::new(
            ErrorCode::GitTimedOut,
            format!(
                "git timed out after {:.1} s (`{command}`): the work there is unknown",
                limit.as_secs_f64(),
            ),
        )
        .with_hint(
            "something in that tree makes git wait (a FIFO where a file belongs?); \
             CUEKIT_GIT_TIMEOUT sets the deadline in seconds",
        )),
        Err(RunError::Start { source, .. }) => Err(cannot_run(source)),
        Err(err) => Err(err.into()),
    }
}

fn cannot_run(err: std::io::Error) -> Error {
    Error::new(ErrorCode::Io, format!("cannot run git: {err}"))
        .with_hint("install git and make sure it is on PATH")
}

/// A git command that failed: the command and git's own words.
pub fn failed(args: &[std::ffi::OsString], output: &Output) -> Error {
    let words: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let message = format!("`git {}` failed: {}", words.join(" "), stderr.trim());
    if refuses_project_data(&stderr) {
        return Error::new(ErrorCode::UnsafeProjectData, message).with_hint(
            "git refused what the repository or the task's commits hold (a `.git` path in a \
             tree, an unsafe .gitmodules value): nothing was changed; read it (`cuekit diff ID`, \
             `git show`) and drop it",
        );
    }
    Error::new(ErrorCode::Io, message)
}

/// Whether git's words say it refused the data it was given — a tree entry it will not check
/// out (`.git`, `.GIT`), an object its fsck rejects, a `.gitmodules` value — rather than failed
/// to read or write: the project's data is unsafe, and trying again changes nothing.
fn refuses_project_data(stderr: &str) -> bool {
    stderr.lines().any(|line| {
        line.starts_with("error: invalid path '")
            || line.contains("fsck error")
            || line.contains("hasDotgit")
            || line.contains("invalid value for 'submodule.")
    })
}

/// The top of the work tree containing `dir`, or `None` outside a git repository.
pub fn toplevel(dir: &Path) -> Option<PathBuf> {
    Git::new(dir)
        .line(["rev-parse", "--show-toplevel"])
        .ok()
        .map(PathBuf::from)
}

/// Serialises cuekit's worktree changes in one repository across processes, held until the
/// file is dropped. git itself does not: a `worktree add` reading the admin folder of another
/// one still being created fails ("failed to read …/commondir"), and a `worktree prune` could
/// take that folder away.
pub fn lock_worktrees(repo: &Path) -> Result<std::fs::File> {
    let common =
        Git::new(repo).line(["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
    lock_in(Path::new(&common))
}

/// [`lock_worktrees`] for a repository whose common dir is known.
pub fn lock_in(common_dir: &Path) -> Result<std::fs::File> {
    crate::effects::store::lock_file(&common_dir.join("cuekit-worktrees.lock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Audit 48 (work F8): git's refusal of a crafted tree or a hostile `.gitmodules` was
    /// reported as `io` (exit 11, which a parent retries); it is the project's data.
    #[test]
    fn gits_refusal_of_the_projects_data_is_unsafe_project_data() {
        use std::os::unix::process::ExitStatusExt;
        let output = |stderr: &str| Output {
            status: std::process::ExitStatus::from_raw(128 << 8),
            stdout: Vec::new(),
            stderr: stderr.as_bytes().to_vec(),
        };
        let args = [std::ffi::OsString::from("read-tree")];
        for refused in [
            "error: invalid path '.GIT/config'",
            "error: object abc: hasDotgit: contains '.git'\nfatal: fsck error in packed object",
            "fatal: invalid value for 'submodule.two.update'",
        ] {
            assert_eq!(
                failed(&args, &output(refused)).code,
                ErrorCode::UnsafeProjectData,
                "{refused}"
            );
        }
        assert_eq!(
            failed(&args, &output("fatal: unable to write new index file")).code,
            ErrorCode::Io
        );
    }

    #[test]
    fn a_call_past_its_deadline_is_killed_with_its_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        // A grandchild in the same group, holding stdout: the deadline must end it too.
        let command = Bounded::new("sh", Duration::from_secs(300))
            .arg("-c")
            .arg(format!(
                "sleep 30 & echo $! > '{}'; wait",
                pid_file.display()
            ));
        let started = std::time::Instant::now();
        let err = finish(command, None, Duration::from_millis(300)).unwrap_err();
        assert_eq!(err.code, ErrorCode::GitTimedOut);
        assert!(started.elapsed() < Duration::from_secs(10));
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let gone = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            // Dead: gone, or a zombie waiting for init to reap it.
            std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
                stat.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        });
        assert!(gone, "the grandchild {pid} outlived the deadline");
    }

    #[test]
    fn a_call_within_its_deadline_answers_with_its_input() {
        let command = Bounded::new("cat", Duration::from_secs(300));
        let out = finish(command, Some(b"hello".to_vec()), Duration::from_secs(10)).unwrap();
        assert_eq!(out.stdout, b"hello");
    }
}
