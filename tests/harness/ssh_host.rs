//! A real SSH "host" on loopback, for tests/integration/remote.rs and benches/remote.rs: an
//! `sshd` of the caller's own (own config, host key, port on 127.0.0.1) and a throw-away unix
//! user whose home holds a copy of this cuekit (`~/bin/cuekit`); the user alone
//! ([`ThrowawayUser`]) for tests/integration/sandbox.rs. Needs root (or `sudo -n`) and
//! openssh-server (scripts/test installs it); without sshd it fails, saying so.
#![allow(dead_code)]

use super::limits;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs a program as root (directly, or through `sudo -n` when the tests are not root).
pub fn as_root(program: &str) -> Command {
    if unsafe { libc::geteuid() } == 0 {
        Command::new(program)
    } else {
        let mut command = Command::new("sudo");
        command.args(["-n", program]);
        command
    }
}

/// Held while a user is added or deleted: `useradd` and `userdel` fail ("cannot lock
/// /etc/passwd") rather than wait when another one holds the account files, and the tests run in
/// parallel processes (nextest). An exclusive `flock` on a file in the temp dir, released on drop.
pub fn accounts_lock() -> std::fs::File {
    use std::os::unix::io::AsRawFd;
    let path = std::env::temp_dir().join("cuekit-test-accounts.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    assert_eq!(
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) },
        0,
        "flock {path:?}"
    );
    file
}

pub fn must(command: &mut Command) {
    let output = command.output().expect("runs");
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

const SSHD: &str = "/usr/sbin/sshd";

/// A throw-away unix user, its home (`home/` in a temp dir of the test's, beside the caller's
/// own files) holding a copy of this cuekit (`~/bin/cuekit`). Dropped (even when a test fails):
/// every process of the user ends, the user is deleted, its files removed.
pub struct ThrowawayUser {
    pub name: String,
    dir: tempfile::TempDir,
}

impl ThrowawayUser {
    pub fn new(prefix: &str) -> ThrowawayUser {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir().unwrap();
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let name = format!("ck{}", &uuid_hex()[..10]);
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("bin")).unwrap();
        // A copy, not a link: the throw-away user must be able to run it even when the build
        // lives under a directory only its owner may enter (a clone in `mktemp -d`).
        std::fs::copy(env!("CARGO_BIN_EXE_cuekit"), home.join("bin/cuekit")).unwrap();
        {
            let _accounts = accounts_lock();
            must(
                as_root("useradd")
                    .args(["-M", "-p", "*", "-s", "/bin/sh", "-d"])
                    .arg(&home)
                    .arg(&name),
            );
        }
        let user = ThrowawayUser { name, dir };
        user.own_home();
        user
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A file of the caller's beside the home.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Everything in the home made the user's (after the caller put files there).
    pub fn own_home(&self) {
        must(as_root("chown").args(["-R", &self.name]).arg(self.home()));
    }
}

impl Drop for ThrowawayUser {
    fn drop(&mut self) {
        let pids = as_root("pgrep").args(["-u", &self.name]).output().unwrap();
        for pid in String::from_utf8_lossy(&pids.stdout).split_whitespace() {
            let _ = as_root("kill")
                .args(["-KILL", pid])
                .stderr(std::process::Stdio::null())
                .status();
        }
        {
            let _accounts = accounts_lock();
            let _ = as_root("userdel").arg(&self.name).status();
        }
        // Files the user wrote: removed as root, since the temp dir is the test's.
        let _ = as_root("rm").arg("-rf").arg(self.dir.path()).status();
    }
}

/// One "host": an sshd on 127.0.0.1 and the user it logs in. Dropped (even when a test
/// fails): the sshd and every process of the user end, and the user is deleted.
pub struct SshHost {
    pub name: String,
    pub user: String,
    pub port: u16,
    sshd: Option<Child>,
    /// Dropped after the sshd is down (fields drop after [`Drop::drop`]).
    account: ThrowawayUser,
}

impl SshHost {
    pub fn start(name: &str) -> SshHost {
        super::needs("sshd, the remote hosts' server");
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing: install openssh-server (scripts/test does it) to run tests/integration/remote.rs"
        );
        let account = ThrowawayUser::new("cuekit-host-");
        let home = account.home();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        must(as_root("mkdir").args(["-p", "/run/sshd"]));
        let port = free_port();
        let host = SshHost {
            name: name.to_string(),
            user: account.name.clone(),
            port,
            sshd: None,
            account,
        };
        for key in ["id", "hostkey"] {
            must(
                Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                    .arg(host.path(key)),
            );
        }
        std::fs::copy(host.path("id.pub"), home.join(".ssh/authorized_keys")).unwrap();
        host.account.own_home();
        std::fs::write(
            host.path("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}\n\
                 AuthorizedKeysFile .ssh/authorized_keys\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n",
                host.path("hostkey").display(),
                host.path("sshd.pid").display()
            ),
        )
        .unwrap();
        let mut host = host;
        host.up();
        host
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.account.path(name)
    }

    /// Starts its sshd (in the foreground, as this test's child) and waits for the port.
    pub fn up(&mut self) {
        let log = std::fs::File::create(self.path("sshd.log")).unwrap();
        let child = as_root(SSHD)
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(self.path("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.sshd = Some(child);
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                start.elapsed() < limits::SHORT,
                "sshd did not listen: {}",
                std::fs::read_to_string(self.path("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The host goes away: its sshd and every connection it serves end (the user's tmux
    /// server and tasks, detached from them, live on, as on a host cut off by the network).
    pub fn down(&mut self) {
        if let Some(mut child) = self.sshd.take() {
            let mut pids = descendants(child.id());
            pids.push(child.id());
            for pid in pids {
                // A process that ended on its own meanwhile is no news.
                let _ = as_root("kill")
                    .arg("-KILL")
                    .arg(pid.to_string())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
            let _ = child.wait();
        }
    }

    /// Its block of the client's ssh config: the destination `NAME` is an alias.
    pub fn client_config(&self) -> String {
        format!(
            "Host {}\n  HostName 127.0.0.1\n  Port {}\n  User {}\n  IdentityFile {}\n  \
             IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n",
            self.name,
            self.port,
            self.user,
            self.path("id").display(),
            self.path("known_hosts").display()
        )
    }

    pub fn write_known_hosts(&self) {
        let key = std::fs::read_to_string(self.path("hostkey.pub")).unwrap();
        let key: Vec<&str> = key.split_whitespace().take(2).collect();
        std::fs::write(
            self.path("known_hosts"),
            format!("[127.0.0.1]:{} {}\n", self.port, key.join(" ")),
        )
        .unwrap();
    }

    pub fn home(&self) -> PathBuf {
        self.account.home()
    }
}

impl Drop for SshHost {
    fn drop(&mut self) {
        // The user's processes and the user itself go when `account` drops, after this.
        self.down();
    }
}

fn uuid_hex() -> String {
    let bytes = std::fs::read("/proc/sys/kernel/random/uuid").unwrap();
    String::from_utf8(bytes).unwrap().replace(['-', '\n'], "")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Every process below `root`, from /proc.
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut found = vec![root];
    let mut index = 0;
    while index < found.len() {
        let parent = found[index];
        found.extend(
            parents
                .iter()
                .filter(|(_, p)| *p == parent)
                .map(|(c, _)| *c),
        );
        index += 1;
    }
    found.remove(0);
    found
}

/// Makes the harness's user a client of `hosts`: an ssh client config naming them, through an
/// `ssh` first on PATH that adds `-F` (ssh reads `~/.ssh/config` from the passwd entry, not
/// HOME) and counts its invocations in `ssh-calls`, and the hosts' keys known. Returns the
/// `hosts:` section of a config file naming them, their cuekit at `~/bin/cuekit`.
pub fn client_of(h: &super::Harness, hosts: &[&SshHost]) -> String {
    let config = h.root().join("ssh_config");
    let client: String = hosts.iter().map(|host| host.client_config()).collect();
    std::fs::write(&config, client).unwrap();
    super::write_executable(
        &h.bin.join("ssh"),
        &format!(
            "#!/bin/sh\necho x >> '{}'\nexec /usr/bin/ssh -F '{}' \"$@\"\n",
            h.root().join("ssh-calls").display(),
            config.display()
        ),
    );
    let mut yaml = String::from("hosts:\n");
    for host in hosts {
        host.write_known_hosts();
        yaml.push_str(&format!(
            "  {0}:\n    ssh: {0}\n    cuekit: ~/bin/cuekit\n",
            host.name
        ));
    }
    yaml
}
