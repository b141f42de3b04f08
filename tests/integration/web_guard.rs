//! `cuekit serve` against what the audit did to it (issue 46): a squatter on its port, on the
//! other loopback family, or left behind while it was down; a stolen cookie; a replayed
//! destructive form; a revoked device whose stream keeps receiving news. Real serve, real
//! tmux; the browser ones in headless Chromium as `web.rs` drives it.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv6Addr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::harness::{Harness, limits};
use crate::web::{http, pair_http, serve};

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

/// Opens `/events?task=ID` with `cookie` and reads it; returns what it read, and how long
/// after `revoked_at` (when set by `during`) the stream said `ended`.
fn ended_after_revoke(addr: &str, cookie: &str, id: &str, during: impl FnOnce()) -> Duration {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    write!(
        stream,
        "GET /events?task={id} HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut news = 0;
    let mut line = String::new();
    // The stream is busy first: news of the growing transcript arrives.
    let start = Instant::now();
    while news < 3 {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => panic!("the stream ended before any news"),
            Ok(_) if line.contains("\"kind\":\"screen\"") => news += 1,
            Ok(_) => {}
            Err(_) => {}
        }
        assert!(start.elapsed() < limits::TASK, "no news on the stream");
    }
    during();
    let revoked = Instant::now();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => panic!("the stream closed without saying it ended"),
            Ok(_) if line.contains("\"kind\":\"ended\"") => return revoked.elapsed(),
            _ => {}
        }
        assert!(
            revoked.elapsed() < Duration::from_secs(8),
            "a revoked device's busy stream is still open after 8 s"
        );
    }
}

/// `--revoke` ends an open event stream within a second, even while news keeps flowing (the
/// old stream looked at the session only after 10 s without news: never, on a busy task).
#[test]
fn revoke_ends_a_busy_event_stream_within_a_second() {
    let h = Harness::new();
    let id = h.submit_sh("while true; do echo tick; sleep 0.1; done", &[]);
    let s = serve(&h, &[]);
    let (paired, session) = pair_http(&s, &s.code, "phone");
    assert_eq!(paired.status, 303, "{}", paired.body);
    let cookie = format!("ck_session={}", session.unwrap());
    // The task's page, as a browser opens it before its stream (the board learns the task).
    let page = http(
        &s.addr,
        "GET",
        &format!("/t/{id}"),
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(page.status, 200, "{}", page.body);
    let took = ended_after_revoke(&s.addr, &cookie, &id, || {
        let revoked = h
            .cuekit()
            .args(["serve", "--revoke", "phone"])
            .output()
            .unwrap();
        assert!(revoked.status.success(), "{revoked:?}");
    });
    eprintln!("the revoked stream ended {took:?} after the revoke");
    // A second is the promise; the rest is slack for a loaded test machine.
    assert!(
        took < Duration::from_millis(2500),
        "ended only after {took:?}"
    );
}
