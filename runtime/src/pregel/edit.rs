//! Writing to a thread's state by hand (LangGraph's `update_state` and `bulk_update_state`):
//! each superstep of edits is applied as a step of the loop would apply it, and checkpointed.

use super::checkpoints::{load, save};
use super::executor::Job;
use super::run::Loop;
use super::task::Finished;
use super::RunConfig;
use crate::checkpoint::Source;
use crate::error::Error;
use crate::graph::{Command, CompiledGraph, Durability};
use crate::state::State;
use std::sync::Arc;

/// The `as_node` that writes an edit as a new input of the thread (LangGraph's `__input__`).
pub const AS_INPUT: &str = "__input__";

/// The `as_node` that ends the step the thread is in (LangGraph's `values=None, as_node=END`):
/// see [`StateEdit::end`].
pub const AS_END: &str = "__end__";

/// The `as_node` that copies the thread's checkpoint (LangGraph's `__copy__`): see
/// [`StateEdit::copy`].
pub const AS_COPY: &str = "__copy__";

/// One edit of a thread's state: an update, written as node `as_node` would have returned it
/// (LangGraph's `StateUpdate`). See [`CompiledGraph::bulk_update_state`].
///
/// `as_node` is a node's name, `"__start__"` (the update is the input as the start node passes
/// it on: the nodes after `START` run next) or [`AS_INPUT`] (`"__input__"`: the update is a new
/// input, checkpointed with source `input`, as `invoke` would write it) or [`AS_COPY`]
/// (`"__copy__"`: a copy of the checkpoint, see [`StateEdit::copy`]) or [`AS_END`]
/// (`"__end__"`: the step ends, see [`StateEdit::end`]). `None` lets the runtime
/// infer it, as [`CompiledGraph::update_state`] says.
#[derive(Debug, Clone)]
pub struct StateEdit<U> {
    /// The writes.
    pub values: U,
    /// The node they are written as.
    pub as_node: Option<String>,
}

impl<U> StateEdit<U> {
    /// An edit writing `values` as `as_node`.
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_runtime::StateEdit;
    /// let edit = StateEdit::new(3_u32, Some("count"));
    /// assert_eq!(edit.as_node.as_deref(), Some("count"));
    /// ```
    pub fn new(values: U, as_node: Option<&str>) -> Self {
        Self {
            values,
            as_node: as_node.map(str::to_owned),
        }
    }

    /// An edit copying the checkpoint it applies to (LangGraph's `as_node="__copy__"`): a new
    /// checkpoint with the same values, versions and next tasks, source `fork`, step one more,
    /// written as a sibling of the copied one (its parent is the copied one's parent). The
    /// copied checkpoint's pending writes are not carried over: every task of its step runs
    /// again on the copy. It stands alone in its superstep; edits in the supersteps after it
    /// apply to the copy (LangGraph instead takes them as a list in the copy's `values`).
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_runtime::{StateEdit, AS_COPY};
    /// let edit = StateEdit::<u32>::copy();
    /// assert_eq!(edit.as_node.as_deref(), Some(AS_COPY));
    /// ```
    pub fn copy() -> Self
    where
        U: Default,
    {
        Self::new(U::default(), Some(AS_COPY))
    }

    /// An edit ending the step the thread is in without running what is left of it (LangGraph's
    /// `update_state(values=None, as_node=END)`): the saved writes of the step's tasks that
    /// finished are applied, with their edges and routers, and every other task of the step
    /// (one that paused, failed, or had not run) is cancelled: its triggers are consumed, its
    /// `Send` dropped, and it does not run again. The new checkpoint has source `update`; what
    /// the finished tasks' edges lead to runs next (nothing: the thread is done). `values` is
    /// not read (LangGraph's form has none); the edit stands alone in its superstep.
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_runtime::{StateEdit, AS_END};
    /// let edit = StateEdit::<u32>::end();
    /// assert_eq!(edit.as_node.as_deref(), Some(AS_END));
    /// ```
    pub fn end() -> Self
    where
        U: Default,
    {
        Self::new(U::default(), Some(AS_END))
    }
}

/// LangGraph's `bulk_update_state`: each superstep of edits becomes one checkpoint, after the
/// thread's latest (or `config.checkpoint_id`, a fork). Returns the last checkpoint's id.
pub(crate) async fn bulk_update_state<S: State>(
    graph: &CompiledGraph<S>,
    config: &RunConfig,
    supersteps: Vec<Vec<StateEdit<S::Update>>>,
) -> Result<String, Error> {
    if graph.checkpointer.is_none() {
        return Err(Error::config("updating a thread's state needs a checkpointer"));
    }
    if supersteps.is_empty() {
        return Err(Error::config("`bulk_update_state` needs at least one superstep"));
    }
    if let Some(i) = supersteps.iter().position(Vec::is_empty) {
        return Err(Error::config(format!(
            "superstep {i} of `bulk_update_state` has no update"
        )));
    }
    let (mut run, loaded) = load(graph, config).await?;
    let mut fresh = !loaded;
    for edits in supersteps {
        edit_step(&mut run, fresh, edits).await?;
        fresh = false;
    }
    run.persist
        .on()
        .and_then(|p| p.current.as_deref().map(str::to_owned))
        .ok_or_else(|| Error::config("updating a thread's state needs a checkpointer"))
}

/// Applies one superstep of edits and checkpoints it.
async fn edit_step<S: State>(
    run: &mut Loop<S>,
    fresh: bool,
    mut edits: Vec<StateEdit<S::Update>>,
) -> Result<(), Error> {
    if edits.iter().any(|e| e.as_node.as_deref() == Some(AS_END)) {
        return end_step(run, fresh, edits.len()).await;
    }
    // The writes kept for the checkpoint edited are not carried to the new one.
    if let Some(p) = run.persist.on_mut() {
        p.pending.clear();
    }
    let as_input = |e: &StateEdit<S::Update>| e.as_node.as_deref() == Some(AS_INPUT);
    if edits.iter().any(|e| e.as_node.as_deref() == Some(AS_COPY)) {
        return copy_step(run, fresh, edits.len()).await;
    }
    if edits.iter().any(as_input) {
        alone(AS_INPUT, edits.len())?;
        let edit = edits.pop().expect("one edit");
        run.input(edit.values)?;
        return save(run, Durability::Sync, Source::Input, Arc::default()).await;
    }
    let nodes = as_nodes(run, fresh, &edits)?;
    if fresh {
        // An empty thread is at step -1 (LangGraph's `empty_checkpoint`): the edit is step 0.
        run.step = 0;
    }
    let mut done: Vec<Finished<S>> = edits
        .into_iter()
        .zip(&nodes)
        .map(|(edit, &node)| Finished {
            node,
            pull: false,
            command: Command {
                update: edit.values,
                goto: Vec::new(),
                parent: None,
            },
            routed: false,
            handled: false,
        })
        .collect();
    if done.len() > 1 {
        // Each node's routers read the state with its own update applied, as in a wide step.
        for d in &mut done {
            run.route_fresh(d)?;
        }
    }
    run.after_tick(done)?;
    let writers = super::persist::writers(&run.g, nodes.iter().copied());
    save(run, Durability::Sync, Source::Update, writers).await
}

/// An edit as `as_node` (the input, a copy, the end) must be the only edit of its superstep.
fn alone(as_node: &str, edits: usize) -> Result<(), Error> {
    if edits > 1 {
        return Err(Error::config(format!(
            "an update as `{as_node}` cannot share its superstep with other updates"
        )));
    }
    Ok(())
}

/// Copies the loop's checkpoint as a sibling of it (an edit as [`AS_COPY`]).
async fn copy_step<S: State>(run: &mut Loop<S>, fresh: bool, edits: usize) -> Result<(), Error> {
    alone(AS_COPY, edits)?;
    if fresh {
        return Err(Error::config(format!(
            "an update as `{AS_COPY}` needs a checkpoint to copy: thread `{}` has none",
            run.persist.thread()
        )));
    }
    if let Some(p) = run.persist.on_mut() {
        p.current = p.record.as_ref().and_then(|r| r.parent_id.clone());
    }
    run.step += 1;
    save(run, Durability::Sync, Source::Fork, Arc::default()).await
}

/// Ends the loop's step (an edit as [`AS_END`]): the tasks with saved writes as they finished,
/// every other one cancelled.
async fn end_step<S: State>(run: &mut Loop<S>, fresh: bool, edits: usize) -> Result<(), Error> {
    alone(AS_END, edits)?;
    if fresh {
        // Nothing to end: LangGraph writes the empty thread's first checkpoint, step 0.
        run.step = 1;
        return save(run, Durability::Sync, Source::Update, Arc::default()).await;
    }
    // The step's tasks, the finished ones with their saved writes.
    run.prepare_tasks()?;
    let mut done = Vec::new();
    let mut finished = Vec::new();
    for task in std::mem::take(&mut run.tasks) {
        let (command, cancelled) = match task.job {
            Job::Ready(command) if task.saved => (*command, false),
            _ => (Command::default(), true),
        };
        if cancelled && task.push.is_some() {
            // A cancelled `Send`: dropped with its packet.
            continue;
        }
        if !cancelled {
            finished.push(task.node);
        }
        // A cancelled pull task consumes its triggers, and its edges and routers do not fire.
        done.push(Finished {
            node: task.node,
            pull: task.push.is_none(),
            command,
            routed: task.routed || cancelled,
            handled: cancelled,
        });
    }
    for d in done.iter_mut().filter(|d| !d.routed) {
        run.route_fresh(d)?;
    }
    if let Some(p) = run.persist.on_mut() {
        p.pending.clear();
    }
    run.after_tick(done)?;
    let writers = super::persist::writers(&run.g, finished.iter().copied());
    save(run, Durability::Sync, Source::Update, writers).await
}

/// The node of each edit: named, or for a lone edit inferred (LangGraph's rules): the only node
/// of a one-node graph; on an empty thread the start node; else the node that ran last.
fn as_nodes<S: State>(run: &Loop<S>, fresh: bool, edits: &[StateEdit<S::Update>]) -> Result<Vec<u32>, Error> {
    let g = &run.g;
    let named = |name: &str| match g.node_ids.get(name) {
        Some(&n) if (n as usize) < g.n_user || Some(n) == g.start => Ok(n),
        _ => Err(Error::config(format!("`update_state` names unknown node `{name}`"))),
    };
    if let [edit] = edits {
        let node = match edit.as_node.as_deref() {
            Some(name) => named(name)?,
            None if g.nodes.len() == 1 => 0,
            None if fresh && g.start.is_some() => g.start.expect("checked"),
            None => run.last_node().ok_or_else(|| {
                Error::config("`update_state` cannot tell which node the update comes from: name it with `as_node`")
            })?,
        };
        return Ok(vec![node]);
    }
    edits
        .iter()
        .map(|e| match e.as_node.as_deref() {
            Some(name) => named(name),
            None => Err(Error::config(
                "each of several updates in one superstep needs its `as_node`",
            )),
        })
        .collect()
}
