//! The sandbox: whether bubblewrap can make its namespaces here, and whether the kernel lets a
//! process push keystrokes into its terminal.

use crate::effects::config::Config;

use super::{Check, Level};

/// Whether this kernel lets a process push keystrokes into its terminal (TIOCSTI): an
/// unsandboxed interactive child could answer its own agent's approval dialog. Sandboxed
/// children run under cuekit's seccomp filter either way.
pub(super) fn keystroke_check() -> Check {
    let name = "terminal keystrokes";
    match std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti") {
        Ok(value) if value.trim() == "0" => Check::new(
            name,
            Level::Ok,
            "this kernel refuses TIOCSTI (dev.tty.legacy_tiocsti=0)",
        ),
        _ => Check::new(
            name,
            Level::Warn,
            "this kernel lets a process push keystrokes into its terminal (TIOCSTI): an \
             unsandboxed interactive child can type into its own pane, approval dialogs included \
             (sandboxed children are stopped by cuekit's seccomp filter)",
        )
        .next("sysctl -w dev.tty.legacy_tiocsti=0 (Linux 6.2+), or run interactive children with --sandbox"),
    }
}

/// Whether `--sandbox` can make its namespaces here, as the submit itself would find out: a
/// failure where the config sandboxes every task is one, elsewhere a warning.
pub(super) fn sandbox_check(config: &Config) -> Check {
    let configured = config.sandbox().mode == crate::domain::sandbox::SandboxMode::Bwrap;
    match crate::ops::probe_sandbox() {
        // With a stack, a sandbox's abstract sockets are its own namespace's.
        Ok(bwrap)
            if crate::ops::sandbox_scope().is_none() && crate::ops::network_stack().is_err() =>
        {
            Check::new(
            "sandbox",
            Level::Warn,
            format!(
                "{} makes its namespaces here (--sandbox works), but this kernel (before Linux \
                 6.12) or a setuid bubblewrap cannot keep a sandbox that has the network from \
                 the machine's abstract unix sockets (an X server, a session bus)",
                bwrap.display()
            ),
        )
        .next("submit such tasks with --no-network, install slirp4netns, or use Linux 6.12 or later")
        }
        Ok(bwrap) => Check::new(
            "sandbox",
            Level::Ok,
            format!(
                "{} makes its namespaces here (--sandbox works; abstract sockets scoped)",
                bwrap.display()
            ),
        ),
        Err(err) => {
            let level = if configured { Level::Fail } else { Level::Warn };
            let check = Check::new("sandbox", level, err.message);
            match err.hint {
                Some(hint) => check.next(hint),
                None => check,
            }
        }
    }
}

/// Who a sandboxed child is when cuekit runs as root: the sandbox's unprivileged uid, dropped
/// to by `setpriv` (`domain::sandbox_user`); without `setpriv` a sandboxed submit is refused.
/// Nothing to say for any other user (the child is that user).
pub(super) fn identity_check(config: &Config) -> Option<Check> {
    if !crate::effects::owner::is_root() {
        return None;
    }
    let name = "sandbox user";
    let uid = crate::domain::sandbox_user::SANDBOX_UID;
    Some(match crate::effects::owner::sandbox_identity() {
        Ok(run_as) => Check::new(
            name,
            Level::Ok,
            format!(
                "cuekit runs as root: a sandboxed child runs as uid {uid} (nobody), dropped by {} \
                 with no capability left; its checkout is handed to that uid, an in-place work \
                 dir must be writable by it",
                run_as
                    .map(|r| r.setpriv.display().to_string())
                    .unwrap_or_default()
            ),
        ),
        Err(why) => {
            let configured = config.sandbox().mode == crate::domain::sandbox::SandboxMode::Bwrap;
            Check::new(
                name,
                if configured { Level::Fail } else { Level::Warn },
                format!("{why}: a sandboxed submit is refused"),
            )
            .next("install util-linux (setpriv), or run cuekit as an unprivileged user")
        }
    })
}

/// Which network stack a sandbox that keeps its network gets here, and whether it comes up:
/// without one, such a sandbox shares the machine's network (its loopback services, a port it
/// binds). Also whether this machine has IPv6 loopback, where an unsandboxed child can listen
/// beside a service bound to IPv4 alone.
pub(super) fn network_check(config: &Config) -> Option<Check> {
    let bwrap = crate::ops::probe_sandbox().ok()?;
    let name = "sandbox network";
    let configured = config.sandbox().mode == crate::domain::sandbox::SandboxMode::Bwrap;
    let ipv6 = if std::net::TcpListener::bind("[::1]:0").is_ok() {
        "this machine has IPv6 loopback (::1)"
    } else {
        "this machine has no IPv6 loopback"
    };
    let stack = match crate::ops::network_stack() {
        Ok(stack) => stack,
        Err(why) => {
            let level = if configured { Level::Fail } else { Level::Warn };
            return Some(Check::new(name, level, format!("{why}; {ipv6}")).next(
                "apt install slirp4netns (Debian/Ubuntu), dnf install slirp4netns (Fedora)",
            ));
        }
    };
    let confined = if stack.confined {
        "its own sandbox and seccomp filter on"
    } else {
        "unconfined (its sandbox needs root here)"
    };
    Some(match crate::ops::probe_stack(&bwrap, &stack) {
        Ok(()) => Check::new(
            name,
            Level::Ok,
            format!(
                "{} gives each sandbox with the network a namespace of its own, with no way to \
                 this machine's loopback ({confined}); {ipv6}",
                stack.slirp.display()
            ),
        ),
        Err(said) => Check::new(
            name,
            if configured { Level::Fail } else { Level::Warn },
            format!("{} does not come up here: {said}", stack.slirp.display()),
        )
        .next(
            "sandboxed tasks with the network fail (sandbox_failed); submit them with --no-network",
        ),
    })
}
