//! A sandbox's own network: the user-mode stack found on this machine (slirp4netns), the
//! generated resolver, and `cuekit __net`, the supervisor that runs bubblewrap with the stack
//! attached before the child runs and ends the stack with it. The words are
//! `domain::sandbox_net`'s.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::Duration;

use super::unavailable;
use crate::domain::error::{Error, Result};
use crate::domain::sandbox_net::{self as net, Stack};

/// How long slirp4netns may take to bring the interface up before the task fails.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// The stack a sandbox with the network gets here, or why there is none (said on the task).
pub fn stack() -> std::result::Result<Stack, &'static str> {
    if setuid_bwrap() {
        return Err(
            "a setuid bubblewrap makes the namespace as root, where slirp4netns run by you cannot \
             join it, so this sandboxed child shares the machine's network: it reaches services \
             on this machine's loopback and a port it binds is the machine's; add --no-network",
        );
    }
    let slirp = crate::effects::which::find_on_path("slirp4netns").ok_or(
        "slirp4netns is not installed, so this sandboxed child shares the machine's network: \
         it reaches services on this machine's loopback (databases, `cuekit serve`) and a port \
         it binds is the machine's; install slirp4netns (Debian/Ubuntu: apt install \
         slirp4netns), or add --no-network",
    )?;
    let cuekit = std::env::current_exe()
        .map_err(|_| "cuekit cannot find its own program to supervise the sandbox's network")?;
    let resolv = resolver().map_err(|_| "cannot write the sandbox's resolv.conf")?;
    Ok(Stack {
        cuekit,
        slirp,
        resolv,
        // Its sandbox joins the namespace's owner as root (`setegid(0)`), which bubblewrap's
        // user namespace for an unprivileged user does not map.
        // SAFETY: geteuid reads this process's credentials.
        confined: unsafe { libc::geteuid() } == 0,
    })
}

/// Whether the bubblewrap on PATH is setuid root (old distributions without unprivileged user
/// namespaces): its namespaces belong to root.
fn setuid_bwrap() -> bool {
    use std::os::unix::fs::PermissionsExt;
    crate::effects::which::find_on_path("bwrap")
        .and_then(|bwrap| std::fs::metadata(bwrap).ok())
        .is_some_and(|meta| meta.permissions().mode() & 0o4000 != 0)
}

/// The generated `resolv.conf` (in cuekit's data dir, written once) and where the machine's
/// `/etc/resolv.conf` leads; `None` where it has none.
fn resolver() -> Result<Option<(PathBuf, PathBuf)>> {
    let etc = Path::new("/etc/resolv.conf");
    let Ok(shown_at) = etc.canonicalize() else {
        return Ok(None);
    };
    let path = crate::effects::store::data_dir()
        .ok_or_else(|| unavailable("no data directory for the sandbox's resolver", "set HOME"))?
        .join("sandbox-resolv.conf");
    let wanted = net::RESOLV_CONF.as_bytes();
    if crate::effects::store::read_small(&path).ok().as_deref() != Some(wanted) {
        if let Some(dir) = path.parent() {
            crate::effects::store::create_private_dir(dir)?;
        }
        crate::effects::store::write_atomic(&path, wanted)?;
    }
    // Readable by a child of another uid (a child of root's runs as the sandbox's): nothing
    // secret in it.
    open_to_all(&path)?;
    Ok(Some((path, shown_at)))
}

/// `path` readable by anybody (`0644`), when it is not already.
fn open_to_all(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|err| Error::io("read", path, err))?;
    if meta.permissions().mode() & 0o777 == 0o644 {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
        .map_err(|err| Error::io("chmod", path, err))
}

/// Whether the stack comes up here: bubblewrap's probe run in a namespace of its own, under
/// the supervisor (`doctor`). `Err` carries what failed, in the words of whatever said it.
pub fn probe_stack(bwrap: &Path, stack: &Stack) -> std::result::Result<(), String> {
    let words = net::probe_words(&bwrap.to_string_lossy(), stack);
    let output = crate::effects::bounded::Bounded::new(&words[0], 3 * READY_WITHIN)
        .args(&words[1..])
        .run()
        .map_err(|err| match err {
            crate::effects::bounded::RunError::Start { source, .. } => {
                format!("{}: {source}", words[0])
            }
            other => other.to_string(),
        })?;
    if output.success() {
        return Ok(());
    }
    Err(String::from_utf8_lossy(&output.stderr.bytes())
        .trim()
        .to_string())
}

fn failed(what: impl std::fmt::Display) -> crate::domain::error::Error {
    unavailable(
        format!("the sandbox's network did not come up: {what}"),
        "run `cuekit doctor`; --no-network runs the task without one",
    )
}

/// A pipe whose ends are close-on-exec and lie above the descriptors handed to children.
fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(failed(std::io::Error::last_os_error()));
    }
    let lift = |fd: RawFd| -> Result<OwnedFd> {
        // SAFETY: `fd` was just made by pipe2 and is owned here alone.
        let low = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor, owned by the OwnedFd below.
        let high = unsafe { libc::fcntl(low.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10) };
        if high < 0 {
            return Err(failed(std::io::Error::last_os_error()));
        }
        // SAFETY: `high` is a fresh descriptor of ours.
        Ok(unsafe { OwnedFd::from_raw_fd(high) })
    };
    Ok((lift(fds[0])?, lift(fds[1])?))
}

/// `cuekit __net --slirp SLIRP -- [cuekit __scope --] bwrap …`: starts bubblewrap, which makes
/// the namespace and holds the child; attaches slirp4netns to it; lets the child run once the
/// interface is up; waits for bubblewrap and ends slirp4netns. Returns bubblewrap's status
/// (a signal that ended it is raised again here); an error when the stack never came up, the
/// child then never having run.
pub fn run_net(slirp: &Path, confined: bool, command: &[OsString]) -> Result<i32> {
    let (program, args) = command.split_first().ok_or_else(|| {
        crate::domain::error::Error::invalid_input("__net needs a command after --")
    })?;
    let (info_read, info_write) = pipe()?;
    let (block_read, block_write) = pipe()?;
    let args =
        crate::domain::sandbox::without_gone_covers(args, |path| path.symlink_metadata().is_ok());
    let argv: Vec<OsString> = std::iter::once(program.clone()).chain(args).collect();
    let mut child = crate::effects::spawn::handing_over(
        &argv,
        vec![
            (info_write.as_raw_fd(), net::INFO_FD),
            (block_read.as_raw_fd(), net::BLOCK_FD),
        ],
        true,
        false,
    )
    .map_err(failed)?;
    drop((info_write, block_read));
    let mut info = String::new();
    let _ = std::fs::File::from(info_read).read_to_string(&mut info);
    // bubblewrap failed before it made the namespace: its own words say why.
    let Some(pid) = net::child_pid(&info) else {
        drop(block_write);
        return Ok(status_code(child.wait().map_err(failed)?));
    };
    // Held from now on, so that a signal reaches this process and never one that took its pid.
    let handle = ProcessHandle::open(pid);
    let attached = attach_to(slirp, pid, confined);
    let Ok((mut stack, exit_write)) = attached else {
        // Never run unattached: the child first, which closing the block would release (its
        // parent's death does not end it once it changed its credentials in its namespace).
        handle.kill();
        let _ = child.kill();
        let _ = child.wait();
        drop(block_write);
        return Err(attached.err().unwrap_or_else(|| failed("slirp4netns")));
    };
    if release(&block_write).is_err() {
        let _ = child.kill();
    }
    drop(block_write);
    let status = child.wait().map_err(failed)?;
    drop(exit_write);
    end(&mut stack);
    Ok(status_code(status))
}

/// bubblewrap's child, by a pidfd where the kernel has them (Linux 5.3), else by its pid.
enum ProcessHandle {
    Fd(OwnedFd),
    Pid(u32),
    /// Gone already: nothing to signal.
    Gone,
}

impl ProcessHandle {
    fn open(pid: u32) -> ProcessHandle {
        // SAFETY: pidfd_open returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        match RawFd::try_from(fd) {
            // SAFETY: a fresh descriptor the kernel made for us.
            Ok(fd) if fd >= 0 => ProcessHandle::Fd(unsafe { OwnedFd::from_raw_fd(fd) }),
            _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) => {
                ProcessHandle::Pid(pid)
            }
            _ => ProcessHandle::Gone,
        }
    }

    fn kill(&self) {
        match self {
            // SAFETY: a signal sent through a pidfd of ours, no siginfo.
            ProcessHandle::Fd(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                );
            },
            // SAFETY: a signal to the sandbox's first process, which this run made.
            ProcessHandle::Pid(pid) => unsafe {
                libc::kill(*pid as libc::pid_t, libc::SIGKILL);
            },
            ProcessHandle::Gone => {}
        }
    }
}

/// One byte to bubblewrap's `--block-fd`: the child may run. A bubblewrap that died meanwhile
/// closed the other end: an error here, not SIGPIPE (the CLI restores its default), so that its
/// own status is the one reported.
fn release(fd: &OwnedFd) -> std::io::Result<()> {
    let mut block = std::fs::File::from(fd.try_clone()?);
    crate::effects::spawn::write_to_child(&mut block, b"1")
}

/// slirp4netns attached to the network namespace of bubblewrap's child `pid`, once bubblewrap
/// has set up its loopback; confined where that works here.
fn attach_to(slirp: &Path, pid: u32, confined: bool) -> Result<(Child, OwnedFd)> {
    let (netns, userns) = crate::effects::process::network_namespace(pid)
        .map_err(|err| failed(format!("the namespace of {pid}: {err}")))?;
    // bubblewrap's child sets up the namespace's loopback itself: slirp4netns configuring the
    // namespace meanwhile makes that fail now and then.
    let set_up = std::time::Instant::now();
    while crate::effects::process::loopback_is_up(pid) == Some(false)
        && crate::effects::process::is_alive(pid)
        && set_up.elapsed() < READY_WITHIN
    {
        std::thread::sleep(Duration::from_micros(500));
    }
    let target = Target {
        netns: &netns,
        userns: userns.as_ref(),
    };
    // slirp4netns's own sandbox and filter where they work here; without them where not.
    attach(slirp, &target, confined).or_else(|err| {
        if confined {
            attach(slirp, &target, false)
        } else {
            Err(err)
        }
    })
}

/// The namespace slirp4netns configures, held open, and its owner to join, if not ours.
struct Target<'a> {
    netns: &'a OwnedFd,
    userns: Option<&'a OwnedFd>,
}

/// slirp4netns attached to the target and its interface up, with the descriptor whose
/// closing ends it; its complaint when it does not come up.
fn attach(slirp: &Path, target: &Target, confined: bool) -> Result<(Child, OwnedFd)> {
    let (ready_read, ready_write) = pipe()?;
    let (exit_read, exit_write) = pipe()?;
    let argv = net::slirp_argv(slirp, target.userns.is_some(), confined);
    let argv: Vec<OsString> = argv.iter().map(OsString::from).collect();
    let mut pairs = vec![
        (ready_write.as_raw_fd(), net::SLIRP_READY_FD),
        (exit_read.as_raw_fd(), net::SLIRP_EXIT_FD),
        (target.netns.as_raw_fd(), net::SLIRP_NETNS_FD),
    ];
    pairs.extend(
        target
            .userns
            .map(|userns| (userns.as_raw_fd(), net::SLIRP_USERNS_FD)),
    );
    let mut stack = crate::effects::spawn::handing_over(&argv, pairs, false, true)
        .map_err(|err| failed(format!("{}: {err}", slirp.display())))?;
    drop((ready_write, exit_read));
    // Its words, kept for a failure; drained so it never blocks on them.
    let said = stack.stderr.take().map(|mut stderr| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut text);
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
            String::from_utf8_lossy(&text).into_owned()
        })
    });
    if wait_ready(&ready_read) {
        return Ok((stack, exit_write));
    }
    drop(exit_write);
    let _ = stack.kill();
    let _ = stack.wait();
    let words = said
        .and_then(|thread| thread.join().ok())
        .unwrap_or_default();
    Err(failed(format!(
        "slirp4netns did not configure the namespace: {}",
        words.trim()
    )))
}

/// Whether slirp4netns wrote that it is ready within [`READY_WITHIN`] (it closing the pipe, or
/// saying anything else, is not).
fn wait_ready(ready: &OwnedFd) -> bool {
    let mut poll = libc::pollfd {
        fd: ready.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let limit = libc::c_int::try_from(READY_WITHIN.as_millis()).unwrap_or(libc::c_int::MAX);
    loop {
        // SAFETY: one pollfd, alive for the call.
        let polled = unsafe { libc::poll(&mut poll, 1, limit) };
        if polled < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if polled <= 0 {
            return false;
        }
        let mut byte = [0u8; 1];
        // SAFETY: reads at most one byte into a live buffer.
        let read = unsafe { libc::read(ready.as_raw_fd(), byte.as_mut_ptr().cast(), 1) };
        return read == 1 && net::came_ready(&byte);
    }
}

/// slirp4netns ended with the task: it keeps nothing to save, so it is killed rather than
/// waited for (its exit descriptor, closed already, ends it where this process cannot).
fn end(stack: &mut Child) {
    let _ = stack.kill();
    let _ = stack.wait();
}

/// The status to exit with: bubblewrap's code, or its signal raised again on this process
/// (128 + the signal should that not end it).
fn status_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return code;
    }
    let signal = status.signal().unwrap_or(libc::SIGKILL);
    // SAFETY: the default action of the signal that ended the child, raised on ourselves.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    128 + signal
}
