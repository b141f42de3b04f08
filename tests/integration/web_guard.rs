//! `cuekit serve` against what the audit did to it (issue 46): a squatter on its port, on the
//! other loopback family, or left behind while it was down; a stolen cookie; a replayed
//! destructive form; a revoked device whose stream keeps receiving news. Real serve, real
//! tmux; the browser ones in headless Chromium as `web.rs` drives it.

use std::net::{Ipv6Addr, TcpListener};

use crate::harness::Harness;

/// `serve --bind localhost:PORT` with PORT held by this test on `squat`: refused with
/// `port_taken` (exit 38), naming this process.
#[track_caller]
fn refused_for(h: &Harness, squat: std::net::SocketAddr) {
    let held = TcpListener::bind(squat).unwrap();
    let port = held.local_addr().unwrap().port();
    let (refused, code) = h.json(&["serve", "--bind", &format!("localhost:{port}")]);
    assert_eq!(
        code, 38,
        "serve started beside a squatter on {squat}: {refused}"
    );
    assert_eq!(refused["error"]["code"], "port_taken", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("pid {}", std::process::id())),
        "the holder is not named: {message}"
    );
    assert!(
        refused["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--bind")
    );
}

/// The port is ours or we do not start: a listener on 127.0.0.1 or on [::1] (where this
/// machine has ::1) keeps `serve --bind localhost:PORT` from starting, and says who holds it.
#[test]
fn serve_refuses_a_port_taken_on_either_loopback_address() {
    let h = Harness::new();
    refused_for(&h, "127.0.0.1:0".parse().unwrap());
    if TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).is_ok() {
        refused_for(&h, "[::1]:0".parse().unwrap());
    } else {
        eprintln!("this machine has no ::1: the v6 half is not checked");
    }
}
