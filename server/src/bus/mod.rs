//! What the server's processes tell each other, and nothing they must keep: waking the workers when
//! a run is queued, cancelling a run wherever it runs, fanning a run's stream events out to every
//! API process that serves its stream (with the short replay that resumable streams and
//! `Last-Event-ID` need, and closed to an attempt of a run that was taken back from its worker),
//! the workers' heartbeats, and what happens to a thread outside its runs' streams (a run made on
//! it, its state edited: [`ThreadNotice`]) for whoever watches the thread. [`local`] is the
//! in-process bus of embedded mode; [`redis`] carries the same over Redis for scale-out mode.
//! The durable side (runs, threads) is [`crate::db`]'s.

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use std::sync::Arc;
use std::time::Duration;

pub mod local;
pub mod redis;
mod threads;

/// Why a bus operation failed.
#[derive(Debug, Clone, PartialEq)]
pub struct BusError(pub String);

impl std::fmt::Display for BusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BusError {}

/// How to cancel a run (`POST …/cancel?action=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelAction {
    /// Stop it; it ends `interrupted`, its checkpoints stay.
    Interrupt,
    /// Stop it, then delete it and the checkpoints it wrote.
    Rollback,
}

/// One event of a run's stream as the bus carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    /// An SSE event. `id` is `<ms>-<seq>`, increasing within the run (the SSE `id:` line of a
    /// resumable stream).
    Event {
        /// Its id.
        id: String,
        /// The SSE event name.
        event: String,
        /// Its data, as JSON text: written once by the run, shared by every reader, kept and
        /// replayed without being copied or written again.
        data: Arc<str>,
    },
    /// The run's stream is over (the run ended, or was cancelled).
    Done,
}

/// What happens to a thread outside its runs' own streams, told to the thread's watchers
/// (`GET /threads/{thread_id}/stream`) as it happens: nothing of it is kept.
#[derive(Debug, Clone, PartialEq)]
pub enum ThreadNotice {
    /// A run was made on the thread (its events are on its own stream): the run's id.
    Run(String),
    /// The thread's state was edited (`POST /threads/{thread_id}/state`): the `state_update`
    /// event.
    StateUpdate {
        /// Its id, `<ms>-<seq>`.
        id: String,
        /// Its data, as JSON text: `{"state": <the thread's state>, "thread_id": …}`.
        data: Arc<str>,
    },
    /// Notices may have been missed here (the bus's connection was lost and made again, or the
    /// watcher fell behind): a watcher reads the thread's runs again. Never told by a caller.
    Gap,
}

/// An event id `<ms>-<seq>` as a pair that orders like the ids; `None` for any other text (`-1`
/// among them: a `Last-Event-ID` that asks to replay everything).
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (ms, seq) = id.split_once('-')?;
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

/// Who publishes an item of a run's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publisher {
    /// Attempt `n` of the run, run by the worker that claimed it: refused once the run was taken
    /// back from that attempt ([`Bus::supersede`]) or a later attempt published.
    Attempt(u32),
    /// The server itself, closing the stream of a run that never started (a pending run
    /// cancelled): never refused.
    Server,
}

/// The signals and streams shared by the server's processes.
pub trait Bus: Send + Sync + 'static {
    /// Wakes a waiting worker: a run was queued.
    fn wake(&self) -> BoxFuture<'_, Result<(), BusError>>;
    /// Waits until a wake arrives or `timeout` passes (workers also poll, so a lost wake only
    /// delays a run by `timeout`).
    fn wait_wake(&self, timeout: Duration) -> BoxFuture<'_, ()>;
    /// Asks whoever runs `run_id` to stop it.
    fn cancel<'a>(&'a self, run_id: &'a str, action: CancelAction) -> BoxFuture<'a, Result<(), BusError>>;
    /// The cancellations asked for from now on, for the runs of this process's workers to watch.
    fn cancellations(&self) -> BoxFuture<'_, Result<BoxStream<'static, (String, CancelAction)>, BusError>>;
    /// The cancellation asked for `run_id` a short while ago, if any: a worker that claims a run
    /// checks it, so a cancel that came before the claim (and so before the worker watched) is
    /// not lost. The default has none to remember, for a bus whose cancellations cannot race a
    /// claim.
    fn cancelled<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<Option<CancelAction>, BusError>> {
        let _ = run_id;
        Box::pin(async { Ok(None) })
    }
    /// Publishes one item of `run_id`'s stream, and keeps it for replay for a while; whether it
    /// was published: `false` when `by` is an attempt the run was taken back from
    /// ([`supersede`](Self::supersede)), which publishes nothing more. An attempt after the first
    /// fences off those before it as it publishes (in the same step): whatever the sweeper's
    /// fence, which follows its requeue by a round trip, the run's stream holds an earlier
    /// attempt's items only before the next attempt's first.
    fn publish<'a>(&'a self, run_id: &'a str, by: Publisher, item: StreamItem)
        -> BoxFuture<'a, Result<bool, BusError>>;
    /// Hands `run_id`'s stream over to the attempts after `attempt`: from now on, attempt
    /// `attempt` and those before it publish nothing ([`publish`](Self::publish) refuses them).
    /// Called as a run is put back in the queue, taken from a worker whose heartbeat lapsed: if
    /// that worker was only slow, its events would otherwise go on beside the next attempt's.
    fn supersede<'a>(&'a self, run_id: &'a str, attempt: u32) -> BoxFuture<'a, Result<(), BusError>>;
    /// `run_id`'s stream: the kept items after `last_id` (all kept ones for `Some("-1")`, none for
    /// `None`), then the live ones, until [`StreamItem::Done`]. A subscriber that falls too far
    /// behind misses items rather than growing memory.
    fn subscribe<'a>(
        &'a self,
        run_id: &'a str,
        last_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<BoxStream<'static, StreamItem>, BusError>>;
    /// Tells the watchers of `thread_id`, in every process, of `notice`. Nothing is kept: a
    /// notice nobody watches for is gone.
    fn notify_thread<'a>(&'a self, thread_id: &'a str, notice: ThreadNotice) -> BoxFuture<'a, Result<(), BusError>>;
    /// The notices of `thread_id` from now on (once this returns, none told later is missed
    /// without a [`ThreadNotice::Gap`] in its place).
    fn watch_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, ThreadNotice>, BusError>>;
    /// How long a finished run's stream stays for replay ([`subscribe`](Self::subscribe) with a
    /// `last_id`).
    fn replay_window(&self) -> Duration;
    /// Records that `worker` is alive, for `ttl`.
    fn beat<'a>(&'a self, worker: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), BusError>>;
    /// Whether `worker` has beaten within its last `ttl`.
    fn is_alive<'a>(&'a self, worker: &'a str) -> BoxFuture<'a, Result<bool, BusError>>;
    /// The service this bus depends on, by the name `GET /ok?check_db=1` reports it under, and a
    /// round trip to it; `None` for a bus in process, which has none.
    fn health(&self) -> Option<(&'static str, BoxFuture<'_, Result<(), BusError>>)> {
        None
    }
}
