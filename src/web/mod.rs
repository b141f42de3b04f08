//! `cuekit serve`: every task on a web page a phone can use — look, steer, answer, cancel,
//! retry, merge, submit. A face like `cli/`, `mcp/` and `top/`: it calls operations and holds
//! no task logic; who may use it is `ops::web_access`'s.
//!
//! Async lives here only: axum on a current-thread tokio runtime, each operation on the
//! blocking pool. Every request's `Host` must name the bound address (against DNS
//! rebinding); every response carries a strict CSP (scripts from `/app.js` only), `DENY` for
//! framing and `nosniff`; every state-changing request needs the device's session cookie,
//! its CSRF token, no foreign `Origin`, and a signature by the device's key over a single-use
//! nonce of this run (`signed`; the event stream's start too).

mod factor;
mod html;
mod live;
mod nonce;
mod palette;
mod receipt;
mod routes;
pub mod signed;
mod tls;

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::domain::error::{Error, ErrorCode, Result};

/// Linux's errno for an address family the kernel does not offer (an IPv6 address where IPv6
/// is off): `std::io::ErrorKind` has no name for it.
const EAFNOSUPPORT: i32 = 97;

pub use live::TICK;

/// The default address: loopback only, both families (127.0.0.1 and ::1).
pub const DEFAULT_BIND: &str = "localhost:8377";

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `ADDR:PORT`, `localhost:PORT` or `unix:PATH`.
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
    /// `localhost:PORT`: 127.0.0.1 and ::1 (where the machine has it) on one port, served
    /// under this install's `*.localhost` name.
    Localhost(u16),
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
    if let Some(port) = text.strip_prefix("localhost:") {
        let port = port.parse().map_err(|_| {
            Error::invalid_input(format!("--bind {text}: the port is not a number"))
                .with_hint("e.g. --bind localhost:8377")
        })?;
        return Ok(Bind::Localhost(port));
    }
    let addr: SocketAddr = text.parse().map_err(|_| {
        Error::invalid_input(format!("--bind {text}: not ADDR:PORT or unix:PATH")).with_hint(
            "e.g. --bind localhost:8377, --bind 127.0.0.1:8377, --bind [::1]:8377, --bind unix:/run/user/1000/cuekit.sock",
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

/// The `Host` values a request may carry (against DNS rebinding, and against a name that
/// reaches another server: `localhost` resolves to ::1 as well as 127.0.0.1): each bound
/// address with its port; for `localhost:PORT` (both families bound) also `localhost:PORT`
/// and this install's `*.localhost` name on that port; for a Unix socket, a tunnel's
/// `localhost`, `127.0.0.1`, `[::1]` or the name on any port; and `--public-host`, the name a
/// proxy in front serves (`tailscale serve`).
#[derive(Debug, Clone)]
pub struct Hosts {
    exact: Vec<String>,
    /// Loopback names on any port (a Unix socket: the tunnel picks the port).
    any_loopback_port: Option<String>,
    /// Bound to every address (`0.0.0.0`, `::`): any address of this machine names it, and an
    /// IP address, unlike a name, cannot be rebound.
    any_address_on: Option<u16>,
}

fn host_of(addr: SocketAddr) -> String {
    match addr.ip() {
        IpAddr::V4(ip) => format!("{ip}:{}", addr.port()),
        IpAddr::V6(ip) => format!("[{ip}]:{}", addr.port()),
    }
}

impl Hosts {
    pub fn for_addr(addr: SocketAddr, public: Option<&str>) -> Hosts {
        let mut exact = vec![host_of(addr)];
        exact.extend(public.map(str::to_ascii_lowercase));
        Hosts {
            exact,
            any_loopback_port: None,
            any_address_on: addr.ip().is_unspecified().then_some(addr.port()),
        }
    }

    /// `localhost:PORT` with both loopback addresses held (`addrs`), served under `name`.
    pub fn for_localhost(
        name: &str,
        addrs: &[SocketAddr],
        port: u16,
        public: Option<&str>,
    ) -> Hosts {
        let mut exact: Vec<String> = addrs.iter().map(|addr| host_of(*addr)).collect();
        exact.push(format!("localhost:{port}"));
        exact.push(format!("{}:{port}", name.to_ascii_lowercase()));
        exact.extend(public.map(str::to_ascii_lowercase));
        Hosts {
            exact,
            any_loopback_port: None,
            any_address_on: None,
        }
    }

    pub fn for_unix(name: &str, public: Option<&str>) -> Hosts {
        Hosts {
            exact: public.map(str::to_ascii_lowercase).into_iter().collect(),
            any_loopback_port: Some(name.to_ascii_lowercase()),
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
        let Some(own) = &self.any_loopback_port else {
            return false;
        };
        let name = match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host.as_str(),
        };
        matches!(name, "localhost" | "127.0.0.1" | "[::1]") || name == own
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
    let live = live::Live::new(cwd.clone());
    let read_only = options.read_only;
    let public = options.public_host.clone();
    let qr = options.qr;
    // The code is made once the addresses are ours: a serve refused for a taken port leaves
    // the running one's code alone.
    let announce = |url: &str| -> Result<()> {
        let code = crate::ops::web_access::new_code()?;
        crate::ops::web_access::note_served_url(url)?;
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
        Ok(())
    };
    match bind {
        Bind::Tcp(_) | Bind::Localhost(_) => {
            let (listeners, hosts, shown) =
                listen_tcp(&bind, public.as_deref(), acceptor.is_some())?;
            let app = routes::App::new(options, cwd, hosts, Arc::clone(&live));
            live.start_watching();
            announce(&shown)?;
            let router = routes::router(app);
            let mut served = tokio::task::JoinSet::new();
            for listener in listeners {
                let router = router.clone();
                let listener = tokio::net::TcpListener::from_std(listener)
                    .map_err(|err| Error::new(ErrorCode::Io, format!("cannot listen: {err}")))?;
                match &acceptor {
                    Some(acceptor) => {
                        let listener = tls::listen(listener, acceptor.clone())?;
                        served.spawn(async move { axum::serve(listener, router).await });
                    }
                    None => {
                        served.spawn(async move { axum::serve(listener, router).await });
                    }
                }
            }
            match served.join_next().await {
                Some(Ok(Err(err))) => Err(Error::new(ErrorCode::Io, format!("server: {err}"))),
                Some(Err(err)) => Err(Error::new(ErrorCode::Io, format!("server: {err}"))),
                _ => Ok(()),
            }
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
            let name = crate::ops::web_access::host_name()?;
            let app = routes::App::new(
                options,
                cwd,
                Hosts::for_unix(&name, public.as_deref()),
                Arc::clone(&live),
            );
            live.start_watching();
            announce(&format!("unix:{}", path.display()))?;
            axum::serve(listener, routes::router(app))
                .await
                .map_err(|err| Error::new(ErrorCode::Io, format!("server: {err}")))
        }
    }
}

/// The listeners of a TCP bind, the `Host`s they answer and the URL to print. Every address
/// the bind names is ours or nothing is served: `localhost:PORT` holds 127.0.0.1 and ::1
/// (a squatter on `[::1]:PORT` would get every browser that resolves `localhost` or the
/// install's name to ::1 first), and a port held on any of them is refused naming the holder.
fn listen_tcp(
    bind: &Bind,
    public: Option<&str>,
    tls: bool,
) -> Result<(Vec<std::net::TcpListener>, Hosts, String)> {
    let scheme = if tls { "https" } else { "http" };
    match bind {
        Bind::Localhost(port) => {
            let name = crate::ops::web_access::host_name()?;
            let (listeners, port) = listen_localhost(*port)?;
            let addrs: Vec<SocketAddr> = listeners
                .iter()
                .filter_map(|listener| listener.local_addr().ok())
                .collect();
            let hosts = Hosts::for_localhost(&name, &addrs, port, public);
            Ok((listeners, hosts, format!("{scheme}://{name}:{port}")))
        }
        Bind::Tcp(addr) => {
            let listener = listen_one(*addr)?;
            let local = listener
                .local_addr()
                .map_err(|err| Error::new(ErrorCode::Io, format!("{err}")))?;
            let shown = format!("{scheme}://{}", host_of(local));
            Ok((vec![listener], Hosts::for_addr(local, public), shown))
        }
        Bind::Unix(_) => unreachable!("a Unix socket is not TCP"),
    }
}

/// 127.0.0.1:PORT and [::1]:PORT (unless the machine has no ::1). Port 0: a port free on
/// both, tried a few times.
fn listen_localhost(port: u16) -> Result<(Vec<std::net::TcpListener>, u16)> {
    let v4 = IpAddr::from([127, 0, 0, 1]);
    let v6 = IpAddr::from(std::net::Ipv6Addr::LOCALHOST);
    let mut tries = 0;
    loop {
        tries += 1;
        let first = listen_one(SocketAddr::new(v4, port))?;
        let chosen = first
            .local_addr()
            .map_err(|err| Error::new(ErrorCode::Io, format!("{err}")))?
            .port();
        match std::net::TcpListener::bind(SocketAddr::new(v6, chosen)) {
            Ok(second) => {
                second.set_nonblocking(true).map_err(|err| {
                    Error::new(ErrorCode::Io, format!("cannot listen on [::1]: {err}"))
                })?;
                return Ok((vec![first, second], chosen));
            }
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::AddrNotAvailable | std::io::ErrorKind::Unsupported
                ) || err.raw_os_error() == Some(EAFNOSUPPORT) =>
            {
                // No ::1 here: nobody can listen there, and a browser falls back to 127.0.0.1.
                return Ok((vec![first], chosen));
            }
            Err(err) if port == 0 && tries < 20 && err.kind() == std::io::ErrorKind::AddrInUse => {
                continue;
            }
            Err(err) => return Err(listen_error(SocketAddr::new(v6, chosen), &err)),
        }
    }
}

fn listen_one(addr: SocketAddr) -> Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind(addr).map_err(|err| listen_error(addr, &err))?;
    listener
        .set_nonblocking(true)
        .map_err(|err| Error::new(ErrorCode::Io, format!("cannot listen on {addr}: {err}")))?;
    Ok(listener)
}

/// A bind's failure; a port in use names its holder where /proc shows it.
fn listen_error(addr: SocketAddr, err: &std::io::Error) -> Error {
    if err.kind() != std::io::ErrorKind::AddrInUse {
        return Error::new(ErrorCode::Io, format!("cannot listen on {addr}: {err}"));
    }
    let holders = crate::ops::web_access::port_holders(addr.ip(), addr.port());
    let by = if holders.is_empty() {
        String::from(" (its holder is not visible here)")
    } else {
        format!(" by {}", holders.join("; "))
    };
    Error::new(
        ErrorCode::PortTaken,
        format!(
            "port {} is taken on {}{by}: whatever answers there would receive this server's \
             browsers, so nothing is served",
            addr.port(),
            addr.ip()
        ),
    )
    .with_hint(format!(
        "stop that process, or choose another port (--bind localhost:PORT); `ss -ltnp 'sport = :{}'` shows it",
        addr.port()
    ))
}

/// `text` as a QR code drawn with half blocks, light on dark as a terminal shows it.
/// What `--qr` says under a code for a loopback URL: a phone scanning it opens its own
/// loopback, never this machine; how to reach this one instead (docs/guides/web.md).
fn loopback_note(url: &str) -> Option<String> {
    let host = url.split_once("://")?.1;
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    let loopback = host.starts_with("127.")
        || host.starts_with("[::1]")
        || name == "localhost"
        || name.ends_with(".localhost");
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
            Bind::Localhost(8377),
            "both loopback addresses"
        );
        assert_eq!(
            parse_bind(Some("localhost:9000"), false, false).unwrap(),
            Bind::Localhost(9000)
        );
        assert!(parse_bind(Some("localhost:x"), false, false).is_err());
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
        assert!(
            !hosts.allows("localhost:8377"),
            "localhost may be ::1, not bound"
        );
        assert!(
            !hosts.allows("127.0.0.1:9000"),
            "another port is another server"
        );
        assert!(!hosts.allows("evil.example:8377"));
        let both = Hosts::for_localhost(
            "ck-0123abcd.localhost",
            &[
                "127.0.0.1:8377".parse().unwrap(),
                "[::1]:8377".parse().unwrap(),
            ],
            8377,
            None,
        );
        assert!(both.allows("ck-0123abcd.localhost:8377"));
        assert!(both.allows("localhost:8377"));
        assert!(both.allows("[::1]:8377"));
        assert!(!both.allows("localhost:9000"));
        assert!(
            !both.allows("ck-ffffffff.localhost:8377"),
            "another install's name"
        );
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
        let unix = Hosts::for_unix("ck-0123abcd.localhost", None);
        assert!(unix.allows("localhost:9999"), "a tunnel's own port");
        assert!(unix.allows("ck-0123abcd.localhost:9999"));
        assert!(unix.allows("127.0.0.1"));
        assert!(!unix.allows("evil.example:9999"));
    }

    #[test]
    fn a_loopback_url_gets_a_note_that_a_phone_cannot_reach_it() {
        let note = loopback_note("http://127.0.0.1:8377").unwrap();
        assert!(note.contains("a phone") && note.contains("ssh -N -L 8377:127.0.0.1:8377"));
        assert!(loopback_note("http://[::1]:9000").unwrap().contains("9000"));
        assert!(loopback_note("http://ck-0123abcd.localhost:9000").is_some());
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
