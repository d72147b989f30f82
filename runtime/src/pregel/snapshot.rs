//! Reading a thread's state and history (`get_state`, `get_state_history`).

use super::checkpoints::load;
use super::run::Loop;
use super::RunConfig;
use crate::checkpoint::Source;
use crate::error::Error;
use crate::graph::CompiledGraph;
use crate::signal::{PauseKind, Paused};
use crate::state::State;

/// A thread's state at one checkpoint (LangGraph's `StateSnapshot`).
#[derive(Debug, Clone)]
pub struct StateSnapshot<S: State> {
    /// The values.
    pub values: S,
    /// The nodes that would run next (those whose writes are not already saved).
    pub next: Vec<String>,
    /// The tasks of the next step.
    pub tasks: Vec<TaskSnapshot<S::Update>>,
    /// The paused tasks' questions.
    pub pauses: Vec<Paused>,
    /// The checkpoint's id.
    pub checkpoint_id: String,
    /// Its parent's id.
    pub parent_id: Option<String>,
    /// The step it was written after (-1 for the input).
    pub step: i64,
    /// What wrote it.
    pub source: Source,
    /// When (RFC 3339).
    pub created_at: String,
    /// The nodes whose writes it applied.
    pub writes: Vec<String>,
    /// The pairs the run that wrote it recorded ([`RunConfig::metadata`]).
    pub metadata: std::collections::BTreeMap<String, String>,
}

/// One task of a snapshot's next step; `U` is its state's update type.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSnapshot<U> {
    /// The task's id in its step (`pull:<node>`, `push:<index>`): what
    /// [`CompiledGraph::resume_task`](crate::CompiledGraph::resume_task) takes.
    pub id: String,
    /// The task's key, UUID-shaped: LangGraph's task id, the one its stream events showed or will
    /// show ([`Event::TaskStart`](crate::Event::TaskStart)) and its
    /// [idempotency key](crate::Context::idempotency_key).
    pub key: String,
    /// Its node.
    pub name: String,
    /// The error it failed with, in a step that did not complete.
    pub error: Option<String>,
    /// Its question, when it paused.
    pub pause: Option<Paused>,
    /// Whether its writes are already saved (it will not run again).
    pub done: bool,
    /// The update it returned, when its writes are saved against the checkpoint (LangGraph's
    /// `PregelTask.result`): at a thread's head, the tasks of a step that did not complete that
    /// finished; in a thread's history, a wide step's tasks, and, written by a run that kept
    /// task results ([`RunConfig::task_results`](crate::RunConfig::task_results)), each task
    /// that ran from that checkpoint, except in the first step of a run started from a stored
    /// checkpoint (a resume's), whose writes are not kept there.
    pub result: Option<U>,
}

pub(crate) async fn get_state<S: State>(
    graph: &CompiledGraph<S>,
    config: &RunConfig,
) -> Result<Option<StateSnapshot<S>>, Error> {
    if graph.checkpointer.is_none() {
        return Err(Error::config("reading a thread's state needs a checkpointer"));
    }
    let (run, loaded) = load(graph, config).await?;
    if !loaded {
        return Ok(None);
    }
    // At an explicit checkpoint id the kept writes are not applied (LangGraph's
    // `apply_pending_writes`), so every task of the step is next.
    snapshot(graph, run, config.checkpoint_id.is_none()).map(Some)
}

/// The snapshot of a loop loaded from a checkpoint, with its kept writes `applied` or not.
fn snapshot<S: State>(graph: &CompiledGraph<S>, mut run: Loop<S>, applied: bool) -> Result<StateSnapshot<S>, Error> {
    let g = &graph.inner;
    let record = run
        .persist
        .on()
        .and_then(|p| p.record.clone())
        .ok_or_else(|| Error::config("reading a thread's state needs a checkpointer"))?;
    let pending = run.pending().cloned().unwrap_or_default();
    // A command's update and goto kept on the checkpoint count, as in LangGraph's snapshot.
    run.apply_null_writes()?;
    run.prepare_tasks()?;
    let mut tasks = Vec::new();
    let mut pauses = Vec::new();
    for (node, push, result) in run.planned() {
        let id = run.task_id(node, push);
        let p = pending.get(&id);
        let pause = p.and_then(|p| p.question.clone()).map(|q| Paused {
            node: g.node_name(node),
            id: run.pause_id(node, push),
            question: Some(q),
            kind: PauseKind::Interrupt,
        });
        pauses.extend(pause.clone());
        tasks.push(TaskSnapshot {
            key: run.task_key(&id),
            id,
            name: g.node_name(node),
            error: p.and_then(|p| p.error.clone()),
            pause,
            done: result.is_some(),
            result,
        });
    }
    if applied {
        run.apply_saved_writes()?;
    }
    let next = tasks
        .iter()
        .filter(|t| !(applied && t.done))
        .map(|t| t.name.clone())
        .collect();
    Ok(StateSnapshot {
        values: run.state().clone(),
        next,
        tasks,
        pauses,
        checkpoint_id: record.id.to_string(),
        parent_id: record.parent_id.as_deref().map(str::to_owned),
        step: record.step,
        source: record.source,
        created_at: record.created_at.to_string(),
        writes: record.writes.iter().map(|w| String::from(&**w)).collect(),
        metadata: record.metadata.clone(),
    })
}

pub(crate) async fn history<S: State>(
    graph: &CompiledGraph<S>,
    config: &RunConfig,
    before: Option<&str>,
    limit: Option<usize>,
) -> Result<Vec<StateSnapshot<S>>, Error> {
    let checkpointer = graph
        .checkpointer
        .as_ref()
        .ok_or_else(|| Error::config("reading a thread's history needs a checkpointer"))?;
    let thread = config
        .thread_id
        .clone()
        .ok_or_else(|| Error::config("give the run a thread (`RunConfig::thread`)"))?;
    // One listing of every checkpoint with its values, each then shown as `get_state` shows
    // it at that checkpoint's id.
    let listed = checkpointer
        .history(&thread, &config.ns, before, limit)
        .await
        .map_err(|e| super::persist::checkpointer_error(&thread, e))?;
    let mut out = Vec::with_capacity(listed.len());
    for loaded in listed {
        let at = RunConfig {
            checkpoint_id: Some(loaded.record.id.to_string()),
            ..config.clone()
        };
        let mut run = Loop::new(graph.inner.clone(), graph.checkpointer.as_ref(), &at)?;
        run.restore(loaded)?;
        out.push(snapshot(graph, run, false)?);
    }
    Ok(out)
}
