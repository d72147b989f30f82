//! When a run reads and writes its thread's checkpoints: loaded as it starts, saved after each
//! step as the durability says, settled as it ends (the last checkpoint, the pending writes of an
//! incomplete step, every put under way).

use super::body::saved_version;
use super::persist::{checkpointer_error, writers, Persist, TaskRecord, ERROR, INTERRUPT, RESUME};
use super::run::Loop;
use super::RunConfig;
use crate::checkpoint::{CheckpointRecord, MadeByRun, Source};
use crate::error::Error;
use crate::graph::CompiledGraph;
use crate::graph::Durability;
use crate::state::{State, Warm};
use std::sync::Arc;

/// Loads the thread into a new loop; returns whether it had a checkpoint.
pub(crate) async fn load<S: State>(graph: &CompiledGraph<S>, config: &RunConfig) -> Result<(Loop<S>, bool), Error> {
    let mut run = Loop::new(graph.inner.clone(), graph.checkpointer.as_ref(), config)?;
    if run.store.is_none() {
        run.store = graph.store.clone();
    }
    let Some(p) = run.persist.on_mut() else {
        return Ok((run, false));
    };
    let info = p.info.clone();
    let (thread, ns) = (&*info.thread, &*info.ns);
    // The head comes with its checkpoint, in one read; only a run from a past checkpoint asks
    // for the head on its own.
    if config.checkpoint_id.is_some() {
        p.head = info
            .checkpointer
            .head(thread, ns)
            .await
            .map_err(|e| checkpointer_error(thread, e))?
            .map(Into::into);
    }
    // The values the graph's last run on this thread read back: the saver then returns only
    // what the chains gained since.
    let warm = (graph.inner.warm.lock().unwrap_or_else(|e| e.into_inner()).take()).filter(|w| w.is_of(thread, ns));
    let held = warm.as_ref().map(Warm::held).unwrap_or_default();
    let id = config.checkpoint_id.as_deref();
    let mut loaded = info
        .checkpointer
        .get_holding(thread, ns, id, &held)
        .await
        .map_err(|e| checkpointer_error(thread, e))?;
    // A checkpoint an older state version saved is migrated from whole chains.
    if loaded.as_ref().is_some_and(|l| {
        !l.continued.is_empty() && saved_version(&l.record.body) != Some(graph.inner.prototype.0.version())
    }) {
        loaded = info
            .checkpointer
            .get(thread, ns, id)
            .await
            .map_err(|e| checkpointer_error(thread, e))?;
    }
    match loaded {
        Some(l) => {
            if config.checkpoint_id.is_none() {
                p.head = Some(l.record.id.clone());
            }
            run.restore_warm(l, warm)?;
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
    let (Some(p), view) = run.checkpointing() else {
        return Ok(());
    };
    if durability == Durability::Exit && source != Source::Update {
        p.dirty = true;
        return Ok(());
    }
    let record = p.record(&view, source, writers)?;
    put(p, record, durability).await
}

/// Puts `record` as the durability says: in place when the checkpointer can, in the background
/// (async), or now; with it the step's tasks' writes kept for it ([`Persist::step_writes`]).
async fn put(p: &mut Persist, record: CheckpointRecord, durability: Durability) -> Result<(), Error> {
    p.last_source = record.source;
    let expected = p.head.replace(record.id.clone());
    p.current = Some(record.id.clone());
    p.dirty = false;
    let writes = std::mem::take(&mut p.step_writes);
    // A checkpointer that stores in place goes first, unless puts handed to the writer are still
    // ahead.
    let record = if p.writer.is_none() {
        match p
            .info
            .checkpointer
            .try_put_in_place(record, expected.as_deref(), MadeByRun::new())
        {
            Ok(stored) => {
                let info = &p.info;
                stored.map_err(|e| checkpointer_error(&info.thread, e))?;
                if writes.is_empty() {
                    return Ok(());
                }
                return info
                    .checkpointer
                    .put_writes_made(&info.thread, writes, MadeByRun::new())
                    .await
                    .map_err(|e| checkpointer_error(&info.thread, e));
            }
            Err(record) => record,
        }
    } else {
        record
    };
    if durability == Durability::Async {
        return p.put_later(record, writes, expected).await;
    }
    p.flush().await?;
    let info = p.info.clone();
    info.checkpointer
        .put_made_with_writes(
            &info.thread,
            vec![record],
            writes,
            expected.as_deref(),
            MadeByRun::new(),
        )
        .await
        .map_err(|e| checkpointer_error(&info.thread, e))
}

/// Ends a checkpointed run: the last checkpoint (exit durability), the pending writes of an
/// incomplete step, and every put under way.
pub(crate) async fn settle<S: State>(
    run: &mut Loop<S>,
    durability: Durability,
    writers: Arc<[Arc<str>]>,
) -> Result<(), Error> {
    let (Some(p), view) = run.checkpointing() else {
        return Ok(());
    };
    if p.dirty || (durability == Durability::Exit && p.current.is_none()) {
        let record = p.record(&view, Source::Loop, writers)?;
        put(p, record, Durability::Sync).await?;
    }
    p.flush().await?;
    for (task, writes) in std::mem::take(&mut p.rows) {
        p.put_task_writes(&task, writes).await?;
    }
    Ok(())
}

/// The checkpoint of the step just applied. With exit durability only the last step's is
/// written, when the run settles: `exit_writers` keeps the names of the nodes that wrote it.
pub(crate) async fn save_step<S: State>(
    run: &mut Loop<S>,
    durability: Durability,
    exit_writers: &mut Arc<[Arc<str>]>,
) -> Result<(), Error> {
    if !run.persist.is_on() {
        return Ok(());
    }
    let names = writers(&run.g, run.writers.iter().copied());
    if durability == Durability::Exit {
        *exit_writers = names;
        save(run, durability, Source::Loop, Arc::default()).await
    } else {
        save(run, durability, Source::Loop, names).await
    }
}

/// An answer of the wrong type failed the task that asked: its question stays open, with the
/// answers it had before, so the thread can be resumed with an answer of the right type.
pub(crate) fn keep_question_open<S: State>(run: &mut Loop<S>, task: &str, asked: TaskRecord) {
    let Some(p) = run.persist.on_mut() else { return };
    let Some((_, rows)) = p.rows.iter_mut().find(|(id, _)| id == task) else {
        return;
    };
    // A task answered with the others of a resume map that finished keeps its writes.
    if !rows.iter().any(|(channel, _)| *channel == ERROR) {
        return;
    }
    // JSON values always serialize: `to_vec` fails only on a writer's I/O.
    let question = serde_json::to_vec(&asked.question).expect("a JSON value serializes");
    let answers = serde_json::to_vec(&asked.answers).expect("JSON values serialize");
    rows.retain(|(channel, _)| *channel == ERROR);
    rows.push((INTERRUPT, question));
    rows.push((RESUME, answers));
}
