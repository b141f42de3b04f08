//! Ending a task's whole process tree. Agents re-launch themselves (the Gemini CLI's parent
//! ignores SIGTERM and SIGHUP and waits for a child), so signalling one pid is not enough:
//! every descendant and its process group gets SIGTERM, then SIGKILL after a grace period.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How long an agent gets to exit on SIGTERM before SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(3);

struct ProcStat {
    pid: u32,
    ppid: u32,
    pgid: u32,
    /// Its session: a daemon leads its own.
    sid: u32,
    /// Its controlling terminal's device number (0: none).
    tty: u32,
    /// The foreground process group of that terminal (field 8; -1, read as 0: none).
    foreground: u32,
    zombie: bool,
    /// Clock ticks after boot when the process started: with the pid, names one process for
    /// the life of the machine.
    start_ticks: u64,
    /// For a zombie, its status as `waitpid` will report it (field 52, Linux 3.5+).
    wait_status: Option<i32>,
}

fn read_stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself contain spaces or ')'.
    let after_name = &text[text.rfind(')')? + 2..];
    let mut fields = after_name.split(' ');
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    let sid = fields.next()?.parse().ok()?;
    let tty = fields.next()?.parse::<i64>().ok()? as u32;
    let foreground = fields.next()?.parse::<i64>().ok()?.max(0) as u32;
    // Field 22 of stat; `fields` stands at field 9 now.
    let start_ticks = fields.nth(13)?.parse().ok()?;
    let zombie = state == "Z" || state == "X";
    Some(ProcStat {
        pid,
        ppid,
        pgid,
        sid,
        tty,
        foreground,
        zombie,
        start_ticks,
        wait_status: fields
            .nth(29)
            .filter(|_| zombie)
            .and_then(|status| status.trim().parse().ok()),
    })
}

fn all_processes() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter_map(read_stat)
        .collect()
}

/// When the process `pid` started, in clock ticks after boot.
pub fn start_ticks(pid: u32) -> Option<u64> {
    read_stat(pid).map(|stat| stat.start_ticks)
}

/// The environment variable every process of a task carries (set by `launch.sh`).
pub const TASK_ID_VARIABLE: &str = "CUEKIT_TASK_ID";

/// A task's pane process as recorded at start: it leads the task's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupLeader {
    pub pid: u32,
    pub start_ticks: Option<u64>,
}

impl GroupLeader {
    /// Whether the very process recorded still runs (one read of `/proc/<pid>/stat`): its pane
    /// lives, whatever tmux says, so its task is not gone.
    pub fn is_alive(&self) -> bool {
        read_stat(self.pid).is_some_and(|stat| self.is(&stat))
    }

    /// Its parent: for a pane's first process, the tmux server that holds the pane.
    pub fn parent(&self) -> Option<u32> {
        read_stat(self.pid)
            .filter(|stat| self.is(stat))
            .map(|stat| stat.ppid)
    }

    /// Its exit status once it has exited but its parent (the tmux server) has not collected
    /// it yet (the kernel keeps it with the zombie); `None` while it runs, once it is reaped, or
    /// when a signal ended it.
    pub fn unreaped_exit_status(&self) -> Option<i32> {
        let stat = read_stat(self.pid)?;
        let same = self
            .start_ticks
            .is_none_or(|ticks| ticks == stat.start_ticks);
        let status = stat.wait_status.filter(|_| stat.zombie && same)?;
        // WIFEXITED, then WEXITSTATUS.
        (status & 0x7f == 0).then_some((status >> 8) & 0xff)
    }

    fn is(&self, stat: &ProcStat) -> bool {
        stat.pid == self.pid
            && !stat.zombie
            && self
                .start_ticks
                .is_none_or(|ticks| ticks == stat.start_ticks)
    }
}

/// Every live process of a task, found without tmux: the members of its process group (only
/// while its leader is the very process recorded at start, so a reused pid is never taken for
/// it) and every process carrying `CUEKIT_TASK_ID=<id>` in its environment (which finds the
/// ones that left the group, and the group after its leader died). This process is never in it.
pub fn task_processes(task_id: &str, leader: Option<GroupLeader>) -> BTreeSet<u32> {
    let me = std::process::id();
    let processes = all_processes();
    let leader_is_ours = leader.is_some_and(|leader| processes.iter().any(|p| leader.is(p)));
    let marker = format!("{TASK_ID_VARIABLE}={task_id}");
    processes
        .iter()
        .filter(|p| p.pid != me && !p.zombie)
        .filter(|p| {
            (leader_is_ours && leader.is_some_and(|l| p.pgid == l.pid))
                || carries(p.pid, marker.as_bytes())
        })
        .map(|p| p.pid)
        .collect()
}

/// The live processes (not this one) whose environment holds the entry `NAME=value`.
pub fn carrying(name: &str, value: &str) -> BTreeSet<u32> {
    carrying_where(format!("{name}={value}").as_bytes(), carries)
}

/// The live processes (not this one) for which `holds(pid, marker)`.
fn carrying_where(marker: &[u8], holds: fn(u32, &[u8]) -> bool) -> BTreeSet<u32> {
    let me = std::process::id();
    all_processes()
        .iter()
        .filter(|p| p.pid != me && !p.zombie && holds(p.pid, marker))
        .map(|p| p.pid)
        .collect()
}

/// The live processes (not this one) whose environment holds an entry `NAME=<prefix>…`: a
/// check's processes by their task (`CUEKIT_CHECK=<id>.`), whatever round and runner.
pub fn carrying_prefix(name: &str, prefix: &str) -> BTreeSet<u32> {
    carrying_where(format!("{name}={prefix}").as_bytes(), carries_prefix)
}

fn carries_prefix(pid: u32, marker: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
        environ
            .split(|&b| b == 0)
            .any(|entry| entry.starts_with(marker))
    })
}

/// Set in the environment of hook commands: they carry a task's id but are not part of it.
pub const HOOK_VARIABLE: &str = "CUEKIT_HOOK";

/// Whether the environment `pid` started with holds the exact entry `marker` (and is not a
/// hook's).
fn carries(pid: u32, marker: &[u8]) -> bool {
    let hook = format!("{HOOK_VARIABLE}=");
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
        let mut entries = environ.split(|&b| b == 0);
        entries.clone().any(|entry| entry == marker)
            && !entries.any(|entry| entry.starts_with(hook.as_bytes()))
    })
}

/// `pid` and its ancestors, nearest first, following parent pids up through `/proc`.
pub fn ancestry(pid: u32) -> Vec<u32> {
    let mut chain = vec![pid];
    // A bound against a cycle read across a pid being reused mid-walk.
    while chain.len() < 4096 {
        let current = *chain.last().expect("never empty");
        match read_stat(current) {
            Some(stat) if stat.ppid != 0 && stat.ppid != current => chain.push(stat.ppid),
            _ => break,
        }
    }
    chain
}

/// `pid`'s controlling terminal (its device number), if it has one: a process detached with
/// `setsid` or run by a server (`tmux run-shell`) has none.
pub fn controlling_terminal(pid: u32) -> Option<u32> {
    read_stat(pid).map(|stat| stat.tty).filter(|tty| *tty != 0)
}

/// The process group in the foreground of `pid`'s controlling terminal: for a pane's first
/// process, the program that has the pane's keyboard now.
pub fn foreground_group(pid: u32) -> Option<u32> {
    read_stat(pid)
        .filter(|stat| stat.tty != 0)
        .map(|stat| stat.foreground)
        .filter(|group| *group != 0)
}

/// The words `pid` was started with (`/proc/<pid>/cmdline`).
pub fn command_line(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|word| !word.is_empty())
                .map(|word| String::from_utf8_lossy(word).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The task id in the environment `pid` started with (`CUEKIT_TASK_ID=…`), if any.
pub fn task_id_in_environment(pid: u32) -> Option<String> {
    let marker = format!("{TASK_ID_VARIABLE}=");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    environ
        .split(|&b| b == 0)
        .find_map(|entry| entry.strip_prefix(marker.as_bytes()))
        .map(|id| String::from_utf8_lossy(id).into_owned())
}

/// Whether `ancestor` is `pid` itself or one of its ancestors, following parent pids up
/// through `/proc` (the kernel's word, which no environment variable can forge).
pub fn descends_from(pid: u32, ancestor: u32) -> bool {
    let mut current = pid;
    // A bound against a cycle read across a pid being reused mid-walk.
    for _ in 0..4096 {
        if current == ancestor {
            return true;
        }
        match read_stat(current) {
            Some(stat) if stat.ppid != 0 && stat.ppid != current => current = stat.ppid,
            _ => return false,
        }
    }
    false
}

/// The live members of process group `pgid`.
pub fn group_members(pgid: u32) -> BTreeSet<u32> {
    all_processes()
        .into_iter()
        .filter(|process| process.pgid == pgid && !process.zombie)
        .map(|process| process.pid)
        .collect()
}

/// The children of `parent` that exited and whose status nobody took yet (zombies).
pub fn zombie_children(parent: u32) -> Vec<u32> {
    all_processes()
        .into_iter()
        .filter(|process| process.ppid == parent && process.zombie)
        .map(|process| process.pid)
        .collect()
}

/// `root` and every live descendant of it.
pub fn process_tree(root: u32) -> BTreeSet<u32> {
    let mut tree = BTreeSet::from([root]);
    extend_with_descendants(&mut tree);
    tree
}

/// Adds every live descendant of the pids in `tree` to it.
fn extend_with_descendants(tree: &mut BTreeSet<u32>) {
    let processes = all_processes();
    loop {
        let before = tree.len();
        for process in &processes {
            if tree.contains(&process.ppid) {
                tree.insert(process.pid);
            }
        }
        if tree.len() == before {
            return;
        }
    }
}

/// Live processes whose command line holds every word of `words`, each as a whole argument,
/// leaving out session leaders: a daemon a client forked (tmux's server) keeps the client's
/// command line for its whole life.
pub fn clients_with_arguments(words: &[&str]) -> Vec<u32> {
    all_processes()
        .into_iter()
        .filter(|p| !p.zombie && p.sid != p.pid)
        .filter(|p| {
            std::fs::read(format!("/proc/{}/cmdline", p.pid)).is_ok_and(|cmdline| {
                let argv: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
                words.iter().all(|word| argv.contains(&word.as_bytes()))
            })
        })
        .map(|p| p.pid)
        .collect()
}

/// Whether a process still exists and is not a zombie (a zombie holds no resources and may
/// never be reaped if its new parent does not wait).
pub fn is_alive(pid: u32) -> bool {
    read_stat(pid).is_some_and(|stat| !stat.zombie)
}

/// The network namespace of `pid`, held open (so it stays the one whatever the process does
/// next), and the user namespace that owns it when that is not this process's own: what a
/// helper must join to configure it (bubblewrap's child may since have moved on into a user
/// namespace nested in that one).
pub fn network_namespace(
    pid: u32,
) -> std::io::Result<(std::os::fd::OwnedFd, Option<std::os::fd::OwnedFd>)> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::MetadataExt;
    /// `NS_GET_USERNS`: `_IO(0xb7, 0x1)`.
    const NS_GET_USERNS: libc::c_ulong = 0xb701;
    let net: OwnedFd = std::fs::File::open(format!("/proc/{pid}/ns/net"))?.into();
    // SAFETY: an ioctl on a descriptor of ours that returns a new descriptor or -1.
    let owner = unsafe { libc::ioctl(net.as_raw_fd(), NS_GET_USERNS) };
    if owner < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `owner` is a fresh descriptor the ioctl made for us.
    let owner = unsafe { OwnedFd::from_raw_fd(owner) };
    let ours = std::fs::metadata("/proc/self/ns/user")?.ino();
    let theirs = std::fs::File::from(owner.try_clone()?).metadata()?.ino();
    Ok((net, (ours != theirs).then_some(owner)))
}

/// Whether the network namespace of `pid` has its loopback up with `127.0.0.1` (the kernel
/// routes an address of an interface only once it is up): what bubblewrap's `--unshare-net`
/// sets up in its child before anything else may configure the namespace. `None` when /proc
/// does not say (the process is gone, or hidden from this user).
pub fn loopback_is_up(pid: u32) -> Option<bool> {
    std::fs::read_to_string(format!("/proc/{pid}/net/fib_trie"))
        .ok()
        .map(|trie| trie.contains("127.0.0.1"))
}

fn signal(pids: &BTreeSet<u32>, sig: libc::c_int) {
    let groups: BTreeSet<u32> = pids
        .iter()
        .filter_map(|&pid| read_stat(pid))
        .map(|s| s.pgid)
        .collect();
    for &pgid in &groups {
        // Never signal our own group (a task started from inside cuekit's group).
        if pgid > 1 && pgid != unsafe { libc::getpgrp() } as u32 {
            unsafe { libc::kill(-(pgid as libc::pid_t), sig) };
        }
    }
    for &pid in pids {
        unsafe { libc::kill(pid as libc::pid_t, sig) };
    }
}

/// SIGTERM to the tree of `root` (every pid and process group), SIGKILL to whatever is left
/// after `grace`. Returns the pids still alive at the end (empty unless unkillable).
pub fn terminate_tree(root: u32, grace: Duration) -> Vec<u32> {
    terminate(process_tree(root), grace)
}

/// [`terminate_tree`] for a set of processes and all their descendants.
pub fn terminate(mut tree: BTreeSet<u32>, grace: Duration) -> Vec<u32> {
    tree.remove(&std::process::id());
    if tree.is_empty() {
        return Vec::new();
    }
    extend_with_descendants(&mut tree);
    signal(&tree, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    let mut alive = live(&mut tree);
    while !alive.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        alive = live(&mut tree);
    }
    if alive.is_empty() {
        return Vec::new();
    }
    signal(&alive, libc::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(2);
    while !alive.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        alive = live(&mut tree);
        signal(&alive, libc::SIGKILL);
    }
    alive.into_iter().collect()
}

/// Live members of the tree, counting children forked since the last look.
fn live(tree: &mut BTreeSet<u32>) -> BTreeSet<u32> {
    extend_with_descendants(tree);
    tree.iter().copied().filter(|&pid| is_alive(pid)).collect()
}

/// This process's effective user id: whose files cuekit's are.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// This process's effective group id.
pub fn egid() -> u32 {
    // SAFETY: getegid has no preconditions and cannot fail.
    unsafe { libc::getegid() }
}

/// Who listens on TCP `port` at `ip` (or on that family's wildcard), as /proc shows it:
/// `pid N (command)` for each process of this user whose descriptors hold the socket, else
/// `uid N` from /proc/net/tcp{,6} (another user's processes are not visible). Empty when
/// nothing listening is seen.
pub fn tcp_listeners(ip: std::net::IpAddr, port: u16) -> Vec<String> {
    let table = if ip.is_ipv4() {
        "/proc/net/tcp"
    } else {
        "/proc/net/tcp6"
    };
    let Ok(text) = std::fs::read_to_string(table) else {
        return Vec::new();
    };
    // (inode, uid) of each listening socket on the port.
    let sockets: Vec<(String, String)> = text
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (_, local_port) = fields.get(1)?.rsplit_once(':')?;
            let listening = *fields.get(3)? == "0A";
            let ours = listening && u16::from_str_radix(local_port, 16).ok()? == port;
            ours.then_some((fields.get(9)?.to_string(), fields.get(7)?.to_string()))
        })
        .collect();
    sockets
        .iter()
        .map(|(inode, uid)| {
            let holders = socket_holders(inode);
            if holders.is_empty() {
                format!("uid {uid}")
            } else {
                holders.join(", ")
            }
        })
        .collect()
}

/// `pid N (command)` of each visible process with a descriptor on socket `inode`.
fn socket_holders(inode: &str) -> Vec<String> {
    let wanted = format!("socket:[{inode}]");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
                fds.flatten().any(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|target| target.as_os_str() == wanted.as_str())
                })
            })
        })
        .map(|pid| {
            let command = command_line(pid).join(" ");
            let command: String = command
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .take(80)
                .collect();
            format!("pid {pid} ({command})")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    use super::*;

    #[test]
    fn ancestry_follows_parent_pids() {
        let me = std::process::id();
        // `sleep` itself, not a shell that may fork it: killed, nothing of it is left holding
        // the test's output.
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        assert!(descends_from(child.id(), me));
        assert!(descends_from(me, me));
        assert!(descends_from(me, 1), "everything descends from init");
        assert!(!descends_from(me, child.id()));
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn an_unreaped_child_keeps_its_exit_status_in_proc() {
        // The shell's child exits 7 and is never reaped (the shell execs a sleep).
        let mut parent = Command::new("/bin/sh")
            .args(["-c", "(exit 7) & exec sleep 5"])
            .spawn()
            .unwrap();
        let zombie = || {
            all_processes()
                .into_iter()
                .find(|p| p.ppid == parent.id() && p.zombie)
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        while zombie().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let child = zombie().expect("an unreaped child");
        let leader = GroupLeader {
            pid: child.pid,
            start_ticks: Some(child.start_ticks),
        };
        assert_eq!(leader.unreaped_exit_status(), Some(7));
        assert!(!leader.is_alive());
        let other = GroupLeader {
            start_ticks: Some(child.start_ticks + 1),
            ..leader
        };
        assert_eq!(other.unreaped_exit_status(), None, "another process");
        let _ = parent.kill();
        let _ = parent.wait();
    }

    #[test]
    fn kills_a_tree_that_ignores_sigterm() {
        // A parent that ignores TERM with a child in its own process group, like an agent
        // whose tool started a background job.
        let mut child = Command::new("/bin/sh")
            .args(["-c", "trap '' TERM HUP; setsid sleep 60 & sleep 60; wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let root = child.id();
        std::thread::sleep(Duration::from_millis(200));
        let tree = process_tree(root);
        assert!(tree.len() >= 3, "expected sh and two sleeps, saw {tree:?}");
        let survivors = terminate_tree(root, Duration::from_millis(300));
        let _ = child.wait();
        assert!(survivors.is_empty(), "{survivors:?}");
        for pid in tree {
            assert!(!is_alive(pid), "pid {pid} survived");
        }
    }
}
