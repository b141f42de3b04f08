//! Networks for the sandbox's network tests and benchmark: listeners on this machine's
//! loopback and on an address of its own that is not loopback (the "internet" stand-in a
//! sandboxed child reaches through its stack: every byte stays on this machine), and a child's
//! connection attempts as one shell line.

use std::net::{IpAddr, Ipv4Addr, TcpListener, UdpSocket};
use std::process::Command;

/// An IPv4 address of this machine that is not loopback: what a sandboxed child reaches
/// through slirp4netns, standing in for the internet. Fails the test on a machine with none.
pub fn outside_address() -> IpAddr {
    // The source address of a route out (a UDP `connect` sends nothing).
    let routed = UdpSocket::bind("0.0.0.0:0")
        .and_then(|socket| socket.connect("192.0.2.1:9").map(|()| socket))
        .and_then(|socket| socket.local_addr())
        .ok()
        .map(|addr| addr.ip())
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified());
    let listed = || {
        let output = Command::new("ip")
            .args(["-4", "-o", "addr", "show", "scope", "global"])
            .output()
            .ok()?;
        String::from_utf8_lossy(&output.stdout)
            .split_whitespace()
            .skip_while(|word| *word != "inet")
            .nth(1)
            .and_then(|cidr| cidr.split('/').next()?.parse::<Ipv4Addr>().ok())
            .map(IpAddr::V4)
    };
    routed
        .or_else(listed)
        .expect("this test needs an IPv4 address of this machine that is not loopback")
}

/// A TCP listener on `ip` (port 0: the kernel's choice) that accepts and closes every
/// connection, in a thread of its own for the rest of the test; its port. `None` where `ip`
/// cannot be bound (a machine without IPv6 loopback).
pub fn listen(ip: IpAddr) -> Option<u16> {
    let listener = TcpListener::bind((ip, 0)).ok()?;
    let port = listener.local_addr().ok()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            drop(stream);
        }
    });
    Some(port)
}

/// A port nobody listens on now (bound and let go).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One shell line that tries each `(name, host, port)` from where it runs and prints
/// `REACH-<name> yes` or `REACH-<name> no`.
pub fn reach_script(targets: &[(&str, String, u16)]) -> String {
    let mut python = String::from("import socket\n");
    for (name, host, port) in targets {
        python += &format!(
            "try:\n    socket.create_connection(('{host}', {port}), 5).close(); print('REACH-{name} yes')\n\
             except Exception as e:\n    print('REACH-{name} no', e)\n"
        );
    }
    format!("python3 -c \"{python}\"")
}

/// What `reach_script`'s lines said of `name`: `Some(true)` reached, `Some(false)` not, `None`
/// never tried.
pub fn reached(transcript: &str, name: &str) -> Option<bool> {
    let marker = format!("REACH-{name} ");
    transcript.lines().find_map(|line| {
        let at = line.find(&marker)?;
        Some(line[at + marker.len()..].starts_with("yes"))
    })
}
