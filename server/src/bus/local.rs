//! [`LocalBus`], the in-process [`Bus`] of embedded mode: one process runs the API and the workers,
//! so waking is a [`Notify`], cancellations a broadcast channel, heartbeats a map, and each run's
//! stream a bounded buffer kept for replay (`Last-Event-ID`, resumable streams, `join`) for a short
//! while after its [`StreamItem::Done`]. Memory stays bounded: a run keeps at most
//! [`LocalBusConfig::kept`] items (the oldest go first), at most [`LocalBusConfig::ended`]
//! finished runs' streams are kept (the first finished go first, however fast runs end), and a
//! subscriber that falls more than [`LocalBusConfig::live`] items behind is not queued for: it
//! catches up from the kept items, and misses only what is no longer kept. A thread's notices go
//! straight to its watchers in the process.

use super::threads::ThreadWatchers;
use super::{parse_event_id, Bus, BusError, CancelAction, Publisher, StreamItem, ThreadNotice};
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{broadcast, Notify};
use tokio::time::Instant;
use tokio_stream::wrappers::BroadcastStream;

/// The bounds of a [`LocalBus`].
#[derive(Debug, Clone, Copy)]
pub struct LocalBusConfig {
    /// How many items of a run's stream are kept for replay (the oldest are dropped first).
    pub kept: usize,
    /// How far a live subscriber may fall behind before it reads the items it fell behind on
    /// from the kept ones instead (it misses those no longer kept).
    pub live: usize,
    /// How long a finished run's stream stays available for replay.
    pub retain: Duration,
    /// How many finished runs' streams are kept at most, whatever their age (the first finished
    /// are dropped first): without it a server ending a thousand runs a second would hold two
    /// minutes of them.
    pub ended: usize,
}

impl Default for LocalBusConfig {
    /// 1024 kept items, 256 live ones, two minutes of replay after the end (LangGraph's default
    /// time-to-live of resumable streams), 10,000 finished streams.
    fn default() -> Self {
        Self {
            kept: 1024,
            live: 256,
            retain: Duration::from_secs(120),
            ended: 10_000,
        }
    }
}

/// One run's stream: the items kept for replay and the live channel.
#[derive(Debug)]
struct RunStream {
    kept: VecDeque<StreamItem>,
    /// Made when the first live subscriber comes, dropped at the end: its buffer (`live`
    /// slots, allocated whole) is held only while someone can listen, never for the two
    /// minutes a finished stream is kept for replay.
    live: Option<broadcast::Sender<StreamItem>>,
    /// When the stream ended, or when it was last touched while open.
    touched: Instant,
    done: bool,
    /// The first attempt of the run that may still publish ([`Bus::supersede`]); 0 for any.
    fence: u32,
}

/// The runs' streams, and when they were last swept of expired ones.
#[derive(Debug)]
struct Streams {
    by_run: HashMap<String, RunStream>,
    /// The runs whose streams ended, the first to end first (some may be gone already).
    ended: VecDeque<String>,
    swept: Instant,
}

/// The in-process bus. Cheap to clone; clones share everything.
#[derive(Debug, Clone)]
pub struct LocalBus {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: LocalBusConfig,
    wake: Notify,
    cancels: broadcast::Sender<(String, CancelAction)>,
    streams: Mutex<Streams>,
    beats: Mutex<HashMap<String, Instant>>,
    threads: ThreadWatchers,
}

impl Default for LocalBus {
    fn default() -> Self {
        Self::new(LocalBusConfig::default())
    }
}

impl LocalBus {
    /// A bus with these bounds.
    pub fn new(config: LocalBusConfig) -> Self {
        let (cancels, _) = broadcast::channel(1024);
        Self {
            inner: Arc::new(Inner {
                config: LocalBusConfig {
                    kept: config.kept.max(1),
                    live: config.live.max(1),
                    retain: config.retain,
                    ended: config.ended.max(1),
                },
                wake: Notify::new(),
                cancels,
                streams: Mutex::new(Streams {
                    by_run: HashMap::new(),
                    ended: VecDeque::new(),
                    swept: Instant::now(),
                }),
                beats: Mutex::new(HashMap::new()),
                threads: ThreadWatchers::default(),
            }),
        }
    }

    /// How many runs' streams are held (open ones, and finished ones not yet expired).
    pub fn streams_held(&self) -> usize {
        let mut streams = lock(&self.inner.streams);
        self.inner.expire(&mut streams, true);
        streams.by_run.len()
    }
}

/// Locks `m`, taking the data even if a holder panicked (every critical section here leaves the
/// maps consistent).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Inner {
    /// Drops the finished streams older than `retain`, and open ones nobody has touched or
    /// listened to for that long (a subscription to a run that never ran): `always`, or when
    /// the last sweep is [`sweep_every`](Self::sweep_every) old. A sweep reads every stream held
    /// (a server at 600 runs/s holds some 70,000 in two minutes), so the events published
    /// between two sweeps do not each pay for one.
    fn expire(&self, streams: &mut Streams, always: bool) {
        let now = Instant::now();
        if !always && now < streams.swept + self.sweep_every() {
            return;
        }
        streams.swept = now;
        streams.by_run.retain(|_, s| {
            let old = now.duration_since(s.touched) > self.config.retain;
            let listened = s.live.as_ref().is_some_and(|l| l.receiver_count() > 0);
            !(old && (s.done || !listened))
        });
    }

    /// How often publishing and subscribing sweep: an eighth of `retain`, at most a second, so
    /// a stream outlives its `retain` by at most that.
    fn sweep_every(&self) -> Duration {
        (self.config.retain / 8).min(Duration::from_secs(1))
    }

    /// Counts `run_id`'s stream among the finished ones, dropping the first finished past
    /// [`LocalBusConfig::ended`].
    fn end(&self, streams: &mut Streams, run_id: &str) {
        streams.ended.push_back(run_id.to_owned());
        while streams.ended.len() > self.config.ended {
            let Some(first) = streams.ended.pop_front() else { break };
            // Only if it is still the finished stream: an expired one may have been made anew.
            if streams.by_run.get(&first).is_some_and(|s| s.done) {
                streams.by_run.remove(&first);
            }
        }
    }

    fn stream<'m>(&self, streams: &'m mut Streams, run_id: &str) -> &'m mut RunStream {
        streams.by_run.entry(run_id.to_owned()).or_insert_with(|| RunStream {
            kept: VecDeque::new(),
            live: None,
            touched: Instant::now(),
            done: false,
            fence: 0,
        })
    }

    fn publish(&self, run_id: &str, by: Publisher, item: StreamItem) -> bool {
        let mut streams = lock(&self.streams);
        self.expire(&mut streams, false);
        let s = self.stream(&mut streams, run_id);
        if let Publisher::Attempt(n) = by {
            if n < s.fence {
                return false;
            }
            if n > 1 {
                s.fence = n; // the attempts before it are done publishing (Bus::publish)
            }
        }
        if s.done {
            return true; // a stream is over once Done is published; later items have no reader
        }
        s.done = item == StreamItem::Done;
        s.touched = Instant::now();
        if s.kept.len() == self.config.kept {
            s.kept.pop_front();
        }
        s.kept.push_back(item.clone());
        if let Some(live) = &s.live {
            // No receiver is fine: the item is kept for replay.
            let _ = live.send(item);
        }
        if s.done {
            // The receivers still get what was sent, then the channel's end.
            s.live = None;
            self.end(&mut streams, run_id);
        }
        true
    }

    fn supersede(&self, run_id: &str, attempt: u32) {
        let mut streams = lock(&self.streams);
        let s = self.stream(&mut streams, run_id);
        s.fence = s.fence.max(attempt.saturating_add(1));
    }

    /// The kept items after `last_id` and a receiver of the later ones, taken under one lock so
    /// that nothing is missed or repeated between the two.
    fn subscribe(
        &self,
        run_id: &str,
        last_id: Option<&str>,
    ) -> (Vec<StreamItem>, Option<broadcast::Receiver<StreamItem>>) {
        let mut streams = lock(&self.streams);
        self.expire(&mut streams, false);
        let s = self.stream(&mut streams, run_id);
        let replay: Vec<StreamItem> = match last_id {
            None => Vec::new(),
            Some("-1") => s.kept.iter().cloned().collect(),
            Some(last) => {
                let after = parse_event_id(last);
                s.kept
                    .iter()
                    .filter(|item| match item {
                        StreamItem::Event { id, .. } => match (parse_event_id(id), after) {
                            (Some(mine), Some(after)) => mine > after,
                            _ => true,
                        },
                        StreamItem::Done => true,
                    })
                    .cloned()
                    .collect()
            }
        };
        if s.done {
            let mut replay = replay;
            if replay.last() != Some(&StreamItem::Done) {
                replay.push(StreamItem::Done);
            }
            (replay, None)
        } else {
            s.touched = Instant::now();
            let live = s.live.get_or_insert_with(|| broadcast::channel(self.config.live).0);
            (replay, Some(live.subscribe()))
        }
    }
}

/// A subscriber's stream: the items of `replay`, then those of `live`, up to and including the
/// first [`StreamItem::Done`]. A subscriber that fell more than [`LocalBusConfig::live`] items
/// behind catches up from the run's kept items after the last event it got (those it fell
/// behind on, as far as they are kept), then goes on live.
fn until_done(
    inner: Arc<Inner>,
    run_id: String,
    replay: Vec<StreamItem>,
    live: Option<broadcast::Receiver<StreamItem>>,
) -> BoxStream<'static, StreamItem> {
    struct Reader {
        inner: Arc<Inner>,
        run_id: String,
        ahead: std::vec::IntoIter<StreamItem>,
        live: Option<broadcast::Receiver<StreamItem>>,
        /// The id of the last event given out.
        last: Option<String>,
    }
    impl Reader {
        async fn next(&mut self) -> Option<StreamItem> {
            loop {
                if let Some(item) = self.ahead.next() {
                    return Some(item);
                }
                match self.live.as_mut()?.recv().await {
                    Ok(item) => return Some(item),
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let after = self.last.as_deref().unwrap_or("-1");
                        let (replay, live) = self.inner.subscribe(&self.run_id, Some(after));
                        (self.ahead, self.live) = (replay.into_iter(), live);
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        }
    }
    let reader = Reader {
        inner,
        run_id,
        ahead: replay.into_iter(),
        live,
        last: None,
    };
    // End right after the first Done, without waiting on the live channel for another item.
    stream::unfold(Some(reader), |reader| async move {
        let mut reader = reader?;
        let item = reader.next().await?;
        match &item {
            StreamItem::Event { id, .. } => reader.last = Some(id.clone()),
            StreamItem::Done => return Some((item, None)),
        }
        Some((item, Some(reader)))
    })
    .boxed()
}

impl Bus for LocalBus {
    fn wake(&self) -> BoxFuture<'_, Result<(), BusError>> {
        self.inner.wake.notify_one();
        Box::pin(async { Ok(()) })
    }

    fn wait_wake(&self, timeout: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let _ = tokio::time::timeout(timeout, self.inner.wake.notified()).await;
        })
    }

    fn cancel<'a>(&'a self, run_id: &'a str, action: CancelAction) -> BoxFuture<'a, Result<(), BusError>> {
        // No listener is fine: no worker of this process is running, so nothing runs `run_id`.
        let _ = self.inner.cancels.send((run_id.to_owned(), action));
        Box::pin(async { Ok(()) })
    }

    fn cancellations(&self) -> BoxFuture<'_, Result<BoxStream<'static, (String, CancelAction)>, BusError>> {
        let rx = self.inner.cancels.subscribe();
        Box::pin(async move { Ok(BroadcastStream::new(rx).filter_map(|r| async move { r.ok() }).boxed()) })
    }

    fn publish<'a>(
        &'a self,
        run_id: &'a str,
        by: Publisher,
        item: StreamItem,
    ) -> BoxFuture<'a, Result<bool, BusError>> {
        let published = self.inner.publish(run_id, by, item);
        Box::pin(async move { Ok(published) })
    }

    fn supersede<'a>(&'a self, run_id: &'a str, attempt: u32) -> BoxFuture<'a, Result<(), BusError>> {
        self.inner.supersede(run_id, attempt);
        Box::pin(async { Ok(()) })
    }

    fn subscribe<'a>(
        &'a self,
        run_id: &'a str,
        last_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<BoxStream<'static, StreamItem>, BusError>> {
        let (replay, live) = self.inner.subscribe(run_id, last_id);
        let stream = until_done(self.inner.clone(), run_id.to_owned(), replay, live);
        Box::pin(async move { Ok(stream) })
    }

    fn notify_thread<'a>(&'a self, thread_id: &'a str, notice: ThreadNotice) -> BoxFuture<'a, Result<(), BusError>> {
        self.inner.threads.send(thread_id, notice);
        Box::pin(async { Ok(()) })
    }

    fn watch_thread<'a>(
        &'a self,
        thread_id: &'a str,
    ) -> BoxFuture<'a, Result<BoxStream<'static, ThreadNotice>, BusError>> {
        let notices = self.inner.threads.watch(thread_id);
        Box::pin(async move { Ok(notices) })
    }

    fn replay_window(&self) -> Duration {
        self.inner.config.retain
    }

    fn beat<'a>(&'a self, worker: &'a str, ttl: Duration) -> BoxFuture<'a, Result<(), BusError>> {
        lock(&self.inner.beats).insert(worker.to_owned(), Instant::now() + ttl);
        Box::pin(async { Ok(()) })
    }

    fn is_alive<'a>(&'a self, worker: &'a str) -> BoxFuture<'a, Result<bool, BusError>> {
        let alive = lock(&self.inner.beats)
            .get(worker)
            .is_some_and(|deadline| *deadline > Instant::now());
        Box::pin(async move { Ok(alive) })
    }
}

#[cfg(test)]
mod tests;
