//! A small HTTP server on loopback standing in for a webhook, Slack, Discord or ntfy (issue 53):
//! it keeps every request (method, path, headers, body) and answers as the real services do —
//! 200, 429 with `Retry-After`, or nothing for a while (a hang). A thread per connection, for
//! the rest of the test; nothing leaves this machine.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// One request as the server read it; header names lower-cased.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
    /// The wall clock at arrival (to compare with a time cuekit wrote).
    pub received: SystemTime,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!("not JSON ({err}): {}", String::from_utf8_lossy(&self.body))
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// How the server answers.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    /// 200 at once.
    Ok,
    /// 429 with `Retry-After: secs` the first `times` requests, then 200.
    TooMany { retry_after: u64, times: usize },
    /// Reads the request, then says nothing for this long (and closes).
    Hang(Duration),
}

pub struct Server {
    /// `http://127.0.0.1:PORT`
    pub origin: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    pub fn start(answer: Answer) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let kept = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = kept.clone();
                std::thread::spawn(move || serve(stream, answer, &kept));
            }
        });
        Server { origin, requests }
    }

    /// The requests so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits (up to `limit`) until `n` requests came; whether they did.
    pub fn wait_for(&self, n: usize, limit: Duration) -> bool {
        super::poll(limit, || self.requests.lock().unwrap().len() >= n)
    }
}

fn serve(stream: TcpStream, answer: Answer, kept: &Mutex<Vec<Request>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut words = line.split_whitespace();
    let method = words.next().unwrap_or_default().to_string();
    let path = words.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let body = if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        chunked(&mut reader)
    } else {
        let length: usize = find("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
        body
    };
    let count = {
        let mut kept = kept.lock().unwrap();
        kept.push(Request {
            method,
            path,
            headers,
            body,
            at: Instant::now(),
            received: SystemTime::now(),
        });
        kept.len()
    };
    let mut stream = stream;
    let reply = match answer {
        Answer::Ok => ok(),
        Answer::TooMany { retry_after, times } if count <= times => format!(
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: {retry_after}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        Answer::TooMany { .. } => ok(),
        Answer::Hang(time) => {
            std::thread::sleep(time);
            return;
        }
    };
    let _ = stream.write_all(reply.as_bytes());
}

fn ok() -> String {
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_string()
}

fn chunked(reader: &mut impl BufRead) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        if reader.read_line(&mut size).unwrap_or(0) == 0 {
            break;
        }
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        let mut chunk = vec![0; size + 2];
        if size == 0 || reader.read_exact(&mut chunk).is_err() {
            let _ = reader.read_line(&mut String::new());
            break;
        }
        body.extend_from_slice(&chunk[..size]);
    }
    body
}
