//! The routes: a guard on every request (Host, headers, Origin), then the device key's
//! signature on every action and stream start (`signed_only`, `web::signed`), then pages and
//! actions. Each handler proves the session (and for an action the CSRF token), checks ids as
//! the CLI does, and calls one operation on the blocking pool.

// A refusal is the response itself (an early return of a handler), as axum has it.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::Body;
use axum::extract::{Form, FromRequest, FromRequestParts, Path as UrlPath, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;

use super::Hosts;
use super::html::{self, TaskExtras};
use super::live::Live;
use super::receipt::{Problem, Receipt};
use crate::domain::acp::control::Answer;
use crate::domain::error::{Error, ErrorCode};
use crate::ops::{self, web_access};

const SESSION_COOKIE: &str = "ck_session";
const FORM_COOKIE: &str = "ck_form";
/// Lines of the log a task page shows first.
const SCREEN_LINES: usize = 60;
const MOST_LINES: usize = 20_000;
/// A keep-alive comment on an idle event stream.
const KEEP_ALIVE: Duration = Duration::from_secs(10);
/// How often an open event stream's session is looked at again (news or not).
const SESSION_RECHECK: Duration = Duration::from_millis(500);

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; manifest-src 'self'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

pub struct App {
    cwd: PathBuf,
    read_only: bool,
    allow_commands: bool,
    /// `--public-host`, lowercased: the name an HTTPS proxy serves the pages under.
    public_host: Option<String>,
    /// Served over TLS: every session cookie is `Secure`.
    tls: bool,
    hosts: Hosts,
    live: Arc<Live>,
    /// The sessions that have had a page from this run (each one's first gets
    /// `Clear-Site-Data`).
    seen: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The codes printed for destructive steps.
    codes: super::factor::Codes,
    /// The session tokens this run gave out (by pairing or a key's sign-in): only these are
    /// served.
    run_tokens: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Sign-in nonces: given out statelessly, remembered once spent.
    nonces: super::nonce::Nonces,
    /// Request nonces given out, each to one session (`web::signed`).
    requests: super::signed::Nonces,
}

impl App {
    pub fn new(options: super::Options, cwd: PathBuf, hosts: Hosts, live: Arc<Live>) -> Arc<App> {
        Arc::new(App {
            cwd,
            read_only: options.read_only,
            allow_commands: options.allow_commands,
            tls: options.tls.is_some(),
            public_host: options.public_host.map(|host| host.to_ascii_lowercase()),
            hosts,
            live,
            seen: std::sync::Mutex::default(),
            codes: super::factor::Codes::default(),
            run_tokens: std::sync::Mutex::default(),
            nonces: super::nonce::Nonces::default(),
            requests: super::signed::Nonces::default(),
        })
    }
}

type Shared = State<Arc<App>>;

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(list))
        .route("/live", get(list_live))
        .route("/events", get(events))
        .route("/pair", get(pair_form).post(pair))
        .route("/unlock", get(unlock_form).post(unlock))
        .route("/nonce", axum::routing::post(request_nonce))
        .route("/t/{id}", get(task))
        .route("/t/{id}/live", get(task_live))
        .route("/t/{id}/steer", axum::routing::post(steer))
        .route("/t/{id}/cancel", axum::routing::post(cancel))
        .route("/t/{id}/retry", axum::routing::post(retry))
        .route("/t/{id}/handoff", axum::routing::post(handoff))
        .route("/t/{id}/answer", axum::routing::post(answer))
        .route("/t/{id}/merge", get(merge_form).post(merge))
        .route("/t/{id}/diff", get(diff))
        .route("/new", get(submit_form).post(submit))
        .route("/app.js", get(|| asset("text/javascript", APP_JS)))
        .route("/app.css", get(|| asset("text/css", STYLESHEET.as_str())))
        .route(
            "/manifest.webmanifest",
            get(|| asset("application/manifest+json", MANIFEST)),
        )
        .route("/icon.svg", get(|| asset("image/svg+xml", ICON)))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&app),
            signed_only,
        ))
        .layer(middleware::from_fn_with_state(Arc::clone(&app), guard))
        .with_state(app)
}

const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
/// The stylesheet with the screen's colour classes, built once.
static STYLESHEET: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| super::palette::stylesheet(APP_CSS));
const MANIFEST: &str = include_str!("assets/manifest.webmanifest");
const ICON: &str = include_str!("assets/icon.svg");

async fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// Every request: the `Host` must name this server, a state-changing one must not come from
/// another origin; every response gets the security headers.
async fn guard(State(app): Shared, request: Request, next: Next) -> Response {
    let headers = request.headers();
    // A browser fetching a service worker's script (registering or updating one a squatter
    // registered while serve was down): whatever the path, the worker it gets removes itself.
    if headers
        .get("service-worker")
        .is_some_and(|value| value.as_bytes() == b"script")
    {
        return kill_switch();
    }
    let first_page = first_page_of_run(&app, &request);
    let host = headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .unwrap_or("");
    let host_ok = app.hosts.allows(host);
    let foreign = headers
        .get(header::ORIGIN)
        .map(|origin| origin.to_str().unwrap_or("null"))
        .is_some_and(|origin| !super::same_origin(origin, host))
        || headers
            .get("sec-fetch-site")
            .is_some_and(|site| site.as_bytes() == b"cross-site");
    let mut response = if !host_ok {
        refusal(
            StatusCode::MISDIRECTED_REQUEST,
            "this Host is not the address cuekit serve is bound to",
        )
    } else if request.method() == Method::POST && foreign {
        refusal(StatusCode::FORBIDDEN, "a request from another origin")
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", CSP),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
        .entry("cross-origin-opener-policy")
        .or_insert(HeaderValue::from_static("same-origin"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    if first_page && response.status() == StatusCode::OK {
        response.headers_mut().insert(
            "clear-site-data",
            HeaderValue::from_static(FIRST_PAGE_CLEARS),
        );
    }
    response
}

/// What the first page a session gets from this run clears: pages a squatter left in the
/// cache while serve was down. Not `"storage"`: that holds the device's key (IndexedDB); its
/// stray service workers go by the kill switch and `app.js`, and `/pair` clears storage.
const FIRST_PAGE_CLEARS: &str = "\"cache\"";

/// A worker that unregisters itself, empties every cache and reloads the pages it held: the
/// answer to any service worker script request (`Service-Worker: script`).
const KILL_SWITCH: &str = include_str!("assets/kill-switch.js");

fn kill_switch() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        KILL_SWITCH,
    )
        .into_response()
}

/// Whether this request is a page (a GET of a document) of a session that has had none from
/// this run yet: noted, so the next is not.
fn first_page_of_run(app: &App, request: &Request) -> bool {
    if request.method() != Method::GET
        || request
            .headers()
            .get("sec-fetch-dest")
            .is_some_and(|dest| dest.as_bytes() != b"document")
    {
        return false;
    }
    let Some(token) = cookie(request.headers(), SESSION_COOKIE) else {
        return false;
    };
    app.seen
        .lock()
        .expect("not poisoned")
        .insert(token.to_string())
}

/// Whether a browser says this request is no top-level navigation (`Sec-Fetch-Dest` other than
/// `document`, `Sec-Fetch-Mode` other than `navigate`): a script's `fetch`, a frame, an image.
/// A page cannot forge these headers; a client that sends none (curl) is taken as navigating.
fn not_a_navigation(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-dest")
        .is_some_and(|dest| dest.as_bytes() != b"document")
        || headers
            .get("sec-fetch-mode")
            .is_some_and(|mode| mode.as_bytes() != b"navigate")
}

/// The answer to a script asking for a sign-in nonce or a pairing form (issue 48, F12): cuekit's
/// own pages never do, so the page asking was left in the browser's cache by something that
/// answered on the port while serve was down. Refused, and the origin's cache emptied, so the
/// next visit gets serve's page.
fn stale_page_refused() -> Response {
    let mut response = refusal(
        StatusCode::FORBIDDEN,
        "a sign-in is given to a page opened in the browser only: open / again",
    );
    response.headers_mut().insert(
        "clear-site-data",
        HeaderValue::from_static(STALE_PAGE_CLEARS),
    );
    response
}

/// What serve's sign-in pages and answers clear: pages a squatter left in the browser's cache.
const STALE_PAGE_CLEARS: &str = "\"cache\"";

fn refusal(status: StatusCode, why: &str) -> Response {
    (status, Html(html::message("Refused", why, "/"))).into_response()
}

fn failure(err: &Error, back: &str) -> Response {
    let status = match err.code {
        ErrorCode::TaskNotFound => StatusCode::NOT_FOUND,
        ErrorCode::Internal | ErrorCode::Io => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::CONFLICT,
    };
    let mut text = format!("error[{}]: {}", err.code.as_str(), err.message);
    if let Some(hint) = &err.hint {
        text.push_str(&format!(" (hint: {hint})"));
    }
    (status, Html(html::message("Not done", &text, back))).into_response()
}

/// Runs blocking work (files, tmux, git) off the async thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> crate::domain::error::Result<T> + Send + 'static,
) -> crate::domain::error::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|err| Err(Error::new(ErrorCode::Internal, format!("worker: {err}"))))
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// The request's device session, or the response that sends it to sign in (`/unlock`: the
/// device's key, else pairing). A session is this run's only: one from before the restart
/// (a squatter's capture, or the device's own) is refused, and the device signs in again.
async fn session(app: &App, headers: &HeaderMap) -> Result<web_access::Session, Response> {
    let token = cookie(headers, SESSION_COOKIE).unwrap_or("").to_string();
    if !app
        .run_tokens
        .lock()
        .expect("not poisoned")
        .contains(&token)
    {
        return Err(Redirect::to("/unlock").into_response());
    }
    match blocking(move || web_access::session(&token)).await {
        Ok(Some(session)) => Ok(session),
        Ok(None) => Err(Redirect::to("/unlock").into_response()),
        Err(err) => Err(failure(&err, "/")),
    }
}

/// The sign-in page: a nonce of this run for the device's key to sign (`app.js` does it from
/// IndexedDB, or sends the browser to pairing when it holds no key).
async fn unlock_form(State(app): Shared, headers: HeaderMap) -> Response {
    if not_a_navigation(&headers) {
        return stale_page_refused();
    }
    let nonce = app.nonces.issue();
    let mut response = page(html::unlock_page(&nonce));
    // The page's script comes from serve, not from a copy a squatter left in the cache.
    response.headers_mut().insert(
        "clear-site-data",
        HeaderValue::from_static(STALE_PAGE_CLEARS),
    );
    response.headers_mut().insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static(NO_OPENER),
    );
    response
}

/// The sign-in and pairing pages' opener policy: a page that opened them in a window (a
/// squatter's, from the cache) cannot reach into them for the nonce or the form's token.
const NO_OPENER: &str = "noopener-allow-popups";

/// What a device's key signs to sign in: the nonce and the `Host` it was given under.
pub fn unlock_message(nonce: &str, host: &str) -> String {
    format!(
        "cuekit serve sign-in\n{nonce}\n{}",
        host.to_ascii_lowercase()
    )
}

/// A device's key signed this run's nonce: a new session of this run.
async fn unlock(
    State(app): Shared,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let nonce = form.get("nonce").cloned().unwrap_or_default();
    if !app.nonces.fresh(&nonce) {
        return refusal(
            StatusCode::FORBIDDEN,
            "this sign-in is stale or used: open / again",
        );
    }
    let host = headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .unwrap_or("");
    let message = unlock_message(&nonce, host);
    let signature = form.get("signature").cloned().unwrap_or_default();
    match blocking(move || web_access::sign_in(message.as_bytes(), &signature)).await {
        // Spent only now: a stranger's nonces and wrong signatures leave nothing behind.
        Ok(Some(_)) if !app.nonces.spend(&nonce) => refusal(
            StatusCode::FORBIDDEN,
            "this sign-in is stale or used: open / again",
        ),
        Ok(Some(new)) => {
            let mut response = Redirect::to("/").into_response();
            start_session(&app, &headers, &mut response, &new.token);
            response.headers_mut().insert(
                "clear-site-data",
                HeaderValue::from_static(STALE_PAGE_CLEARS),
            );
            response
        }
        Ok(None) => refusal(
            StatusCode::FORBIDDEN,
            "no paired device's key signed this: pair this device again at /pair",
        ),
        Err(err) => failure(&err, "/pair"),
    }
}

/// The most a signed request's form may hold (axum's own limit for a form).
const FORM_LIMIT: usize = 2 * 1024 * 1024;

/// Whether a request must be signed by its session's device key (`web::signed`): every POST
/// but pairing, sign-in and asking for a nonce, and the event stream's start.
fn must_be_signed(method: &Method, path: &str) -> bool {
    match *method {
        Method::GET => path == "/events",
        Method::POST => !matches!(path, "/pair" | "/unlock" | "/nonce"),
        _ => false,
    }
}

/// Every state-changing request of a session of this run, and its event stream's start:
/// signed by the session's device key over a nonce this run gave it (a cookie and CSRF token
/// alone act on nothing). A request without such a session goes on to be refused by its
/// handler as before.
async fn signed_only(State(app): Shared, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    if !must_be_signed(request.method(), &path) {
        return next.run(request).await;
    }
    let Ok(session) = session(&app, request.headers()).await else {
        return next.run(request).await;
    };
    let token = cookie(request.headers(), SESSION_COOKIE)
        .unwrap_or("")
        .to_string();
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, FORM_LIMIT).await else {
        return refusal(StatusCode::PAYLOAD_TOO_LARGE, "the form is too large");
    };
    let mut fields = super::signed::fields_of(parts.uri.query().unwrap_or("").as_bytes());
    fields.extend(super::signed::fields_of(&bytes));
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .unwrap_or("");
    let checked = super::signed::check(
        &app.requests,
        &token,
        session.key.as_deref(),
        &super::signed::Request {
            method: parts.method.as_str(),
            path: &path,
            host,
            fields: &fields,
        },
    );
    match checked {
        Ok(()) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Err(err) => {
            let mut text = format!("error[{}]: {}", err.code.as_str(), err.message);
            if let Some(hint) = &err.hint {
                text.push_str(&format!(" (hint: {hint})"));
            }
            let mut response = (
                StatusCode::FORBIDDEN,
                Html(html::message("Refused", &text, "/")),
            )
                .into_response();
            response.headers_mut().insert(
                "x-cuekit-error",
                HeaderValue::from_static(err.code.as_str()),
            );
            response
        }
    }
}

/// A single-use nonce for the session's next signed request (`app.js` asks before each
/// action and before opening the event stream): the session and its CSRF token, as text.
async fn request_nonce(
    State(app): Shared,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let Ok(session) = session(&app, &headers).await else {
        return StatusCode::FORBIDDEN.into_response();
    };
    let given = form.get("csrf").map(String::as_str).unwrap_or("");
    if given.is_empty() || given != session.csrf {
        return StatusCode::FORBIDDEN.into_response();
    }
    let token = cookie(&headers, SESSION_COOKIE).unwrap_or("");
    match app.requests.issue(token) {
        Some(nonce) => ([(header::CONTENT_TYPE, "text/plain")], nonce).into_response(),
        None => StatusCode::TOO_MANY_REQUESTS.into_response(),
    }
}

/// Sets the session cookie of a session of this run.
fn start_session(app: &App, headers: &HeaderMap, response: &mut Response, token: &str) {
    app.run_tokens
        .lock()
        .expect("not poisoned")
        .insert(token.to_string());
    // Over TLS, or through the HTTPS proxy named by --public-host: the cookie travels over TLS
    // only.
    let secure = app.tls
        || headers
            .get(header::HOST)
            .and_then(|host| host.to_str().ok())
            .is_some_and(|host| app.public_host.as_deref() == Some(&host.to_ascii_lowercase()));
    set_cookie(
        response,
        &format!(
            "{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
            web_access::SESSION_IDLE.as_secs(),
            if secure { "; Secure" } else { "" }
        ),
    );
}

/// A state-changing request: not under `--read-only`, a session, and its CSRF token.
async fn authorize(
    app: &App,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> Result<web_access::Session, Response> {
    if app.read_only {
        return Err(refusal(
            StatusCode::FORBIDDEN,
            "cuekit serve runs --read-only: no action is taken",
        ));
    }
    let session = match session(app, headers).await {
        Ok(session) => session,
        Err(_) => return Err(refusal(StatusCode::FORBIDDEN, "no paired device session")),
    };
    let given = form.get("csrf").map(String::as_str).unwrap_or("");
    if given.is_empty() || given != session.csrf {
        return Err(refusal(
            StatusCode::FORBIDDEN,
            "the form's token is missing or wrong: reload the page",
        ));
    }
    Ok(session)
}

/// A destructive step: the key its code is bound to, what the terminal says it allows, and
/// where its form goes.
struct Step {
    action: String,
    what: String,
    path: String,
}

/// The terminal's code for `step` (`web::factor`): passes when the form carries the right
/// one; else the page asking for it (a new code printed), or the refusal.
fn second_factor(
    app: &App,
    session: &web_access::Session,
    step: &Step,
    form: &HashMap<String, String>,
) -> Result<(), Response> {
    use super::factor::Verdict;
    let given = form.get("code").map(String::as_str);
    let verdict = app
        .codes
        .check(&session.device, &step.action, &step.what, given);
    let error = match verdict {
        Verdict::Passed => return Ok(()),
        Verdict::Asked => None,
        Verdict::Refused(why) => Some(why),
        Verdict::Limited(why) => return Err(refusal(StatusCode::TOO_MANY_REQUESTS, &why)),
    };
    let mut fields: Vec<(&str, &str)> = form
        .iter()
        .filter(|(name, _)| {
            !matches!(
                name.as_str(),
                "csrf" | "code" | super::signed::NONCE_FIELD | super::signed::SIGNATURE_FIELD
            )
        })
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    fields.sort_unstable();
    let body = html::code_page(
        &step.path,
        &session.csrf,
        &step.what,
        &fields,
        error.as_deref(),
    );
    let status = if error.is_some() {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::OK
    };
    Err((status, Html(body)).into_response())
}

fn hex_digest(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn checked_id(id: &str) -> Result<(), Response> {
    if crate::domain::task::is_task_id(id) {
        Ok(())
    } else {
        Err(refusal(StatusCode::NOT_FOUND, "no such task id"))
    }
}

fn page(body: String) -> Response {
    Html(body).into_response()
}

#[derive(serde::Deserialize)]
struct CodeQuery {
    code: Option<String>,
}

/// The pairing form; `?code=` (the QR code's URL) fills the code in, if it has a code's shape.
async fn pair_form(headers: HeaderMap, Query(query): Query<CodeQuery>) -> Response {
    if not_a_navigation(&headers) {
        return stale_page_refused();
    }
    let token = web_access::form_token();
    let code = query
        .code
        .filter(|code| code.len() <= 16 && code.bytes().all(|b| b.is_ascii_digit() || b == b'-'));
    let mut response = page(html::pair_form(&token, code.as_deref(), None));
    // Pairing starts clean: nothing a squatter stored on this origin survives it.
    response.headers_mut().insert(
        "clear-site-data",
        HeaderValue::from_static("\"cache\", \"storage\""),
    );
    response.headers_mut().insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static(NO_OPENER),
    );
    set_cookie(
        &mut response,
        &format!("{FORM_COOKIE}={token}; Path=/pair; HttpOnly; SameSite=Strict; Max-Age=900"),
    );
    response
}

fn set_cookie(response: &mut Response, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

async fn pair(
    State(app): Shared,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let field = form.get("form").map(String::as_str).unwrap_or("");
    if field.is_empty() || cookie(&headers, FORM_COOKIE) != Some(field) {
        return refusal(
            StatusCode::FORBIDDEN,
            "the pairing form's token is missing or wrong: open /pair again",
        );
    }
    let code = form.get("code").cloned().unwrap_or_default();
    let name = form.get("name").cloned().unwrap_or_default();
    // The device key's public half (`app.js` made the pair in IndexedDB): without one (no
    // JavaScript) the device is paired for this run only.
    let key = form.get("key").cloned();
    match blocking(move || web_access::pair(&code, &name, key.as_deref())).await {
        Ok(Ok(new)) => {
            let mut response = Redirect::to("/").into_response();
            start_session(&app, &headers, &mut response, &new.token);
            response
        }
        Ok(Err(refused)) => {
            let token = web_access::form_token();
            let mut response = (
                StatusCode::FORBIDDEN,
                Html(html::pair_form(&token, None, Some(&refused.message()))),
            )
                .into_response();
            set_cookie(
                &mut response,
                &format!(
                    "{FORM_COOKIE}={token}; Path=/pair; HttpOnly; SameSite=Strict; Max-Age=900"
                ),
            );
            response
        }
        Err(err) => failure(&err, "/pair"),
    }
}

async fn board(app: &Arc<App>) -> crate::domain::error::Result<Arc<ops::Board>> {
    let app = Arc::clone(app);
    blocking(move || app.live.board()).await
}

async fn list(
    State(app): Shared,
    headers: HeaderMap,
    Query(filter): Query<html::Filter>,
) -> Response {
    let session = match session(&app, &headers).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    match board(&app).await {
        Ok(board) => page(html::list_page(
            &board.rows,
            &filter,
            &session.csrf,
            SystemTime::now(),
        )),
        Err(err) => failure(&err, "/"),
    }
}

async fn list_live(
    State(app): Shared,
    headers: HeaderMap,
    Query(filter): Query<html::Filter>,
) -> Response {
    if let Err(response) = session(&app, &headers).await {
        return forbidden_fragment(response);
    }
    match board(&app).await {
        Ok(board) => page(html::list_fragment(&board.rows, &filter, SystemTime::now())),
        Err(err) => failure(&err, "/"),
    }
}

/// A fragment's caller is a script: a refused session is a plain 403 it acts on.
fn forbidden_fragment(_: Response) -> Response {
    StatusCode::FORBIDDEN.into_response()
}

#[derive(serde::Deserialize)]
struct Lines {
    lines: Option<usize>,
    /// The receipt's code of the action that sent the browser here (`receipt::Receipt`).
    done: Option<String>,
}

/// The task's view from the shared board; a task the board has not seen yet (just
/// submitted) brings one refresh.
async fn view_of(app: &Arc<App>, id: &str) -> crate::domain::error::Result<ops::TaskView> {
    let find = |board: &ops::Board| {
        board
            .rows
            .iter()
            .find(|row| row.view.id == id)
            .map(|row| row.view.clone())
    };
    if let Some(view) = find(&*board(app).await?) {
        return Ok(view);
    }
    app.live.invalidate();
    find(&*board(app).await?).ok_or_else(|| Error::task_not_found(id))
}

async fn task_parts(
    app: &Arc<App>,
    id: &str,
    lines: usize,
) -> crate::domain::error::Result<(ops::TaskView, TaskExtras)> {
    let view = view_of(app, id).await?;
    let cwd = app.cwd.clone();
    let task_id = id.to_string();
    let ended = view.status.is_terminal();
    let (screen, result, transitions, merged_into) = blocking(move || {
        let merged_into = ops::merged_into(&task_id);
        let screen = ops::tail_screen(&task_id, &cwd, lines).unwrap_or_default();
        let result = ended.then(|| ops::result(&task_id, &cwd).ok()).flatten();
        let transitions = ops::events(&ops::EventScope::new(true, &cwd))
            .map(|(events, _)| events)
            .unwrap_or_default()
            .into_iter()
            .filter(|event| event.task_id == task_id)
            .map(|event| {
                (
                    event.at,
                    event
                        .old_status
                        .map_or("new", |status| status.as_str())
                        .to_string(),
                    event.new_status.as_str().to_string(),
                    event.reason.unwrap_or_default(),
                )
            })
            .collect();
        Ok((screen, result, transitions, merged_into))
    })
    .await?;
    Ok((
        view,
        TaskExtras {
            screen,
            result,
            lines,
            transitions,
            merged_into,
        },
    ))
}

async fn task(
    State(app): Shared,
    Viewer { id, session }: Viewer,
    Query(query): Query<Lines>,
) -> Response {
    let lines = query.lines.unwrap_or(SCREEN_LINES).clamp(1, MOST_LINES);
    // Only a code of the table names a receipt: nothing of the query reaches the page.
    let note = query
        .done
        .as_deref()
        .and_then(Receipt::from_code)
        .map(html::Note::Done);
    match task_parts(&app, &id, lines).await {
        Ok((view, extras)) => page(html::task_page(
            &view,
            &extras,
            (&session.csrf, app.read_only),
            SystemTime::now(),
            note,
        )),
        Err(err) => failure(&err, "/"),
    }
}

async fn task_live(
    State(app): Shared,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(response) = checked_id(&id) {
        return response;
    }
    let session = match session(&app, &headers).await {
        Ok(session) => session,
        Err(response) => return forbidden_fragment(response),
    };
    match task_parts(&app, &id, SCREEN_LINES).await {
        Ok((view, extras)) => page(html::task_fragment(
            &view,
            &extras,
            &session.csrf,
            app.read_only,
            SystemTime::now(),
        )),
        Err(err) => failure(&err, "/"),
    }
}

#[derive(serde::Deserialize)]
struct EventsQuery {
    task: Option<String>,
}

/// Server-sent events: a line per transition (and, for a task page, per growth of its
/// transcript); a keep-alive comment when idle; the session looked at again twice a second.
async fn events(
    State(app): Shared,
    headers: HeaderMap,
    Query(query): Query<EventsQuery>,
) -> Response {
    if let Err(response) = session(&app, &headers).await {
        return forbidden_fragment(response);
    }
    if let Some(task) = &query.task
        && let Err(response) = checked_id(task)
    {
        return response;
    }
    let token = cookie(&headers, SESSION_COOKIE).unwrap_or("").to_string();
    let watch = app.live.subscribe(query.task);
    let stream = futures_util::stream::unfold(
        Stream {
            watch,
            token,
            open: true,
            checked: tokio::time::Instant::now(),
            quiet_since: tokio::time::Instant::now(),
        },
        |mut stream| async move {
            let chunk = stream.next_chunk().await?;
            Some((Ok::<_, std::convert::Infallible>(chunk), stream))
        },
    );
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// One page's event stream: its news, and its session, looked at again at least every
/// [`SESSION_RECHECK`] whether news flows or not (a `--revoke` ends it within that).
struct Stream {
    watch: super::live::Watch,
    token: String,
    open: bool,
    checked: tokio::time::Instant,
    quiet_since: tokio::time::Instant,
}

impl Stream {
    async fn next_chunk(&mut self) -> Option<String> {
        if !self.open {
            return None;
        }
        loop {
            if self.checked.elapsed() >= SESSION_RECHECK {
                self.checked = tokio::time::Instant::now();
                let check = self.token.clone();
                let still = blocking(move || web_access::session(&check))
                    .await
                    .ok()
                    .flatten()
                    .is_some();
                if !still {
                    self.open = false;
                    return Some("data: {\"kind\":\"ended\"}\n\n".to_string());
                }
            }
            if self.quiet_since.elapsed() >= KEEP_ALIVE {
                self.quiet_since = tokio::time::Instant::now();
                return Some(": alive\n\n".to_string());
            }
            let wait = SESSION_RECHECK.saturating_sub(self.checked.elapsed());
            match tokio::time::timeout(wait, self.watch.news.recv()).await {
                Ok(Ok(line)) if self.watch.wants(&line) => {
                    self.quiet_since = tokio::time::Instant::now();
                    return Some(format!("data: {line}\n\n"));
                }
                Ok(Ok(_)) | Err(_) => continue,
                Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {
                    return Some("data: {\"kind\":\"lagged\"}\n\n".to_string());
                }
                Ok(Err(_)) => return None,
            }
        }
    }
}

/// A page of one task: a task id of the CLI's shape and the device's session (else the
/// pairing page).
struct Viewer {
    id: String,
    session: web_access::Session,
}

impl FromRequestParts<Arc<App>> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        app: &Arc<App>,
    ) -> Result<Viewer, Response> {
        let UrlPath(id) = UrlPath::<String>::from_request_parts(parts, app)
            .await
            .map_err(IntoResponse::into_response)?;
        checked_id(&id)?;
        let session = session(app, &parts.headers).await?;
        Ok(Viewer { id, session })
    }
}

/// An action on a task, proven: a task id of the CLI's shape, not `--read-only`, the device's
/// session and its CSRF token in the form.
struct Action {
    id: String,
    session: web_access::Session,
    form: HashMap<String, String>,
}

impl FromRequest<Arc<App>> for Action {
    type Rejection = Response;

    async fn from_request(request: Request, app: &Arc<App>) -> Result<Action, Response> {
        let (mut parts, body) = request.into_parts();
        let UrlPath(id) = UrlPath::<String>::from_request_parts(&mut parts, app)
            .await
            .map_err(IntoResponse::into_response)?;
        checked_id(&id)?;
        let headers = parts.headers.clone();
        let Form(form) =
            Form::<HashMap<String, String>>::from_request(Request::from_parts(parts, body), app)
                .await
                .map_err(IntoResponse::into_response)?;
        let session = authorize(app, &headers, &form).await?;
        Ok(Action { id, session, form })
    }
}

/// Runs one operation on task `id` off the async thread (the shared board is refreshed at
/// the next look). Done: back to the task page (303), its URL naming the receipt by its code,
/// so a reload sends nothing again. Not done: the task page drawn again with the problem and
/// its hint, and what was typed.
async fn run_on_task(
    app: &Arc<App>,
    id: &str,
    session: &web_access::Session,
    operation: impl FnOnce(&str, &std::path::Path) -> Result<Receipt, Problem> + Send + 'static,
) -> Response {
    let cwd = app.cwd.clone();
    let task_id = id.to_string();
    let outcome = tokio::task::spawn_blocking(move || operation(&task_id, &cwd))
        .await
        .unwrap_or_else(
            |err| Err(Error::new(ErrorCode::Internal, format!("worker: {err}")).into()),
        );
    app.live.invalidate();
    match outcome {
        Ok(receipt) => Redirect::to(&format!("/t/{id}?done={}", receipt.code())).into_response(),
        Err(problem) => not_done(app, id, session, problem).await,
    }
}

/// The task page again, the problem said above the task (else, when the page cannot be drawn,
/// the problem alone).
async fn not_done(
    app: &Arc<App>,
    id: &str,
    session: &web_access::Session,
    mut problem: Problem,
) -> Response {
    // A hint written for the command line names the task by a placeholder: this one's id.
    problem.hint = problem.hint.map(|hint| hint.replace("<id>", id));
    match task_parts(app, id, SCREEN_LINES).await {
        Ok((view, extras)) => (
            problem.status,
            Html(html::task_page(
                &view,
                &extras,
                (&session.csrf, app.read_only),
                SystemTime::now(),
                Some(html::Note::Problem(&problem)),
            )),
        )
            .into_response(),
        Err(_) => {
            let mut text = problem.message.clone();
            if let Some(hint) = &problem.hint {
                text.push_str(&format!(" ({hint})"));
            }
            (problem.status, Html(html::message("Not done", &text, "/"))).into_response()
        }
    }
}

async fn steer(State(app): Shared, Action { id, session, form }: Action) -> Response {
    let text = form.get("text").cloned().unwrap_or_default();
    if text.trim().is_empty() {
        let problem = Problem::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::InvalidInput.as_str(),
            "An empty message is not sent",
        )
        .with_hint("type what the child should read");
        return not_done(&app, &id, &session, problem).await;
    }
    run_on_task(&app, &id, &session, move |id, cwd| {
        let steered =
            ops::steer(id, cwd, &text).map_err(|err| Problem::from(err).typed(text.clone()))?;
        Receipt::of_steer(steered.receipt).ok_or_else(|| Problem::of_steer(&steered).typed(text))
    })
    .await
}

async fn cancel(State(app): Shared, Action { id, session, .. }: Action) -> Response {
    run_on_task(&app, &id, &session, |id, cwd| {
        let views = ops::cancel(&[id.to_string()], cwd, ops::DEFAULT_GRACE)?;
        let cancelled = views
            .first()
            .is_none_or(|view| view.status == crate::domain::task::Status::Cancelled);
        Ok(if cancelled {
            Receipt::Cancelled
        } else {
            Receipt::AlreadyEnded
        })
    })
    .await
}

async fn retry(State(app): Shared, Action { id, session, form }: Action) -> Response {
    let step = Step {
        action: format!("retry unguarded {id}"),
        what: format!(
            "start task {id} again with its agent's permission bypass and no sandbox (it runs \
             what it is told, as you)"
        ),
        path: format!("/t/{id}/retry"),
    };
    if let Err(page) = next_attempt_factor(&app, &session, &id, &step, &form).await {
        return page;
    }
    run_on_task(&app, &id, &session, |id, cwd| {
        ops::retry(id, cwd)?;
        Ok(Receipt::Retried)
    })
    .await
}

/// `cuekit handoff` from the task page. The command agent is not offered: it would run the
/// task's objective as a shell line, which the page only allows through `/new`'s checks.
async fn handoff(State(app): Shared, Action { id, session, form }: Action) -> Response {
    let field = |name: &str| {
        form.get(name)
            .map(|value| value.trim().to_string())
            .filter(|value| !value.is_empty())
    };
    let Some(agent) = field("agent") else {
        return refusal(StatusCode::BAD_REQUEST, "choose the agent to hand off to");
    };
    if agent == "command" {
        return refusal(
            StatusCode::FORBIDDEN,
            "the command agent is not handed a task from the page: use `cuekit handoff`",
        );
    }
    let request = ops::HandoffRequest {
        id: id.clone(),
        agent,
        model: field("model"),
        message: field("message"),
    };
    let fields = format!(
        "{}\n{}\n{}",
        request.agent,
        request.model.as_deref().unwrap_or(""),
        request.message.as_deref().unwrap_or("")
    );
    let step = Step {
        action: format!("handoff unguarded {id} {}", hex_digest(&fields)),
        what: format!(
            "hand task {id} to {} with its permission bypass and no sandbox (it runs what it is \
             told, as you), told `{}`",
            request.agent,
            request.message.as_deref().unwrap_or("(a recap only)")
        ),
        path: format!("/t/{id}/handoff"),
    };
    if let Err(page) = next_attempt_factor(&app, &session, &id, &step, &form).await {
        return page;
    }
    run_on_task(&app, &id, &session, move |_, cwd| {
        ops::handoff(&request, cwd)?;
        Ok(Receipt::HandedOff)
    })
    .await
}

/// A hand-off or a retry whose next attempt runs unguarded (`ops::next_attempt_runs_unguarded`:
/// its agent's permission bypass, no sandbox) needs the terminal's code, as `/new` asks for such
/// a submit (verification round, reach V7). A task that cannot be read goes on, for the action
/// to say why.
async fn next_attempt_factor(
    app: &Arc<App>,
    session: &web_access::Session,
    id: &str,
    step: &Step,
    form: &HashMap<String, String>,
) -> Result<(), Response> {
    let (id, cwd) = (id.to_string(), app.cwd.clone());
    if !matches!(
        blocking(move || ops::next_attempt_runs_unguarded(&id, &cwd)).await,
        Ok(true)
    ) {
        return Ok(());
    }
    second_factor(app, session, step, form)
}

/// Tool kinds whose allowing asks twice: all but those that only read, edit, search, think or
/// fetch. An unknown kind (none found on an interactive dialog's screen, a tool of kind
/// `other`) asks too: fail closed (issue 48, F18).
fn needs_second_confirmation(kind: Option<crate::domain::acp::policy::ToolKind>) -> bool {
    use crate::domain::acp::policy::ToolKind;
    !matches!(
        kind,
        Some(
            ToolKind::Read | ToolKind::Edit | ToolKind::Search | ToolKind::Think | ToolKind::Fetch
        )
    )
}

/// A submit of an agent that would run whatever it is told as the user (its permission bypass,
/// no sandbox: `ops::runs_unguarded`) needs the terminal's code, as the `command` agent does
/// (issue 48, F16). A request that does not resolve goes on, for the submit to say why.
async fn unguarded_factor(
    app: &Arc<App>,
    session: &web_access::Session,
    request: &ops::SubmitRequest,
    form: &HashMap<String, String>,
) -> Result<(), Response> {
    if request.agent.as_deref() == Some("command") {
        return Ok(());
    }
    let (asked, cwd) = (request.clone(), app.cwd.clone());
    if !matches!(
        blocking(move || ops::runs_unguarded(asked, &cwd)).await,
        Ok(true)
    ) {
        return Ok(());
    }
    let agent = request.agent.as_deref().unwrap_or("the default agent");
    let fields = format!(
        "{agent}\n{}\n{:?}\n{:?}\n{}",
        request.model.as_deref().unwrap_or(""),
        request.mode,
        request.worktree,
        request.objective
    );
    let step = Step {
        action: format!("submit unguarded {}", hex_digest(&fields)),
        what: format!(
            "start {agent} with its permission bypass and no sandbox (it runs what it is told, as you), told `{}`",
            request.objective
        ),
        path: "/new".into(),
    };
    second_factor(app, session, &step, form)
}

async fn answer(State(app): Shared, action: Action) -> Response {
    let Action { id, session, form } = action;
    let word = form.get("answer").map(String::as_str).unwrap_or("");
    let (answer, receipt) = match word {
        "allow" => (Answer::Allow, Receipt::Allowed),
        "allow_always" => (Answer::AllowAlways, Receipt::AllowedAlways),
        "reject" => (Answer::Reject, Receipt::Rejected),
        _ => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "answer: allow, allow_always or reject",
            );
        }
    };
    app.live.invalidate();
    let view = match view_with_its_request(&app, &id).await {
        Ok(view) => view,
        Err(err) => return failure(&err, "/"),
    };
    let Some(request) = view.request else {
        let problem = Problem::new(
            StatusCode::CONFLICT,
            "no_request",
            "It waits on no permission request: nothing to answer",
        );
        return not_done(&app, &id, &session, problem).await;
    };
    let tool = form.get("tool").map(String::as_str).unwrap_or("");
    if tool != request.tool.id {
        let problem = Problem::new(
            StatusCode::CONFLICT,
            "request_changed",
            "The request changed since the page was drawn",
        )
        .with_hint("read what it asks now, below, and answer again");
        return not_done(&app, &id, &session, problem).await;
    }
    if word != "reject" && needs_second_confirmation(request.tool.kind) {
        let title = request
            .tool
            .title
            .clone()
            .unwrap_or(request.tool.id.clone());
        let kind = request.tool.kind.map_or_else(
            || "unknown-kind".into(),
            |kind| format!("{kind:?}").to_lowercase(),
        );
        let what = format!("{word} the {kind} tool \"{title}\" of {id}");
        let step = Step {
            action: format!("answer {id} {tool} {word}"),
            what,
            path: format!("/t/{id}/answer"),
        };
        if let Err(response) = second_factor(&app, &session, &step, &form) {
            return response;
        }
    }
    let device = session.device.clone();
    run_on_task(&app, &id, &session, move |id, cwd| {
        let by = format!("device {device}");
        ops::approve_by(id, cwd, answer, Some(&by))?;
        Ok(receipt)
    })
    .await
}

/// The task's view for an answer. An answer names a request the page showed; a TUI redrawing
/// its dialog can be captured mid-write, before its options are drawn, and then the screen
/// shows no dialog at all (the task reads as running) or a dialog whose request was not read.
/// Twice in loaded runs Allow was refused "no permission request" under a page that showed
/// one. So a running interactive task with no request read is looked at again (a fresh
/// capture: the board is invalidated), as `approve` looks, before the answer is refused.
async fn view_with_its_request(
    app: &Arc<App>,
    id: &str,
) -> crate::domain::error::Result<ops::TaskView> {
    use crate::domain::permission_screen::{DIALOG_LOOK_GAP, LOOKS_FOR_A_DIALOG};
    let mut view = view_of(app, id).await?;
    for _ in 1..LOOKS_FOR_A_DIALOG {
        let on_screen = view.mode == Some(crate::domain::spec::Mode::Interactive)
            && matches!(
                view.status,
                crate::domain::status::Status::Running
                    | crate::domain::status::Status::InputRequired
            );
        if view.request.is_some() || !on_screen {
            break;
        }
        tokio::time::sleep(DIALOG_LOOK_GAP).await;
        app.live.invalidate();
        view = view_of(app, id).await?;
    }
    Ok(view)
}

async fn merge_form(State(app): Shared, Viewer { id, session }: Viewer) -> Response {
    let view = match view_of(&app, &id).await {
        Ok(view) => view,
        Err(err) => return failure(&err, "/"),
    };
    let cwd = app.cwd.clone();
    let task_id = id.clone();
    let (stat, review) = match blocking(move || ops::diff(&task_id, &cwd, false)).await {
        Ok(diff) => {
            // The merge's review by the files' names (it checks their modes as well, and
            // refuses until the box is ticked when any needs review).
            (files_text(&diff), ops::review_by_names(&diff))
        }
        Err(err) => (
            format!("error[{}]: {}", err.code.as_str(), err.message),
            Vec::new(),
        ),
    };
    page(html::merge_page(
        &id,
        &session.csrf,
        &view.conflicts,
        &review,
        &stat,
    ))
}

/// A diff's files, one line each, under its totals.
fn files_text(diff: &ops::TaskDiff) -> String {
    let mut text = format!("{}\n", diff.stat);
    for file in &diff.files {
        text.push_str(&format!(
            "{} {} +{} -{}\n",
            file.status,
            file.path,
            file.insertions.map_or("?".into(), |n| n.to_string()),
            file.deletions.map_or("?".into(), |n| n.to_string())
        ));
    }
    for path in &diff.submodules {
        text.push_str(&format!(
            "submodule {path} changed: its commits or files are not in this diff, and a merge refuses it\n"
        ));
    }
    text
}

async fn diff(State(app): Shared, Viewer { id, .. }: Viewer) -> Response {
    let cwd = app.cwd.clone();
    let task_id = id.clone();
    match blocking(move || ops::diff(&task_id, &cwd, true)).await {
        Ok(diff) => page(html::diff_page(
            &id,
            &files_text(&diff),
            diff.patch.as_deref().unwrap_or(""),
        )),
        Err(err) => failure(&err, &format!("/t/{id}")),
    }
}

async fn merge(State(app): Shared, action: Action) -> Response {
    let Action { id, session, form } = action;
    let reviewed = form.get("reviewed").is_some_and(|yes| yes == "yes");
    if reviewed {
        let step = Step {
            action: format!("merge {id} reviewed"),
            what: format!("merge {id}, with the files that need review"),
            path: format!("/t/{id}/merge"),
        };
        if let Err(response) = second_factor(&app, &session, &step, &form) {
            return response;
        }
    }
    run_on_task(&app, &id, &session, move |id, cwd| {
        let strategy = ops::MergeStrategy::Merge;
        let merged = ops::merge(id, cwd, strategy, None, reviewed).map_err(merge_problem)?;
        Ok(if merged.already_merged {
            Receipt::AlreadyMerged
        } else {
            Receipt::Merged
        })
    })
    .await
}

/// A merge's error on the page: the review it waits for is ticked on the merge page (the
/// CLI's `--yes` is not the page's word).
fn merge_problem(err: Error) -> Problem {
    let review = err.code == ErrorCode::MergeReview;
    let problem = Problem::from(err);
    if review {
        problem.with_hint(
            "read the diff, then merge again and tick \"I reviewed the files that run code or \
             set policy\"; nothing was changed",
        )
    } else {
        problem
    }
}

async fn submit_form(State(app): Shared, headers: HeaderMap) -> Response {
    let session = match session(&app, &headers).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    page(html::submit_page(&session.csrf, app.allow_commands, None))
}

async fn submit(
    State(app): Shared,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let session = match authorize(&app, &headers, &form).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let field = |name: &str| {
        form.get(name)
            .map(|value| value.trim().to_string())
            .filter(|value| !value.is_empty())
    };
    let agent = field("agent");
    if agent.as_deref() == Some("command") && !app.allow_commands {
        return page(html::submit_page_again(
            &session.csrf,
            false,
            Some((
                "the command agent runs shell as you",
                Some("start `cuekit serve --allow-commands` to offer it"),
            )),
            &form,
        ));
    }
    if agent.as_deref() == Some("command") {
        let line = field("objective").unwrap_or_default();
        let step = Step {
            action: format!("submit command {}", hex_digest(&line)),
            what: format!("run the shell line `{line}` as you"),
            path: "/new".into(),
        };
        if let Err(response) = second_factor(&app, &session, &step, &form) {
            return response;
        }
    }
    let Some(objective) = field("objective") else {
        return page(html::submit_page_again(
            &session.csrf,
            app.allow_commands,
            Some((
                "an objective is needed",
                Some("say what the agent should do"),
            )),
            &form,
        ));
    };
    let mode = match field("mode").as_deref() {
        None => None,
        Some("interactive") => Some(crate::domain::spec::Mode::Interactive),
        Some("batch") => Some(crate::domain::spec::Mode::Batch),
        Some("acp") => Some(crate::domain::spec::Mode::Acp),
        Some(_) => return refusal(StatusCode::BAD_REQUEST, "mode: interactive, batch or acp"),
    };
    // The command agent (only with --allow-commands) runs the objective as a shell line.
    let argv = if agent.as_deref() == Some("command") {
        vec!["sh".to_string(), "-c".to_string(), objective.clone()]
    } else {
        Vec::new()
    };
    // Every field named (tests/integration/structure.rs): the page's form offers the objective,
    // agent, model, mode and worktree; each option it does not offer says so, so that a new
    // submit option is a decision here, not a silent default.
    let request = ops::SubmitRequest {
        agent,
        argv,
        objective,
        model: field("model"),
        mode,
        worktree: form.get("worktree").map(|yes| yes == "yes"),
        // A browser asks on the user's behalf, like an MCP client: it may tighten the
        // user's permission policy, never loosen it.
        asked_by: ops::Asker::Delegate,
        // Not on the form: the user's config and the defaults decide.
        context: None,
        constraints: Vec::new(),
        approval_mode: None,
        dangerously_skip_permissions: None,
        // The project serve was started in.
        cwd: None,
        timeout: None,
        stream_events: None,
        resume_from: None,
        provider_profile: None,
        role: None,
        team: None,
        // Set by `ops::race` only.
        race: None,
        dry_run: false,
        base: None,
        branch: None,
        id: None,
        once: None,
        host: None,
        scheduling: Default::default(),
        budget: None,
        sandbox: Default::default(),
        wake_parent: false,
        check: None,
    };
    if let Err(response) = unguarded_factor(&app, &session, &request, &form).await {
        return response;
    }
    let cwd = app.cwd.clone();
    let outcome = blocking(move || ops::submit(request, &cwd)).await;
    app.live.invalidate();
    match outcome {
        Ok(ops::SubmitOutcome::Submitted(view)) => {
            Redirect::to(&format!("/t/{}", view.id)).into_response()
        }
        Ok(ops::SubmitOutcome::DryRun { .. }) => Redirect::to("/").into_response(),
        // The error in words with its hint, and the form as it was typed.
        Err(err) => page(html::submit_page_again(
            &session.csrf,
            app.allow_commands,
            Some((&err.message, err.hint.as_deref())),
            &form,
        )),
    }
}
