//! A TLS-terminating proxy in front of the test database, or the test Redis, for the tests of
//! TLS to them: neither test server speaks TLS, so [`TlsProxy`] does a rustls handshake with a
//! certificate that a CA `rcgen` made signed, and pipes the plaintext on. In front of
//! PostgreSQL it first reads a connection's 8-byte `SSLRequest` and answers `S` (or pipes a
//! plaintext startup as it came), counting each kind; in front of Redis it speaks TLS from the
//! first byte.

use crate::postgres_url;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A TLS-terminating proxy in front of the test database or Redis, with a certificate for
/// `127.0.0.1` signed by its own CA. It runs on the runtime it was started on.
#[derive(Debug)]
pub struct TlsProxy {
    addr: SocketAddr,
    /// The CA's certificate, PEM.
    pub ca: String,
    ssl_requests: Arc<AtomicUsize>,
    plaintext: Arc<AtomicUsize>,
}

/// The certificate, PEM, of a new CA named `name` (one that signed nothing the proxy presents).
pub fn ca_pem(name: &str) -> String {
    ca(name).0.pem()
}

/// A CA certificate and its key.
fn ca(name: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    (params.self_signed(&key).unwrap(), key)
}

impl TlsProxy {
    /// Starts the proxy, on a port of its own, in front of the server of [`postgres_url`]:
    /// a connection that opens with PostgreSQL's `SSLRequest` is answered `S` and goes on in
    /// TLS, any other in plaintext.
    pub async fn start() -> Self {
        let (listener, acceptor, ca) = listen().await;
        let addr = listener.local_addr().unwrap();
        let upstream = upstream();
        let (ssl_requests, plaintext) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let counts = (ssl_requests.clone(), plaintext.clone());
        tokio::spawn(async move {
            loop {
                let (mut client, _) = listener.accept().await.unwrap();
                let (acceptor, upstream, counts) = (acceptor.clone(), upstream.clone(), counts.clone());
                tokio::spawn(async move {
                    let mut first = [0u8; 8];
                    client.read_exact(&mut first).await?;
                    let mut server = TcpStream::connect(&upstream).await?;
                    // SSLRequest: length 8, code 80877103.
                    if first == [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f] {
                        counts.0.fetch_add(1, Ordering::SeqCst);
                        client.write_all(b"S").await?;
                        let mut tls = acceptor.accept(client).await?;
                        tokio::io::copy_bidirectional(&mut tls, &mut server).await?;
                    } else {
                        counts.1.fetch_add(1, Ordering::SeqCst);
                        server.write_all(&first).await?;
                        tokio::io::copy_bidirectional(&mut client, &mut server).await?;
                    }
                    Ok::<_, std::io::Error>(())
                });
            }
        });
        TlsProxy {
            addr,
            ca,
            ssl_requests,
            plaintext,
        }
    }

    /// Starts the proxy in front of the Redis at `redis_url` (`redis://host:port`), in TLS
    /// from the first byte, as a `rediss://` client speaks; [`ssl_requests`](Self::ssl_requests)
    /// counts the handshakes that succeeded.
    pub async fn redis(redis_url: &str) -> Self {
        let (listener, acceptor, ca) = listen().await;
        let addr = listener.local_addr().unwrap();
        let rest = redis_url.split_once("://").map_or(redis_url, |(_, rest)| rest);
        let host_port = rest.split('/').next().unwrap_or(rest);
        let upstream = host_port.rsplit('@').next().unwrap_or(host_port).to_owned();
        let handshakes = Arc::new(AtomicUsize::new(0));
        let counted = handshakes.clone();
        tokio::spawn(async move {
            loop {
                let (client, _) = listener.accept().await.unwrap();
                let (acceptor, upstream, counted) = (acceptor.clone(), upstream.clone(), counted.clone());
                tokio::spawn(async move {
                    let mut tls = acceptor.accept(client).await?;
                    counted.fetch_add(1, Ordering::SeqCst);
                    let mut server = TcpStream::connect(&upstream).await?;
                    tokio::io::copy_bidirectional(&mut tls, &mut server).await?;
                    Ok::<_, std::io::Error>(())
                });
            }
        });
        TlsProxy {
            addr,
            ca,
            ssl_requests: handshakes,
            plaintext: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The Redis's URL through the proxy: `rediss://127.0.0.1:<port>/`.
    pub fn redis_url(&self) -> String {
        format!("rediss://127.0.0.1:{}/", self.addr.port())
    }

    /// How many connections asked for TLS.
    pub fn ssl_requests(&self) -> usize {
        self.ssl_requests.load(Ordering::SeqCst)
    }

    /// How many connections started in plaintext.
    pub fn plaintext(&self) -> usize {
        self.plaintext.load(Ordering::SeqCst)
    }

    /// The test database's URL through the proxy, with `sslmode`.
    pub fn url(&self, sslmode: &str) -> String {
        let config: tokio_postgres::Config = postgres_url().parse().unwrap();
        let user = config.get_user().unwrap_or("postgres");
        let db = config.get_dbname().unwrap_or("postgres");
        format!(
            "postgres://{user}@127.0.0.1:{}/{db}?sslmode={sslmode}",
            self.addr.port()
        )
    }
}

/// A listener on a port of its own, the acceptor of a certificate for `127.0.0.1` and
/// `localhost` that a new CA signed, and that CA's certificate, PEM.
async fn listen() -> (TcpListener, tokio_rustls::TlsAcceptor, String) {
    let (ca, ca_key) = ca("weir test CA");
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca, &ca_key)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    (listener, tokio_rustls::TlsAcceptor::from(Arc::new(config)), ca.pem())
}

/// The host and port of the test database.
fn upstream() -> String {
    let config: tokio_postgres::Config = postgres_url().parse().unwrap();
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(host) => host.clone(),
        #[allow(unreachable_patterns)]
        _ => "127.0.0.1".to_owned(),
    };
    format!("{host}:{}", config.get_ports().first().copied().unwrap_or(5432))
}
