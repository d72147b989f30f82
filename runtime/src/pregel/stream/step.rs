//! The events of a step, in the order `docs/streaming.md` gives: what is announced before the
//! step runs (its checkpoint, its tasks' starts) and reported after (updates, task ends,
//! values).

use super::{Event, StreamMode};
use crate::checkpoint::Source;
use crate::pregel::run::Loop;
use crate::state::State;
use std::sync::Arc;

/// Sends the events of the step just run: the updates replayed from saved writes first (cached),
/// then each task's update and end in task order (an error handler's after its node's end), then
/// the values (`values`: the state after the step, or a paused step's state with the finished
/// tasks' writes applied).
pub(crate) async fn report<S: State>(run: &mut Loop<S>, step: i64, values: Option<Arc<S>>) {
    let Some(sink) = &run.sink else { return };
    let mut reports = std::mem::take(&mut run.report);
    // Stable: the cached ones first, each group in task order.
    reports.sort_by_key(|r| !r.cached);
    for r in reports {
        if Some(r.node) == run.g.start {
            continue;
        }
        let (mut node, mut id) = (run.g.node_name(r.node), run.task_id(r.node, r.push));
        if r.handler {
            node = format!("__error_handler__{node}");
            id.push_str(":error_handler");
        }
        if let Some(update) = r.update {
            let (node, key, cached) = (node.clone(), r.key.clone(), r.cached);
            sink.send(Event::Update {
                step,
                node,
                key,
                update,
                cached,
            })
            .await;
        }
        if let (Some(key), false) = (r.key, r.cached) {
            let (duration, error) = (r.duration, r.error);
            sink.send(Event::TaskEnd {
                step,
                id,
                key,
                node,
                duration,
                error,
            })
            .await;
        }
    }
    if let (Some(state), true) = (values, sink.wants(StreamMode::VALUES)) {
        sink.send(Event::Values { step, state }).await;
    }
}

/// Sends the events of the step about to run: the checkpoint it starts from, and its tasks.
pub(crate) async fn announce<S: State>(run: &Loop<S>, checkpoint: Option<(String, i64, Source)>) {
    let Some(sink) = &run.sink else { return };
    if let Some((id, step, source)) = checkpoint {
        let next = run.tasks.iter().map(|t| run.g.node_name(t.node)).collect();
        let keys = run
            .tasks
            .iter()
            .map(|t| run.task_key(&run.task_id(t.node, t.push)))
            .collect();
        sink.send(Event::Checkpoint {
            step,
            id,
            source,
            next,
            keys,
        })
        .await;
    }
    if sink.wants(StreamMode::TASKS) {
        for t in run.tasks.iter().filter(|t| Some(t.node) != run.g.start && !t.saved) {
            let (id, node) = (run.task_id(t.node, t.push), run.g.node_name(t.node));
            let key = run.task_key(&id);
            sink.send(Event::TaskStart {
                step: run.step(),
                id,
                key,
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
