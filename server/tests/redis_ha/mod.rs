//! A Redis Cluster of a test's own whose primaries can fail: three primaries and a replica of
//! each, `redis-server` processes on free ports (`server/tests/redis_cluster/setup.sh` installs
//! the binary), a node timeout of a second so that a replica takes over a killed primary within
//! a few seconds. Killed, with its files, when dropped.

// Each test binary uses part of it.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One node: its client port and its process.
struct Node {
    port: u16,
    child: Child,
}

/// The cluster.
pub struct HaCluster {
    nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

/// A port nothing listens on.
fn free_port() -> u16 {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    free.local_addr().unwrap().port()
}

fn client(port: u16) -> redis::Connection {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_connection()
        .unwrap()
}

/// Waits up to 30 s for `ready`, naming `what` if it never is.
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < Duration::from_secs(30), "{what}: not within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether a node answers on `port`.
fn answers(port: u16) -> bool {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_connection()
        .is_ok()
}

impl Node {
    /// Starts a node with its files in a folder of `dir`, and returns once it answers. A port
    /// taken between [`free_port`] and the node's bind (another test's) makes the node exit: it
    /// is started again on others.
    fn start(dir: &std::path::Path) -> Node {
        let started = Instant::now();
        loop {
            // The cluster bus's port is given: the default (the client's + 10,000) may not exist.
            let (port, bus) = (free_port(), free_port());
            let data = dir.join(port.to_string());
            std::fs::create_dir_all(&data).unwrap();
            let mut child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--cluster-port", &bus.to_string()])
                .args(["--bind", "127.0.0.1", "--cluster-enabled", "yes"])
                .args(["--cluster-node-timeout", "1000"])
                // A replica that synced a moment ago may take over (by default it must have
                // heard from its primary within ten node timeouts plus a ping period).
                .args(["--cluster-replica-validity-factor", "0"])
                .args(["--cluster-config-file", "nodes.conf"])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(&data)
                .stdout(Stdio::null())
                .spawn()
                .expect("redis-server starts (server/tests/redis_cluster/setup.sh installs it)");
            loop {
                if answers(port) {
                    return Node { port, child };
                }
                if child.try_wait().unwrap().is_some() {
                    break; // its port was taken: again, on others
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "a node did not answer within 30 s"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl HaCluster {
    /// Starts the six nodes and makes them one cluster; returns once every slot is served and
    /// every primary has its replica.
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let nodes: Vec<Node> = (0..6).map(|_| Node::start(dir.path())).collect();
        let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let made = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(Stdio::null())
            .status()
            .expect("redis-cli runs");
        assert!(made.success(), "redis-cli --cluster create failed");
        let cluster = HaCluster { nodes, _dir: dir };
        wait_for("the cluster is whole", || cluster.whole());
        cluster
    }

    /// Whether every live node says the cluster is ok and sees three replicas connected.
    fn whole(&self) -> bool {
        self.nodes.iter().all(|n| {
            let mut conn = client(n.port);
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut conn).unwrap_or_default();
            let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut conn).unwrap_or_default();
            let replicas = nodes
                .lines()
                .filter(|l| l.contains("slave") && l.contains(" connected"))
                .count();
            info.contains("cluster_state:ok") && replicas == 3
        })
    }

    /// The URL of node `i` (0 to 5).
    pub fn node_url(&self, i: usize) -> String {
        format!("redis://127.0.0.1:{}", self.nodes[i].port)
    }

    /// SIGKILLs node `i`, and returns at once.
    pub fn kill_node(&mut self, i: usize) {
        let child = &mut self.nodes[i].child;
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// The URL of every node, comma-separated.
    pub fn url(&self) -> String {
        let urls: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("redis://127.0.0.1:{}", n.port))
            .collect();
        urls.join(",")
    }

    /// Waits until every primary's replica has all it wrote (Redis replicates asynchronously: a
    /// primary killed before that takes its last writes with it).
    pub fn wait_replicated(&self) {
        wait_for("the replicas catch up", || {
            self.nodes.iter().all(|n| {
                let Ok(mut conn) = redis::Client::open(format!("redis://127.0.0.1:{}", n.port))
                    .unwrap()
                    .get_connection()
                else {
                    return true; // killed
                };
                let info: String = redis::cmd("INFO").arg("replication").query(&mut conn).unwrap();
                let field = |line: &str, key: &str| -> Option<i64> {
                    line.split(',').find_map(|kv| kv.strip_prefix(key)?.trim().parse().ok())
                };
                let written = info.lines().find_map(|l| field(l, "master_repl_offset:"));
                let replicated = info
                    .lines()
                    .filter(|l| l.starts_with("slave"))
                    .find_map(|l| field(l.split_once(':')?.1, "offset="));
                !info.contains("role:master") || (written.is_some() && written == replicated)
            })
        });
    }

    /// Drops every client connection of `kind` (`normal`, `pubsub`) on each node still up.
    pub fn drop_clients(&self, kind: &str) {
        for node in &self.nodes {
            let Ok(mut conn) = redis::Client::open(format!("redis://127.0.0.1:{}", node.port))
                .unwrap()
                .get_connection()
            else {
                continue;
            };
            let _: i64 = redis::cmd("CLIENT")
                .arg(&["KILL", "TYPE", kind, "SKIPME", "yes"])
                .query(&mut conn)
                .unwrap();
        }
    }

    /// SIGKILLs the primary serving `key`'s slot, and returns at once.
    pub fn kill_primary_of(&mut self, key: &str) {
        let mut conn = client(self.nodes[0].port);
        let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(&mut conn).unwrap();
        let ranges: Vec<(i64, i64, (String, i64))> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query::<Vec<redis::Value>>(&mut conn)
            .unwrap()
            .into_iter()
            .map(|range| {
                let redis::Value::Array(parts) = range else {
                    panic!("CLUSTER SLOTS: a range is an array")
                };
                let from: i64 = redis::from_redis_value(parts[0].clone()).unwrap();
                let to: i64 = redis::from_redis_value(parts[1].clone()).unwrap();
                let redis::Value::Array(primary) = parts[2].clone() else {
                    panic!("CLUSTER SLOTS: a primary is an array")
                };
                let host: String = redis::from_redis_value(primary[0].clone()).unwrap();
                let port: i64 = redis::from_redis_value(primary[1].clone()).unwrap();
                (from, to, (host, port))
            })
            .collect();
        let (_, _, (_, port)) = ranges
            .into_iter()
            .find(|(from, to, _)| (*from..=*to).contains(&slot))
            .expect("every slot is served");
        let i = self
            .nodes
            .iter()
            .position(|n| i64::from(n.port) == port)
            .expect("the primary is one of the nodes");
        self.kill_node(i);
    }
}

impl Drop for HaCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            let _ = node.child.kill();
            let _ = node.child.wait();
        }
    }
}
