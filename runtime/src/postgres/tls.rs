//! TLS to PostgreSQL with rustls (the `ring` provider): the roots a server's certificate is
//! checked against ([`TlsRoots`]), what the URL's `sslmode` asks to check, and the connector
//! tokio-postgres drives.
//!
//! tokio-postgres reads `sslmode` itself for `disable` (no `SSLRequest` is ever sent), `prefer`
//! (TLS when the server offers it, plaintext when it declines; the default) and `require` (TLS
//! or no connection). libpq's `verify-ca` and `verify-full` are read here and handed on as
//! `require`. What is checked:
//!
//! | `sslmode`     | chain to the roots                    | host name in the certificate |
//! |---------------|---------------------------------------|------------------------------|
//! | `prefer`      | only when roots other than webpki's are set (as libpq: only with a root file) | no |
//! | `require`, `verify-ca` | yes                          | no                           |
//! | `verify-full` | yes                                   | yes                          |
//!
//! `require` checks the chain, as libpq's does once a root certificate is given: weir always has
//! roots (webpki's by default), so an encrypted but unauthenticated connection is never made
//! silently under `require`.

use super::PoolError;
use futures::future::BoxFuture;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::borrow::Cow;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

/// The certificates a PostgreSQL server's certificate is checked against.
#[derive(Debug, Clone, Default)]
pub enum TlsRoots {
    /// Mozilla's roots as the `webpki-roots` crate ships them: enough for a server whose
    /// certificate a public CA signed.
    #[default]
    Webpki,
    /// The certificates in this PEM text (one or more `BEGIN CERTIFICATE` blocks), e.g. a
    /// managed database's private CA.
    Pem(Arc<[u8]>),
    /// The certificates in the PEM file at this path, read at each new connection (so a
    /// rotated CA file is picked up).
    PemFile(PathBuf),
}

impl TlsRoots {
    /// The certificates in the PEM file at `path`.
    pub fn pem_file(path: impl Into<PathBuf>) -> Self {
        TlsRoots::PemFile(path.into())
    }

    /// The certificates in the PEM text `pem`.
    pub fn pem(pem: impl Into<Vec<u8>>) -> Self {
        TlsRoots::Pem(pem.into().into())
    }

    /// The store of these roots.
    fn store(&self) -> Result<RootCertStore, PoolError> {
        let pem: Cow<'_, [u8]> = match self {
            TlsRoots::Webpki => {
                return Ok(RootCertStore {
                    roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
                })
            }
            TlsRoots::Pem(pem) => Cow::Borrowed(pem),
            TlsRoots::PemFile(path) => Cow::Owned(
                std::fs::read(path)
                    .map_err(|e| PoolError::Tls(format!("the CA file `{}` cannot be read: {e}", path.display())))?,
            ),
        };
        let from = match self {
            TlsRoots::PemFile(path) => format!("the CA file `{}`", path.display()),
            _ => "the CA PEM".to_owned(),
        };
        let mut store = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| PoolError::Tls(format!("{from} is not PEM: {e}")))?;
            store
                .add(cert)
                .map_err(|e| PoolError::Tls(format!("{from} holds a certificate that cannot be a root: {e}")))?;
        }
        if store.is_empty() {
            return Err(PoolError::Tls(format!("{from} holds no `BEGIN CERTIFICATE` block")));
        }
        Ok(store)
    }
}

/// What `sslmode` asks of the server's certificate, beyond tokio-postgres's own modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checks {
    /// `prefer`, or no `sslmode`: the chain only when roots were given.
    Prefer,
    /// `require` or `verify-ca`: the chain.
    Chain,
    /// `verify-full`: the chain and the host name.
    Full,
}

/// The rustls connector of one new connection.
#[derive(Clone)]
pub(super) struct Connector {
    config: Arc<ClientConfig>,
}

impl Connector {
    /// A connector checking what `checks` asks against `roots`.
    pub(super) fn new(roots: &TlsRoots, checks: Checks) -> Result<Self, PoolError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots.store()?), provider.clone())
            .build()
            .map_err(|e| PoolError::Tls(e.to_string()))?;
        let verifier = Verifier {
            inner,
            chain: checks != Checks::Prefer || !matches!(roots, TlsRoots::Webpki),
            name: checks == Checks::Full,
        };
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| PoolError::Tls(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        Ok(Connector {
            config: Arc::new(config),
        })
    }
}

/// webpki's checks, less the chain or the host name where `sslmode` does not ask for them. The
/// handshake's signatures are always checked: the server holds the key of what it presents.
#[derive(Debug)]
struct Verifier {
    inner: Arc<WebPkiServerVerifier>,
    chain: bool,
    name: bool,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if !self.chain {
            return Ok(ServerCertVerified::assertion());
        }
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

impl<S> MakeTlsConnect<S> for Connector
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type TlsConnect = Connect;
    type Error = rustls::pki_types::InvalidDnsNameError;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Connect, Self::Error> {
        Ok(Connect {
            config: self.config.clone(),
            name: ServerName::try_from(domain)?.to_owned(),
        })
    }
}

/// The TLS handshake with one server.
pub(super) struct Connect {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for Connect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = Stream<S>;
    type Error = io::Error;
    type Future = BoxFuture<'static, Result<Stream<S>, io::Error>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let stream = tokio_rustls::TlsConnector::from(self.config)
                .connect(self.name, stream)
                .await?;
            Ok(Stream(stream))
        })
    }
}

/// A TLS connection to the server. No channel binding is offered: SCRAM authenticates without
/// it.
pub(super) struct Stream<S>(tokio_rustls::client::TlsStream<S>);

impl<S> tokio_postgres::tls::TlsStream for Stream<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Stream<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Stream<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
