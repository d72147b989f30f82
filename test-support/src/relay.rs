//! A plain TCP relay in front of a test server (the test Redis, the test database), for the tests
//! of what a process does when the server goes away: [`Relay::cut`] drops the connections made
//! so far, as a restart or a load balancer's idle timeout does; [`Relay::go_dark`] also closes
//! every connection made until [`Relay::light`], as a server restarting or a network cut does;
//! dropping the relay stops it, as a server gone for good.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;

/// A TCP relay on `127.0.0.1` piping each connection to an upstream server. It runs on the
/// runtime it was started on, until dropped.
#[derive(Debug)]
pub struct Relay {
    addr: SocketAddr,
    dark: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<AbortHandle>>>,
    accepting: AbortHandle,
}

impl Relay {
    /// A relay on a free port in front of the server of `url` (`scheme://[user@]host:port[/…]`,
    /// or a bare `host:port`).
    pub async fn in_front_of(url: &str) -> Relay {
        Relay::at("127.0.0.1:0".parse().unwrap(), url).await
    }

    /// A relay on `addr` in front of the server of `url`, as [`in_front_of`](Self::in_front_of):
    /// for a test that makes a server answer on an address only after a while.
    pub async fn at(addr: SocketAddr, url: &str) -> Relay {
        let upstream = host_port(url);
        let listener = TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let dark: Arc<AtomicBool> = Arc::default();
        let open: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
        let accepting = tokio::spawn({
            let (dark, open) = (Arc::clone(&dark), Arc::clone(&open));
            async move {
                while let Ok((mut client, _)) = listener.accept().await {
                    if dark.load(Ordering::SeqCst) {
                        continue; // dropped: closed at once
                    }
                    let upstream = upstream.clone();
                    let piping = tokio::spawn(async move {
                        if let Ok(mut server) = TcpStream::connect(&upstream).await {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        }
                    });
                    open.lock().unwrap().push(piping.abort_handle());
                }
            }
        })
        .abort_handle();
        Relay {
            addr,
            dark,
            open,
            accepting,
        }
    }

    /// The relay's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `scheme://` and the relay's address: the URL a process under test is given.
    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }

    /// Closes every connection made so far; those made after pass.
    pub fn cut(&self) {
        for piping in self.open.lock().unwrap().drain(..) {
            piping.abort();
        }
    }

    /// Closes every connection, and every one made until [`light`](Self::light).
    pub fn go_dark(&self) {
        self.dark.store(true, Ordering::SeqCst);
        self.cut();
    }

    /// Ends [`go_dark`](Self::go_dark): connections made from now on pass.
    pub fn light(&self) {
        self.dark.store(false, Ordering::SeqCst);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accepting.abort();
        self.cut();
    }
}

/// The `host:port` of `url` (`scheme://[user@]host:port[/…]`, or a bare `host:port`).
pub fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit('@').next().unwrap_or(rest);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An upstream that echoes what it is sent.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = conn.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    /// Whether a byte sent on `conn` comes back (false when the relay closed it).
    async fn echoes(conn: &mut TcpStream) -> bool {
        let mut byte = [0u8];
        conn.write_all(b"x").await.is_ok() && matches!(conn.read(&mut byte).await, Ok(1))
    }

    #[tokio::test]
    async fn a_cut_drops_the_connections_made_so_far_and_a_dark_relay_every_new_one_until_lit() {
        let relay = Relay::in_front_of(&format!("tcp://{}", echo().await)).await;
        let mut first = TcpStream::connect(relay.addr()).await.unwrap();
        assert!(echoes(&mut first).await);
        relay.cut();
        assert!(!echoes(&mut first).await);
        let mut second = TcpStream::connect(relay.addr()).await.unwrap();
        assert!(echoes(&mut second).await);
        relay.go_dark();
        assert!(!echoes(&mut second).await);
        let mut in_the_dark = TcpStream::connect(relay.addr()).await.unwrap();
        assert!(!echoes(&mut in_the_dark).await);
        relay.light();
        let mut lit = TcpStream::connect(relay.addr()).await.unwrap();
        assert!(echoes(&mut lit).await);
        let addr = relay.addr();
        drop(relay);
        assert!(!echoes(&mut lit).await);
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "a dropped relay's port refuses"
        );
    }

    #[test]
    fn host_port_leaves_out_scheme_credentials_and_path() {
        assert_eq!(host_port("redis://127.0.0.1:6379"), "127.0.0.1:6379");
        assert_eq!(host_port("redis://:pw@h:1/2"), "h:1");
        assert_eq!(host_port("postgres://u@db:5432/test"), "db:5432");
        assert_eq!(host_port("h:7"), "h:7");
    }
}
