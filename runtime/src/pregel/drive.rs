//! The superstep loop, phase by phase: load the thread, start (the input, or a resume), then
//! per step tick → execute → after_tick → stream events → checkpoint → interrupts, until a
//! status says stop; then settle the thread and hand back the outcome.

use super::checkpoints::{keep_question_open, load, save, save_step, settle};
use super::outcome::Outcome;
use super::persist::{Checkpointing, TaskRecord};
use super::run::Status;
use super::run::{Loop, StepEnd};
use super::spans;
use super::stream::{announce, fresh_checkpoint, report, Event, Item, Sink, StreamMode};
use super::task::Finished;
use super::{RunCommand, RunConfig, RunInput};
use crate::checkpoint::Source;
use crate::error::Error;
use crate::graph::CompiledGraph;
use crate::graph::Durability;
use crate::signal::{PauseKind, Paused};
use crate::state::State;
use std::sync::Arc;
use tokio::sync::mpsc;
use tracing::Instrument;

/// How a run starts.
pub(crate) enum Start<S: State> {
    /// A new input.
    Input(S::Update),
    /// Go on from the thread's checkpoint, giving each answer to a paused task: to the task named
    /// by its id, or, for an answer without an id, to the only paused task (LangGraph's
    /// `Command(resume=value)` and `Command(resume={id: value, ..})`). No answer: a plain resume.
    Resume(Vec<(Option<String>, serde_json::Value)>),
    /// A command: a resume that also applies an update and adds tasks (`goto`) to the step.
    Command(RunCommand<S>),
}

impl<S: State> From<RunInput<S>> for Start<S> {
    fn from(input: RunInput<S>) -> Self {
        match input {
            RunInput::Update(update) => Self::Input(update),
            RunInput::Command(command) => Self::Command(command),
        }
    }
}

/// The paused tasks this run answered: each id, and its question with the answers it had before.
type Answered = Vec<(String, TaskRecord)>;

/// Runs the loop from `start` until it is done, pauses or fails, in a `weir.run` span.
pub(crate) async fn drive<S: State>(
    g: &CompiledGraph<S>,
    start: Start<S>,
    config: &RunConfig,
    sink: Option<Sink<S>>,
) -> Result<Outcome<S>, Error> {
    // Tasks, timers and background writes run on tokio: say so rather than panic inside it.
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(Error::no_runtime());
    }
    let thread = config.thread_id.as_deref().unwrap_or("");
    let run_id = config.metadata.get("run_id").map(String::as_str);
    let span = spans::run(thread, &config.ns, run_id);
    let result = drive_in_span(g, start, config, sink).instrument(span.clone()).await;
    spans::end_run(&span, &result);
    result
}

async fn drive_in_span<S: State>(
    g: &CompiledGraph<S>,
    start: Start<S>,
    config: &RunConfig,
    sink: Option<Sink<S>>,
) -> Result<Outcome<S>, Error> {
    // Load the thread (when the graph has a checkpointer) and apply the input or the resume.
    let (mut run, loaded) = load(g, config).await?;
    run.sink = sink;
    let answered = begin(&mut run, start, loaded, config).await?;

    // The supersteps, until one says stop.
    let mut exit_writers = Arc::default();
    let result = supersteps(&mut run, config, &mut exit_writers).await;

    // Settle: an answer of the wrong type keeps its question open; the last checkpoint and the
    // pending writes are saved. A failure to settle is the run's error only when the run had
    // none: the node's error stays the error, with the settling failure attached.
    if let Err(e) = &result {
        if e.is_bad_resume() {
            for (task, asked) in answered {
                keep_question_open(&mut run, &task, asked);
            }
        }
    }
    let pauses = match (result, settle(&mut run, config.durability, exit_writers).await) {
        (Ok(pauses), Ok(())) => pauses,
        (Err(e), Ok(())) => return Err(e),
        (Err(e), Err(later)) => return Err(e.with_secondary(later)),
        (Ok(_), Err(e)) => return Err(e),
    };
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

/// Applies the start of the run: a new input (cancelling a paused or failed step's tasks), or a
/// resume (a fork from a past checkpoint, a command's update and goto, an answer to a paused
/// task). Returns the tasks answered.
async fn begin<S: State>(
    run: &mut Loop<S>,
    start: Start<S>,
    loaded: bool,
    config: &RunConfig,
) -> Result<Answered, Error> {
    let (answers, null) = match start {
        Start::Input(update) => {
            if loaded {
                // An earlier command's writes left on the checkpoint count, as in LangGraph.
                run.apply_null_writes()?;
                run.discard_pending()?;
            }
            run.input(update)?;
            save(run, config.durability, Source::Input, Arc::default()).await?;
            return Ok(Vec::new());
        }
        Start::Resume(answers) => (answers, None),
        Start::Command(command) => command.into_parts(run.g.n_fields())?,
    };
    if !loaded {
        let thread = config.thread_id.as_deref().unwrap_or_default();
        return Err(match &run.persist {
            Checkpointing::On(_) => Error::nothing_to_resume(thread, None),
            Checkpointing::Off => Error::config("resuming needs a checkpointer"),
        });
    }
    if config.checkpoint_id.is_some() {
        // Replaying a past checkpoint: its tasks run again, as a fork of it.
        if let Some(p) = run.persist.on_mut() {
            p.pending.clear();
            p.null.clear();
        }
        save(run, Durability::Sync, Source::Fork, Arc::default()).await?;
    }
    let answered = answer(run, answers)?;
    // The command's update and goto, saved as the null task's writes, then every null write of
    // the checkpoint applied, before the interrupts are passed: a goto's task runs now.
    if let Some(command) = null {
        run.save_null_writes(command).await?;
    }
    run.apply_null_writes()?;
    run.pass_interrupts();
    // LangGraph reports the whole state as a resumed run starts.
    if let Some(sink) = run.sink.as_ref().filter(|s| s.wants(StreamMode::VALUES)) {
        let (step, state) = (run.step() - 1, run.shared_state());
        sink.send(Event::Values { step, state }).await;
    }
    Ok(answered)
}

/// Gives the answers to the paused tasks; returns the tasks answered, with what they had asked.
fn answer<S: State>(run: &mut Loop<S>, answers: Vec<(Option<String>, serde_json::Value)>) -> Result<Answered, Error> {
    if answers.is_empty() {
        return Ok(Vec::new());
    }
    let before = run.pending().cloned().unwrap_or_default();
    run.answer_all(answers)?;
    let after = run.pending().cloned().unwrap_or_default();
    Ok(before
        .into_iter()
        .filter(|(task, p)| p.question.is_some() && after.get(task).is_some_and(|a| a.question.is_none()))
        .collect())
}

/// Runs supersteps until a status says stop: the pauses, or the error that ended the run.
async fn supersteps<S: State>(
    run: &mut Loop<S>,
    config: &RunConfig,
    exit_writers: &mut Arc<[Arc<str>]>,
) -> Result<Vec<Paused>, Error> {
    let mut announced = None;
    // A streamed run watches its stream: once dropped, the step under way is cancelled.
    let watch = run.sink.as_ref().and_then(Sink::watch);
    loop {
        if let Some(pauses) = plan_step(run, config, &mut announced).await? {
            return Ok(pauses);
        }
        let step = run.step();
        let finished = match execute_step(run, step, watch.as_ref()).await {
            Ok(StepEnd::Ran(finished)) => finished,
            Ok(StepEnd::Paused(pauses, values)) => {
                report(run, step, values).await;
                return Ok(pauses);
            }
            Err(e) => {
                report(run, step, None).await;
                return Err(e);
            }
        };
        if let Some(pauses) = end_step(run, step, finished, config, exit_writers).await? {
            return Ok(pauses);
        }
    }
}

/// The tick phase: plans the step from the channels' versions, or says why the run stops there
/// (`Some` of its pauses, or an error). A dropped stream stops the run between two steps, like a
/// drain.
async fn plan_step<S: State>(
    run: &mut Loop<S>,
    config: &RunConfig,
    announced: &mut Option<Arc<str>>,
) -> Result<Option<Vec<Paused>>, Error> {
    let status = match run.tick()? {
        Status::Pending if run.sink.as_ref().is_some_and(Sink::is_closed) => Status::Draining,
        status => status,
    };
    match status {
        Status::Pending => {}
        Status::Done => {
            announce(run, fresh_checkpoint(run, announced)).await;
            return Ok(Some(Vec::new()));
        }
        Status::InterruptBefore => return Ok(Some(run.pauses_before())),
        Status::OutOfSteps => return Err(Error::recursion_limit(config.recursion_limit)),
        Status::Draining => return Err(Error::drained(run.step())),
    }
    // The stream's and the checkpointer's phases are awaited only when the run has them: an
    // async call made and dropped costs a step instructions even when it does nothing.
    if run.sink.is_some() {
        announce(run, fresh_checkpoint(run, announced)).await;
    }
    Ok(None)
}

/// The execute phase: runs the step's tasks in a `weir.step` span; a failed or paused step
/// applies nothing. When the run's stream is dropped meanwhile, the step's future is dropped,
/// which aborts its tasks and applies nothing: the run stops as a drain does, at the checkpoint
/// before this step.
async fn execute_step<S: State>(
    run: &mut Loop<S>,
    step: i64,
    watch: Option<&mpsc::Sender<Item<S>>>,
) -> Result<StepEnd<S>, Error> {
    // The step's future is large (a lone task's job runs in it): it is pinned where it is made
    // and awaited by reference, never moved (a move is a copy of it per step: callgrind, loop
    // 2000).
    let span = spans::step(step, run.tasks.len());
    let mut running = std::pin::pin!(run.execute().instrument(span.clone()));
    let end = match watch {
        None => running.as_mut().await,
        Some(tx) => tokio::select! {
            biased;
            end = running.as_mut() => end,
            () = tx.closed() => Err(Error::drained(step)),
        },
    };
    spans::end_step(&span, &end);
    end
}

/// The phases after a step ran: after_tick (the step's writes applied at the boundary, in task
/// order, versions bumped), its events streamed, its checkpoint saved as the durability says,
/// and the interrupts after its nodes (`Some` of the pauses when one ran).
async fn end_step<S: State>(
    run: &mut Loop<S>,
    step: i64,
    finished: Vec<Finished<S>>,
    config: &RunConfig,
    exit_writers: &mut Arc<[Arc<str>]>,
) -> Result<Option<Vec<Paused>>, Error> {
    // The writes of the tasks that saved none as they ended go with the step's checkpoint.
    run.keep_completed(&finished)?;
    let applied = run.after_tick(finished);

    // stream events: each task's end and update, then the state after the step.
    if run.sink.is_some() {
        let values = applied.is_ok().then(|| run.shared_state());
        report(run, step, values).await;
    }
    applied?;

    // checkpoint: as the durability says (in the background, now, or at the end).
    if run.persist.is_on() {
        save_step(run, config.durability, exit_writers).await?;
    }

    // interrupts: a node to pause after ran in this step.
    if run.interrupt_after(&run.writers) {
        return Ok(Some(
            run.static_pauses(PauseKind::After, run.writers.iter().map(|n| (*n, None))),
        ));
    }
    Ok(None)
}
