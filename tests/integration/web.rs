//! `cuekit serve` in a real headless Chromium driven through WebDriver (Debian's `chromium` and
//! `chromium-driver`, fantoccini as the client), against real tmux on a private socket and the
//! real Gemini CLI offline: pairing, the list, a task's screen, steer, cancel, a permission
//! answered from the page, live updates, and pages that hold hostile text. The refusals (CSRF,
//! Host, Origin, read-only, the burned code, revoked sessions, a LAN bind) are checked over
//! plain HTTP with a small std client; TLS with a self-signed certificate (openssl) in Chromium.
//! Screenshots at 390×844 go to target/web-screenshots/.

use crate::harness::limits;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{Harness, MODEL, canned_shell_call, canned_text, poll};
use fantoccini::{Client, ClientBuilder, Locator};
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// What the payloads would set if any of them ran.
const XSS_OBJECTIVE: &str = "Say hi <script>window.__xss='objective'</script><img src=x onerror=\"window.__xss='img'\"> <a href=\"javascript:window.__xss='link'\">x</a>";

/// A running `cuekit serve`, killed on drop.
pub(crate) struct Serve {
    pub(crate) child: Child,
    /// The rest of what it prints (kept open: it must not write into a closed pipe).
    pub(crate) _stdout: BufReader<ChildStdout>,
    /// `http://127.0.0.1:PORT` (`https://` under TLS)
    pub(crate) url: String,
    /// `127.0.0.1:PORT`
    pub(crate) addr: String,
    pub(crate) code: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn serve(h: &Harness, extra: &[&str]) -> Serve {
    serve_on(h, "127.0.0.1:0", extra)
}

pub(crate) fn serve_on(h: &Harness, bind: &str, extra: &[&str]) -> Serve {
    let mut child = h
        .cuekit()
        .args(["serve", "--bind", bind])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let mut second = String::new();
    stdout.read_line(&mut second).unwrap();
    let url = first
        .trim()
        .strip_prefix("cuekit serve: ")
        .unwrap_or_else(|| panic!("no URL printed: {first:?} {second:?}"))
        .to_string();
    let code = second
        .strip_prefix("pairing code: ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no code printed: {second:?}"))
        .to_string();
    Serve {
        // `unix:PATH` for a socket: [`http`] connects to it.
        addr: url
            .split_once("://")
            .map_or(url.clone(), |(_, addr)| addr.to_string()),
        url,
        code,
        child,
        _stdout: stdout,
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// One HTTP/1.1 exchange: status, headers (names lowercased), body.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    pub(crate) fn cookie(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .filter(|(key, _)| key == "set-cookie")
            .filter_map(|(_, value)| value.split(';').next()?.split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_string())
    }
}

/// One exchange with `addr`: `ADDR:PORT`, or `unix:PATH` (then as a tunnel's `localhost`).
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let (mut stream, host): (Box<dyn ReadWrite>, &str) = match addr.strip_prefix("unix:") {
        Some(socket) => {
            let stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
            stream.set_read_timeout(Some(limits::AGENT)).unwrap();
            (Box::new(stream), "localhost")
        }
        None => {
            // This install's `*.localhost` name is loopback (RFC 6761) whatever the resolver
            // here says.
            let target = match addr.rsplit_once(':') {
                Some((name, port)) if name.ends_with(".localhost") => format!("127.0.0.1:{port}"),
                _ => addr.to_string(),
            };
            let stream = TcpStream::connect(target).unwrap();
            stream.set_read_timeout(Some(limits::AGENT)).unwrap();
            (Box::new(stream), addr)
        }
    };
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("Host: {host}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if method == "POST" {
        request.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_string(),
    }
}

pub(crate) fn form_encode(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(key, value)| {
            let encoded: String = value
                .bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                        (b as char).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect();
            format!("{key}={encoded}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Pairs over plain HTTP as `app.js` does, with a device key made here (ring's ECDSA P-256,
/// as WebCrypto's): the reply to the code, and the session cookie when it was taken (its key
/// kept for [`post_signed`]).
pub(crate) fn pair_http(s: &Serve, code: &str, name: &str) -> (Reply, Option<String>) {
    let form = http(&s.addr, "GET", "/pair", &[], "");
    let token = form
        .cookie("ck_form")
        .expect("the pairing form sets its cookie");
    let cookie = format!("ck_form={token}");
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let public = hex(device_key(pkcs8.as_ref()).public_key().as_ref());
    let reply = http(
        &s.addr,
        "POST",
        "/pair",
        &[("Cookie", &cookie)],
        &form_encode(&[
            ("form", &token),
            ("code", code),
            ("name", name),
            ("key", &public),
        ]),
    );
    let session = reply.cookie("ck_session");
    if let Some(session) = &session {
        KEYS.lock()
            .unwrap()
            .insert(session.clone(), pkcs8.as_ref().to_vec());
    }
    (reply, session)
}

/// The device keys [`pair_http`] made (PKCS#8), by the session they were paired with.
static KEYS: std::sync::LazyLock<std::sync::Mutex<std::collections::HashMap<String, Vec<u8>>>> =
    std::sync::LazyLock::new(Default::default);

fn device_key(pkcs8: &[u8]) -> EcdsaKeyPair {
    let rng = ring::rand::SystemRandom::new();
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A single-use nonce `addr` gives `session` for its next signed request (`POST /nonce`).
pub(crate) fn nonce_for(addr: &str, session: &str, csrf: &str) -> String {
    let reply = http(
        addr,
        "POST",
        "/nonce",
        &[("Cookie", &format!("ck_session={session}"))],
        &form_encode(&[("csrf", csrf)]),
    );
    assert_eq!(reply.status, 200, "no nonce: {}", reply.body);
    reply.body.trim().to_string()
}

/// What `app.js` signs for a request (src/web/signed.rs), built here on its own.
pub(crate) fn signed_text(
    method: &str,
    path_and_query: &str,
    nonce: &str,
    host: &str,
    fields: &[(&str, &str)],
) -> String {
    use sha2::Digest;
    let component = |text: &str| -> String {
        text.replace("\r\n", "\n")
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    };
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let mut all: Vec<(String, String)> = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    all.extend(
        fields
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string())),
    );
    let joined = all
        .iter()
        .filter(|(name, _)| name != "ck_nonce" && name != "ck_sig")
        .map(|(name, value)| format!("{}={}", component(name), component(value)))
        .collect::<Vec<_>>()
        .join("&");
    let digest = hex(&sha2::Sha256::digest(joined.as_bytes()));
    format!(
        "cuekit serve request\n{method}\n{path}\n{nonce}\n{}\n{digest}",
        host.to_ascii_lowercase()
    )
}

/// The `Host` [`http`] sends to `addr`.
fn host_for(addr: &str) -> &str {
    if addr.starts_with("unix:") {
        "localhost"
    } else {
        addr
    }
}

/// `fields` with the nonce and the signature by `session`'s device key (made by
/// [`pair_http`]) for `method` on `path` (its query part of what is signed), as `app.js`
/// adds them.
pub(crate) fn sign_fields(
    addr: &str,
    session: &str,
    method: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> Vec<(String, String)> {
    let pkcs8 = KEYS
        .lock()
        .unwrap()
        .get(session)
        .cloned()
        .expect("a session pair_http made");
    let nonce = nonce_for(addr, session, &csrf_at(addr, session));
    let text = signed_text(method, path, &nonce, host_for(addr), fields);
    let rng = ring::rand::SystemRandom::new();
    let signature = hex(device_key(&pkcs8)
        .sign(&rng, text.as_bytes())
        .unwrap()
        .as_ref());
    let mut signed: Vec<(String, String)> = fields
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    signed.push(("ck_nonce".into(), nonce));
    signed.push(("ck_sig".into(), signature));
    signed
}

/// A form POSTed by `session` as its page would send it: signed by its device key over a
/// fresh nonce.
pub(crate) fn post_signed(addr: &str, session: &str, path: &str, fields: &[(&str, &str)]) -> Reply {
    let body = signed_body(addr, session, path, fields);
    http(
        addr,
        "POST",
        path,
        &[("Cookie", &format!("ck_session={session}"))],
        &body,
    )
}

/// `path` (`/events?task=ID`) with the nonce and the signature by `session`'s device key in
/// its query, as `app.js` opens the event stream.
pub(crate) fn signed_get(addr: &str, session: &str, path: &str) -> String {
    let signed = sign_fields(addr, session, "GET", path, &[]);
    let pairs: Vec<(&str, &str)> = signed
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    let join = if path.contains('?') { '&' } else { '?' };
    format!("{path}{join}{}", form_encode(&pairs))
}

/// The body of a signed POST of `fields` to `path` by `session` (to send, or send again).
pub(crate) fn signed_body(
    addr: &str,
    session: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> String {
    let signed = sign_fields(addr, session, "POST", path, fields);
    let pairs: Vec<(&str, &str)> = signed
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    form_encode(&pairs)
}

/// The CSRF token a page of this session carries.
pub(crate) fn csrf_of(s: &Serve, session: &str) -> String {
    csrf_at(&s.addr, session)
}

/// The CSRF token a page of this session at `addr` carries.
pub(crate) fn csrf_at(addr: &str, session: &str) -> String {
    let page = http(
        addr,
        "GET",
        "/",
        &[("Cookie", &format!("ck_session={session}"))],
        "",
    );
    assert_eq!(page.status, 200, "{}", page.body);
    let start = page.body.find("name=\"csrf\" content=\"").unwrap() + 21;
    page.body[start..start + 64].to_string()
}

/// Chromium through chromedriver, both ended (their whole process group) on drop.
pub(crate) struct Browser {
    driver: Child,
    client: Option<Client>,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        unsafe { libc::kill(-(self.driver.id() as i32), libc::SIGKILL) };
        let _ = self.driver.wait();
    }
}

impl Browser {
    pub(crate) fn client(&self) -> &Client {
        self.client.as_ref().unwrap()
    }
}

pub(crate) async fn browser() -> Browser {
    browser_with(false).await
}

/// A browser; `self_signed`: one that accepts the test's self-signed certificate.
pub(crate) async fn browser_with(self_signed: bool) -> Browser {
    browser_at(self_signed, (390, 844)).await
}

/// A browser whose page is `width`×`height` CSS pixels (a phone's metrics below 600).
pub(crate) async fn browser_at(self_signed: bool, (width, height): (u32, u32)) -> Browser {
    crate::harness::needs("Chromium and chromedriver");
    assert!(
        Path::new(CHROMEDRIVER).exists() && Path::new(CHROMIUM).exists(),
        "Chromium and chromedriver are not installed: run scripts/test, which installs Debian's chromium and chromium-driver"
    );
    let profile = tempfile::Builder::new()
        .prefix("cuekit-chromium-")
        .tempdir()
        .unwrap();
    // The port chromedriver takes itself: one picked here and let go first could be taken
    // meanwhile by another test's process (a loaded run once had its session cut so, "webdriver
    // could not be reached"), whose listener the wait for it would then have found.
    let mut driver = Command::new(CHROMEDRIVER)
        .arg("--port=0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let port = listening_port(driver.stdout.take().unwrap());
    let capabilities = json!({
        "browserName": "chrome",
        "acceptInsecureCerts": self_signed,
        "goog:chromeOptions": {
            "binary": CHROMIUM,
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", format!("--window-size={width},{height}"),
                format!("--user-data-dir={}", profile.path().display()),
            ],
            "mobileEmulation": {"deviceMetrics": {"width": width, "height": height, "pixelRatio": 1.0, "mobile": width < 600, "touch": width < 600}},
        }
    });
    let Value::Object(capabilities) = capabilities else {
        unreachable!()
    };
    let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a Chromium session");
    Browser {
        driver,
        client: Some(client),
        _profile: profile,
    }
}

/// The port chromedriver says it listens on (`ChromeDriver was started successfully on port
/// N.`). Its later output is read to the end on a thread of its own, so it never blocks on a
/// full pipe.
fn listening_port(stdout: ChildStdout) -> u16 {
    const STARTED: &str = "ChromeDriver was started successfully on port ";
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sender = Some(sender);
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let port = line
                .strip_prefix(STARTED)
                .and_then(|rest| rest.trim_end_matches('.').parse::<u16>().ok());
            if let Some(port) = port
                && let Some(sender) = sender.take()
            {
                let _ = sender.send(port);
            }
        }
    });
    receiver
        .recv_timeout(limits::TASK)
        .expect("chromedriver never said it listens")
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Waits (30 s at most) until the page's text holds `text`; the text.
pub(crate) async fn wait_text(client: &Client, text: &str) -> String {
    let start = Instant::now();
    loop {
        let body = match client.find(Locator::Css("body")).await {
            Ok(body) => body.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        if body.contains(text) {
            return body;
        }
        assert!(
            start.elapsed() < limits::TASK,
            "the page never showed {text:?}; it shows:\n{body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn no_payload_ran(client: &Client) {
    let ran = client
        .execute(
            "return window.__xss === undefined ? null : String(window.__xss);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(ran, Value::Null, "a payload ran: window.__xss = {ran}");
}

/// The page's live part was replaced by `app.js` after an event (it marks the body), not by a
/// reload.
pub(crate) async fn updated_in_place(client: &Client) {
    let updated = client
        .execute("return document.body.getAttribute('data-updated');", vec![])
        .await
        .unwrap();
    assert!(
        updated.is_string(),
        "the page was drawn again, not updated by the event stream"
    );
}

async fn screenshot(client: &Client, name: &str) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/web-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    let png = client.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    std::fs::write(dir.join(name), png).unwrap();
}

/// The browser is on `path` (with its query): an action came back to the page it was taken on.
async fn landed_on(client: &Client, path: &str) {
    let url = client.current_url().await.unwrap();
    let query = url.query().map(|query| format!("?{query}"));
    assert_eq!(format!("{}{}", url.path(), query.unwrap_or_default()), path);
}

pub(crate) async fn click(client: &Client, id: &str) {
    click_css(client, &format!("#{id}")).await;
}

/// Clicks `css`; found again when the page's live part was replaced between finding and
/// clicking it (an event arrived), as a person's second tap would.
pub(crate) async fn click_css(client: &Client, css: &str) {
    for _ in 0..20 {
        let found = client.find(Locator::Css(css)).await;
        let element = found.unwrap_or_else(|err| panic!("no {css} on the page: {err}"));
        match element.click().await {
            Ok(()) => return,
            Err(err) if err.is_stale_element_reference() => {}
            Err(err) => panic!("clicking {css}: {err}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{css} was replaced under every click");
}

/// Clicks `#id`, a form's button, and waits for the page it leads to: the form is signed
/// first (`app.js` asks for a nonce), so the next page comes a moment after the click.
pub(crate) async fn click_and_leave(client: &Client, id: &str) {
    client
        .execute("window.__cuekit_old_page = true; return null;", vec![])
        .await
        .unwrap();
    click(client, id).await;
    let start = Instant::now();
    loop {
        let old = client
            .execute("return window.__cuekit_old_page === true;", vec![])
            .await;
        if matches!(old, Ok(Value::Bool(false))) {
            return;
        }
        assert!(
            start.elapsed() < limits::TASK,
            "clicking #{id} never led to another page"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Types into `#id` (found again if an event replaced it first, as [`click_css`]).
pub(crate) async fn type_into(client: &Client, id: &str, text: &str) {
    for _ in 0..20 {
        let found = client.find(Locator::Id(id)).await;
        let element = found.unwrap_or_else(|err| panic!("no #{id} on the page: {err}"));
        match element.send_keys(text).await {
            Ok(()) => return,
            Err(err) if err.is_stale_element_reference() || err.is_element_not_interactable() => {}
            Err(err) => panic!("typing into #{id}: {err}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("#{id} was replaced under every try");
}

/// `body` with a phone's browser paired to a fresh `serve`; the browser's
/// WebDriver session is closed after it.
pub(crate) fn on_a_paired_phone<R>(h: &Harness, body: impl AsyncFnOnce(&Client, &Serve) -> R) -> R {
    let s = serve(h, &[]);
    runtime().block_on(async {
        let browser = browser().await;
        let client = browser.client();
        pair_in_browser(client, &s, "phone").await;
        let value = body(client, &s).await;
        let _ = client.clone().close().await;
        value
    })
}

pub(crate) async fn pair_in_browser(client: &Client, s: &Serve, name: &str) {
    client.goto(&format!("{}/pair", s.url)).await.unwrap();
    type_into(client, "code", &s.code).await;
    let field = client.find(Locator::Id("name")).await.unwrap();
    field.clear().await.unwrap();
    field.send_keys(name).await.unwrap();
    click(client, "pair").await;
    wait_text(client, "task").await;
    assert_eq!(
        client.current_url().await.unwrap().path(),
        "/",
        "pairing did not lead to the list"
    );
}

/// Waits for task `id`'s row on the open list.
async fn row_listed(client: &Client, id: &str) {
    client
        .wait()
        .at_most(limits::TASK)
        .for_element(Locator::Css(&format!("li.task[data-id='{id}']")))
        .await
        .unwrap();
}

/// Waits until task `id`'s row on the open list shows `status` (within [`limits::TASK`]):
/// every status it showed meanwhile, in order.
async fn row_comes_to(client: &Client, id: &str, status: &str) -> Vec<String> {
    let mut shown: Vec<String> = Vec::new();
    let start = Instant::now();
    loop {
        let now = row_status(client, id).await;
        if shown.last() != Some(&now) {
            shown.push(now.clone());
        }
        if now == status {
            return shown;
        }
        assert!(
            start.elapsed() < limits::TASK,
            "the list never showed {id} {status}: it showed {shown:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The status task `id`'s row on the open list shows (empty while it has none). Read by
/// script: the row is replaced whenever the list is brought up to date.
async fn row_status(client: &Client, id: &str) -> String {
    let shown = client
        .execute(
            &format!(
                "var e = document.querySelector(\"li.task[data-id='{id}'] .st\"); return e ? e.textContent : '';"
            ),
            vec![],
        )
        .await
        .unwrap();
    shown.as_str().unwrap_or_default().to_string()
}

/// The code serve printed in its terminal for a destructive step (the next `confirm code`
/// line of its output).
pub(crate) fn confirm_code(s: &mut Serve) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let read = s._stdout.read_line(&mut line).unwrap();
        assert!(read > 0, "serve printed no confirmation code");
        if let Some(rest) = line.strip_prefix("confirm code ") {
            return rest.split(':').next().unwrap().to_string();
        }
    }
}

/// Types the terminal's code into the page asking for it, and confirms.
pub(crate) async fn confirm_in_browser(client: &Client, s: &mut Serve) {
    wait_text(client, "printed a 6-digit code").await;
    let code = confirm_code(s);
    type_into(client, "confirm-code", &code).await;
    click_and_leave(client, "confirm").await;
}

/// A stop that outlasts its ending (a child that ignores SIGTERM, ended after the grace)
/// records no transition when it is over: the open list, redrawn by the ending while the task
/// still read `stopping`, is told once the stop is done and shows it cancelled. In a loaded
/// run the list stayed on `stopping` (the test below).
#[test]
fn the_open_list_shows_a_stop_that_ends_after_its_ending_as_over() {
    let h = Harness::new();
    let stubborn = h.submit_sh("trap '' TERM HUP INT; while :; do sleep 0.1; done", &[]);
    on_a_paired_phone(&h, async |client, _| {
        row_listed(client, &stubborn).await;
        let mut cancel = h
            .cuekit()
            .args(["cancel", "--grace", "3s", &stubborn])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let shown = row_comes_to(client, &stubborn, "cancelled").await;
        assert!(
            shown.iter().any(|seen| seen == "stopping"),
            "the list never showed the stop going on (the test needs it): {shown:?}"
        );
        assert!(cancel.wait().unwrap().success());
    });
}

/// The main path in a browser: pair with the printed code (once only), the list shows
/// the running children, hostile text stays text, a task's screen, steer with its receipt, a
/// live update from a recorded transition, cancel; screenshots of the list and a task.
#[test]
fn a_paired_browser_sees_steers_and_cancels_children_and_no_payload_runs() {
    let hostile_reply = "Hi <script>window.__xss='screen'</script><img src=x onerror=\"window.__xss='screen-img'\">";
    let h = Harness::new().with_real_gemini(&[
        canned_text(hostile_reply),
        canned_text("The second answer."),
    ]);
    let gemini = h.submit(&["--model", MODEL, XSS_OBJECTIVE]);
    let cuekit = env!("CARGO_BIN_EXE_cuekit");
    let printer = h.submit_sh(
        &format!(
            "printf '%s\\n' '<script>window.__xss=\"log\"</script>'; printf '\\033[31m%s\\033[0m \\033[1;38;2;255;135;0m%s\\033[0m\\n' RED-TEXT '<b>ORANGE</b>'; '{cuekit}' report --progress '<img src=x onerror=window.__xss=\"report\">'; sleep 600"
        ),
        &[],
    );
    let other = h.submit_sh("sleep 600", &[]);
    let go = h.root().join("go");
    let talker = h.submit_sh(
        &format!(
            "printf 'one-%s\\n' ready; while [ ! -e '{}' ]; do sleep 0.1; done; printf 'two-%s\\n' printed; sleep 600",
            go.display()
        ),
        &[],
    );
    h.wait_until(&gemini, "the first answer", limits::AGENT, || {
        h.transcript(&gemini).contains("window.__xss='screen'")
    });
    h.wait_until(&printer, "its report", limits::TASK, || {
        h.status(&printer)["last_report"]["message"].is_string()
    });
    on_a_paired_phone(&h, async |client, s| {
        // The list: every running child, hostile text shown as text.
        for id in [&gemini, &printer, &other, &talker] {
            row_listed(client, id).await;
        }
        let listed = wait_text(client, "<script>window.__xss='objective'</script>").await;
        assert!(
            listed.contains("running") || listed.contains("input_required"),
            "{listed}"
        );
        no_payload_ran(client).await;
        let size = client.source().await.unwrap().len();
        assert!(size < 50 * 1024, "the list page is {size} bytes");
        screenshot(client, "list-390x844.png").await;

        // The same code a second time is refused.
        let (again, session) = pair_http(s, &s.code, "second");
        assert_eq!(again.status, 403, "{}", again.body);
        assert!(session.is_none());
        assert!(
            again.body.contains("no pairing code is open"),
            "{}",
            again.body
        );

        // A task page: the screen, the report, the objective, all text.
        client
            .goto(&format!("{}/t/{printer}", s.url))
            .await
            .unwrap();
        wait_text(client, "<img src=x onerror=window.__xss=\"report\">").await;
        wait_text(client, "<script>window.__xss=\"log\"</script>").await;
        no_payload_ran(client).await;
        // Its colours, as the terminal showed them: classes the stylesheet colours, the text
        // still text.
        let coloured = client
            .execute(
                "const red = document.querySelector('#screen span.f1');\
                 const orange = document.querySelector('#screen span.b.f208');\
                 return [red.textContent, getComputedStyle(red).color,\
                         orange.textContent, getComputedStyle(orange).color,\
                         getComputedStyle(orange).fontWeight];",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(
            coloured,
            serde_json::json!([
                "RED-TEXT",
                "rgb(205, 49, 49)",
                "<b>ORANGE</b>",
                "rgb(255, 135, 0)",
                "700"
            ])
        );

        client.goto(&format!("{}/t/{gemini}", s.url)).await.unwrap();
        wait_text(client, "window.__xss='screen'").await;
        no_payload_ran(client).await;
        screenshot(client, "task-390x844.png").await;

        // Steer: back on the task page with the receipt, and the text reaches the child.
        type_into(client, "steer-text", "Tell me more").await;
        click(client, "steer").await;
        wait_text(client, "Steered — the child received your message").await;
        landed_on(client, &format!("/t/{gemini}?done=steered")).await;
        screenshot(client, "task-steered-390x844.png").await;
        h.wait_until(&gemini, "the steered answer", limits::AGENT, || {
            h.transcript(&gemini).contains("The second answer.")
        });

        // A child that prints: its open page shows it without a reload.
        client.goto(&format!("{}/t/{talker}", s.url)).await.unwrap();
        // (The objective shows the script: the lines it prints are put together by printf.)
        wait_text(client, "one-ready").await;
        std::fs::write(&go, "").unwrap();
        wait_text(client, "two-printed").await;
        updated_in_place(client).await;

        // A transition the monitor records reaches the open list without a reload.
        client.goto(&s.url).await.unwrap();
        client
            .wait()
            .for_element(Locator::Css(&format!("li.task[data-id='{other}']")))
            .await
            .unwrap();
        h.ok(&["cancel", &other]);
        row_comes_to(client, &other, "cancelled").await;
        updated_in_place(client).await;

        // Cancel from the page (it asks first).
        client
            .goto(&format!("{}/t/{printer}", s.url))
            .await
            .unwrap();
        click_css(client, "form[action$='/cancel'] button").await;
        client.accept_alert().await.unwrap();
        wait_text(client, "Cancelled — the child was stopped").await;
        assert_eq!(h.status(&printer)["status"], "cancelled");
        no_payload_ran(client).await;
    });
}

/// An ACP child's permission request appears on its page; "Allow" on a shell tool asks for
/// the code serve printed in its terminal, then the tool runs, and the approval is recorded with the device's name.
#[test]
fn a_permission_request_is_allowed_from_the_page_with_a_second_confirmation() {
    let h = Harness::new().with_real_gemini(&[
        canned_shell_call("echo hi > f.txt"),
        canned_text("Done: wrote f.txt."),
    ]);
    h.show_real_gemini_to_sandbox();
    // Sandboxed in place: as root the child is uid 65534, which must be able to write here.
    h.project_for_sandbox();
    let id = h.submit(&[
        "--mode",
        "acp",
        "--model",
        MODEL,
        "--no-skip-permissions",
        "Create f.txt",
    ]);
    let mut s = serve(&h, &[]);
    let rt = runtime();
    rt.block_on(async {
        let browser = browser().await;
        let client = browser.client();
        pair_in_browser(client, &s, "my phone").await;
        client.goto(&format!("{}/t/{id}", s.url)).await.unwrap();
        // The request arrives by the event stream (the page is not reloaded by the test).
        let start = Instant::now();
        loop {
            if client.find(Locator::Id("request")).await.is_ok() {
                break;
            }
            assert!(
                start.elapsed() < limits::AGENT,
                "no permission request shown:\n{}",
                h.transcript(&id)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        wait_text(client, "echo hi > f.txt").await;
        assert!(!h.project.join("f.txt").exists());
        click_css(client, "#request button.ok").await;
        wait_text(client, "printed a 6-digit code").await;
        assert!(
            !h.project.join("f.txt").exists(),
            "the tool ran before the second confirmation"
        );
        confirm_in_browser(client, &mut s).await;
        wait_text(client, "Allowed — the child goes on").await;
        landed_on(client, &format!("/t/{id}?done=allowed")).await;
        let _ = browser.client.clone().unwrap().close().await;
    });
    assert!(
        poll(limits::TASK, || h.project.join("f.txt").exists()),
        "the allowed tool never ran"
    );
    let events = std::fs::read_to_string(h.task_dir(&id).join("events.jsonl")).unwrap();
    assert!(
        events.contains("\"by\":\"device my-phone\""),
        "the approval does not name the device:\n{events}"
    );
}

/// A task submitted from the page's form (the command agent, offered with
/// `--allow-commands`) in a worktree of its own; its merge page shows its files, and merging
/// brings its work into `main`.
#[test]
fn a_task_submitted_from_the_page_is_merged_from_the_page() {
    let h = Harness::new();
    crate::harness::git::project_repo(&h.project, "shared\n");
    let mut s = serve(&h, &["--allow-commands"]);
    let rt = runtime();
    let id = rt.block_on(async {
        let browser = browser().await;
        let client = browser.client();
        pair_in_browser(client, &s, "phone").await;
        client.goto(&format!("{}/new", s.url)).await.unwrap();
        type_into(
            client,
            "objective-input",
            "echo made > new.txt; printf 'all:\\n' > Makefile",
        )
        .await;
        client
            .find(Locator::Id("agent"))
            .await
            .unwrap()
            .select_by_value("command")
            .await
            .unwrap();
        click(client, "worktree").await;
        click(client, "submit").await;
        // A shell line runs as the user: the terminal's code confirms it.
        confirm_in_browser(client, &mut s).await;
        wait_text(client, "command").await;
        let path = client.current_url().await.unwrap().path().to_string();
        let id = path
            .strip_prefix("/t/")
            .unwrap_or_else(|| panic!("the submit led to {path}"))
            .to_string();
        h.wait_until(&id, "its ending", limits::TASK, || {
            h.status(&id)["status"] == "completed"
        });
        client.goto(&format!("{}/t/{id}", s.url)).await.unwrap();
        // The page may be drawn from a board a moment older than the ending: the transition's
        // event brings the merge link.
        client
            .wait()
            .at_most(limits::TASK)
            .for_element(Locator::Id("merge"))
            .await
            .unwrap();
        click(client, "merge").await;
        wait_text(client, "new.txt").await;
        // The Makefile runs code once merged: it is named first, and the merge waits for the
        // box to be ticked.
        let review = client.find(Locator::Id("review")).await.unwrap();
        assert_eq!(review.text().await.unwrap(), "Makefile");
        click(client, "do-merge").await;
        // Not done: said on the task page, with what to do.
        wait_text(
            client,
            "Not done: The task's work changes files that run code",
        )
        .await;
        wait_text(client, "tick \"I reviewed the files").await;
        client
            .goto(&format!("{}/t/{id}/merge", s.url))
            .await
            .unwrap();
        click(client, "reviewed").await;
        click(client, "do-merge").await;
        confirm_in_browser(client, &mut s).await;
        wait_text(client, "Merged — its work is on the target branch").await;
        wait_text(client, "merged into main").await;
        let _ = browser.client.clone().unwrap().close().await;
        id
    });
    assert_eq!(
        crate::harness::git::git(&h.project, &["show", "main:new.txt"]),
        "made\n",
        "{id}'s work is not on main"
    );
}

/// Over TLS (`--tls-cert`/`--tls-key`): pages are served over https, the session cookie is
/// `Secure`, plain HTTP on that port gets nothing, and a LAN bind needs no `--insecure-lan`.
#[test]
fn over_tls_the_pages_are_served_and_the_session_cookie_is_secure() {
    let h = Harness::new();
    let id = h.submit_sh("sleep 600", &[]);
    let cert = h.root().join("cert.pem");
    let key = h.root().join("key.pem");
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let tls = ["--tls-cert", cert, "--tls-key", key];

    let lan = serve_on(&h, "0.0.0.0:0", &tls);
    assert!(lan.url.starts_with("https://0.0.0.0:"), "{}", lan.url);
    drop(lan);

    let s = serve(&h, &tls);
    assert!(s.url.starts_with("https://127.0.0.1:"), "{}", s.url);
    let plain = http(&s.addr, "GET", "/pair", &[], "");
    assert_ne!(plain.status, 200, "plain HTTP was answered on the TLS port");
    let rt = runtime();
    rt.block_on(async {
        let browser = browser_with(true).await;
        let client = browser.client();
        pair_in_browser(client, &s, "tls-phone").await;
        row_listed(client, &id).await;
        let cookies = client.get_all_cookies().await.unwrap();
        let session = cookies
            .iter()
            .find(|cookie| cookie.name() == "ck_session")
            .expect("a session cookie");
        assert_eq!(session.secure(), Some(true), "{session:?}");
        assert_eq!(session.http_only(), Some(true), "{session:?}");
        let _ = browser.client.clone().unwrap().close().await;
    });
}

/// What `serve` refuses: a POST without the CSRF token or from another origin, a wrong Host, a
/// request without a session, the command agent without --allow-commands; and `--revoke all`
/// ends an open session.
#[test]
fn serve_refuses_what_it_must() {
    let h = Harness::new();
    let id = h.submit_sh("sleep 600", &[]);
    let s = serve(&h, &[]);
    let (paired, session) = pair_http(&s, &s.code, "laptop");
    assert_eq!(paired.status, 303, "{}", paired.body);
    let session = session.expect("a session cookie");
    let set = paired.header("set-cookie").unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let cookie = format!("ck_session={session}");
    let csrf = csrf_of(&s, &session);
    let steer = format!("/t/{id}/steer");

    // Every page carries the headers.
    let page = http(&s.addr, "GET", "/", &[("Cookie", &cookie)], "");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert!(
        page.header("content-security-policy")
            .is_some_and(|csp| csp.contains("script-src 'self'") && !csp.contains("unsafe-inline")),
        "{:?}",
        page.header("content-security-policy")
    );

    // No CSRF token, a wrong one, another origin, a wrong Host: refused, nothing typed.
    let no_token = post_signed(&s.addr, &session, &steer, &[("text", "hello")]);
    assert_eq!(no_token.status, 403, "{}", no_token.body);
    assert!(no_token.body.contains("token"), "{}", no_token.body);
    let wrong = post_signed(
        &s.addr,
        &session,
        &steer,
        &[("csrf", &"0".repeat(64)), ("text", "hello")],
    );
    assert_eq!(wrong.status, 403);
    let good_form = form_encode(&[("csrf", &csrf)]);
    let foreign = http(
        &s.addr,
        "POST",
        &format!("/t/{id}/cancel"),
        &[("Cookie", &cookie), ("Origin", "http://evil.example")],
        &good_form,
    );
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    let rebound = http(
        &s.addr,
        "GET",
        "/",
        &[("Cookie", &cookie), ("Host", "evil.example")],
        "",
    );
    assert_eq!(rebound.status, 421, "{}", rebound.body);
    let no_session = http(&s.addr, "POST", &format!("/t/{id}/cancel"), &[], &good_form);
    // The command agent runs shell as the user: offered only with --allow-commands.
    let command = post_signed(
        &s.addr,
        &session,
        "/new",
        &[
            ("csrf", &csrf),
            ("agent", "command"),
            ("objective", "touch pwned"),
        ],
    );
    assert!(
        command.body.contains("--allow-commands"),
        "{}",
        command.body
    );
    assert_eq!(h.json(&["list"]).0.as_array().map(Vec::len), Some(1));
    assert_eq!(no_session.status, 403);
    assert_eq!(h.status(&id)["status"], "running");

    // `--devices` lists it; `--revoke all` ends it at its next request.
    let listed = h.ok(&["serve", "--devices"]);
    assert!(listed.contains("laptop"), "{listed}");
    h.ok(&["serve", "--revoke", "all"]);
    let after = http(&s.addr, "GET", "/", &[("Cookie", &cookie)], "");
    assert_eq!(after.status, 303, "a revoked session still sees the list");
    assert_eq!(
        after.header("location"),
        Some("/unlock"),
        "to sign in again (a browser without its key goes on to /pair)"
    );
    let revoked_post = http(
        &s.addr,
        "POST",
        &format!("/t/{id}/cancel"),
        &[("Cookie", &cookie)],
        &good_form,
    );
    assert_eq!(revoked_post.status, 403);
    assert_eq!(h.status(&id)["status"], "running");
    drop(s);
}

/// Codes burned after five wrong tries, `--read-only`, `--qr` and `--public-host`.
#[test]
fn serve_burns_codes_and_serves_read_only_qr_and_proxies() {
    let h = Harness::new();
    let id = h.submit_sh("sleep 600", &[]);

    // Five wrong codes burn it: the sixth try fails even with the right code.
    let s = serve(&h, &["--read-only"]);
    let wrong_code = if s.code == "0000-0000" {
        "1111-1111"
    } else {
        "0000-0000"
    };
    for left in (0..5).rev() {
        let (reply, session) = pair_http(&s, wrong_code, "x");
        assert_eq!(reply.status, 403);
        assert!(session.is_none());
        if left > 0 {
            assert!(
                reply.body.contains(&format!("{left} tries left")),
                "{}",
                reply.body
            );
        }
    }
    let (sixth, session) = pair_http(&s, &s.code, "x");
    assert_eq!(sixth.status, 403);
    assert!(session.is_none());
    assert!(sixth.body.contains("burned"), "{}", sixth.body);
    drop(s);

    // --read-only: pages are served, every action is 403.
    let s = serve(&h, &["--read-only"]);
    let (_, session) = pair_http(&s, &s.code, "reader");
    let session = session.expect("pairing works under --read-only");
    let cookie = format!("ck_session={session}");
    let csrf = csrf_of(&s, &session);
    let page = http(
        &s.addr,
        "GET",
        &format!("/t/{id}"),
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(page.status, 200);
    assert!(
        !page.body.contains("steer-form"),
        "read-only pages offer actions"
    );
    for action in ["cancel", "steer", "retry", "answer", "handoff"] {
        let reply = post_signed(
            &s.addr,
            &session,
            &format!("/t/{id}/{action}"),
            &[
                ("csrf", &csrf),
                ("text", "x"),
                ("answer", "allow"),
                ("agent", "gemini"),
            ],
        );
        assert_eq!(reply.status, 403, "{action}: {}", reply.body);
        assert!(reply.body.contains("read-only"), "{action}: {}", reply.body);
    }
    assert_eq!(h.status(&id)["status"], "running");
    drop(s);

    // --qr: the terminal shows a QR code of the pairing URL, whose page has the code filled in.
    let mut s = serve(&h, &["--qr"]);
    let mut drawn = String::new();
    for _ in 0..8 {
        s._stdout.read_line(&mut drawn).unwrap();
    }
    assert!(drawn.contains('▀') || drawn.contains('▄'), "{drawn}");
    let filled = http(&s.addr, "GET", &format!("/pair?code={}", s.code), &[], "");
    assert!(
        filled.body.contains(&format!("value=\"{}\"", s.code)),
        "{}",
        filled.body
    );
    drop(s);

    // Behind an HTTPS proxy (--public-host): its name is served, and the cookie is Secure.
    let s = serve(&h, &["--public-host", "box.example.ts.net"]);
    let proxied = [("Host", "box.example.ts.net")];
    let form = http(&s.addr, "GET", "/pair", &proxied, "");
    assert_eq!(form.status, 200, "{}", form.body);
    let token = form.cookie("ck_form").unwrap();
    let reply = http(
        &s.addr,
        "POST",
        "/pair",
        &[
            ("Host", "box.example.ts.net"),
            ("Origin", "https://box.example.ts.net"),
            ("Cookie", &format!("ck_form={token}")),
        ],
        &form_encode(&[("form", &token), ("code", &s.code), ("name", "tailnet")]),
    );
    assert_eq!(reply.status, 303, "{}", reply.body);
    assert!(reply.header("set-cookie").unwrap().contains("; Secure"));
    let other = http(
        &s.addr,
        "GET",
        "/pair",
        &[("Host", "other.example.ts.net")],
        "",
    );
    assert_eq!(other.status, 421);
    drop(s);

    // A LAN address without TLS is refused, with the tunnels named.
    let lan = h.run(&["serve", "--bind", "0.0.0.0:0"]);
    assert!(!lan.status.success());
    let said = String::from_utf8_lossy(&lan.stderr);
    assert!(
        said.contains("not a loopback address") && said.contains("ssh -L"),
        "{said}"
    );
}

#[test]
fn a_task_on_a_remote_host_is_on_the_list_and_has_its_page() {
    let alpha = crate::harness::ssh_host::SshHost::start("alpha");
    let h = crate::remote::harness_with(&[&alpha], "");
    let on_alpha = crate::remote::submit_on(
        &h,
        "alpha",
        &["--", "sh", "-c", "printf 'alpha-%s\\n' says; sleep 600"],
    );
    let local = h.submit_sh("sleep 600", &[]);
    let s = serve(&h, &[]);
    let (_, session) = pair_http(&s, &s.code, "laptop");
    let cookie = format!("ck_session={}", session.expect("paired"));
    // The hosts are asked in a thread of their own: the row joins the list a refresh later.
    let mut list = String::new();
    let listed = poll(limits::TASK, || {
        list = http(&s.addr, "GET", "/", &[("Cookie", &cookie)], "").body;
        list.contains(&format!("data-id=\"{on_alpha}\""))
    });
    assert!(listed, "{list}");
    assert!(list.contains(&format!("data-id=\"{local}\"")), "{list}");
    let mut page = String::new();
    let shown = poll(limits::TASK, || {
        page = http(
            &s.addr,
            "GET",
            &format!("/t/{on_alpha}"),
            &[("Cookie", &cookie)],
            "",
        )
        .body;
        page.contains("alpha-says")
    });
    assert!(shown, "{page}");
    assert!(page.contains("alpha"), "{page}");
    h.ok(&["cancel", &on_alpha]);
    h.ok(&["cancel", &local]);
}

#[test]
fn on_a_unix_socket_the_list_filters_and_an_idle_session_expires() {
    let h = Harness::new();
    let running = h.submit_sh("sleep 600", &[]);
    let done = h.submit_batch_sh("exit 0");
    h.wait_ok(&[&done], &limits::arg(limits::AGENT));
    let socket = h.root().join("web.sock");
    let s = serve_on(&h, &format!("unix:{}", socket.display()), &[]);
    assert_eq!(s.addr, format!("unix:{}", socket.display()));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the socket is the user's alone");
    let (paired, session) = pair_http(&s, &s.code, "through-ssh");
    let cookie = format!(
        "ck_session={}",
        session.unwrap_or_else(|| panic!("{}", paired.body))
    );
    let list = |query: &str| {
        let reply = http(
            &s.addr,
            "GET",
            &format!("/{query}"),
            &[("Cookie", &cookie)],
            "",
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.body
    };
    let row = |id: &str| format!("data-id=\"{id}\"");
    let every = list("");
    assert!(
        every.contains(&row(&running)) && every.contains(&row(&done)),
        "{every}"
    );
    let only_running = list("?status=running");
    assert!(only_running.contains(&row(&running)), "{only_running}");
    assert!(!only_running.contains(&row(&done)), "{only_running}");
    let only_done = list("?status=completed");
    assert!(only_done.contains(&row(&done)) && !only_done.contains(&row(&running)));
    let elsewhere = list("?project=%2Fnowhere");
    assert!(!elsewhere.contains(&row(&running)) && !elsewhere.contains(&row(&done)));

    // A device not seen for more than 7 days is forgotten: its session goes to sign in, and
    // with no device left, on to pairing.
    let access = h.data_dir().join("web/access.json");
    let mut file: Value = serde_json::from_slice(&std::fs::read(&access).unwrap()).unwrap();
    let eight_days_ago = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 8 * 24 * 3600;
    for device in file["devices"].as_array_mut().unwrap() {
        device["last_seen"] = json!(eight_days_ago);
    }
    std::fs::write(&access, serde_json::to_vec(&file).unwrap()).unwrap();
    let expired = http(&s.addr, "GET", "/", &[("Cookie", &cookie)], "");
    assert_eq!(expired.status, 303, "{}", expired.body);
    assert_eq!(expired.header("location"), Some("/unlock"));
    let devices: Value = serde_json::from_slice(&std::fs::read(&access).unwrap()).unwrap();
    assert_eq!(devices["devices"], json!([]), "{devices}");
    h.ok(&["cancel", &running]);
}

#[test]
fn a_failed_task_is_retried_from_the_page_and_completes() {
    let h = Harness::new();
    let marker = h.root().join("tried");
    let id = h.submit_batch_sh(&format!(
        "if [ -e '{0}' ]; then echo second-try; exit 0; fi; touch '{0}'; exit 3",
        marker.display()
    ));
    let (failed, _) = h.json(&["wait", &id, "--timeout", "60s"]);
    assert_eq!(failed["tasks"][0]["status"], "failed", "{failed}");
    let mut s = serve(&h, &[]);
    let (_, session) = pair_http(&s, &s.code, "phone");
    let session = session.expect("paired");
    let csrf = csrf_of(&s, &session);
    // It runs unsandboxed, whatever it is told: the terminal's code is asked first.
    let asked = post_signed(
        &s.addr,
        &session,
        &format!("/t/{id}/retry"),
        &[("csrf", &csrf)],
    );
    assert!(asked.body.contains("confirm-code"), "{}", asked.body);
    let code = confirm_code(&mut s);
    let reply = post_signed(
        &s.addr,
        &session,
        &format!("/t/{id}/retry"),
        &[("csrf", &csrf), ("code", &code)],
    );
    assert_eq!(reply.status, 303, "{}", reply.body);
    let back = reply.header("location").unwrap_or_default().to_string();
    assert_eq!(back, format!("/t/{id}?done=retried"));
    let cookie = format!("ck_session={session}");
    let page = http(&s.addr, "GET", &back, &[("Cookie", &cookie)], "");
    assert!(
        page.body.contains("<b>Retried</b> — a new attempt starts"),
        "{}",
        page.body
    );
    let done = h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    assert_eq!(done["tasks"][0]["status"], "completed", "{done}");
    assert!(h.ok(&["logs", &id]).contains("second-try"));
}

/// The task page of a running task hands it off: the form is there, the POST (CSRF token,
/// session) ends the attempt and queues the next on the chosen agent; the command agent is
/// refused, and a read-only server refuses the action.
#[test]
fn a_running_task_is_handed_off_from_the_page() {
    let h = Harness::new();
    let id = h.submit_sh("sleep 600", &[]);
    h.wait_until(&id, "running", limits::AGENT, || {
        h.status(&id)["status"] == "running"
    });
    let mut s = serve(&h, &[]);
    let (_, session) = pair_http(&s, &s.code, "phone");
    let session = session.expect("paired");
    let cookie = format!("ck_session={session}");
    let csrf = csrf_of(&s, &session);
    let page = http(
        &s.addr,
        "GET",
        &format!("/t/{id}"),
        &[("Cookie", &cookie)],
        "",
    );
    assert!(page.body.contains("handoff-form"), "{}", page.body);
    let path = format!("/t/{id}/handoff");
    let command = post_signed(
        &s.addr,
        &session,
        &path,
        &[("csrf", &csrf), ("agent", "command")],
    );
    assert_eq!(command.status, 403, "{}", command.body);
    assert!(command.body.contains("command agent"), "{}", command.body);
    let no_token = post_signed(&s.addr, &session, &path, &[("agent", "gemini")]);
    assert_eq!(no_token.status, 403, "{}", no_token.body);
    let fields = [
        ("csrf", csrf.as_str()),
        ("agent", "gemini"),
        ("model", ""),
        ("message", "Go on from here."),
    ];
    // The next agent runs with its bypass and no sandbox: the terminal's code is asked first.
    let asked = post_signed(&s.addr, &session, &path, &fields);
    assert!(asked.body.contains("confirm-code"), "{}", asked.body);
    let code = confirm_code(&mut s);
    let mut confirmed = fields.to_vec();
    confirmed.push(("code", &code));
    let reply = post_signed(&s.addr, &session, &path, &confirmed);
    assert_eq!(reply.status, 303, "{}", reply.body);
    assert_eq!(
        reply.header("location"),
        Some(format!("/t/{id}?done=handed-off").as_str())
    );
    let task = h.status(&id);
    assert_eq!(
        task["queue"]["attempts"][0]["reason"], "handed_off",
        "{task}"
    );
    let _ = h.json(&["cancel", &id]);
}

#[test]
fn a_checked_tasks_verdict_is_on_the_list_and_its_page() {
    use crate::harness::git::{commit_all, project_repo};
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    std::fs::create_dir_all(h.project.join("tests")).unwrap();
    std::fs::write(h.project.join("tests/check.sh"), "exit 1\n").unwrap();
    commit_all(&h.project, "a project whose test fails");
    // The child makes the test pass by rewriting it: the verdict comes from the base's test.
    let id = h.submit_worktree_sh(
        &["--check", "sh tests/check.sh", "--check-rounds", "0"],
        "printf 'exit 0\\n' > tests/check.sh",
    );
    let (waited, _) = h.wait_all(&[&id], "60s");
    assert_eq!(waited["tasks"][0]["reason"], "check_failed", "{waited}");
    let s = serve(&h, &[]);
    let (_, session) = pair_http(&s, &s.code, "phone");
    let cookie = format!("ck_session={}", session.expect("paired"));
    let list = http(
        &s.addr,
        "GET",
        "/?status=failed",
        &[("Cookie", &cookie)],
        "",
    )
    .body;
    assert!(list.contains("check failed in round 1 of 1"), "{list}");
    let page = http(
        &s.addr,
        "GET",
        &format!("/t/{id}"),
        &[("Cookie", &cookie)],
        "",
    )
    .body;
    for shown in [
        "<dt>check</dt><dd>check failed in round 1 of 1</dd>",
        "<dt>last check</dt><dd>sh tests/check.sh: exit 1</dd>",
        "<dt>protected edits</dt><dd>tests/check.sh</dd>",
    ] {
        assert!(page.contains(shown), "{shown}\n{page}");
    }
}

/// A worktree task merged with `cuekit merge` offers no Merge on its page: it says where its
/// work went instead.
#[test]
fn a_merged_tasks_page_offers_no_merge() {
    use crate::harness::git::project_repo;
    let h = Harness::new();
    project_repo(&h.project, "shared\n");
    let id = h.submit_worktree_sh(&[], "echo new > new.txt");
    h.wait_ok(&[&id], &limits::arg(limits::AGENT));
    let (merged, code) = h.json(&["merge", &id, "--yes"]);
    assert_eq!(code, 0, "{merged}");
    let s = serve(&h, &[]);
    let (_, session) = pair_http(&s, &s.code, "phone");
    let cookie = format!("ck_session={}", session.expect("paired"));
    let page = http(
        &s.addr,
        "GET",
        &format!("/t/{id}"),
        &[("Cookie", &cookie)],
        "",
    )
    .body;
    assert!(!page.contains("id=\"merge\""), "{page}");
    assert!(!page.contains(&format!("/t/{id}/merge")), "{page}");
    assert!(page.contains("merged into main"), "{page}");
}

/// Waits until the task page shows a permission request (by the event stream).
async fn request_shown(client: &Client, h: &Harness, id: &str) {
    let start = Instant::now();
    while client.find(Locator::Id("request")).await.is_err() {
        assert!(
            start.elapsed() < limits::AGENT,
            "no permission request shown:\n{}",
            h.screen(id)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An interactive Gemini child's permission dialog is offered on its page as an ACP request
/// is: "Allow" on its shell call asks a second time, then its digit is typed and the tool runs;
/// "Reject" on another child's dialog types its "No". Both recorded with the device's name.
#[test]
fn an_interactive_childs_dialog_is_allowed_and_rejected_from_the_page() {
    let h = Harness::new().with_real_gemini(&[
        canned_shell_call("echo hi > f.txt"),
        canned_text("Done: wrote f.txt."),
    ]);
    let submit = |folder: &str| {
        let dir = h.project.join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let dir = dir.to_string_lossy().into_owned();
        let args = [
            "--cwd",
            &dir,
            "--model",
            MODEL,
            "--no-skip-permissions",
            "--sandbox=none",
            "Create f.txt",
        ];
        h.submit(&args)
    };
    let allowed = submit("allowed");
    let rejected = submit("rejected");
    let mut s = serve(&h, &[]);
    let rt = runtime();
    rt.block_on(async {
        let browser = browser().await;
        let client = browser.client();
        pair_in_browser(client, &s, "my phone").await;
        client
            .goto(&format!("{}/t/{allowed}", s.url))
            .await
            .unwrap();
        request_shown(client, &h, &allowed).await;
        wait_text(client, "Allow execution of [Shell]?").await;
        wait_text(client, "Shell echo hi > f.txt").await;
        click_css(client, "#request button.ok").await;
        assert!(!h.project.join("allowed/f.txt").exists());
        confirm_in_browser(client, &mut s).await;
        wait_text(client, "Allowed — the child goes on").await;
        client
            .goto(&format!("{}/t/{rejected}", s.url))
            .await
            .unwrap();
        request_shown(client, &h, &rejected).await;
        click_css(client, "#request button.danger").await;
        wait_text(client, "Rejected — the child was told no").await;
        let _ = browser.client.clone().unwrap().close().await;
    });
    assert!(
        poll(limits::TASK, || h.project.join("allowed/f.txt").exists()),
        "the allowed tool never ran"
    );
    let (waited, code) = h.json(&["wait", &rejected, "--timeout", &limits::arg(limits::AGENT)]);
    assert_eq!(code, 0, "{waited}\n{}", h.screen(&rejected));
    assert!(
        !h.project.join("rejected/f.txt").exists(),
        "a rejected tool ran"
    );
    for (folder, id) in [("allowed", &allowed), ("rejected", &rejected)] {
        let dir = h.project.join(folder).join(".cuekit/tasks").join(id);
        let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
        assert!(
            events.contains("\"by\":\"device my-phone\"") && events.contains("\"dialog\""),
            "the approval does not name the device:\n{events}"
        );
    }
}
