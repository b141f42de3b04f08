//! Ending a task's whole process tree. Agents re-launch themselves (the Gemini CLI's parent
//! ignores SIGTERM and SIGHUP and waits for a child), so signalling one pid is not enough:
//! every descendant and its process group gets SIGTERM, then SIGKILL after a grace period.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

struct ProcStat {
    pid: u32,
    ppid: u32,
    pgid: u32,
    zombie: bool,
}

fn read_stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself contain spaces or ')'.
    let after_name = &text[text.rfind(')')? + 2..];
    let mut fields = after_name.split(' ');
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        ppid,
        pgid,
        zombie: state == "Z" || state == "X",
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

/// Whether a process still exists and is not a zombie (a zombie holds no resources and may
/// never be reaped if its new parent does not wait).
pub fn is_alive(pid: u32) -> bool {
    read_stat(pid).is_some_and(|stat| !stat.zombie)
}

fn signal(pids: &BTreeSet<u32>, sig: libc::c_int) {
    let groups: BTreeSet<u32> = pids
        .iter()
        .filter_map(|&pid| read_stat(pid))
        .map(|s| s.pgid)
        .collect();
    for &pgid in &groups {
        // Never signal our own group (a task started from inside cuekit's group).
        if pgid > 1 && pgid != std::process::id() {
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
    let mut tree = process_tree(root);
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

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    use super::*;

    #[test]
    fn ancestry_follows_parent_pids() {
        let me = std::process::id();
        let mut child = Command::new("/bin/sh")
            .args(["-c", "sleep 30"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(descends_from(child.id(), me));
        assert!(descends_from(me, me));
        assert!(descends_from(me, 1), "everything descends from init");
        assert!(!descends_from(me, child.id()));
        let _ = child.kill();
        let _ = child.wait();
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
