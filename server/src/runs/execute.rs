//! Running one claimed run: the [`RunRequest`] from its stored kwargs, the graph's events onto
//! the bus (with `<ms>-<seq>` ids), its cancel signal watched between events (dropping the
//! graph's stream stops the run), a panic in the graph caught as the run's error, and the end:
//! the run's final status, its thread's row, the `error` and [`OUTCOME_EVENT`] events, `Done`,
//! and a stateless run's temporary thread deleted.

use super::{non_null, Manager, RunError, OUTCOME_EVENT};
use crate::bus::{CancelAction, Publisher, StreamItem};
use crate::db::{RunFate, ThreadUpdate};
use crate::graph::{GraphError, Head, InterruptView, Mode, RunEnd, RunEvent, RunRequest, ServedGraph};
use crate::model::{Run, RunStatus, ThreadStatus};
use futures::FutureExt;
use futures::StreamExt;
use serde_json::{json, Map, Value};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::watch;
use weir_runtime::checkpoint::Timestamp;

/// How a run stopped.
enum Ending {
    /// The graph ended it.
    End(RunEnd),
    /// A cancellation stopped it.
    Cancelled(CancelAction),
    /// The run was taken back from this attempt (its stream refused an event,
    /// [`crate::bus::Bus::supersede`]): it stops, and records and publishes nothing more.
    Superseded,
}

/// The `<ms>-<seq>` ids of one run's events, increasing even if the clock steps back.
#[derive(Debug, Default)]
pub(super) struct EventIds {
    ms: u64,
    seq: u64,
}

impl EventIds {
    pub(super) fn next(&mut self) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        if now > self.ms {
            self.ms = now;
            self.seq = 0;
        } else {
            self.seq += 1;
        }
        format!("{}-{}", self.ms, self.seq)
    }
}

/// The text of a panic's payload.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a node panicked".to_owned()
    }
}

/// A failure before or around the graph's own run, as the run's error end.
fn error_end(error: &str, message: impl Into<String>) -> RunEnd {
    RunEnd::Error {
        error: error.to_owned(),
        message: message.into(),
    }
}

fn graph_error_end(e: GraphError) -> RunEnd {
    let kind = match &e {
        GraphError::Invalid(_) => "InvalidInput",
        GraphError::NotFound(_) => "NotFound",
        GraphError::Conflict(_) => "Conflict",
        GraphError::Internal(_) => "InternalError",
    };
    error_end(kind, e.to_string())
}

/// `"*"` or a list of names, as the bridge takes them.
fn node_names(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().filter_map(|i| i.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// The bridge's request for `run`. A run that already wrote checkpoints (it was requeued after
/// its worker stopped) runs on from its thread's head instead of taking its input again. (A
/// resume with nothing paused is the bridge's: it ends with the values unchanged, as LangGraph's.)
fn request_for(run: &Run, resumed: bool) -> RunRequest {
    let k = &run.kwargs;
    let mut metadata = run.metadata.clone();
    metadata.insert("run_id".into(), json!(run.run_id));
    metadata.insert("thread_id".into(), json!(run.thread_id));
    // As LangGraph's server records it: the claim's attempt.
    metadata.insert("run_attempt".into(), json!(run.attempt.max(1)));
    RunRequest {
        thread_id: run.thread_id.clone(),
        run_id: run.run_id.clone(),
        input: non_null(&k.input).filter(|_| !resumed).cloned(),
        command: non_null(&k.command).filter(|_| !resumed).cloned(),
        checkpoint_id: k.checkpoint["checkpoint_id"]
            .as_str()
            .filter(|_| !resumed)
            .map(str::to_owned),
        modes: k.stream_mode.iter().filter_map(|m| Mode::parse(m)).collect(),
        subgraphs: k.subgraphs,
        interrupt_before: node_names(&k.interrupt_before),
        interrupt_after: node_names(&k.interrupt_after),
        config: k.config.clone(),
        context: k.context.clone(),
        metadata,
        durability: super::create::parse_durability(&k.durability).unwrap_or_default(),
        strict_resume: k.strict_resume,
    }
}

/// A wire timestamp (`…+00:00` or `…Z`) as a [`Timestamp`].
pub(super) fn parse_time(text: &str) -> Option<Timestamp> {
    match text.strip_suffix("+00:00") {
        Some(t) => Timestamp::parse(&format!("{t}Z")),
        None => Timestamp::parse(text),
    }
}

/// Whether `head`, the thread's head checkpoint, was written by `run` (a run requeued after its
/// worker stopped): its metadata names the run; or, when the bridge does not record run ids,
/// `run` is one this process requeued and `head` is newer than it. (A checkpoint newer than a
/// run that has not started yet may be an earlier run's, so the second test needs the first.)
fn wrote(run: &Run, head: &Head, requeued: bool) -> bool {
    if let Some(id) = &head.run_id {
        return *id == run.run_id;
    }
    requeued && parse_time(&run.created_at).is_some_and(|queued| head.created_at > queued)
}

/// The interrupts as `join` answers them (`__interrupt__`).
fn interrupt_list(interrupts: &[InterruptView]) -> Value {
    interrupts
        .iter()
        .map(|i| json!({ "value": i.value, "id": i.id, "response_schema": null }))
        .collect()
}

/// The interrupts as the thread keeps them: by task id.
fn interrupts_by_task(interrupts: &[InterruptView]) -> Map<String, Value> {
    let mut by_task = Map::new();
    for i in interrupts {
        let list = by_task.entry(i.task_id.clone()).or_insert_with(|| json!([]));
        if let Value::Array(list) = list {
            list.push(json!({ "id": i.id, "value": i.value }));
        }
    }
    by_task
}

/// What the run's thread becomes.
struct Settled {
    status: ThreadStatus,
    values: Value,
    interrupts: Map<String, Value>,
    error: Value,
}

impl Manager {
    /// Runs one claimed run to its end; never fails and never panics out (a failure of the
    /// tables or the bus is logged, and the stream is still closed).
    /// Returns the run this worker claimed as this one's end was recorded (its next, on the
    /// same slot), if it took one.
    pub(super) async fn execute(&self, run: Run, mut cancel: watch::Receiver<Option<CancelAction>>) -> Option<Run> {
        let mut ids = EventIds::default();
        let graph = match self.graph(run.metadata.get("graph_id").and_then(Value::as_str).unwrap_or_default()) {
            Ok(g) => g,
            Err(e) => {
                let ending = Ending::End(error_end("NotFound", e.to_string()));
                return self.close(&run, ending, None, &mut ids, None).await;
            }
        };
        let (ending, head) = match self.drive(&run, &graph, &mut cancel, &mut ids).await {
            Ok(done) => done,
            Err(e) => (Ending::End(error_end("InternalError", e.to_string())), None),
        };
        self.close(&run, ending, head, &mut ids, Some(&graph)).await
    }

    /// Publishes the run's events until the graph ends it or a cancellation stops it; returns
    /// how it stopped and the thread's head checkpoint before the run (for a rollback).
    async fn drive(
        &self,
        run: &Run,
        graph: &Arc<dyn ServedGraph>,
        cancel: &mut watch::Receiver<Option<CancelAction>>,
        ids: &mut EventIds,
    ) -> Result<(Ending, Option<String>), RunError> {
        let head = graph.head(&run.thread_id).await?;
        let requeued = super::lock(&self.inner.requeued).remove(&run.run_id);
        let resumed = head.as_ref().is_some_and(|h| wrote(run, h, requeued));
        let head_id = head.map(|h| h.checkpoint_id);
        let metadata = json!({ "run_id": run.run_id, "attempt": run.attempt.max(1) });
        if !self.publish(run, ids, "metadata", metadata).await? {
            return Ok((Ending::Superseded, head_id));
        }
        // A cancel that came before the claim: this process's (the watch) or another's (the bus).
        let watched = *cancel.borrow_and_update();
        let early = match watched {
            Some(action) => Some(action),
            None => self.inner.bus.cancelled(&run.run_id).await?,
        };
        if let Some(action) = early {
            return Ok((Ending::Cancelled(action), head_id));
        }
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| graph.run(request_for(run, resumed))));
        let mut stream = match started {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Ok((Ending::End(graph_error_end(e)), head_id)),
            Err(panic) => return Ok((Ending::End(error_end("Panic", panic_text(&*panic))), head_id)),
        };
        loop {
            tokio::select! {
                biased;
                changed = cancel.changed() => {
                    let action = match changed {
                        Ok(()) => *cancel.borrow_and_update(),
                        Err(_) => Some(CancelAction::Interrupt), // the manager let go of the run
                    };
                    if let Some(action) = action {
                        return Ok((Ending::Cancelled(action), head_id));
                    }
                }
                next = AssertUnwindSafe(stream.next()).catch_unwind() => match next {
                    Ok(Some(RunEvent::Stream { event, data })) => {
                        if !self.publish(run, ids, &event, data).await? {
                            return Ok((Ending::Superseded, head_id));
                        }
                    }
                    Ok(Some(RunEvent::End(end))) => return Ok((Ending::End(end), head_id)),
                    Ok(None) => {
                        let end = error_end("InternalError", "the graph's stream ended without saying how the run ended");
                        return Ok((Ending::End(end), head_id));
                    }
                    Err(panic) => return Ok((Ending::End(error_end("Panic", panic_text(&*panic))), head_id)),
                },
            }
        }
    }

    /// Publishes one event of this attempt of `run`; whether it was published (`false`: the
    /// run was taken back from this attempt).
    async fn publish(&self, run: &Run, ids: &mut EventIds, event: &str, data: Value) -> Result<bool, RunError> {
        let item = StreamItem::Event {
            id: ids.next(),
            event: event.to_owned(),
            data: data.to_string().into(),
        };
        Ok(self
            .inner
            .bus
            .publish(&run.run_id, Publisher::Attempt(run.attempt), item)
            .await?)
    }

    /// Ends the run: records it (and claims this worker's next run in the same trip), deletes
    /// a stateless run's thread, then publishes the outcome and closes the stream (so whoever
    /// joins sees everything done); returns the run claimed. A failure here is logged; the
    /// stream is closed whatever happens, so no client waits forever.
    async fn close(
        &self,
        run: &Run,
        ending: Ending,
        head: Option<String>,
        ids: &mut EventIds,
        graph: Option<&Arc<dyn ServedGraph>>,
    ) -> Option<Run> {
        // A worker whose claim went stale (its heartbeat lapsed and the run was claimed again)
        // writes nothing: an ending that publishes or rolls back before the run's end is
        // recorded checks the claim first; the others learn it from `end_run`, which is fenced.
        if ending.acts_before_its_record() && !self.still_holds(run).await {
            return None;
        }
        let (outcome, next) = match self.record_end(run, ending, head, ids, graph).await {
            Ok(Some((outcome, next))) => (Ok(outcome), next),
            Ok(None) => return None,
            Err(e) => {
                tracing::error!(run_id = %run.run_id, error = %e, "recording the end of a run failed");
                (Err(e), None)
            }
        };
        // The run as it ended, for its webhook, read before a stateless run's thread (and runs)
        // go; a rolled-back run is gone: nothing to send.
        let webhook = run
            .kwargs
            .webhook
            .as_str()
            .filter(|u| !u.is_empty() && self.inner.config.webhooks);
        let ended = match webhook {
            Some(_) => self
                .inner
                .queue
                .get_run(&run.thread_id, &run.run_id)
                .await
                .ok()
                .flatten(),
            None => None,
        };
        if run.kwargs.on_completion.as_deref() == Some("delete") {
            let tid = &run.thread_id;
            if let Some(graph) = graph {
                if let Err(e) = graph.delete_thread(tid).await {
                    tracing::error!(thread_id = %tid, error = %e, "deleting a stateless run's checkpoints failed");
                }
            }
            if let Err(e) = self.inner.catalog.delete_thread(tid).await {
                tracing::error!(thread_id = %tid, error = %e, "deleting a stateless run's thread failed");
            }
        }
        if let Ok(outcome) = outcome {
            let _ = self.publish(run, ids, OUTCOME_EVENT, outcome).await;
        }
        let _ = self
            .inner
            .bus
            .publish(&run.run_id, Publisher::Attempt(run.attempt), StreamItem::Done)
            .await;
        if let (Some(url), Some(ended)) = (webhook, ended) {
            tokio::spawn(super::webhook::notify(url.to_owned(), ended));
        }
        next
    }

    /// Whether this worker's claim on `run` is still the current one. A worker whose heartbeat
    /// lapsed (it was slow, not dead) may find its run requeued and claimed again: it then writes
    /// nothing (thread, status, outcome, stream end, webhook), and says so in the log. (A failed
    /// check lets the worker settle: the status write itself is fenced.)
    async fn still_holds(&self, run: &Run) -> bool {
        match self.inner.queue.holds(&run.run_id, run.attempt).await {
            Ok(true) => true,
            Ok(false) => {
                self.refused(run);
                false
            }
            Err(e) => {
                // Settle anyway (its writes are fenced too): a client must not wait forever.
                tracing::error!(run_id = %run.run_id, error = %e, "checking a run's claim failed");
                true
            }
        }
    }

    /// Says in the log that this worker no longer holds `run`, and so settles nothing of it.
    fn refused(&self, run: &Run) {
        tracing::warn!(
            run_id = %run.run_id,
            attempt = run.attempt,
            worker = %self.inner.worker_id,
            "refused to settle a run this worker no longer holds (it was put back in the queue)"
        );
    }

    /// The run's final status, its thread's row and the `error` event; returns the outcome and
    /// the run this worker claimed next in the same trip (unless it is stopping), or `None`
    /// when the run's claim is no longer this worker's (nothing was recorded).
    async fn record_end(
        &self,
        run: &Run,
        ending: Ending,
        head: Option<String>,
        ids: &mut EventIds,
        graph: Option<&Arc<dyn ServedGraph>>,
    ) -> Result<Option<(Value, Option<Run>)>, RunError> {
        let current = || async {
            match graph {
                Some(g) => Ok::<_, RunError>(
                    g.state(&run.thread_id, None, false)
                        .await?
                        .map_or(Value::Null, |s| s["values"].clone()),
                ),
                None => Ok(Value::Null),
            }
        };
        let (fate, settled, outcome) = match ending {
            Ending::End(RunEnd::Success { values }) => (
                RunFate::Status(RunStatus::Success),
                Settled::idle(values.clone()),
                values,
            ),
            Ending::End(RunEnd::Interrupted { values, interrupts }) => {
                let outcome = crate::graph::with_interrupts(values.clone(), interrupt_list(&interrupts));
                let settled = Settled {
                    status: ThreadStatus::Interrupted,
                    values,
                    interrupts: interrupts_by_task(&interrupts),
                    error: Value::Null,
                };
                // LangGraph's run that paused ended well: the thread is what is interrupted.
                (RunFate::Status(RunStatus::Success), settled, outcome)
            }
            Ending::End(RunEnd::Error { error, message }) => {
                let error = json!({ "error": error, "message": message });
                if !self.publish(run, ids, "error", error.clone()).await? {
                    self.refused(run);
                    return Ok(None);
                }
                let settled = Settled {
                    status: ThreadStatus::Error,
                    values: current().await?,
                    interrupts: Map::new(),
                    error: error.clone(),
                };
                (
                    RunFate::Status(RunStatus::Error),
                    settled,
                    json!({ "__error__": error }),
                )
            }
            Ending::Cancelled(CancelAction::Interrupt) => {
                let values = current().await?;
                let fate = RunFate::Status(RunStatus::Interrupted);
                (fate, Settled::idle(values.clone()), values)
            }
            Ending::Cancelled(CancelAction::Rollback) => {
                if let Some(g) = graph {
                    g.rollback(&run.thread_id, head.as_deref()).await?;
                }
                let values = current().await?;
                (RunFate::Deleted, Settled::idle(values.clone()), values)
            }
            Ending::Superseded => {
                self.refused(run);
                return Ok(None);
            }
        };
        // The run and its thread in one transaction: whoever sees the run final (a join, the
        // SDK after a stream) finds the thread final too.
        let queue = &self.inner.queue;
        let update = settled.update();
        let (ended, next) = if *self.inner.stopping.borrow() {
            (queue.end_run(run, fate, &update).await?, None)
        } else {
            queue
                .end_run_and_claim(run, fate, &update, &self.inner.worker_id)
                .await?
        };
        if !ended {
            self.refused(run);
            return Ok(None);
        }
        Ok(Some((outcome, next)))
    }
}

impl Ending {
    /// Whether recording this ending writes before the run's end is: publishes `error`, or
    /// rolls the thread back.
    fn acts_before_its_record(&self) -> bool {
        matches!(
            self,
            Ending::End(RunEnd::Error { .. }) | Ending::Cancelled(CancelAction::Rollback)
        )
    }
}

impl Settled {
    fn idle(values: Value) -> Self {
        Self {
            status: ThreadStatus::Idle,
            values,
            interrupts: Map::new(),
            error: Value::Null,
        }
    }

    /// The thread's update: its status, values, open interrupts and error.
    fn update(self) -> ThreadUpdate {
        ThreadUpdate {
            metadata: None,
            status: Some(self.status),
            values: Some(self.values),
            interrupts: Some(self.interrupts),
            error: Some(self.error),
            status_unless_busy: None,
        }
    }
}
