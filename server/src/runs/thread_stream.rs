//! A thread's own stream (`GET /threads/{thread_id}/stream`), open for as long as its client
//! listens: the events of each run made on the thread, one run after the other as the thread runs
//! them, each run's end as a `metadata` event `{"status": "run_done", "run_id": …}`, and the
//! thread's state edits as `state_update` events. It follows the runs' own streams on the bus
//! ([`Manager::follow`]), learns of new runs and edits from the thread's notices
//! ([`Bus::watch_thread`](crate::bus::Bus::watch_thread)), and reads the thread's runs from the
//! queue when it starts and whenever notices may have been missed. With a `Last-Event-ID`, the
//! runs' events after it that the bus still keeps are sent first
//! ([`Bus::replay_window`](crate::bus::Bus::replay_window)); state edits are live only.

use super::execute::{parse_time, EventIds};
use super::{Manager, RunError, OUTCOME_EVENT};
use crate::bus::{parse_event_id, StreamItem, ThreadNotice};
use crate::model::{Run, RunStatus};
use futures::stream::{BoxStream, StreamExt};
use serde_json::{json, Value};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;
use weir_runtime::checkpoint::Timestamp;

/// How many of a thread's finished runs a replay looks at, besides those pending or running.
const REPLAYED_RUNS: usize = 100;

/// Which of a thread's events its stream sends: LangGraph's thread stream modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadModes {
    /// `run_modes`: every event of the thread's runs (the modes each run was made with), and
    /// their ends.
    pub run_modes: bool,
    /// `lifecycle`: each run's start (its first `metadata` event) and end.
    pub lifecycle: bool,
    /// `state_update`: the thread's state edits.
    pub state_update: bool,
}

impl Default for ThreadModes {
    /// `run_modes`, as LangGraph's server when none is asked for.
    fn default() -> Self {
        Self {
            run_modes: true,
            lifecycle: false,
            state_update: false,
        }
    }
}

impl ThreadModes {
    /// The modes named by `words`; the default ([`ThreadModes::default`]) when there are none.
    ///
    /// # Errors
    /// The first word that names no mode, in a sentence that lists the modes.
    pub fn parse<'a>(words: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut modes = Self {
            run_modes: false,
            lifecycle: false,
            state_update: false,
        };
        let mut any = false;
        for word in words {
            match word {
                "run_modes" => modes.run_modes = true,
                "lifecycle" => modes.lifecycle = true,
                "state_update" => modes.state_update = true,
                other => {
                    return Err(format!(
                        "unknown thread stream mode `{other}`; expected `run_modes`, `lifecycle` or `state_update`"
                    ))
                }
            }
            any = true;
        }
        Ok(if any { modes } else { Self::default() })
    }

    /// Whether an event of one of the thread's runs goes out: every one for `run_modes`; a
    /// run's start (`metadata` with its `run_id` and `attempt`) and end (`run_done`) for
    /// `lifecycle`.
    fn wants_run_event(self, event: &str, data: &str) -> bool {
        if self.run_modes {
            return true;
        }
        self.lifecycle
            && event == "metadata"
            && serde_json::from_str::<Value>(data).is_ok_and(|d| {
                d.get("status").and_then(Value::as_str) == Some("run_done")
                    || (d.get("run_id").is_some() && d.get("attempt").is_some())
            })
    }
}

/// The run a thread stream follows now.
struct Following {
    run_id: String,
    items: BoxStream<'static, StreamItem>,
    /// Its end was sent (at its [`OUTCOME_EVENT`]).
    ended: bool,
    /// Whether its end is news to this client: it started after the client came, or the client
    /// got some of its events.
    news: bool,
}

/// How many of the runs it followed a thread stream remembers, so that a run announced twice
/// (a notice sent again after a lost connection) or found again after a gap is followed once: a
/// stream open for days on a thread a cron runs every second holds this many, not all.
const SEEN: usize = 4_096;

/// The latest [`SEEN`] runs a thread stream followed or will follow.
#[derive(Default)]
struct Seen {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl Seen {
    /// Remembers `run_id`; whether it is new.
    fn insert(&mut self, run_id: String) -> bool {
        if !self.set.insert(run_id.clone()) {
            return false;
        }
        self.order.push_back(run_id);
        if self.order.len() > SEEN {
            if let Some(oldest) = self.order.pop_front() {
                self.set.remove(&oldest);
            }
        }
        true
    }
}

/// What a thread stream's wait brought.
enum Next {
    Notice(Option<ThreadNotice>),
    Item(Option<StreamItem>),
}

/// A thread stream's state between two of its events.
struct ThreadStream {
    manager: Manager,
    thread_id: String,
    modes: ThreadModes,
    notices: BoxStream<'static, ThreadNotice>,
    /// The runs to follow after the current one, oldest first, each with the `last_id` to
    /// follow it from and whether it was made after the client came.
    ahead: VecDeque<(String, Option<String>, bool)>,
    /// The runs followed or to follow (the latest [`SEEN`]).
    seen: Seen,
    current: Option<Following>,
    /// Events ready to go out.
    out: VecDeque<StreamItem>,
}

impl Manager {
    /// `thread_id`'s stream (see the module): the events after `last_id` that the bus still
    /// keeps (all of them for `-1`, none for `None`), then the live ones, never ending.
    ///
    /// # Errors
    /// The bus or the runs' table failing as the stream starts.
    pub async fn thread_stream(
        &self,
        thread_id: &str,
        last_id: Option<&str>,
        modes: ThreadModes,
    ) -> Result<BoxStream<'static, StreamItem>, RunError> {
        // Watching first: a run made while the runs are read is then in both, never in neither.
        let notices = self.inner.bus.watch_thread(thread_id).await?;
        let mut stream = ThreadStream {
            manager: self.clone(),
            thread_id: thread_id.to_owned(),
            modes,
            notices,
            ahead: VecDeque::new(),
            seen: Seen::default(),
            current: None,
            out: VecDeque::new(),
        };
        let replay_since = last_id.map(|last| self.replay_since(last));
        for run in self.runs_to_follow(thread_id, replay_since).await? {
            // A run not started yet is news from its first event; one running is followed live.
            let pending = run.status == RunStatus::Pending;
            let from = last_id.or(pending.then_some("-1")).map(str::to_owned);
            stream.seen.insert(run.run_id.clone());
            stream.ahead.push_back((run.run_id, from, pending));
        }
        // Following the first now: a run running as the client comes is followed from here on.
        stream.follow_next().await;
        Ok(futures::stream::unfold(stream, |mut s| async move {
            let item = s.next().await?;
            Some((item, s))
        })
        .boxed())
    }

    /// The earliest time (Unix ms) a run may have ended and still have events after `last_id`
    /// kept on the bus.
    fn replay_since(&self, last_id: &str) -> u64 {
        let window = self.inner.bus.replay_window() + Duration::from_secs(1);
        let window = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
        let kept_since = (Timestamp::now().unix_micros() / 1_000).saturating_sub(window);
        match parse_event_id(last_id) {
            // The run of that event, and those after it: a second's slack for the clocks of the
            // processes that stamped the ids.
            Some((ms, _)) => kept_since.max(ms.saturating_sub(1_000)),
            None => kept_since,
        }
    }

    /// The thread's runs pending or running and, with `ended_since`, those of its last
    /// [`REPLAYED_RUNS`] that ended since then, oldest first (a thread's runs end in the order
    /// they were queued). Read pending, then running, then ended, so that a run moving on between
    /// two reads is in one of them at least; one read twice is kept where it was read last.
    async fn runs_to_follow(&self, thread_id: &str, ended_since: Option<u64>) -> Result<Vec<Run>, RunError> {
        let queue = &self.inner.queue;
        let pending = queue
            .list_runs(
                thread_id,
                self.inner.config.max_queued_runs,
                0,
                Some(RunStatus::Pending),
            )
            .await?;
        let running = queue.list_runs(thread_id, 1, 0, Some(RunStatus::Running)).await?;
        let ended = match ended_since {
            None => Vec::new(),
            Some(since) => {
                let mut last = queue.list_runs(thread_id, REPLAYED_RUNS, 0, None).await?;
                last.retain(|run| {
                    let updated = parse_time(&run.updated_at).map_or(0, |t| t.unix_micros() / 1_000);
                    run.status.is_final() && updated >= since
                });
                last
            }
        };
        // Each list is newest first: the pending runs are the newest, the ended ones the oldest.
        let oldest_first = pending.into_iter().chain(running).chain(ended).rev();
        let mut seen = HashSet::new();
        Ok(oldest_first.filter(|run| seen.insert(run.run_id.clone())).collect())
    }

    /// Tells the thread's watchers of a run made on it.
    pub(super) async fn announce(&self, run: &Run) {
        let notice = ThreadNotice::Run(run.run_id.clone());
        if let Err(e) = self.inner.bus.notify_thread(&run.thread_id, notice).await {
            tracing::warn!(run_id = %run.run_id, error = %e, "the thread's watchers were not told of a new run");
        }
    }

    /// Tells the thread's watchers that its state was edited: `state` is its state now, as
    /// `GET /threads/{thread_id}/state` reads it.
    pub async fn state_updated(&self, thread_id: &str, state: &Value) {
        let data = json!({"state": state, "thread_id": thread_id}).to_string();
        let notice = ThreadNotice::StateUpdate {
            id: EventIds::default().next(),
            data: data.into(),
        };
        if let Err(e) = self.inner.bus.notify_thread(thread_id, notice).await {
            tracing::warn!(thread_id, error = %e, "the thread's watchers were not told of a state edit");
        }
    }
}

impl ThreadStream {
    /// The next event to send; `None` once the bus is gone.
    async fn next(&mut self) -> Option<StreamItem> {
        loop {
            if let Some(item) = self.out.pop_front() {
                return Some(item);
            }
            if self.current.is_none() {
                self.follow_next().await;
            }
            let following = self.current.is_some();
            let (notices, current) = (&mut self.notices, &mut self.current);
            // The run's events first: one it published before a notice was told (its end before
            // the state edit its client made after) goes out before it.
            let next = tokio::select! {
                biased;
                item = async { current.as_mut()?.items.next().await }, if following => Next::Item(item),
                notice = notices.next() => Next::Notice(notice),
            };
            match next {
                Next::Notice(notice) => self.take_notice(notice?).await,
                Next::Item(item) => self.take_item(item),
            }
        }
    }

    /// Starts following the next run ahead, if any.
    async fn follow_next(&mut self) {
        while let Some((run_id, last_id, news)) = self.ahead.pop_front() {
            match self
                .manager
                .follow_ids(&self.thread_id, &run_id, last_id.as_deref())
                .await
            {
                Ok(items) => {
                    self.current = Some(Following {
                        run_id,
                        items,
                        ended: false,
                        news,
                    });
                    return;
                }
                Err(e) => tracing::warn!(run_id, error = %e, "a thread stream could not follow a run; skipped"),
            }
        }
    }

    async fn take_notice(&mut self, notice: ThreadNotice) {
        match notice {
            ThreadNotice::Run(run_id) => {
                if self.seen.insert(run_id.clone()) {
                    self.ahead.push_back((run_id, Some("-1".to_owned()), true));
                }
            }
            ThreadNotice::StateUpdate { id, data } => {
                if self.modes.state_update {
                    let event = "state_update".to_owned();
                    self.out.push_back(StreamItem::Event { id, event, data });
                }
            }
            ThreadNotice::Gap => match self.manager.runs_to_follow(&self.thread_id, None).await {
                Ok(runs) => {
                    for run in runs {
                        if self.seen.insert(run.run_id.clone()) {
                            self.ahead.push_back((run.run_id, Some("-1".to_owned()), true));
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(thread_id = %self.thread_id, error = %e, "a thread stream could not read the thread's runs after a gap")
                }
            },
        }
    }

    /// Takes the next item of the run followed now.
    fn take_item(&mut self, item: Option<StreamItem>) {
        let Some(run) = self.current.as_mut() else { return };
        match item {
            Some(StreamItem::Event { id, event, data }) => {
                if event == OUTCOME_EVENT {
                    // The run's last event: its end goes out with this id, so a client that
                    // comes back after it does not get the end again.
                    run.ended = true;
                    self.send_end(id);
                } else {
                    run.news = true;
                    if self.modes.wants_run_event(&event, &data) {
                        self.out.push_back(StreamItem::Event { id, event, data });
                    }
                }
            }
            Some(StreamItem::Done) | None => {
                // A run stopped before it ran (a pending run cancelled) has no outcome.
                if !run.ended && run.news {
                    self.send_end(EventIds::default().next());
                }
                self.current = None;
            }
        }
    }

    /// Sends the end of the run followed now (`run_done`), if the modes want it.
    fn send_end(&mut self, id: String) {
        let Some(run) = &self.current else { return };
        let data = format!(r#"{{"status":"run_done","run_id":{}}}"#, json!(run.run_id));
        if self.modes.wants_run_event("metadata", &data) {
            let event = "metadata".to_owned();
            self.out.push_back(StreamItem::Event {
                id,
                event,
                data: Arc::from(data),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_read_as_langgraph_names_them() {
        assert_eq!(ThreadModes::parse([]), Ok(ThreadModes::default()));
        let both = ThreadModes::parse(["lifecycle", "state_update"]).unwrap();
        assert_eq!(
            both,
            ThreadModes {
                run_modes: false,
                lifecycle: true,
                state_update: true
            }
        );
        let err = ThreadModes::parse(["values"]).unwrap_err();
        assert!(err.contains("`values`") && err.contains("`run_modes`"), "{err}");
    }

    #[test]
    fn lifecycle_keeps_a_runs_start_and_end_only() {
        let lifecycle = ThreadModes::parse(["lifecycle"]).unwrap();
        assert!(lifecycle.wants_run_event("metadata", r#"{"run_id":"r","attempt":1}"#));
        assert!(lifecycle.wants_run_event("metadata", r#"{"status":"run_done","run_id":"r"}"#));
        assert!(!lifecycle.wants_run_event("values", r#"{"run_id":"r","attempt":1}"#));
        assert!(!lifecycle.wants_run_event("metadata", r#"{"other":1}"#));
        let state_only = ThreadModes::parse(["state_update"]).unwrap();
        assert!(!state_only.wants_run_event("metadata", r#"{"run_id":"r","attempt":1}"#));
        assert!(ThreadModes::default().wants_run_event("updates", "{}"));
    }

    #[test]
    fn a_run_is_new_once_while_it_is_among_the_latest() {
        let mut seen = Seen::default();
        assert!(seen.insert("r0".into()));
        assert!(!seen.insert("r0".into()));
        for i in 1..=SEEN {
            assert!(seen.insert(format!("r{i}")));
        }
        assert_eq!(seen.set.len(), SEEN);
        assert!(seen.insert("r0".into()), "the oldest was forgotten");
        assert!(!seen.insert(format!("r{SEEN}")));
    }
}
