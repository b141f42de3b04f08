//! A sandbox's own network (`--sandbox` with the network on): bubblewrap makes a network
//! namespace (`--unshare-net`) and a user-mode stack, slirp4netns, gives it a way out before
//! the child runs. The child then reaches the internet, but not this machine's loopback (its
//! `127.0.0.1`, `[::1]`, the gateway address slirp would map to it: `--disable-host-loopback`),
//! and a port it binds is its namespace's, never the machine's. Pure: the words of bubblewrap,
//! of cuekit's supervisor (`__net`, `ops::sandbox::net`) and of slirp4netns.

use std::path::{Path, PathBuf};

/// The hidden command that runs bubblewrap with the stack attached ([`supervisor_words`]).
pub const NET_COMMAND: &str = "__net";

/// The descriptor bubblewrap writes its `child-pid` to (`--info-fd`), made by the supervisor.
pub const INFO_FD: i32 = 6;
/// The descriptor bubblewrap waits on before it runs the child (`--block-fd`): the supervisor
/// writes to it once the stack is up.
pub const BLOCK_FD: i32 = 7;
/// slirp4netns's descriptors: it writes `1` to the first once the interface is configured
/// (`--ready-fd`), and exits when the second closes (`--exit-fd`), whoever ends the supervisor.
pub const SLIRP_READY_FD: i32 = 3;
pub const SLIRP_EXIT_FD: i32 = 4;
/// The namespace it configures, and the user namespace that owns it (where that is not the
/// supervisor's own), handed to it open: never looked up again by a pid.
pub const SLIRP_NETNS_FD: i32 = 5;
pub const SLIRP_USERNS_FD: i32 = 6;

/// The interface slirp4netns makes in the namespace.
pub const TAP: &str = "tap0";

/// The namespace's resolver: slirp4netns's own forwarder (a host's `127.0.0.53` is the
/// machine's loopback, out of reach inside).
pub const RESOLV_CONF: &str = "nameserver 10.0.2.3\n";

/// The user-mode stack a sandbox's network goes through, found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    /// cuekit's own program, which supervises bubblewrap and the stack (`__net`).
    pub cuekit: PathBuf,
    pub slirp: PathBuf,
    /// The generated `resolv.conf` ([`RESOLV_CONF`]) and where `/etc/resolv.conf` leads on
    /// this machine (a link into `/run` too), the file it is shown over; `None` where the
    /// machine has no `/etc/resolv.conf`.
    pub resolv: Option<(PathBuf, PathBuf)>,
    /// slirp4netns's own sandbox and seccomp filter (`--enable-sandbox --enable-seccomp`),
    /// where they work here.
    pub confined: bool,
}

/// `cuekit __net --slirp SLIRP [--confined] --`: what runs bubblewrap (and whatever runs it,
/// the scope) when the sandbox has a network of its own.
pub fn supervisor_words(stack: &Stack) -> Vec<String> {
    let mut words = vec![
        stack.cuekit.to_string_lossy().into_owned(),
        NET_COMMAND.to_string(),
        "--slirp".to_string(),
        stack.slirp.to_string_lossy().into_owned(),
    ];
    if stack.confined {
        words.push("--confined".to_string());
    }
    words.push("--".to_string());
    words
}

/// bubblewrap's words for a namespace of its own that waits for its stack: the pid on
/// [`INFO_FD`], the child held on [`BLOCK_FD`], the generated resolver shown.
pub fn bwrap_net_words(stack: &Stack) -> Vec<String> {
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let mut words = vec![
        "--unshare-net".to_string(),
        "--info-fd".to_string(),
        INFO_FD.to_string(),
        "--block-fd".to_string(),
        BLOCK_FD.to_string(),
    ];
    if let Some((generated, shown_at)) = &stack.resolv {
        words.extend(["--ro-bind".to_string(), path(generated), path(shown_at)]);
    }
    words
}

/// What `doctor` runs to know the stack comes up here: bubblewrap's probe
/// (`domain::sandbox::PROBE`) in a namespace of its own, under the supervisor.
pub fn probe_words(bwrap: &str, stack: &Stack) -> Vec<String> {
    let bare = Stack {
        resolv: None,
        ..stack.clone()
    };
    let mut words = supervisor_words(&bare);
    words.push(bwrap.to_string());
    words.extend(bwrap_net_words(&bare));
    words.extend(crate::domain::sandbox::PROBE.iter().map(|w| w.to_string()));
    words
}

/// slirp4netns attached to the namespace it is handed ([`SLIRP_NETNS_FD`], joined through
/// [`SLIRP_USERNS_FD`] when `in_userns`), configured (`10.0.2.100/24`, gateway `10.0.2.2`,
/// resolver `10.0.2.3`), with no way to the machine's loopback.
pub fn slirp_argv(slirp: &Path, in_userns: bool, confined: bool) -> Vec<String> {
    let mut argv = vec![
        slirp.to_string_lossy().into_owned(),
        "--configure".to_string(),
        "--mtu=65520".to_string(),
        "--disable-host-loopback".to_string(),
        format!("--ready-fd={SLIRP_READY_FD}"),
        format!("--exit-fd={SLIRP_EXIT_FD}"),
        "--netns-type=path".to_string(),
    ];
    if in_userns {
        argv.push(format!("--userns-path=/proc/self/fd/{SLIRP_USERNS_FD}"));
    }
    if confined {
        argv.extend(["--enable-sandbox", "--enable-seccomp"].map(String::from));
    }
    argv.extend([format!("/proc/self/fd/{SLIRP_NETNS_FD}"), TAP.to_string()]);
    argv
}

/// The pid of bubblewrap's child in the new namespaces, from what it wrote to `--info-fd` (a
/// JSON object, `"child-pid": N` among its fields).
pub fn child_pid(info: &str) -> Option<u32> {
    let value: serde_json::Value = serde_json::from_str(info.trim()).ok()?;
    u32::try_from(value.get("child-pid")?.as_u64()?)
        .ok()
        .filter(|pid| *pid > 1)
}

/// Whether slirp4netns's `--ready-fd` said the interface is up.
pub fn came_ready(said: &[u8]) -> bool {
    said.first() == Some(&b'1')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack() -> Stack {
        Stack {
            cuekit: "/usr/bin/cuekit".into(),
            slirp: "/usr/bin/slirp4netns".into(),
            resolv: Some(("/d/resolv.conf".into(), "/etc/resolv.conf".into())),
            confined: true,
        }
    }

    #[test]
    fn slirp_never_maps_the_machines_loopback_and_is_confined_where_it_can_be() {
        let argv = slirp_argv(Path::new("/usr/bin/slirp4netns"), true, true);
        assert_eq!(argv[0], "/usr/bin/slirp4netns");
        for word in [
            "--configure",
            "--disable-host-loopback",
            "--enable-sandbox",
            "--enable-seccomp",
            "--ready-fd=3",
            "--exit-fd=4",
            "--netns-type=path",
            "--userns-path=/proc/self/fd/6",
        ] {
            assert!(argv.iter().any(|w| w == word), "{word}: {argv:?}");
        }
        assert_eq!(argv[argv.len() - 2..], ["/proc/self/fd/5", "tap0"]);
        let plain = slirp_argv(Path::new("slirp4netns"), false, false);
        assert!(
            !plain.iter().any(|w| w.starts_with("--enable")),
            "{plain:?}"
        );
        assert!(
            !plain.iter().any(|w| w.starts_with("--userns")),
            "{plain:?}"
        );
        assert!(plain.iter().any(|w| w == "--disable-host-loopback"));
    }

    #[test]
    fn bubblewrap_makes_the_namespace_and_waits_for_the_stack() {
        let words = bwrap_net_words(&stack());
        assert_eq!(words[0], "--unshare-net");
        assert!(
            words.windows(2).any(|w| w == ["--info-fd", "6"]),
            "{words:?}"
        );
        assert!(
            words.windows(2).any(|w| w == ["--block-fd", "7"]),
            "{words:?}"
        );
        assert!(
            words
                .windows(3)
                .any(|w| w == ["--ro-bind", "/d/resolv.conf", "/etc/resolv.conf"]),
            "{words:?}"
        );
        assert_eq!(
            supervisor_words(&stack()),
            [
                "/usr/bin/cuekit",
                NET_COMMAND,
                "--slirp",
                "/usr/bin/slirp4netns",
                "--confined",
                "--"
            ]
        );
    }

    #[test]
    fn the_child_pid_is_read_from_bubblewraps_info() {
        let info = "{\n    \"child-pid\": 5017,\n    \"net-namespace\": 4026532176\n}\n";
        assert_eq!(child_pid(info), Some(5017));
        assert_eq!(child_pid(""), None);
        assert_eq!(child_pid("{\"child-pid\": 1}"), None);
        assert_eq!(child_pid("{\"child-pid\": \"12\"}"), None);
        assert!(came_ready(b"1"));
        assert!(!came_ready(b""));
    }

    #[test]
    fn the_probe_runs_bubblewraps_own_under_the_supervisor() {
        let words = probe_words("/usr/bin/bwrap", &stack());
        assert_eq!(words[1], NET_COMMAND);
        assert!(
            words.windows(2).any(|w| w == ["--block-fd", "7"]),
            "{words:?}"
        );
        assert!(!words.iter().any(|w| w == "/d/resolv.conf"), "{words:?}");
        assert_eq!(words.last().map(String::as_str), Some("/bin/true"));
    }

    fn plan(network: crate::domain::sandbox::Network) -> crate::domain::sandbox::Plan {
        crate::domain::sandbox::Plan {
            hidden: vec!["/run".into(), "/home/u".into()],
            mounts: vec![],
            network,
            chdir: "/home/u/p".into(),
            setenv: vec![],
            new_session: true,
            scope: Some("/usr/bin/cuekit".into()),
            stack: Some(stack()),
            run_as: None,
        }
    }

    #[test]
    fn the_supervisor_runs_bubblewrap_with_no_scope_in_between() {
        use crate::domain::sandbox::{Network, SCOPE_COMMAND, bwrap_words};
        let words = bwrap_words("/usr/bin/bwrap", &plan(Network::On));
        let bwrap = words.iter().position(|w| w == "/usr/bin/bwrap").unwrap();
        assert_eq!(words[..2], ["/usr/bin/cuekit", NET_COMMAND], "{words:?}");
        // The namespace's abstract sockets are its own: the scope would only cost a start.
        assert_eq!(bwrap, supervisor_words(&stack()).len(), "{words:?}");
        assert!(!words.iter().any(|w| w == SCOPE_COMMAND), "{words:?}");
        // The resolver comes after the hidden `/run` that may hold the file it covers.
        let hidden = words.iter().position(|w| w == "/run").unwrap();
        let resolver = words.iter().position(|w| w == "/d/resolv.conf").unwrap();
        assert!(hidden < resolver, "{words:?}");
        // `--no-network`: bubblewrap's empty namespace, no stack, no supervisor.
        let cut = bwrap_words("/usr/bin/bwrap", &plan(Network::Off));
        assert!(!cut.iter().any(|w| w == NET_COMMAND || w == "--info-fd"));
        assert_eq!(cut[1], SCOPE_COMMAND, "{cut:?}");
        assert_eq!(cut.iter().filter(|w| *w == "--unshare-net").count(), 1);
    }

    #[test]
    fn the_resolver_is_slirps_own() {
        assert_eq!(RESOLV_CONF.trim(), "nameserver 10.0.2.3");
    }
}
