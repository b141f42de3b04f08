//! Prints what `cuekit serve` costs with 300 running tasks; asserts nothing about time. Run with
//! `cargo bench --bench figures -- web` (release build). Real tmux on a private socket; the tasks are
//! `--agent command` children that print a line and sleep. The client is a plain HTTP/1.1 one
//! over std's TcpStream, so the figures are the server's (plus loopback).
//!
//! - the list page for 300 tasks: server time with a fresh board (one refresh: `list-panes -a`
//!   and one batched capture) and from the shared board (budget 100 ms), and its size;
//! - transition → page: from the transition's recorded time to the event reaching an open
//!   event stream, and to the list's fragment fetched after it (budget 200 ms);
//! - idle with three pages open (three event streams) on 300 tasks: CPU of `serve` with the
//!   tmux calls it ran, over 10 s (budget 1% of a core);
//! - peak RSS of `serve` (target 20 MiB).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::support::{Sandbox, cpu_share, millis, peak_rss_kib};
use cuekit::web::signed;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};

const TASKS: usize = 300;

/// One request on a new connection: status and body.
fn get(addr: &str, path: &str, cookie: &str) -> (u16, String) {
    exchange(addr, "GET", path, cookie, "", "")
}

fn exchange(
    addr: &str,
    method: &str,
    path: &str,
    cookie: &str,
    body: &str,
    form_cookie: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nCookie: ck_session={cookie}; ck_form={form_cookie}\r\n"
    );
    if method == "POST" {
        request.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    (status, raw)
}

fn cookie_in(raw: &str, name: &str) -> String {
    let start = raw
        .find(&format!("{name}="))
        .unwrap_or_else(|| panic!("no {name} cookie in:\n{raw}"))
        + name.len()
        + 1;
    raw[start..].split(';').next().unwrap().to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// An open event stream, read line by line: its start signed by the device `key` over a
/// fresh nonce, as a page opens it (`web::signed`).
fn stream(addr: &str, cookie: &str, key: &EcdsaKeyPair) -> BufReader<TcpStream> {
    let (_, page) = get(addr, "/", cookie);
    let at = page.find("name=\"csrf\" content=\"").expect("a CSRF token") + 21;
    let csrf = &page[at..at + 64];
    let (status, raw) = exchange(addr, "POST", "/nonce", cookie, &format!("csrf={csrf}"), "");
    assert_eq!(status, 200, "{raw}");
    let nonce = raw.split("\r\n\r\n").nth(1).unwrap().trim().to_string();
    let text = signed::message("GET", "/events", &nonce, addr, &[]);
    let signature = hex(key
        .sign(&SystemRandom::new(), text.as_bytes())
        .unwrap()
        .as_ref());
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET /events?ck_nonce={nonce}&ck_sig={signature} HTTP/1.1\r\nHost: {addr}\r\nCookie: ck_session={cookie}\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.contains(" 200 "), "the stream was refused: {line}");
    // The rest of the response's head.
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            return reader;
        }
    }
}

/// The next transition's recorded time, as the stream delivers it.
fn next_transition(reader: &mut BufReader<TcpStream>) -> SystemTime {
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if let Some(data) = line.trim().strip_prefix("data: ")
            && let Ok(event) = serde_json::from_str::<serde_json::Value>(data)
            && event["kind"] == "transition"
        {
            return humantime::parse_rfc3339_weak(event["at"].as_str().unwrap()).unwrap();
        }
    }
}

pub fn main() {
    let sandbox = Sandbox::new("web", &[]);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for worker in 0..4 {
            let sandbox = &sandbox;
            scope.spawn(move || {
                for n in (worker..TASKS).step_by(4) {
                    let marker = format!("echo child-{n}; exec sleep 3600");
                    let status = sandbox
                        .cuekit(&["submit", "--agent", "command", "--", "sh", "-c", &marker])
                        .stdout(Stdio::null())
                        .status()
                        .unwrap();
                    assert!(status.success());
                }
            });
        }
    });
    println!(
        "web: {TASKS} running tasks submitted in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let mut serve: Child = sandbox
        .cuekit(&["serve", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(serve.stdout.take().unwrap());
    let (mut first, mut second) = (String::new(), String::new());
    out.read_line(&mut first).unwrap();
    out.read_line(&mut second).unwrap();
    let addr = first
        .trim()
        .strip_prefix("cuekit serve: http://")
        .unwrap()
        .to_string();
    let code = second.split_whitespace().nth(2).unwrap().to_string();

    let (_, form) = get(&addr, "/pair", "");
    let form_token = cookie_in(&form, "ck_form");
    // A device key as a browser makes one at pairing (its requests and streams are signed).
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let key =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let public = hex(key.public_key().as_ref());
    let (status, paired) = exchange(
        &addr,
        "POST",
        "/pair",
        "",
        &format!("form={form_token}&code={code}&name=bench&key={public}"),
        &form_token,
    );
    assert_eq!(status, 303, "{paired}");
    let session = cookie_in(&paired, "ck_session");

    // The list: with a fresh board (the shared one is older than its tick), then from it.
    let mut fresh = Vec::new();
    let mut shared = Vec::new();
    let mut size = 0;
    for _ in 0..10 {
        std::thread::sleep(cuekit::web::TICK + Duration::from_millis(100));
        let start = Instant::now();
        let (status, page) = get(&addr, "/?limit=1000", &session);
        fresh.push(start.elapsed());
        assert_eq!(status, 200);
        assert!(page.contains(&format!("{TASKS} tasks")), "not all rows");
        let start = Instant::now();
        let (_, page) = get(&addr, "/", &session);
        shared.push(start.elapsed());
        size = page.len();
    }
    fresh.sort();
    shared.sort();
    println!(
        "web: list page for {TASKS} tasks, every row: median {:.1} ms with a fresh board (one refresh), {:.1} ms from the shared board (budget 100 ms)",
        millis(fresh[fresh.len() / 2]),
        millis(shared[shared.len() / 2]),
    );
    println!(
        "web: list page as a phone first gets it (100 rows, the rest behind a link): {size} bytes with headers (target < 51200)"
    );

    // Transition → page: cancel tasks one by one; each recorded transition reaches the stream.
    let mut reader = stream(&addr, &session, &key);
    let ids: Vec<String> = sandbox.json(&["list"]).as_array().unwrap()[..5]
        .iter()
        .map(|row| row["id"].as_str().unwrap().to_string())
        .collect();
    let mut to_stream = Vec::new();
    let mut to_page = Vec::new();
    for id in &ids {
        sandbox.ok(&["cancel", id, "--grace", "0"]);
        let at = next_transition(&mut reader);
        let arrived = SystemTime::now();
        let (status, _) = get(&addr, "/live", &session);
        assert_eq!(status, 200);
        let drawn = SystemTime::now();
        to_stream.push(arrived.duration_since(at).unwrap_or_default());
        to_page.push(drawn.duration_since(at).unwrap_or_default());
    }
    to_stream.sort();
    to_page.sort();
    println!(
        "web: transition → event stream over {} cancels: median {:.1} ms, max {:.1} ms; → list fragment fetched: median {:.1} ms, max {:.1} ms (budget 200 ms)",
        ids.len(),
        millis(to_stream[to_stream.len() / 2]),
        millis(*to_stream.last().unwrap()),
        millis(to_page[to_page.len() / 2]),
        millis(*to_page.last().unwrap()),
    );
    drop(reader);

    // Idle with three pages open.
    let _streams: Vec<_> = (0..3).map(|_| stream(&addr, &session, &key)).collect();
    std::thread::sleep(Duration::from_secs(2));
    let pid = serve.id();
    let (own, with_tmux) = cpu_share(pid, Duration::from_secs(10));
    println!(
        "web: idle with three pages open on {TASKS} tasks: {own:.2}% of one core (serve), {with_tmux:.2}% with the tmux calls it ran (budget 1%)"
    );
    println!(
        "web: peak RSS of serve with {TASKS} tasks, after all of the above: {} kB (target <= 20480)",
        peak_rss_kib(pid)
    );
    let _ = serve.kill();
    let _ = serve.wait();
}
