//! The bus over Redis, for scale-out mode: [`RedisBus`]. What it keeps is short-lived, and all
//! of it under one key prefix (so servers, or tests, sharing a Redis do not meet):
//! - wakes: a list, `LPUSH`ed (and trimmed) per queued run, `BLPOP`ed by a waiting worker;
//! - cancellations: a pub/sub channel for the workers running now, plus a key per cancelled run
//!   that expires after a while, for a worker that claims the run later ([`Bus::cancelled`]);
//! - streams: a Redis stream per run, `XADD`ed with `MAXLEN ~` and an expiry, read with `XREAD`
//!   (bounded reads, so a slow subscriber skips what was trimmed rather than growing memory):
//!   `stream` has their entries' format, written by the publish script and read back;
//! - heartbeats: a key per worker set with the beat's time to live;
//! - fences: a key per run taken back from a worker ([`Bus::supersede`]), holding the first
//!   attempt that may still publish on the run's stream; a script publishes an event and checks
//!   the fence in one step;
//! - threads' notices: a pub/sub channel per thread; a process that watches any thread holds
//!   one subscription to all of them (`PSUBSCRIBE`) and hands each notice to its watchers there
//!   (`pubsub` has the subscriptions, made again when lost, and the channels' payloads).
//!
//! Commands that return at once share a connection (`conn`: to one server or to a Redis Cluster,
//! told apart when connecting; either reconnects); the blocking ones (`BLPOP`, `XREAD BLOCK`)
//! take a connection of their own from a small pool, so they hold up nothing else. On a cluster
//! the two keys of a run that one script reads together, its stream and its fence, share a hash
//! tag (`{run id}`), so they live in one slot.

mod conn;
mod pubsub;
mod stream;

use super::threads::ThreadWatchers;
use super::{parse_event_id, Bus, BusError, CancelAction, Publisher, StreamItem, ThreadNotice};
use conn::{Conn, Target};
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use redis::streams::StreamRangeReply;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How many wakes wait at most, when no worker is waiting.
const WAKES: isize = 64;

/// How long a run's fence is kept ([`Bus::supersede`]): long past the heartbeat within which the
/// worker that lost the run learns it from the queue and stops it.
const FENCE_TTL: Duration = Duration::from_secs(3600);

/// Raises a run's fence to `ARGV[1]` (never lowers it), for `ARGV[2]` ms. KEYS: the fence.
const SUPERSEDE: &str = r"
local fence = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > fence then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
return 1
";

/// How long a command waits for a Redis that is away before it fails ([`Shared::query`]).
const OUTAGE_WAIT: Duration = Duration::from_secs(60);

/// How long a command that can do without Redis waits for it: long enough for a lost connection
/// to be made again, short enough not to hold up a request (a wake, which a worker's poll makes
/// up for; a thread's notice, whose watchers hear of a gap; the health check, which must say).
const BRIEF_WAIT: Duration = Duration::from_secs(1);

/// Whether `e` says that Redis is away for now (down, restarting, unreachable, a cluster's slots
/// moving to a replica that takes over), not that the command is wrong: worth waiting out.
fn away(e: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.is_unrecoverable_error()
        || matches!(
            e.kind(),
            ErrorKind::Server(ServerErrorKind::TryAgain | ServerErrorKind::ClusterDown | ServerErrorKind::MasterDown)
        )
}

/// How many idle blocking connections are kept.
const IDLE_BLOCKING: usize = 16;

/// How a [`RedisBus`] connects and what it keeps: made by [`RedisBus::options`].
#[derive(Debug, Clone)]
pub struct RedisOptions {
    prefix: String,
    stream_len: usize,
    stream_ttl: Duration,
    cancel_ttl: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            prefix: "weir".to_owned(),
            stream_len: 1000,
            stream_ttl: Duration::from_secs(120),
            cancel_ttl: Duration::from_secs(60),
        }
    }
}

impl RedisOptions {
    /// The prefix of every key and channel (default `weir`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// About how many events of a run's stream are kept for replay (default 1000, at least 1).
    pub fn stream_len(mut self, len: usize) -> Self {
        self.stream_len = len.max(1);
        self
    }

    /// How long a run's stream is kept after its last event (default 2 minutes).
    pub fn stream_ttl(mut self, ttl: Duration) -> Self {
        self.stream_ttl = ttl;
        self
    }

    /// How long a cancellation is remembered for a worker that claims the run later (default
    /// 1 minute).
    pub fn cancel_ttl(mut self, ttl: Duration) -> Self {
        self.cancel_ttl = ttl;
        self
    }

    /// Connects to the Redis at `url` (e.g. `redis://127.0.0.1:6379`), or to the Redis Cluster
    /// it is a node of: a node that says it runs in cluster mode makes the bus a cluster client,
    /// and several comma-separated URLs name several seed nodes of one cluster
    /// (`redis://10.0.0.1:6379,redis://10.0.0.2:6379`). A `rediss://` URL connects over TLS,
    /// checking the server's certificate against the system's roots and webpki's, or, with
    /// redis-py's `ssl_ca_certs=FILE` parameter
    /// (`rediss://host:6380/0?ssl_ca_certs=/etc/weir/redis-ca.pem`), against the CA
    /// certificates in that PEM file (a managed Redis's private CA).
    ///
    /// # Errors
    ///
    /// A [`BusError`] naming the URL when it is malformed, names a CA file that cannot be read
    /// (or one without a `rediss://` scheme), names several nodes of a server not in cluster
    /// mode, or the server cannot be reached.
    pub async fn connect(self, url: &str) -> Result<RedisBus, BusError> {
        let (target, conn) = Target::connect(url)
            .await
            .map_err(|e| BusError(format!("cannot connect to Redis at `{}`: {e}", conn::shown(url))))?;
        Ok(RedisBus {
            shared: Arc::new(Shared {
                target,
                conn,
                blocking: Mutex::new(Vec::new()),
                options: self,
                publish: redis::Script::new(stream::PUBLISH),
                supersede: redis::Script::new(SUPERSEDE),
                threads: Arc::default(),
                pumping: tokio::sync::OnceCell::new(),
            }),
        })
    }
}

/// What the clones of a bus share.
struct Shared {
    target: Target,
    conn: Conn,
    blocking: Mutex<Vec<Conn>>,
    options: RedisOptions,
    publish: redis::Script,
    supersede: redis::Script,
    /// The watchers of threads in this process.
    threads: Arc<ThreadWatchers>,
    /// Set once the subscription to every thread's channel stands ([`pubsub::pump_threads`]).
    pumping: tokio::sync::OnceCell<()>,
}

/// The [`Bus`] over Redis.
///
/// Clones share the connections.
///
/// # Examples
///
/// ```no_run
/// use weir_server::bus::{redis::RedisBus, Bus};
///
/// # async fn run() -> Result<(), weir_server::bus::BusError> {
/// let bus = RedisBus::options().prefix("weir-prod").connect("redis://127.0.0.1:6379").await?;
/// bus.wake().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisBus {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBus")
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

/// `d` in whole milliseconds, at least 1 (Redis refuses an expiry of 0).
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

fn failed(what: &str) -> impl Fn(redis::RedisError) -> BusError + '_ {
    move |e| BusError(format!("redis bus: {what} failed: {e}"))
}

fn action_name(action: CancelAction) -> &'static str {
    match action {
        CancelAction::Interrupt => "interrupt",
        CancelAction::Rollback => "rollback",
    }
}

fn parse_action(name: &str) -> Option<CancelAction> {
    match name {
        "interrupt" => Some(CancelAction::Interrupt),
        "rollback" => Some(CancelAction::Rollback),
        _ => None,
    }
}

impl Shared {
    fn key(&self, kind: &str, name: &str) -> String {
        format!("{}:{kind}:{name}", self.options.prefix)
    }

    /// The key of `run_id`'s `kind` (`stream`, `fence`): on a cluster, the run's id is their hash
    /// tag, so that the keys of one run share a slot.
    fn run_key(&self, kind: &str, run_id: &str) -> String {
        match self.target.is_cluster() {
            true => format!("{}:{kind}:{{{run_id}}}", self.options.prefix),
            false => self.key(kind, run_id),
        }
    }

    /// The pub/sub channel of `thread_id`'s notices.
    fn thread_channel(&self, thread_id: &str) -> String {
        self.key("thread", thread_id)
    }

    /// Subscribes to every thread's channel and hands their notices to this process's watchers,
    /// once: the first watch waits for the subscription, so no notice told after it is missed.
    async fn pump_threads(&self) -> Result<(), BusError> {
        self.pumping
            .get_or_try_init(|| async {
                let prefix = self.thread_channel("");
                let every_thread = pubsub::Channel::Pattern(format!("{}*", pubsub::glob_literal(&prefix)));
                let heard = pubsub::Subscription::open(self.target.subscribers(), every_thread, "threads")
                    .await
                    .map_err(failed("watching threads"))?;
                tokio::spawn(pubsub::pump_threads(heard, prefix, Arc::downgrade(&self.threads)));
                Ok(())
            })
            .await
            .map(|_| ())
    }

    /// Runs `op` on the shared connection, and again while Redis is away ([`away`]: restarting,
    /// unreachable, a cluster's primary failing over), after a growing pause (up to a second),
    /// until `wait` has passed since the call ([`OUTAGE_WAIT`] for all but what can do without
    /// Redis), each try cut off there: an outage costs a wait, not a failed request or a failed
    /// run (the connection reconnects in between). Every command sent here may run twice: wakes,
    /// cancellations and heartbeats set the same thing again, reads read again, and a stream
    /// event sent twice is dropped by its readers ([`stream::Reader::take`]).
    async fn query<T, F, Fut>(&self, what: &str, wait: Duration, op: F) -> Result<T, BusError>
    where
        F: Fn(Conn) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        let called = tokio::time::Instant::now();
        let mut away_since: Option<tokio::time::Instant> = None;
        let mut pause = Duration::from_millis(50);
        loop {
            let left = wait.saturating_sub(called.elapsed());
            let why = match tokio::time::timeout(left, op(self.conn.clone())).await {
                Ok(Ok(answer)) => {
                    if let Some(since) = away_since {
                        tracing::info!(waited = ?since.elapsed(), "redis bus: {what}: Redis answers again");
                    }
                    return Ok(answer);
                }
                Ok(Err(e)) if away(&e) => e.to_string(),
                Ok(Err(e)) => return Err(failed(what)(e)),
                Err(_) => format!("no answer within {wait:?}"),
            };
            away_since.get_or_insert_with(|| {
                tracing::warn!(error = %why, "redis bus: {what}: Redis is away; trying again for up to {wait:?}");
                tokio::time::Instant::now()
            });
            let left = wait.saturating_sub(called.elapsed());
            if left.is_zero() {
                return Err(BusError(format!("redis bus: {what} failed: {why}")));
            }
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// Sends `cmd` as [`query`](Self::query) does, waiting out an outage.
    async fn cmd<T: redis::FromRedisValue>(&self, what: &str, cmd: &redis::Cmd) -> Result<T, BusError> {
        self.cmd_within(what, OUTAGE_WAIT, cmd).await
    }

    /// Sends `cmd` as [`query`](Self::query) does, waiting for Redis up to `wait`.
    async fn cmd_within<T: redis::FromRedisValue>(
        &self,
        what: &str,
        wait: Duration,
        cmd: &redis::Cmd,
    ) -> Result<T, BusError> {
        self.query(what, wait, |mut conn| async move { cmd.query_async(&mut conn).await })
            .await
    }

    /// Runs `script` (by its hash, sending it first if Redis does not have it) with `keys` and
    /// `args`, as [`query`](Self::query) does.
    async fn script<T: redis::FromRedisValue>(
        &self,
        what: &str,
        script: &redis::Script,
        keys: &[&str],
        args: &[&[u8]],
    ) -> Result<T, BusError> {
        self.query(what, OUTAGE_WAIT, |mut conn| {
            let mut invocation = script.prepare_invoke();
            for key in keys {
                invocation.key(*key);
            }
            for arg in args {
                invocation.arg(*arg);
            }
            async move { invocation.invoke_async(&mut conn).await }
        })
        .await
    }

    /// A connection for a blocking command: an idle one, or a new one without a response
    /// timeout.
    async fn take_blocking(&self) -> redis::RedisResult<Conn> {
        let idle = self.blocking.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match idle {
            Some(conn) => Ok(conn),
            None => self.target.blocking().await,
        }
    }

    /// Gives back a blocking connection whose command has answered.
    fn give_blocking(&self, conn: Conn) {
        let mut idle = self.blocking.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < IDLE_BLOCKING {
            idle.push(conn);
        }
    }

    /// Runs a blocking command on a connection of its own.
    async fn blocking<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        let mut conn = self.take_blocking().await?;
        let answer = cmd.query_async(&mut conn).await;
        if answer.is_ok() {
            self.give_blocking(conn);
        }
        answer
    }
}

impl RedisBus {
    /// Options for connecting.
    pub fn options() -> RedisOptions {
        RedisOptions::default()
    }

    /// Connects to `url` with the default options. See [`RedisOptions::connect`].
    pub async fn connect(url: &str) -> Result<Self, BusError> {
        RedisOptions::default().connect(url).await
    }
}

impl Bus for RedisBus {
    fn wake(&self) -> BoxFuture<'_, Result<(), BusError>> {
        Box::pin(async move {
            let key = &self.shared.key("queue", "wake");
            let mut wake = redis::pipe();
            wake.lpush(key, 1).ignore().ltrim(key, 0, WAKES - 1).ignore();
            let wake = &wake;
            let woken = |mut conn: Conn| async move { wake.query_async(&mut conn).await };
            self.shared.query("waking a worker", BRIEF_WAIT, woken).await
        })
    }

    fn wait_wake(&self, timeout: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let key = self.shared.key("queue", "wake");
            // BLPOP takes seconds, 0 being forever: wait at least a millisecond.
            let secs = timeout.as_secs_f64().max(0.001);
            let waited: redis::RedisResult<Option<(String, String)>> =
                self.shared.blocking(redis::cmd("BLPOP").arg(&key).arg(secs)).await;
            if let Err(e) = waited {
                // Keep the promise of waiting, rather than have the caller spin.
                tracing::warn!(error = %e, "redis bus: waiting for a wake failed");
                tokio::time::sleep(timeout).await;
            }
        })
    }

    fn cancel<'a>(&'a self, run_id: &'a str, action: CancelAction) -> BoxFuture<'a, Result<(), BusError>> {
        Box::pin(async move {
            // Two commands, not a pipeline: on a cluster the key and the channel live apart.
            // The key first, so that a worker told by the channel finds it.
            let mut remember = redis::cmd("SET");
            remember
                .arg(self.shared.key("cancel", run_id))
                .arg(action_name(action))
                .arg("PX")
                .arg(millis(self.shared.options.cancel_ttl));
            self.shared.cmd::<()>("cancelling a run", &remember).await?;
            let mut tell = redis::cmd("PUBLISH");
            tell.arg(self.shared.key("channel", "cancel"))
                .arg(pubsub::cancel_payload(action, run_id));
            let _watchers: i64 = self.shared.cmd("cancelling a run", &tell).await?;
            Ok(())
        })
    }

    fn cancellations(&self) -> BoxFuture<'_, Result<BoxStream<'static, (String, CancelAction)>, BusError>> {
        Box::pin(async move {
            // The first subscription's failure is the caller's; later ones are retried. A
            // cancel published while no subscription stands is missed here, but its key stays
            // for `Bus::cancelled`.
            let channel = pubsub::Channel::Named(self.shared.key("channel", "cancel"));
            let heard = pubsub::Subscription::open(self.shared.target.subscribers(), channel, "cancellations")
                .await
                .map_err(failed("watching cancellations"))?;
            let stream = futures::stream::unfold(heard, |mut heard| async move {
                loop {
                    if let pubsub::Heard::Message(message) = heard.next().await {
                        if let Some(cancel) = pubsub::parse_cancel(&message) {
                            return Some((cancel, heard));
                        }
                    }
                }
            });
            Ok(stream.boxed())
        })
    }

    fn cancelled<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Option<CancelAction>, BusError>> {
        Box::pin(async move {
            let mut get = redis::cmd("GET");
            get.arg(self.shared.key("cancel", run_id));
            let name: Option<String> = self.shared.cmd("reading a cancellation", &get).await?;
            Ok(name.as_deref().and_then(parse_action))
        })
    }

    fn publish<'a>(
        &'a self,
        run_id: &'a str,
        by: Publisher,
        item: StreamItem,
    ) -> BoxFuture<'a, Result<bool, BusError>> {
        Box::pin(async move {
            let options = &self.shared.options;
            let (stream, fence) = (
                self.shared.run_key("stream", run_id),
                self.shared.run_key("fence", run_id),
            );
            let attempt = match by {
                Publisher::Attempt(n) => n.max(1),
                Publisher::Server => 0,
            }
            .to_string();
            let (len, ttl) = (options.stream_len.to_string(), millis(options.stream_ttl).to_string());
            let fence_ttl = millis(FENCE_TTL).to_string();
            let mut args: Vec<&[u8]> = vec![attempt.as_bytes(), len.as_bytes(), ttl.as_bytes(), fence_ttl.as_bytes()];
            args.extend(stream::fields(&item));
            let shared = &self.shared;
            let published: i64 = shared
                .script("publishing a stream event", &shared.publish, &[&stream, &fence], &args)
                .await?;
            Ok(published == 1)
        })
    }

    fn supersede<'a>(&'a self, run_id: &'a str, attempt: u32) -> BoxFuture<'a, Result<(), BusError>> {
        Box::pin(async move {
            let fence = self.shared.run_key("fence", run_id);
            let first = attempt.saturating_add(1).to_string();
            let ttl = millis(FENCE_TTL).to_string();
            let shared = &self.shared;
            let args: [&[u8]; 2] = [first.as_bytes(), ttl.as_bytes()];
            let _: i64 = shared
                .script("fencing a run's stream", &shared.supersede, &[&fence], &args)
                .await?;
            Ok(())
        })
    }

    fn subscribe<'a>(
        &'a self,
        run_id: &'a str,
        last_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<BoxStream<'static, StreamItem>, BusError>> {
        Box::pin(async move {
            let key = self.shared.run_key("stream", run_id);
            let (cursor, after) = match last_id {
                // Live only: from the newest entry on.
                None => {
                    let mut newest = redis::cmd("XREVRANGE");
                    newest.arg(&key).arg("+").arg("-").arg("COUNT").arg(1);
                    let newest: StreamRangeReply = self.shared.cmd("subscribing to a stream", &newest).await?;
                    let cursor = newest.ids.first().map_or_else(|| "0-0".to_owned(), |e| e.id.clone());
                    (cursor, None)
                }
                // Everything kept, less what the client has seen.
                Some(last) => ("0-0".to_owned(), parse_event_id(last)),
            };
            let reader = stream::Reader::new(self.shared.clone(), key, cursor, after);
            Ok(futures::stream::unfold(reader, stream::Reader::next).boxed())
        })
    }

    fn notify_thread<'a>(&'a self, thread_id: &'a str, notice: ThreadNotice) -> BoxFuture<'a, Result<(), BusError>> {
        Box::pin(async move {
            let Some(payload) = pubsub::notice_payload(notice) else {
                return Ok(()); // a gap is a watcher's own, never told
            };
            let mut publish = redis::cmd("PUBLISH");
            publish.arg(self.shared.thread_channel(thread_id)).arg(payload);
            let what = "telling a thread's watchers";
            let _watchers: i64 = self.shared.cmd_within(what, BRIEF_WAIT, &publish).await?;
            Ok(())
        })
    }

    fn watch_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, ThreadNotice>, BusError>> {
        Box::pin(async move {
            self.shared.pump_threads().await?;
            Ok(self.shared.threads.watch(thread_id))
        })
    }

    fn replay_window(&self) -> Duration {
        self.shared.options.stream_ttl
    }

    fn beat<'a>(&'a self, worker: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), BusError>> {
        Box::pin(async move {
            let mut set = redis::cmd("SET");
            set.arg(self.shared.key("worker", worker))
                .arg(1)
                .arg("PX")
                .arg(millis(ttl));
            self.shared.cmd("recording a heartbeat", &set).await
        })
    }

    fn is_alive<'a>(&'a self, worker: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        Box::pin(async move {
            let mut exists = redis::cmd("EXISTS");
            exists.arg(self.shared.key("worker", worker));
            self.shared.cmd("reading a heartbeat", &exists).await
        })
    }
    fn health(&self) -> Option<(&'static str, BoxFuture<'_, Result<(), BusError>>)> {
        let ping = Box::pin(async move {
            let ping = redis::cmd("PING");
            let answer: String = self.shared.cmd_within("checking Redis", BRIEF_WAIT, &ping).await?;
            match answer.as_str() {
                "PONG" => Ok(()),
                other => Err(BusError(format!("Redis answered PING with `{other}`"))),
            }
        });
        Some(("redis", ping))
    }
}
