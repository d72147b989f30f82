//! Driving a run: load the thread, apply the input or the resume, tick until a status says stop,
//! write the checkpoints as the durability says.

use super::compile::GraphInner;
use super::interrupt::{PauseKind, Paused};
use super::persist::{saver_error, Pending, ERROR, INTERRUPT, RESUME};
use super::run::{Loop, StepEnd};
use super::stream::{Event, Sink, StreamMode};
use super::{Durability, RunConfig, Status};
use crate::checkpoint::{CheckpointRecord, MadeByRun, Source};
use crate::error::Error;
use crate::state::State;
use std::sync::Arc;

/// How a run ended.
#[derive(Debug, Clone)]
pub enum Outcome<S> {
    /// No node is left to run: the final state.
    Done(S),
    /// The run paused: the state so far, and why (each node's question, or a static interrupt).
    /// Resume the thread to go on.
    Paused {
        /// The state when the run paused.
        state: S,
        /// The pauses, one per paused node.
        pauses: Vec<Paused>,
    },
}

impl<S> Outcome<S> {
    /// The state, whether the run is done or paused.
    pub fn state(&self) -> &S {
        match self {
            Self::Done(s) | Self::Paused { state: s, .. } => s,
        }
    }
    /// The pauses; empty when the run is done.
    pub fn pauses(&self) -> &[Paused] {
        match self {
            Self::Done(_) => &[],
            Self::Paused { pauses, .. } => pauses,
        }
    }
    /// Whether the run paused.
    pub fn is_paused(&self) -> bool {
        matches!(self, Self::Paused { .. })
    }
}

/// How a run starts.
pub(crate) enum Start<S: State> {
    /// A new input.
    Input(S::Update),
    /// Go on from the thread's checkpoint, answering a paused task when given.
    Resume(Option<(Option<String>, serde_json::Value)>),
}

/// Loads the thread into a new loop; returns whether it had a checkpoint.
pub(crate) async fn load<S: State>(g: &Arc<GraphInner<S>>, config: &RunConfig) -> Result<(Loop<S>, bool), Error> {
    let mut run = Loop::new(g.clone(), config)?;
    let Some(p) = &mut run.persist else {
        return Ok((run, false));
    };
    let info = p.info.clone();
    let (thread, ns) = (&*info.thread, &*info.ns);
    // The head comes with its checkpoint, in one read; only a run from a past checkpoint asks
    // for the head on its own.
    if config.checkpoint_id.is_some() {
        p.head = info
            .saver
            .head(thread, ns)
            .await
            .map_err(|e| saver_error(thread, e))?
            .map(Into::into);
    }
    let loaded = info
        .saver
        .get(thread, ns, config.checkpoint_id.as_deref())
        .await
        .map_err(|e| saver_error(thread, e))?;
    match loaded {
        Some(l) => {
            if config.checkpoint_id.is_none() {
                p.head = Some(l.record.id.clone());
            }
            run.restore(l)?;
            Ok((run, true))
        }
        None => match &config.checkpoint_id {
            Some(id) => Err(Error::checkpoint(
                thread,
                format!("no checkpoint `{id}` in this thread"),
            )),
            None => Ok((run, false)),
        },
    }
}

/// Writes a checkpoint of the loop as it is now, as the durability says.
pub(crate) async fn save<S: State>(
    run: &mut Loop<S>,
    durability: Durability,
    source: Source,
    writers: Arc<[Arc<str>]>,
) -> Result<(), Error> {
    if run.persist.is_none() {
        return Ok(());
    }
    if durability == Durability::Exit && source != Source::Update {
        run.persist.as_mut().expect("checked").dirty = true;
        return Ok(());
    }
    let record = run.record(source, writers)?;
    put(run, record, durability).await
}

async fn put<S: State>(run: &mut Loop<S>, record: CheckpointRecord, durability: Durability) -> Result<(), Error> {
    let p = run.persist.as_mut().expect("a checkpointed run");
    p.last_source = record.source;
    let expected = p.head.replace(record.id.clone());
    p.current = Some(record.id.clone());
    p.dirty = false;
    // A saver that stores in place goes first, unless puts handed to the writer are still ahead.
    let record = if p.writer.is_none() {
        match p
            .info
            .saver
            .try_put_in_place(record, expected.as_deref(), MadeByRun::new())
        {
            Ok(stored) => return stored.map_err(|e| saver_error(&p.info.thread, e)),
            Err(record) => record,
        }
    } else {
        record
    };
    if durability == Durability::Async {
        return p.put_later(record, expected).await;
    }
    p.flush().await?;
    let info = p.info.clone();
    info.saver
        .put_made(vec![record], expected.as_deref(), MadeByRun::new())
        .await
        .map_err(|e| saver_error(&info.thread, e))
}

/// Ends a checkpointed run: the last checkpoint (exit durability), the pending writes of an
/// incomplete step, and every put under way.
async fn settle<S: State>(run: &mut Loop<S>, durability: Durability, writers: Arc<[Arc<str>]>) -> Result<(), Error> {
    let Some(p) = &mut run.persist else { return Ok(()) };
    if p.dirty || (durability == Durability::Exit && p.current.is_none()) {
        let record = run.record(Source::Loop, writers)?;
        put(run, record, Durability::Sync).await?;
    }
    let p = run.persist.as_mut().expect("checked");
    p.flush().await?;
    let rows = std::mem::take(&mut p.rows);
    for (task, writes) in rows {
        run.put_task_writes(&task, writes).await?;
    }
    Ok(())
}

/// Sends the events of the step just run: each task's end and update, then the values.
async fn report<S: State>(run: &mut Loop<S>, step: i64, values: bool) {
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
async fn announce<S: State>(run: &Loop<S>, checkpoint: Option<(String, i64, Source)>) {
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
fn fresh_checkpoint<S: State>(run: &Loop<S>, announced: &mut Option<Arc<str>>) -> Option<(String, i64, Source)> {
    if !run.sink.as_ref()?.wants(StreamMode::CHECKPOINTS) {
        return None;
    }
    let p = run.persist.as_ref()?;
    let current = p.current.as_ref()?;
    if announced.as_ref() == Some(current) || p.dirty {
        return None;
    }
    *announced = Some(current.clone());
    Some((current.to_string(), run.step() - 1, p.last_source))
}

/// An answer of the wrong type failed the task that asked: its question stays open, with the
/// answers it had before, so the thread can be resumed with an answer of the right type.
fn keep_question_open<S: State>(run: &mut Loop<S>, task: &str, asked: Pending) {
    let Some(p) = &mut run.persist else { return };
    let Some((_, rows)) = p.rows.iter_mut().find(|(id, _)| id == task) else {
        return;
    };
    let question = serde_json::to_vec(&asked.question).unwrap_or_default();
    let answers = serde_json::to_vec(&asked.answers).unwrap_or_default();
    rows.retain(|(channel, _)| *channel == ERROR);
    rows.push((INTERRUPT, question));
    rows.push((RESUME, answers));
}

/// Runs the loop from `start` until it is done, pauses or fails, in a `weir.run` span.
pub(crate) async fn drive<S: State>(
    g: &Arc<GraphInner<S>>,
    start: Start<S>,
    config: &RunConfig,
    sink: Option<Sink<S>>,
) -> Result<Outcome<S>, Error> {
    use tracing::Instrument;
    let thread = config.thread_id.as_deref().unwrap_or("");
    let span = tracing::info_span!("weir.run", thread, ns = %config.ns);
    drive_in_span(g, start, config, sink).instrument(span).await
}

async fn drive_in_span<S: State>(
    g: &Arc<GraphInner<S>>,
    start: Start<S>,
    config: &RunConfig,
    sink: Option<Sink<S>>,
) -> Result<Outcome<S>, Error> {
    let durability = config.durability;
    let (mut run, loaded) = load(g, config).await?;
    run.sink = sink;
    let mut announced = None;
    // The task answered by this resume, with its question and earlier answers.
    let mut reopen: Option<(String, Pending)> = None;
    match start {
        Start::Input(update) => {
            if loaded {
                run.discard_pending()?;
            }
            run.input(update)?;
            save(&mut run, durability, Source::Input, Arc::default()).await?;
        }
        Start::Resume(answer) => {
            if !loaded {
                let thread = config.thread_id.as_deref().unwrap_or_default();
                return Err(match &run.persist {
                    Some(_) => Error::nothing_to_resume(thread, None),
                    None => Error::config("resuming needs a checkpointer"),
                });
            }
            if config.checkpoint_id.is_some() {
                // Replaying a past checkpoint: its tasks run again, as a fork of it.
                if let Some(p) = &mut run.persist {
                    p.pending.clear();
                }
                save(&mut run, Durability::Sync, Source::Fork, Arc::default()).await?;
            }
            if let Some((id, value)) = answer {
                let before = run.pending().cloned().unwrap_or_default();
                run.answer(id.as_deref(), value)?;
                let after = run.pending().cloned().unwrap_or_default();
                reopen = before
                    .into_iter()
                    .find(|(task, p)| p.question.is_some() && after.get(task).is_some_and(|a| a.question.is_none()));
            }
            run.pass_interrupts();
            // LangGraph reports the whole state as a resumed run starts.
            if let Some(sink) = run.sink.as_ref().filter(|s| s.wants(StreamMode::VALUES)) {
                sink.send(Event::Values {
                    step: run.step() - 1,
                    state: run.shared_state(),
                })
                .await;
            }
        }
    }
    let mut last_writers = Arc::default();
    let result = loop {
        // A dropped stream stops the run between two steps, like a drain.
        let status = match run.tick()? {
            Status::Pending if run.sink.as_ref().is_some_and(Sink::is_closed) => Status::Draining,
            status => status,
        };
        match status {
            Status::Pending => {
                let step = run.step();
                announce(&run, fresh_checkpoint(&run, &mut announced)).await;
                let span = tracing::info_span!("weir.step", step, tasks = run.tasks.len());
                let end = tracing::Instrument::instrument(run.run_step(), span).await;
                report(&mut run, step, matches!(end, Ok(StepEnd::Applied))).await;
                match end {
                    Ok(StepEnd::Applied) => {
                        if run.persist.is_some() {
                            let names = super::persist::writers(g, run.writers.iter().copied());
                            if durability == Durability::Exit {
                                // Only the last step's checkpoint is written, when the run settles.
                                last_writers = names;
                                save(&mut run, durability, Source::Loop, Arc::default()).await?;
                            } else {
                                save(&mut run, durability, Source::Loop, names).await?;
                            }
                        }
                        if run.interrupt_after(&run.writers) {
                            let pauses = run.static_pauses(PauseKind::After, run.writers.iter().map(|n| (*n, None)));
                            break Ok(pauses);
                        }
                    }
                    Ok(StepEnd::Paused(pauses)) => break Ok(pauses),
                    Err(e) => break Err(e),
                }
            }
            Status::InterruptBefore => {
                let tasks: Vec<(u32, Option<usize>)> = run.tasks.iter().map(|t| (t.node, t.push)).collect();
                break Ok(run.static_pauses(PauseKind::Before, tasks.into_iter()));
            }
            Status::Done => {
                announce(&run, fresh_checkpoint(&run, &mut announced)).await;
                break Ok(Vec::new());
            }
            Status::OutOfSteps => break Err(Error::recursion_limit(config.recursion_limit)),
            Status::Draining => break Err(Error::drained(run.step())),
            Status::Input | Status::InterruptAfter => unreachable!("tick does not report these"),
        }
    };
    if let (Err(e), Some((task, asked))) = (&result, reopen) {
        if e.is_bad_resume() {
            keep_question_open(&mut run, &task, asked);
        }
    }
    settle(&mut run, durability, last_writers).await?;
    let pauses = result?;
    if let (Some(sink), false) = (&run.sink, pauses.is_empty()) {
        sink.send(Event::Paused(pauses.clone())).await;
    }
    let state = run.into_state();
    Ok(if pauses.is_empty() {
        Outcome::Done(state)
    } else {
        Outcome::Paused { state, pauses }
    })
}
