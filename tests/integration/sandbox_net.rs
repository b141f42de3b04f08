//! A sandboxed child's network of its own (`--sandbox` with the network on): real bubblewrap
//! and slirp4netns. The child reaches an address of this machine that is not loopback (the
//! stand-in for the internet: every byte stays here), and never this machine's loopback, the
//! gateway slirp would map to it, or a port of the machine by binding one; as root and as an
//! unprivileged user, whose bubblewrap needs a user namespace the stack must join.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, TcpStream};
use std::time::Duration;

use crate::harness::net::{free_port, listen, outside_address, reach_script, reached};
use crate::harness::ssh_host::ThrowawayUser;
use crate::harness::{HANG_GUARD, Harness};

/// The ways a child tries, as `(name, host, port)`, and whether each must get through.
struct Targets {
    tried: Vec<(&'static str, String, u16)>,
    open: Vec<&'static str>,
}

/// Listeners on this machine's loopback (IPv4 and, where it has one, IPv6) and on its outside
/// address, and the child's ways to them: only the outside one may answer.
fn targets() -> Targets {
    let loop4 = listen(IpAddr::V4(Ipv4Addr::LOCALHOST)).unwrap();
    let outside = outside_address();
    let out = listen(outside).unwrap();
    let mut tried = vec![
        ("loop4", "127.0.0.1".to_string(), loop4),
        // slirp4netns maps its gateway to the machine's loopback unless told not to.
        ("gateway", "10.0.2.2".to_string(), loop4),
        ("outside", outside.to_string(), out),
    ];
    if let Some(loop6) = listen(IpAddr::V6(Ipv6Addr::LOCALHOST)) {
        tried.push(("loop6", "::1".to_string(), loop6));
    }
    Targets {
        tried,
        open: vec!["outside"],
    }
}

/// Asserts what the transcript says of each target.
fn assert_reach(said: &str, targets: &Targets) {
    for (name, host, port) in &targets.tried {
        let want = targets.open.contains(name);
        assert_eq!(
            reached(said, name),
            Some(want),
            "{name} ({host}:{port}) should {}be reached:\n{said}",
            if want { "" } else { "not " }
        );
    }
}

/// As root (the tests' user): out yes, this machine's loopback and the gateway no; a port the
/// child binds is not the machine's; the resolver is slirp's; nothing of the stack outlives
/// the task.
#[test]
fn a_sandboxed_child_goes_out_but_never_to_this_machines_loopback() {
    let h = Harness::new();
    let targets = targets();
    let bound = free_port();
    let script = format!(
        "{}; grep -q '^nameserver 10.0.2.3$' /etc/resolv.conf && echo RESOLVER-SLIRP; \
         python3 -c \"
import socket, time
s4 = socket.socket(); s4.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s4.bind(('0.0.0.0', {bound})); s4.listen(5); s4.settimeout(8)
print('BOUND', flush=True)
try:
    s4.accept(); print('ACCEPTED')
except Exception:
    print('NOBODY-CAME')
\"",
        reach_script(&targets.tried)
    );
    let id = h.submit_sh(&script, &["--sandbox", "--mode", "batch"]);
    h.wait_until(&id, "the child's listener", HANG_GUARD, || {
        h.transcript(&id).contains("BOUND")
    });
    // The child's port is its namespace's: from here, nothing answers on it.
    for host in [
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
        outside_address(),
    ] {
        let came = TcpStream::connect_timeout(&(host, bound).into(), Duration::from_secs(2));
        assert!(came.is_err(), "reached the child's port at {host}:{bound}");
    }
    let (waited, _) = h.json(&["wait", &id, "--timeout", "60s"]);
    let said = h.transcript(&id);
    assert_eq!(
        waited["tasks"][0]["status"], "completed",
        "{waited}\n{said}"
    );
    assert_reach(&said, &targets);
    assert!(said.contains("NOBODY-CAME"), "{said}");
    assert!(said.contains("RESOLVER-SLIRP"), "{said}");
    let marker = format!("CUEKIT_TASK_ID={id}");
    let left = stack_processes(&marker);
    assert!(left.is_empty(), "slirp4netns outlived the task: {left:?}");
}

/// The slirp4netns processes whose environment carries `marker`.
fn stack_processes(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            comm.trim() == "slirp4netns"
                && environ
                    .split(|byte| *byte == 0)
                    .any(|entry| entry == marker.as_bytes())
        })
        .collect()
}

/// As an unprivileged user, whose bubblewrap makes a user namespace (nested, by the time the
/// child runs): the stack joins the namespace's owner and the same ways hold.
#[test]
fn an_unprivileged_users_sandboxed_child_has_a_network_of_its_own() {
    let user = ThrowawayUser::new("cuekit-net-");
    let targets = targets();
    let script = format!(
        "mkdir -p ~/proj && cd ~/proj && cuekit submit --id t_5a4db0c0a001 --sandbox --agent command \
         --mode batch -- sh -c {} && cuekit wait t_5a4db0c0a001 --timeout 60s; \
         cuekit logs t_5a4db0c0a001; echo \"SUBMITTER-UID $(id -u)\"",
        crate::sandbox::shell_quote(&format!(
            "echo \"CHILD-UID $(id -u)\"; {}",
            reach_script(&targets.tried)
        ))
    );
    let ran = crate::sandbox::run_as(&user, &script);
    let said =
        String::from_utf8_lossy(&ran.stdout).into_owned() + &String::from_utf8_lossy(&ran.stderr);
    assert_reach(&said, &targets);
    // The drop to the sandbox's uid is root's alone: this user's child is this user.
    let uid_of = |marker: &str| {
        said.lines()
            .find_map(|line| line.trim().strip_prefix(marker).map(str::to_string))
            .unwrap_or_else(|| panic!("no {marker}:\n{said}"))
    };
    assert_eq!(uid_of("CHILD-UID "), uid_of("SUBMITTER-UID "), "{said}");
}

/// `--no-network` stays bubblewrap's empty namespace: not even the outside address.
#[test]
fn no_network_reaches_nothing_at_all() {
    let h = Harness::new();
    let mut targets = targets();
    targets.open.clear();
    let id = h.submit_sh(
        &reach_script(&targets.tried),
        &["--sandbox", "--no-network", "--mode", "batch"],
    );
    h.json(&["wait", &id, "--timeout", "60s"]);
    assert_reach(&h.transcript(&id), &targets);
}

/// A stack that does not come up (a slirp4netns that fails) ends the task `sandbox_failed`
/// before its child ran: never in a namespace without its way out, never without the namespace.
#[test]
fn a_stack_that_fails_ends_the_task_before_its_child_runs() {
    let h = Harness::new();
    crate::harness::write_executable(
        &h.bin.join("slirp4netns"),
        "#!/bin/sh\necho 'slirp4netns: cannot configure' >&2\nexit 1\n",
    );
    let id = h.submit_sh(
        "echo AGENT-RAN; touch ran.txt",
        &["--sandbox", "--mode", "batch"],
    );
    let (waited, _) = h.json(&["wait", &id, "--timeout", "60s"]);
    let view = &waited["tasks"][0];
    let said = h.transcript(&id);
    assert_eq!(view["status"], "failed", "{waited}\n{said}");
    assert_eq!(view["reason"], "sandbox_failed", "{waited}\n{said}");
    assert!(!said.contains("AGENT-RAN"), "{said}");
    assert!(
        said.contains("cannot configure"),
        "slirp4netns's own words: {said}"
    );
}

/// A PATH of links to every program on this one but slirp4netns.
fn path_without_slirp(h: &Harness) -> String {
    let folder = h.root().join("noslirp");
    std::fs::create_dir_all(&folder).unwrap();
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if name != "slirp4netns" && !folder.join(&name).exists() {
                let _ = std::os::unix::fs::symlink(entry.path(), folder.join(&name));
            }
        }
    }
    format!("{}:{}", h.bin.display(), folder.display())
}

/// `doctor` names the stack and runs it; without slirp4netns it warns, and a sandboxed submit
/// that keeps its network says what sharing the machine's leaves open.
#[test]
fn doctor_and_the_submit_say_which_stack_there_is() {
    let h = Harness::new();
    let doctor = |path: Option<&str>| {
        let mut command = h.cuekit();
        if let Some(path) = path {
            command.env("PATH", path);
        }
        let output = command.arg("doctor").output().unwrap();
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .find(|line| line.contains("sandbox network"))
            .unwrap_or_default()
            .to_string()
    };
    let with = doctor(None);
    assert!(
        with.starts_with("ok") && with.contains("slirp4netns") && with.contains("loopback"),
        "{with}"
    );
    let without_path = path_without_slirp(&h);
    let without = doctor(Some(&without_path));
    assert!(
        without.starts_with("warn") && without.contains("not installed"),
        "{without}"
    );
    let output = h
        .cuekit()
        .env("PATH", &without_path)
        .args(["--json", "submit"])
        .args(crate::harness::sh_task(
            "true",
            &["--sandbox", "--mode", "batch"],
        ))
        .output()
        .unwrap();
    let said: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        said["warnings"]
            .to_string()
            .contains("slirp4netns is not installed"),
        "{said}"
    );
    let (with_stack, _) = h.json(&sh_args());
    assert!(
        !with_stack["warnings"].to_string().contains("slirp4netns"),
        "{with_stack}"
    );
}

fn sh_args() -> Vec<&'static str> {
    let mut args = vec!["submit"];
    args.extend(crate::harness::sh_task(
        "true",
        &["--sandbox", "--mode", "batch"],
    ));
    args
}

/// A cancelled task's stack ends with it: no slirp4netns of it is left.
#[test]
fn a_cancelled_tasks_stack_ends_with_it() {
    let h = Harness::new();
    let id = h.submit_sh("echo UP; sleep 600", &["--sandbox", "--mode", "batch"]);
    h.wait_until(&id, "the child", HANG_GUARD, || {
        h.transcript(&id).contains("UP")
    });
    let marker = format!("CUEKIT_TASK_ID={id}");
    assert!(
        !stack_processes(&marker).is_empty(),
        "no slirp4netns ran for the task"
    );
    h.ok(&["cancel", &id]);
    h.wait_until(&id, "its slirp4netns to end", HANG_GUARD, || {
        stack_processes(&marker).is_empty()
    });
}
