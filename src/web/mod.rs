//! `cuekit serve`: every task on a web page a phone can use — look, steer, answer, cancel,
//! retry, merge, submit. A face like `cli/`, `mcp/` and `top/`: it calls operations and holds
//! no task logic; who may use it is `ops::web_access`'s.
//!
//! Async lives here only: axum on a current-thread tokio runtime, each operation on the
//! blocking pool. Every request's `Host` must name the bound address (against DNS
//! rebinding); every response carries a strict CSP (scripts from `/app.js` only), `DENY` for
//! framing and `nosniff`; every state-changing request needs the device's session cookie,
//! its CSRF token and no foreign `Origin`.

mod html;
mod live;
mod palette;
mod routes;
mod tls;

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::domain::error::{Error, ErrorCode, Result};

pub use live::TICK;

/// The default address: loopback only.
pub const DEFAULT_BIND: &str = "127.0.0.1:8377";

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `ADDR:PORT` or `unix:PATH`.
    pub bind: Option<String>,
    pub read_only: bool,
    pub insecure_lan: bool,
    pub allow_commands: bool,
    /// The name a proxy in front serves this under (`tailscale serve`): an allowed `Host`.
    pub public_host: Option<String>,
    /// Print a QR code of the pairing URL with the code in it.
    pub qr: bool,
    /// Serve over TLS with this PEM certificate chain and private key.
    pub tls: Option<(PathBuf, PathBuf)>,
}

/// Where to listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bind {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// Reads `--bind` and applies the rule: a non-loopback address is served only over TLS
/// (`--tls-cert`/`--tls-key`, or a tunnel's), or with `--insecure-lan`.
pub fn parse_bind(text: Option<&str>, tls: bool, insecure_lan: bool) -> Result<Bind> {
    let text = text.unwrap_or(DEFAULT_BIND);
    if let Some(path) = text.strip_prefix("unix:") {
        if path.is_empty() {
            return Err(Error::invalid_input("--bind unix: needs a path"));
        }
        return Ok(Bind::Unix(PathBuf::from(path)));
    }
    let text = match text.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}"),
        None => text.to_string(),
    };
    let addr: SocketAddr = text.parse().map_err(|_| {
        Error::invalid_input(format!("--bind {text}: not ADDR:PORT or unix:PATH")).with_hint(
            "e.g. --bind 127.0.0.1:8377, --bind [::1]:8377, --bind unix:/run/user/1000/cuekit.sock",
        )
    })?;
    if !addr.ip().is_loopback() && !tls && !insecure_lan {
        return Err(Error::invalid_input(format!(
            "--bind {addr} is not a loopback address: without TLS every device on the network could read the session cookie and the pages"
        ))
        .with_hint(
            "give it a certificate (--tls-cert FILE --tls-key FILE), or keep the default bind and reach it \
             through an SSH tunnel (`ssh -L 8377:127.0.0.1:8377 HOST`) or a tailnet's HTTPS \
             (`tailscale serve --bg 8377`); `--insecure-lan` serves it anyway",
        ));
    }
    Ok(Bind::Tcp(addr))
}

/// The `Host` values a request may carry (against DNS rebinding: a page of another name that
/// resolves to this address must not reach it): the bound address; for a loopback address or a
/// Unix socket, `localhost`, `127.0.0.1` or `[::1]` on any port (an SSH tunnel picks its own);
/// and `--public-host`, the name a proxy in front serves (`tailscale serve`).
#[derive(Debug, Clone)]
pub struct Hosts {
    exact: Vec<String>,
    any_loopback_port: bool,
    /// Bound to every address (`0.0.0.0`, `::`): any address of this machine names it, and an
    /// IP address, unlike a name, cannot be rebound.
    any_address_on: Option<u16>,
}

impl Hosts {
    pub fn for_addr(addr: SocketAddr, public: Option<&str>) -> Hosts {
        let port = addr.port();
        let mut exact = vec![match addr.ip() {
            IpAddr::V4(ip) => format!("{ip}:{port}"),
            IpAddr::V6(ip) => format!("[{ip}]:{port}"),
        }];
        exact.extend(public.map(str::to_ascii_lowercase));
        Hosts {
            exact,
            any_loopback_port: addr.ip().is_loopback() || addr.ip().is_unspecified(),
            any_address_on: addr.ip().is_unspecified().then_some(port),
        }
    }

    pub fn for_unix(public: Option<&str>) -> Hosts {
        Hosts {
            exact: public.map(str::to_ascii_lowercase).into_iter().collect(),
            any_loopback_port: true,
            any_address_on: None,
        }
    }

    pub fn allows(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        if self.exact.contains(&host) {
            return true;
        }
        if let Some(port) = self.any_address_on
            && host
                .parse::<SocketAddr>()
                .is_ok_and(|addr| addr.port() == port)
        {
            return true;
        }
        if !self.any_loopback_port {
            return false;
        }
        let name = match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host.as_str(),
        };
        matches!(name, "localhost" | "127.0.0.1" | "[::1]")
    }
}

/// Whether an `Origin` header names the page's own origin: the scheme and the `Host` the
/// request came with (already checked by [`Hosts::allows`]).
pub fn same_origin(origin: &str, host: &str) -> bool {
    let origin = origin.to_ascii_lowercase();
    let host = host.to_ascii_lowercase();
    origin == format!("http://{host}") || origin == format!("https://{host}")
}

/// Runs the server until it is killed: prints the URL and a new pairing code first.
pub fn run(options: &Options, cwd: &Path) -> Result<()> {
    let bind = parse_bind(
        options.bind.as_deref(),
        options.tls.is_some(),
        options.insecure_lan,
    )?;
    if let (Bind::Unix(_), Some(_)) = (&bind, &options.tls) {
        return Err(Error::invalid_input(
            "--tls-cert serves TCP: a Unix socket is reached through a tunnel that brings its own",
        ));
    }
    // The files are read before anything listens: a bad one is said at once.
    let acceptor = match &options.tls {
        Some((cert, key)) => Some(tls::acceptor(cert, key)?),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| Error::new(ErrorCode::Io, format!("cannot start the server: {err}")))?;
    runtime.block_on(serve(bind, acceptor, options.clone(), cwd.to_path_buf()))
}

async fn serve(
    bind: Bind,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    options: Options,
    cwd: PathBuf,
) -> Result<()> {
    let code = crate::ops::web_access::new_code()?;
    let live = live::Live::new(cwd.clone());
    let read_only = options.read_only;
    let public = options.public_host.clone();
    let qr = options.qr;
    let announce = |url: &str| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "cuekit serve: {url}");
        let _ = writeln!(
            out,
            "pairing code: {code} (open {url}/pair; valid 10 minutes, once; 5 wrong tries burn it)"
        );
        if read_only {
            let _ = writeln!(out, "read-only: every action is refused");
        }
        if qr {
            let drawn = if url.starts_with("http") {
                qr_code(&format!("{url}/pair?code={code}"))
            } else {
                "(no QR code for a Unix socket: the tunnel names the URL)".to_string()
            };
            let _ = writeln!(out, "{drawn}");
            if let Some(note) = loopback_note(url) {
                let _ = writeln!(out, "{note}");
            }
        }
        let _ = out.flush();
    };
    match bind {
        Bind::Tcp(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(|err| {
                Error::new(ErrorCode::Io, format!("cannot listen on {addr}: {err}"))
            })?;
            let local = listener
                .local_addr()
                .map_err(|err| Error::new(ErrorCode::Io, format!("{err}")))?;
            let app = routes::App::new(
                options,
                cwd,
                Hosts::for_addr(local, public.as_deref()),
                Arc::clone(&live),
            );
            live.start_watching();
            let scheme = if acceptor.is_some() { "https" } else { "http" };
            let shown = match local.ip() {
                IpAddr::V6(ip) => format!("{scheme}://[{ip}]:{}", local.port()),
                IpAddr::V4(ip) => format!("{scheme}://{ip}:{}", local.port()),
            };
            announce(&shown);
            let served = match acceptor {
                Some(acceptor) => {
                    axum::serve(tls::listen(listener, acceptor)?, routes::router(app)).await
                }
                None => axum::serve(listener, routes::router(app)).await,
            };
            served.map_err(|err| Error::new(ErrorCode::Io, format!("server: {err}")))
        }
        Bind::Unix(path) => {
            if path.exists() {
                return Err(Error::new(
                    ErrorCode::InvalidState,
                    format!("{} exists already", path.display()),
                )
                .with_hint("remove it, or choose another path"));
            }
            let listener = tokio::net::UnixListener::bind(&path)
                .map_err(|err| Error::io("listen on", &path, err))?;
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .map_err(|err| Error::io("restrict", &path, err))?;
            }
            let app = routes::App::new(
                options,
                cwd,
                Hosts::for_unix(public.as_deref()),
                Arc::clone(&live),
            );
            live.start_watching();
            announce(&format!("unix:{}", path.display()));
            axum::serve(listener, routes::router(app))
                .await
                .map_err(|err| Error::new(ErrorCode::Io, format!("server: {err}")))
        }
    }
}

/// `text` as a QR code drawn with half blocks, light on dark as a terminal shows it.
/// What `--qr` says under a code for a loopback URL: a phone scanning it opens its own
/// loopback, never this machine; how to reach this one instead (docs/guides/web.md).
fn loopback_note(url: &str) -> Option<String> {
    let host = url.split_once("://")?.1;
    let loopback =
        host.starts_with("127.") || host.starts_with("[::1]") || host.starts_with("localhost");
    loopback.then(|| {
        let port = host.rsplit_once(':').map_or("8377", |(_, port)| port);
        format!(
            "note: {url} is a loopback address: a phone that scans this code opens itself, not this \
             machine. Tunnel to it (`ssh -N -L {port}:127.0.0.1:{port} you@this-machine`, then open \
             http://localhost:{port}/pair there; or `tailscale serve --bg {port}` with \
             --public-host NAME), or serve a LAN address over TLS (--bind 0.0.0.0:{port} \
             --tls-cert F --tls-key F); see docs/guides/web.md"
        )
    })
}

fn qr_code(text: &str) -> String {
    use qrcode::render::unicode::Dense1x2;
    match qrcode::QrCode::new(text.as_bytes()) {
        Ok(code) => code
            .render::<Dense1x2>()
            .dark_color(Dense1x2::Light)
            .light_color(Dense1x2::Dark)
            .build(),
        Err(err) => format!("(no QR code: {err})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_binds_and_unix_sockets_are_served() {
        assert_eq!(
            parse_bind(None, false, false).unwrap(),
            Bind::Tcp("127.0.0.1:8377".parse().unwrap())
        );
        assert_eq!(
            parse_bind(Some("localhost:9000"), false, false).unwrap(),
            Bind::Tcp("127.0.0.1:9000".parse().unwrap())
        );
        assert!(parse_bind(Some("[::1]:9000"), false, false).is_ok());
        assert_eq!(
            parse_bind(Some("unix:/tmp/s"), false, false).unwrap(),
            Bind::Unix("/tmp/s".into())
        );
    }

    #[test]
    fn a_lan_bind_needs_tls_or_the_insecure_flag() {
        let refused = parse_bind(Some("0.0.0.0:8377"), false, false).unwrap_err();
        assert!(refused.hint.unwrap().contains("tailscale serve"));
        assert!(parse_bind(Some("192.168.1.5:8377"), false, false).is_err());
        assert!(parse_bind(Some("0.0.0.0:8377"), false, true).is_ok());
        assert!(parse_bind(Some("0.0.0.0:8377"), true, false).is_ok(), "TLS");
        assert!(parse_bind(Some("nonsense"), true, true).is_err());
    }

    #[test]
    fn only_the_bound_host_is_served() {
        let hosts = Hosts::for_addr("127.0.0.1:8377".parse().unwrap(), None);
        assert!(hosts.allows("127.0.0.1:8377"));
        assert!(hosts.allows("localhost:8377"));
        assert!(hosts.allows("localhost:9000"), "a tunnel's own port");
        assert!(!hosts.allows("evil.example:8377"));
        assert!(!hosts.allows("127.0.0.1.evil.example:8377"));
        let lan = Hosts::for_addr("192.168.1.5:8377".parse().unwrap(), None);
        assert!(lan.allows("192.168.1.5:8377"));
        assert!(!lan.allows("192.168.1.5:8378"));
        assert!(!lan.allows("localhost:8377"));
        let public = Hosts::for_addr(
            "127.0.0.1:8377".parse().unwrap(),
            Some("box.tail1234.ts.net"),
        );
        assert!(public.allows("box.tail1234.ts.net"));
        assert!(!public.allows("other.tail1234.ts.net"));
        let every = Hosts::for_addr("0.0.0.0:8377".parse().unwrap(), None);
        assert!(every.allows("192.168.1.5:8377"));
        assert!(every.allows("[fe80::1]:8377"));
        assert!(!every.allows("192.168.1.5:8378"));
        assert!(!every.allows("box.example:8377"), "a name can be rebound");
        let unix = Hosts::for_unix(None);
        assert!(unix.allows("localhost:9999"));
        assert!(unix.allows("127.0.0.1"));
        assert!(!unix.allows("evil.example:9999"));
    }

    #[test]
    fn a_loopback_url_gets_a_note_that_a_phone_cannot_reach_it() {
        let note = loopback_note("http://127.0.0.1:8377").unwrap();
        assert!(note.contains("a phone") && note.contains("ssh -N -L 8377:127.0.0.1:8377"));
        assert!(loopback_note("http://[::1]:9000").unwrap().contains("9000"));
        assert_eq!(loopback_note("https://192.168.1.5:8377"), None);
        assert_eq!(loopback_note("unix:/run/user/1000/cuekit.sock"), None);
    }

    #[test]
    fn the_qr_code_is_drawn_in_half_blocks() {
        let drawn = qr_code("http://127.0.0.1:8377/pair?code=1234-5678");
        assert!(drawn.lines().count() > 10, "{drawn}");
        assert!(drawn.contains('▀') || drawn.contains('▄'), "{drawn}");
    }

    #[test]
    fn an_origin_must_be_the_pages_own() {
        assert!(same_origin("http://127.0.0.1:8377", "127.0.0.1:8377"));
        assert!(same_origin("https://box.ts.net", "box.ts.net"));
        assert!(!same_origin("http://localhost:9000", "localhost:8377"));
        assert!(!same_origin("null", "localhost:8377"));
        assert!(!same_origin("http://evil.example", "127.0.0.1:8377"));
    }
}
