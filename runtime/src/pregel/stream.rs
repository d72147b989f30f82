//! Streaming a run: typed events as the run goes, through a bounded channel, so a slow consumer
//! slows the run down instead of growing memory; dropping the stream stops the run cleanly
//! between two steps, with its last checkpoint intact.

use super::outcome::Outcome;
use super::run::Loop;
use crate::checkpoint::Source;
use crate::error::Error;
use crate::graph::Emitter;
use crate::signal::Paused;
use crate::state::State;
use futures::Stream;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;
use tokio::sync::mpsc;

/// What a stream reports (LangGraph's `stream_mode`s). Combine them with `|`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamMode(u8);

impl StreamMode {
    /// The whole state after each step.
    pub const VALUES: Self = Self(1);
    /// Each node's update, tagged by node, once per task.
    pub const UPDATES: Self = Self(2);
    /// Each task's start and end, with its duration and error.
    pub const TASKS: Self = Self(4);
    /// Each checkpoint written, with the nodes that run next.
    pub const CHECKPOINTS: Self = Self(8);
    /// The events nodes emit themselves through [`Context::emit`](crate::Context::emit).
    pub const CUSTOM: Self = Self(16);
    /// Every mode.
    pub const ALL: Self = Self(31);

    /// Whether `self` includes every mode of `other`.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for StreamMode {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// One event of a streamed run.
pub enum Event<S: State> {
    /// The state after step `step`.
    Values {
        /// The step.
        step: i64,
        /// The whole state (shared: cloning the event is cheap).
        state: Arc<S>,
    },
    /// What node `node` wrote in step `step`.
    Update {
        /// The step.
        step: i64,
        /// The node.
        node: String,
        /// Its update.
        update: S::Update,
    },
    /// A task started.
    TaskStart {
        /// The step.
        step: i64,
        /// The task's id.
        id: String,
        /// Its node.
        node: String,
    },
    /// A task ended.
    TaskEnd {
        /// The step.
        step: i64,
        /// The task's id.
        id: String,
        /// Its node.
        node: String,
        /// How long it ran (all attempts).
        duration: Duration,
        /// Its error, when it failed.
        error: Option<String>,
    },
    /// A checkpoint was written; `next` are the nodes of the step that follows it.
    Checkpoint {
        /// The step it was written after.
        step: i64,
        /// Its id.
        id: String,
        /// What wrote it.
        source: Source,
        /// The nodes that run next.
        next: Vec<String>,
    },
    /// An event a node emitted.
    Custom {
        /// The step.
        step: i64,
        /// The node.
        node: String,
        /// What it emitted.
        value: serde_json::Value,
    },
    /// The run paused; resume the thread to go on. The last event of its stream.
    Paused(Vec<Paused>),
}

impl<S: State> fmt::Debug for Event<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Values { step, state } => f
                .debug_struct("Values")
                .field("step", step)
                .field("state", state)
                .finish(),
            Self::Update { step, node, update } => f
                .debug_struct("Update")
                .field("step", step)
                .field("node", node)
                .field("update", update)
                .finish(),
            Self::TaskStart { step, id, node } => f
                .debug_struct("TaskStart")
                .field("step", step)
                .field("id", id)
                .field("node", node)
                .finish(),
            Self::TaskEnd {
                step,
                id,
                node,
                duration,
                error,
            } => f
                .debug_struct("TaskEnd")
                .field("step", step)
                .field("id", id)
                .field("node", node)
                .field("duration", duration)
                .field("error", error)
                .finish(),
            Self::Checkpoint { step, id, source, next } => f
                .debug_struct("Checkpoint")
                .field("step", step)
                .field("id", id)
                .field("source", source)
                .field("next", next)
                .finish(),
            Self::Custom { step, node, value } => f
                .debug_struct("Custom")
                .field("step", step)
                .field("node", node)
                .field("value", value)
                .finish(),
            Self::Paused(p) => f.debug_tuple("Paused").field(p).finish(),
        }
    }
}

pub(crate) type Item<S> = Result<Event<S>, Error>;

/// Where a streamed run sends its events.
pub(crate) struct Sink<S: State> {
    pub(crate) tx: mpsc::Sender<Item<S>>,
    pub(crate) modes: StreamMode,
}

impl<S: State> Sink<S> {
    pub(crate) fn wants(&self, mode: StreamMode) -> bool {
        self.modes.contains(mode)
    }
    /// Sends an event, waiting while the consumer is behind. Returns `false` once the stream
    /// was dropped.
    pub(crate) async fn send(&self, event: Event<S>) -> bool {
        self.tx.send(Ok(event)).await.is_ok()
    }
    pub(crate) fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
    /// The emitter nodes of step `step` get through their context.
    pub(crate) fn emitter(&self, node: Arc<str>, step: i64) -> Option<Emitter> {
        if !self.wants(StreamMode::CUSTOM) {
            return None;
        }
        let tx = self.tx.clone();
        Some(Emitter(Arc::new(move |value| {
            let tx = tx.clone();
            let node = node.to_string();
            Box::pin(async move { tx.send(Ok(Event::Custom { step, node, value })).await.is_ok() })
        })))
    }
}

/// A streamed run: a [`Stream`] of [`Event`]s, ending after the run's last event (an error
/// ends it too). Dropping it stops the run cleanly between two steps.
pub struct RunStream<S: State> {
    rx: mpsc::Receiver<Item<S>>,
    outcome: Option<tokio::task::JoinHandle<Result<Outcome<S>, Error>>>,
}

impl<S: State> fmt::Debug for RunStream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunStream").finish_non_exhaustive()
    }
}

impl<S: State> RunStream<S> {
    pub(crate) fn new(
        rx: mpsc::Receiver<Item<S>>,
        outcome: tokio::task::JoinHandle<Result<Outcome<S>, Error>>,
    ) -> Self {
        Self {
            rx,
            outcome: Some(outcome),
        }
    }

    /// Waits for the run to end (draining the remaining events) and returns its outcome.
    ///
    /// # Errors
    /// The run's error.
    pub async fn outcome(mut self) -> Result<Outcome<S>, Error> {
        while self.rx.recv().await.is_some() {}
        let handle = self.outcome.take().expect("the outcome is taken once");
        handle.await.map_err(|e| Error::run_lost(e.to_string()))?
    }
}

impl<S: State> Stream for RunStream<S> {
    type Item = Result<Event<S>, Error>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

/// The capacity of a stream's channel: how far a run may get ahead of its consumer.
pub(crate) const CAPACITY: usize = 64;

/// Sends the events of the step just run: each task's end and update, then the values.
pub(crate) async fn report<S: State>(run: &mut Loop<S>, step: i64, values: bool) {
    let Some(sink) = &run.sink else { return };
    for r in std::mem::take(&mut run.report) {
        if Some(r.node) == run.g.start {
            continue;
        }
        let node = run.g.node_name(r.node);
        if let Some(update) = r.update {
            sink.send(Event::Update {
                step,
                node: node.clone(),
                update,
            })
            .await;
        }
        if sink.wants(StreamMode::TASKS) {
            let id = run.task_id(r.node, r.push);
            sink.send(Event::TaskEnd {
                step,
                id,
                node,
                duration: r.duration,
                error: r.error,
            })
            .await;
        }
    }
    if values && sink.wants(StreamMode::VALUES) {
        let state = run.shared_state();
        sink.send(Event::Values { step, state }).await;
    }
}

/// Sends the events of the step about to run: the checkpoint it starts from, and its tasks.
pub(crate) async fn announce<S: State>(run: &Loop<S>, checkpoint: Option<(String, i64, Source)>) {
    let Some(sink) = &run.sink else { return };
    if let Some((id, step, source)) = checkpoint {
        let next = run.tasks.iter().map(|t| run.g.node_name(t.node)).collect();
        sink.send(Event::Checkpoint { step, id, source, next }).await;
    }
    if sink.wants(StreamMode::TASKS) {
        for t in run.tasks.iter().filter(|t| Some(t.node) != run.g.start) {
            let (id, node) = (run.task_id(t.node, t.push), run.g.node_name(t.node));
            sink.send(Event::TaskStart {
                step: run.step(),
                id,
                node,
            })
            .await;
        }
    }
}

/// The checkpoint written since the last one announced, if any.
pub(crate) fn fresh_checkpoint<S: State>(
    run: &Loop<S>,
    announced: &mut Option<Arc<str>>,
) -> Option<(String, i64, Source)> {
    if !run.sink.as_ref()?.wants(StreamMode::CHECKPOINTS) {
        return None;
    }
    let p = run.persist.on()?;
    let current = p.current.as_ref()?;
    if announced.as_ref() == Some(current) || p.dirty {
        return None;
    }
    *announced = Some(current.clone());
    Some((current.to_string(), run.step() - 1, p.last_source))
}
