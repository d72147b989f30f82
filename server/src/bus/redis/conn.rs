//! How the bus reaches Redis: one server, or a Redis Cluster. [`Target::connect`] asks the first
//! node of the URL whether it runs in cluster mode (`INFO cluster`), so the same `--redis URL`
//! serves either; a cluster's URL may name several seed nodes, comma-separated, for a first
//! contact that survives one of them being down. On one server, commands that answer at once
//! share a connection manager (which reconnects); on a cluster, a cluster connection that follows
//! the slots as they move (and reconnects). Either way a blocking command takes a connection of
//! its own ([`Target::blocking`]) so that it holds nothing else up, and a subscription is made
//! on one node ([`Subscribers`]): a cluster forwards every `PUBLISH` to all its nodes, so any
//! of the seeds will do, or, when none answers, any node the cluster names now.

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::ConnectionAddr;
use redis::{AsyncConnectionConfig, Client, Cmd, Pipeline, RedisFuture, RedisResult, Value};
use std::sync::Arc;
use std::time::Duration;

/// How long the shared connection to a cluster waits for one answer of a node before it tries
/// again (one server's connection waits half a second).
const CLUSTER_RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a command on a cluster may take, the cluster client's own tries included (it follows
/// slots that moved); past it, the bus decides whether Redis is away and waits on (a primary
/// failing over takes the cluster's node timeout, 15 s by default, and an election).
const CLUSTER_COMMAND_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a blocking command on a cluster may wait for its answer: past any block the bus asks
/// for (a wake's wait, a stream's one-second `XREAD`).
const CLUSTER_BLOCKING_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// How one server's connection manager reconnects: tries half a second apart at most (redis-rs
/// would let them grow to seconds, so that processes found a Redis back at very different
/// times), twenty of them, about 9 s in all (a Redis still starting deserves that much).
fn manager_config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_min_delay(Duration::from_millis(100))
        .set_max_delay(Duration::from_millis(500))
        .set_number_of_retries(20)
}

/// A connection of the bus, to one server or to a cluster.
#[derive(Clone)]
pub(super) enum Conn {
    /// The shared connection to one server.
    Managed(ConnectionManager),
    /// A blocking command's own connection to one server.
    Multiplexed(MultiplexedConnection),
    /// A connection to a cluster (shared, or a blocking command's own).
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Managed(c) => c.req_packed_command(cmd),
            Conn::Multiplexed(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Managed(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Multiplexed(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Managed(c) => c.get_db(),
            Conn::Multiplexed(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// What the bus connects to: the nodes named, and for a cluster, the client of blocking
/// commands' connections.
pub(super) struct Target {
    /// Where subscriptions are made.
    subscribers: Subscribers,
    /// A cluster's client without a response timeout, for blocking commands; `None` for one
    /// server.
    cluster: Option<ClusterClient>,
}

/// Where a subscription is made: on one of the nodes the URL names (one server's only node), or,
/// on a cluster none of whose seeds answers, on any node the cluster names now.
#[derive(Clone)]
pub(super) struct Subscribers {
    seeds: Arc<[Client]>,
    /// A cluster's shared connection, to ask it for its nodes.
    cluster: Option<Conn>,
}

impl Subscribers {
    /// The seeds.
    pub(super) fn seeds(&self) -> Arc<[Client]> {
        self.seeds.clone()
    }

    /// The nodes a cluster names now (`CLUSTER SLOTS`: its primaries and their replicas), those
    /// the seeds are not, each reached as the first seed is (its scheme, credentials and CA);
    /// none for one server, or when the cluster cannot be asked.
    pub(super) async fn others(&self) -> Vec<Client> {
        let Some(conn) = &self.cluster else {
            return Vec::new();
        };
        let slots: RedisResult<Vec<Value>> = redis::cmd("CLUSTER").arg("SLOTS").query_async(&mut conn.clone()).await;
        let Ok(slots) = slots else {
            return Vec::new();
        };
        let named: Vec<(String, u16)> = slots
            .iter()
            .filter_map(|range| match range {
                Value::Array(parts) => Some(parts.iter().skip(2)),
                _ => None,
            })
            .flatten()
            .filter_map(|node| match node {
                Value::Array(node) => {
                    let host: String = redis::from_redis_value_ref(node.first()?).ok()?;
                    let port: u16 = redis::from_redis_value_ref(node.get(1)?).ok()?;
                    Some((host, port))
                }
                _ => None,
            })
            .collect();
        let mut others: Vec<Client> = Vec::new();
        for (host, port) in named {
            let seen = |c: &Client| address(c).is_some_and(|a| a == (host.as_str(), port));
            if self.seeds.iter().any(seen) || others.iter().any(seen) {
                continue;
            }
            if let Some(client) = reached_as(&self.seeds[0], host.clone(), port) {
                others.push(client);
            }
        }
        others
    }
}

/// The host and port `client` connects to.
fn address(client: &Client) -> Option<(&str, u16)> {
    match client.get_connection_info().addr() {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => Some((host.as_str(), *port)),
        _ => None,
    }
}

/// A client of `host:port` reached as `seed` is: its scheme, credentials and TLS settings.
fn reached_as(seed: &Client, host: String, port: u16) -> Option<Client> {
    let mut addr = seed.get_connection_info().addr().clone();
    match &mut addr {
        ConnectionAddr::Tcp(h, p) | ConnectionAddr::TcpTls { host: h, port: p, .. } => {
            *h = host;
            *p = port;
        }
        _ => return None,
    }
    Client::open(seed.get_connection_info().clone().set_addr(addr)).ok()
}

/// One node of the URL: its client, and what a cluster client needs to reach it alike.
struct Node {
    client: Client,
    /// The URL without the parameters Redis does not know.
    url: String,
    /// The CA certificates of `ssl_ca_certs`, in PEM.
    ca: Option<Vec<u8>>,
}

/// `url` as shown in messages: each node's password hidden.
pub(super) fn shown(url: &str) -> String {
    url.split(',')
        .map(|node| weir_runtime::postgres::without_password(node.trim()))
        .collect::<Vec<_>>()
        .join(",")
}

impl Target {
    /// Connects to the server, or the cluster, that `url` names, and returns the shared
    /// connection. The first node that answers says which ([`first_contact`]).
    pub(super) async fn connect(url: &str) -> Result<(Target, Conn), String> {
        let named: Vec<&str> = url.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
        let nodes = named
            .iter()
            .map(|n| match named.len() {
                1 => node(n),
                _ => node(n).map_err(|e| format!("`{}`: {e}", shown(n))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if nodes.is_empty() {
            return Err("no URL: expected `redis://host:port`, or several comma-separated for a cluster".to_owned());
        }
        let (first, mut asked) = first_contact(&nodes).await?;
        let asking: redis::RedisResult<String> = redis::cmd("INFO").arg("cluster").query_async(&mut asked).await;
        let cluster = match asking {
            Ok(info) => info.lines().any(|line| line.trim() == "cluster_enabled:1"),
            // A managed Redis may refuse `INFO`: one URL is then taken as one server, as before
            // clusters were known here.
            Err(e) if nodes.len() == 1 => {
                tracing::warn!(error = %e, "redis bus: `INFO cluster` failed; taking `{}` as one server", shown(&first.url));
                false
            }
            Err(e) => {
                return Err(format!(
                    "asking `{}` whether it is a cluster (`INFO cluster`): {e}",
                    shown(&first.url)
                ))
            }
        };
        let clients = nodes.iter().map(|n| n.client.clone()).collect();
        if !cluster {
            if nodes.len() > 1 {
                return Err(format!(
                    "{} comma-separated URLs name the nodes of a Redis Cluster, but `{}` is not in cluster mode",
                    nodes.len(),
                    shown(&first.url)
                ));
            }
            let manager = match asked {
                Conn::Managed(manager) => manager,
                _ => first
                    .client
                    .get_connection_manager_with_config(manager_config())
                    .await
                    .map_err(|e| e.to_string())?,
            };
            let target = Target {
                subscribers: Subscribers {
                    seeds: clients,
                    cluster: None,
                },
                cluster: None,
            };
            return Ok((target, Conn::Managed(manager)));
        }
        let shared = cluster_client(&nodes, CLUSTER_RESPONSE_TIMEOUT, Some(CLUSTER_COMMAND_TIMEOUT));
        let conn = shared
            .map_err(|e| e.to_string())?
            .get_async_connection()
            .await
            .map_err(|e| e.to_string())?;
        let blocking = cluster_client(&nodes, CLUSTER_BLOCKING_TIMEOUT, None).map_err(|e| e.to_string())?;
        let conn = Conn::Cluster(conn);
        let target = Target {
            subscribers: Subscribers {
                seeds: clients,
                cluster: Some(conn.clone()),
            },
            cluster: Some(blocking),
        };
        Ok((target, conn))
    }

    /// Whether this is a cluster.
    pub(super) fn is_cluster(&self) -> bool {
        self.cluster.is_some()
    }

    /// A new connection for a blocking command, without a response timeout.
    pub(super) async fn blocking(&self) -> RedisResult<Conn> {
        match &self.cluster {
            Some(cluster) => Ok(Conn::Cluster(cluster.get_async_connection().await?)),
            None => {
                let config = AsyncConnectionConfig::new().set_response_timeout(None);
                let conn = self.subscribers.seeds[0]
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?;
                Ok(Conn::Multiplexed(conn))
            }
        }
    }

    /// Where subscriptions are made.
    pub(super) fn subscribers(&self) -> Subscribers {
        self.subscribers.clone()
    }
}

/// The first of `nodes` that answers, and a connection to it. When none does yet, the first is
/// waited for: its connection manager retries for about 9 s ([`manager_config`]). What retries cannot mend (a refused password or certificate) fails at once.
async fn first_contact(nodes: &[Node]) -> Result<(&Node, Conn), String> {
    for node in nodes {
        match node.client.get_multiplexed_async_connection().await {
            Ok(conn) => return Ok((node, Conn::Multiplexed(conn))),
            Err(e) if refused_for_good(&e) => return Err(e.to_string()),
            Err(_) => {}
        }
    }
    let manager = nodes[0]
        .client
        .get_connection_manager_with_config(manager_config())
        .await
        .map_err(|e| e.to_string())?;
    Ok((&nodes[0], Conn::Managed(manager)))
}

/// A cluster client seeded with `nodes`, each answer of a node waited for `each`, a command with
/// its tries for `overall` (without bound when `None`).
fn cluster_client(nodes: &[Node], each: Duration, overall: Option<Duration>) -> RedisResult<ClusterClient> {
    let mut builder = ClusterClient::builder(nodes.iter().map(|n| n.url.as_str()));
    if let Some(ca) = nodes.iter().find_map(|n| n.ca.clone()) {
        builder = builder.certs(redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(ca),
        });
    }
    builder.response_timeout(each).overall_response_timeout(overall).build()
}

/// Whether a first connection failed in a way that trying again cannot mend: a certificate or
/// TLS handshake the client refuses (rustls's errors come as I/O errors of invalid data), a
/// password Redis refuses, a client setting it cannot use. A connection refused, unreachable,
/// unresolved or timed out (a Redis, or its name, not up yet) is not, nor is an error this
/// cannot read.
fn refused_for_good(e: &redis::RedisError) -> bool {
    // redis keeps an I/O error shared, as its source.
    let io_kind = std::error::Error::source(e)
        .and_then(|s| s.downcast_ref::<Arc<dyn std::error::Error + Send + Sync>>())
        .and_then(|shared| shared.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    matches!(
        e.kind(),
        redis::ErrorKind::AuthenticationFailed | redis::ErrorKind::InvalidClientConfig
    ) || io_kind == Some(std::io::ErrorKind::InvalidData)
}

/// The node `url` names, its `ssl_ca_certs` parameter taken out (Redis does not know it) and
/// the file read, as the roots of a `rediss://` connection.
fn node(url: &str) -> Result<Node, String> {
    let mut parsed = url::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    let (ca, rest): (Vec<_>, Vec<_>) = parsed
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .partition(|(k, _)| k == "ssl_ca_certs");
    let Some((_, file)) = ca.into_iter().next_back() else {
        let client = Client::open(url).map_err(|e| e.to_string())?;
        return Ok(Node {
            client,
            url: url.to_owned(),
            ca: None,
        });
    };
    if parsed.scheme() != "rediss" {
        return Err("`ssl_ca_certs` is for TLS: the URL's scheme must be `rediss://`".to_owned());
    }
    let pem = std::fs::read(&file).map_err(|e| format!("the CA file `{file}` cannot be read: {e}"))?;
    match rest.is_empty() {
        true => parsed.set_query(None),
        false => {
            parsed.query_pairs_mut().clear().extend_pairs(rest);
        }
    }
    let certificates = redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(pem.clone()),
    };
    let client = Client::build_with_tls(parsed.as_str(), certificates).map_err(|e| e.to_string())?;
    Ok(Node {
        client,
        url: parsed.into(),
        ca: Some(pem),
    })
}
