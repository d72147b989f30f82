//! Subgraphs: a compiled graph used as a node of another.

use super::drive::{drive, Start};
use super::stream::Sink;
use super::{Outcome, RunConfig};
use crate::error::{BoxError, Error};
use crate::graph::{Command, Goto, GraphBuilder, NodeHandle};
use crate::graph::{CompiledGraph, Context, ContextValue, RunContext, Streams};
use crate::state::State;
use futures::future::BoxFuture;
use std::sync::Arc;

/// The node function of a subgraph: maps its input state to `sub`'s input with `into`, runs
/// `sub` to its end, and maps `sub`'s final state back to an update with `from`. Use it where a
/// node function goes (`graph! { nodes: [review = (weir::subgraph(sub, into, from))], .. }`), or
/// through [`GraphBuilder::add_subgraph`].
///
/// When the parent is checkpointed, `sub` saves its checkpoints on the parent's checkpointer, in the
/// parent's thread, under a namespace of its own (`<parent ns>|<task>:<step>`; see
/// [`RunConfig::ns`]); a pause inside `sub` pauses the parent with `sub`'s question, and answering
/// the parent resumes `sub` where it paused. A node of `sub` returning [`Command::to_parent`] ends
/// `sub`'s run and applies that command in the parent, as this node's. `sub` runs under the
/// parent run's recursion limit, counting its own steps from its own start (as LangGraph's
/// subgraphs, which inherit their parent's config).
///
/// `sub` runs with its parent run's context ([`RunConfig::context`]): it may declare the
/// parent's context type, or none. A node of a subgraph that declares another type than the
/// run's fails with an error naming it and both types.
pub fn subgraph<S: State, T: State, SC: ContextValue>(
    sub: CompiledGraph<T, SC>,
    into: impl Fn(&S) -> T::Update + Send + Sync + 'static,
    from: impl Fn(&T) -> S::Update + Send + Sync + 'static,
) -> impl Fn(&S, &Context) -> BoxFuture<'static, Result<Command<S>, BoxError>> + Send + Sync + 'static {
    let from = Arc::new(from);
    move |s: &S, ctx: &Context| -> BoxFuture<'static, Result<Command<S>, BoxError>> {
        let (input, sub, ctx, from) = (into(s), sub.untyped().into_owned(), ctx.clone(), from.clone());
        Box::pin(async move {
            let outcome = match run_sub(&sub, input, &ctx).await {
                Ok(outcome) => outcome,
                Err(e) => return parent_command(e),
            };
            match outcome {
                Outcome::Done(t) => Ok(Command::new().update(from(&t))),
                Outcome::Paused { pauses, .. } => {
                    // Surface the subgraph's question as this node's own pause.
                    let question = pauses.into_iter().next().and_then(|p| p.question);
                    let _: serde_json::Value = ctx.interrupt(question)?;
                    Err("the subgraph paused again after it was answered".into())
                }
            }
        })
    }
}

impl<S: State, C: ContextValue> GraphBuilder<S, C> {
    /// Adds `sub` as node `name`, mapping the states with `into` and `from`: see [`subgraph`].
    pub fn add_subgraph<T: State, SC: ContextValue>(
        &mut self,
        name: impl Into<String>,
        sub: CompiledGraph<T, SC>,
        into: impl Fn(&S) -> T::Update + Send + Sync + 'static,
        from: impl Fn(&T) -> S::Update + Send + Sync + 'static,
    ) -> NodeHandle<S> {
        let name = name.into();
        self.subgraphs.push((name.clone(), sub.mermaid(), T::FIELDS));
        self.add_node(name, subgraph(sub, into, from))
    }

    /// Adds `sub` as node `name`, mapping the states with `From`: `sub`'s input is
    /// `T::Update::from(&state)` and its result `S::Update::from(&final_state)`.
    pub fn add_subgraph_from<T: State, SC: ContextValue>(
        &mut self,
        name: impl Into<String>,
        sub: CompiledGraph<T, SC>,
    ) -> NodeHandle<S>
    where
        T::Update: for<'a> From<&'a S>,
        S::Update: for<'a> From<&'a T>,
    {
        self.add_subgraph(name, sub, |s: &S| T::Update::from(s), |t: &T| S::Update::from(t))
    }
}

/// The command a node of the subgraph sent to this graph, or the subgraph's error.
fn parent_command<S: State>(e: BoxError) -> Result<Command<S>, BoxError> {
    let Some(p) = e.downcast_ref::<Error>().and_then(Error::parent_command) else {
        return Err(e);
    };
    let update: S::Update = serde_json::from_value(p.update.clone())
        .map_err(|e| format!("a subgraph's command to its parent has an update that does not fit: {e}"))?;
    let goto = p.goto.iter().cloned().map(Goto::Named).collect();
    Ok(Command {
        update,
        goto,
        parent: None,
    })
}

/// Runs (or resumes) a subgraph for the task of `ctx`.
async fn run_sub<T: State>(sub: &CompiledGraph<T>, input: T::Update, ctx: &Context) -> Result<Outcome<T>, BoxError> {
    let Some(run) = &ctx.run else {
        // The parent is not checkpointed: a plain run.
        let config = RunConfig {
            store: ctx.store.clone(),
            context: RunContext::inherited(ctx.context.clone()),
            ..RunConfig::default().recursion_limit(ctx.limit)
        };
        return Ok(go(sub, Start::Input(input), &config, ctx).await?);
    };
    let sub = sub.with_parent_checkpointer(run.checkpointer.clone());
    let task = crate::graph::task_key::task_id(&ctx.node, ctx.push);
    let ns = if run.ns.is_empty() {
        format!("{task}:{}", ctx.step)
    } else {
        format!("{}|{task}:{}", run.ns, ctx.step)
    };
    let config = RunConfig {
        thread_id: Some(run.thread.to_string()),
        ns,
        durability: run.durability,
        task_results: run.task_results,
        // LangGraph's subgraph inherits its parent's config, recursion limit included.
        recursion_limit: ctx.limit,
        store: ctx.store.clone(),
        context: RunContext::inherited(ctx.context.clone()),
        ..RunConfig::default()
    };
    if let Some(snapshot) = sub.get_state(&config).await? {
        if let Some(pause) = snapshot.pauses.first() {
            // The parent was answered: the answer goes to the subgraph's paused node.
            let answer: serde_json::Value = ctx.interrupt(pause.question.clone())?;
            return Ok(go(&sub, Start::Resume(vec![(None, answer)]), &config, ctx).await?);
        }
        if !snapshot.next.is_empty() {
            // A run of this task that stopped half way (a failure): go on from there.
            return Ok(go(&sub, Start::Resume(Vec::new()), &config, ctx).await?);
        }
    }
    Ok(go(&sub, Start::Input(input), &config, ctx).await?)
}

/// Drives the subgraph's run, its events streamed to the caller's stream when it streams
/// subgraphs.
async fn go<T: State>(
    sub: &CompiledGraph<T>,
    start: Start<T>,
    config: &RunConfig,
    ctx: &Context,
) -> Result<Outcome<T>, Error> {
    let sink = Streams::forward(ctx)
        .cloned()
        .map(|to| Sink::forwarding(to, sub.inner.fields.clone().into()));
    drive(sub, start, config, sink).await
}
