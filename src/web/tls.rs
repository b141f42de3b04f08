//! `--tls-cert`/`--tls-key`: the pages over TLS (rustls with ring). Each connection's handshake
//! runs in a task of its own under a deadline, and only finished ones reach the server, so a
//! client that stalls its handshake holds up nobody else.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::domain::error::{Error, ErrorCode, Result};

/// How long a client may take over its handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

/// The server's TLS configuration from a PEM certificate chain and a PEM private key.
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor> {
    let bad = |what: &str, path: &Path, err: rustls::pki_types::pem::Error| {
        Error::invalid_input(format!("{what} {}: {err}", path.display())).with_hint(
            "give PEM files: the certificate chain (--tls-cert) and its private key (--tls-key)",
        )
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|err| bad("--tls-cert", cert, err))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|err| bad("--tls-cert", cert, err))?;
    if chain.is_empty() {
        return Err(Error::invalid_input(format!(
            "--tls-cert {}: no certificate in it",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|err| bad("--tls-key", key, err))?;
    // ring's classical key exchange (rustls marks it deprecated for lacking post-quantum
    // groups); aws-lc-rs would bring a C and CMake build to every install.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|err| {
            Error::invalid_input(format!(
                "the certificate and key do not make a TLS server: {err}"
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Connections that finished their handshake.
pub struct TlsListener {
    incoming: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

/// Accepts on `tcp` for as long as the process runs (call it inside the runtime).
pub fn listen(tcp: TcpListener, acceptor: TlsAcceptor) -> Result<TlsListener> {
    let local = tcp
        .local_addr()
        .map_err(|err| Error::new(ErrorCode::Io, format!("{err}")))?;
    let (done, incoming) = mpsc::channel(64);
    tokio::spawn(async move {
        loop {
            let Ok((stream, addr)) = tcp.accept().await else {
                // Out of descriptors, most likely: let some close.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let acceptor = acceptor.clone();
            let done = done.clone();
            tokio::spawn(async move {
                if let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE, acceptor.accept(stream)).await
                {
                    let _ = done.send((tls, addr)).await;
                }
            });
        }
    });
    Ok(TlsListener { incoming, local })
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(connection) => connection,
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}
