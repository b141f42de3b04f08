//! Prints what reaching a task on another host costs; asserts nothing about time. Run with
//! `cargo bench --bench figures -- remote` (release build, as root or with `sudo -n`: it starts two real
//! sshd "hosts" on loopback, like tests/integration/remote.rs).
//!
//! - status: `cuekit status` of a host's task over a warm connection, against a local
//!   `cuekit status` and one bare ssh round trip over the same connection (the budget is
//!   local + one round trip + 5 ms);
//! - list: `cuekit list --all` over 2 hosts × N tasks, with the ssh processes it starts (the
//!   budget is one round trip per host).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::harness::ssh_host::SshHost;
use crate::support::{Sandbox, median, millis, stdout_of};

const TASKS_PER_HOST: usize = 50;
const ROUNDS: usize = 40;

struct Client {
    sandbox: Sandbox,
}

impl Client {
    /// A user of this machine whose config names `hosts`, with an ssh client config for them
    /// and an `ssh` on PATH that adds `-F` and counts its invocations.
    fn new(hosts: &[&SshHost]) -> Client {
        let sandbox = Sandbox::new("remote", &["home/.config/cuekit", "run"]);
        let yaml = crate::support::harness::ssh_host::client_of(&sandbox.harness, hosts);
        sandbox.harness.user_config(&yaml);
        Client { sandbox }
    }

    /// `cuekit args`, which must succeed; its stdout. The control sockets go under run/.
    fn ok(&self, args: &[&str]) -> String {
        let mut command = self.sandbox.cuekit(args);
        command.env("XDG_RUNTIME_DIR", self.sandbox.root.join("run"));
        stdout_of(command)
    }

    fn submit(&self, host: Option<&str>) -> String {
        let mut args = vec!["--json", "submit", "--agent", "command"];
        if let Some(host) = host {
            args.extend(["--host", host]);
        }
        args.extend(["--", "sh", "-c", "sleep 3600"]);
        let reply: serde_json::Value = serde_json::from_str(&self.ok(&args)).unwrap();
        reply["id"].as_str().unwrap().to_string()
    }

    fn ssh_calls(&self) -> usize {
        std::fs::read_to_string(self.sandbox.root.join("ssh-calls"))
            .map(|text| text.lines().count())
            .unwrap_or(0)
    }

    /// One bare round trip over the host's warm connection (cuekit's own control socket).
    fn round_trip(&self, host: &str) -> Duration {
        let control = self.sandbox.root.join("run/cuekit-ssh").join(host);
        let start = Instant::now();
        let status = Command::new(self.sandbox.root.join("bin/ssh"))
            .args(["-o", "BatchMode=yes", "-o"])
            .arg(format!("ControlPath={}", control.display()))
            .args(["-T", "--", host, "true"])
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        start.elapsed()
    }

    fn time(&self, args: &[&str]) -> Duration {
        let start = Instant::now();
        self.ok(args);
        start.elapsed()
    }
}

/// Two decimals: the figures here differ by fractions of a millisecond.
fn ms(duration: Duration) -> String {
    format!("{:.2} ms", millis(duration))
}

pub fn main() {
    if !Path::new("/usr/sbin/sshd").exists() {
        eprintln!(
            "benches/remote: /usr/sbin/sshd is missing (scripts/test installs openssh-server)"
        );
        std::process::exit(1);
    }
    let alpha = SshHost::start("alpha");
    let beta = SshHost::start("beta");
    let client = Client::new(&[&alpha, &beta]);

    let local = client.submit(None);
    let remote = client.submit(Some("alpha"));
    client.ok(&["status", &remote]); // the connection is warm from here on

    let (mut locals, mut remotes, mut trips) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        locals.push(client.time(&["status", &local]));
        remotes.push(client.time(&["status", &remote]));
        trips.push(client.round_trip("alpha"));
    }
    let (local_ms, remote_ms, trip_ms) = (median(locals), median(remotes), median(trips));
    println!("status, median of {ROUNDS}:");
    println!("  local task                         {}", ms(local_ms));
    println!("  one ssh round trip (warm)          {}", ms(trip_ms));
    println!("  host's task (warm connection)      {}", ms(remote_ms));
    let over = remote_ms.as_secs_f64() - (local_ms + trip_ms).as_secs_f64();
    println!(
        "  host's task - (local + round trip) {:+.2} ms (budget: +5 ms)",
        over * 1000.0
    );

    for host in ["alpha", "beta"] {
        let existing = usize::from(host == "alpha");
        for _ in existing..TASKS_PER_HOST {
            client.submit(Some(host));
        }
    }
    client.ok(&["list", "--all"]);
    let before = client.ssh_calls();
    let mut lists = Vec::new();
    for _ in 0..10 {
        lists.push(client.time(&["list", "--all"]));
    }
    let per_list = (client.ssh_calls() - before) as f64 / 10.0;
    println!(
        "list --all, 1 local + 2 hosts x {TASKS_PER_HOST} tasks, median of 10: {} \
         ({per_list:.1} ssh processes per list: one per host)",
        ms(median(lists))
    );
}
