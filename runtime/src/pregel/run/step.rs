//! Executing a step: its tasks run (one in place, more on the executor), each task's result
//! becomes a finished task or a failure, error handlers and cache writes are applied, a node's
//! `then_fresh` and the routers of a wide step read their own task's writes (the fresh view,
//! [`State::read_fresh`]), and an incomplete step keeps its pending writes.

use super::super::executor::{panic_message, run_job, Deal, Failure, Job, StepShared, TaskInput, TaskOutput};
use super::super::pending::StepSaver;
use super::super::persist::{pending_rows, ERROR, INTERRUPT, RESUME, WRITES};
use super::super::spans;
use super::super::stream::{StreamMode, TaskEmits};
use super::super::task::{CacheLookup, Finished, Running, Task, TaskReport};
use super::Loop;
use crate::checkpoint::TaskWrites;
use crate::error::Error;
use crate::graph::Command;
use crate::graph::Context;
use crate::graph::Durability;
use crate::graph::Streams;
use crate::signal::{PauseKind, Paused};
use crate::state::State;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// How a step ended.
pub(crate) enum StepEnd<S: State> {
    /// Every task finished: their writes, for `after_tick`; [`Loop::writers`] names the nodes.
    Ran(Vec<Finished<S>>),
    /// Nodes paused: nothing was applied; the step runs again on resume. With the pauses, the
    /// state with the finished tasks' writes applied, when a stream wants it and some finished.
    Paused(Vec<Paused>, Option<Arc<S>>),
}

/// A task that paused: its node, push index, question, and the answers it had.
type Asked = (u32, Option<usize>, serde_json::Value, Vec<serde_json::Value>);

/// What a step's results came to: the finished tasks, the first failure (with its task), a
/// cache or checkpointer that could not store, the paused tasks, and the finished tasks whose
/// writes are not saved yet (their index in `done`, and push index).
struct Taken<S: State> {
    done: Vec<Finished<S>>,
    failure: Option<(Error, u32, Option<usize>)>,
    store_failure: Option<Error>,
    paused: Vec<Asked>,
    unsaved: Vec<(usize, Option<usize>)>,
}

impl<S: State> Loop<S> {
    /// Runs the planned tasks concurrently and hands back the finished ones, for `after_tick`.
    /// A failing task fails the step, after the writes of its successful siblings are kept;
    /// pausing tasks pause it.
    pub(crate) async fn execute(&mut self) -> Result<StepEnd<S>, Error> {
        let mut tasks = std::mem::take(&mut self.tasks);
        let step = self.step;
        self.look_up_cache(&mut tasks).await?;
        let n_tasks = tasks.len();
        // The buffers of the last step, empty: no allocation per step. A task's outputs and
        // what the loop keeps of it are two lists, zipped as they are taken, not copied into one.
        let mut running = std::mem::take(&mut self.running);
        let mut outputs = std::mem::take(&mut self.outputs);
        running.reserve(n_tasks);
        if n_tasks == 1 {
            // One task: run it in place, no spawn.
            let (job, task) = tasks.pop().expect("one task").start();
            let ctx = self.context(&task, step);
            let policy = &self.g.nodes[task.node as usize].policy;
            // Durations go to a stream's task events only: a run without them reads no clock.
            let started = self.times_tasks().then(Instant::now);
            let span = spans::task(None, &ctx);
            // Not the executor's `run_task`: one more future around the job is a copy of it per
            // step (callgrind, loop 2000: 17.8 M -> 18.7 M instructions).
            let result = AssertUnwindSafe(run_job(job, &self.state, ctx, policy).instrument(span.clone()))
                .catch_unwind()
                .await;
            let result = result.unwrap_or_else(|p| Err(Failure::Panic(panic_message(p))));
            spans::end_task(&span, &result);
            outputs.push(TaskOutput {
                result,
                duration: started.map_or(Duration::ZERO, |s| s.elapsed()),
                saved: Ok(false),
            });
            running.push(task);
        } else {
            self.run_wide(&mut tasks, &mut running, &mut outputs).await;
        }
        // The task list is empty again: keep its allocation for the next step.
        self.tasks = tasks;

        let taken = self.take_results(&mut running, &mut outputs).await;
        (self.running, self.outputs) = (running, outputs);
        let mut taken = taken?;
        // Routers of a step with several tasks read the state with their own task's writes
        // applied and nobody else's: evaluate them before anything is applied.
        if n_tasks > 1 {
            for d in taken.done.iter_mut().filter(|d| !d.routed) {
                if let Err(e) = self.route_fresh(d) {
                    taken.failure.get_or_insert((e, d.node, None));
                }
            }
        }
        let incomplete = taken.failure.is_some() || taken.store_failure.is_some() || !taken.paused.is_empty();
        if incomplete {
            self.keep_incomplete(&taken)?;
        }
        let Taken {
            done,
            failure,
            store_failure,
            paused,
            unsaved,
        } = taken;
        self.unsaved = unsaved;
        if let Some(e) = failure.map(|(e, _, _)| e).or(store_failure) {
            return Err(e);
        }
        if !paused.is_empty() {
            return Ok(StepEnd::Paused(self.pauses_of(paused), self.pending_values(&done)));
        }
        self.writers.clear();
        self.writers.extend(done.iter().map(|d| d.node));
        Ok(StepEnd::Ran(done))
    }

    /// Runs the tasks of a wide step on the executor, their outputs in task order.
    async fn run_wide(
        &mut self,
        tasks: &mut Vec<Task<S>>,
        running: &mut Vec<Running>,
        outputs: &mut Vec<TaskOutput<S>>,
    ) {
        let step = self.step;
        let mut deal = Deal::new(tasks.len());
        // A checkpointed run saves each task's writes as it ends.
        let saver = self.persist.on().and_then(|p| StepSaver::of(&self.g, p));
        for (job, task) in tasks.drain(..).map(Task::start) {
            // Writes loaded from pending writes are saved already. A node with a fresh read
            // (`then_fresh`, which runs on the loop once the step's tasks are in) saves its
            // writes with the read's, when the step ends, so the read never runs twice.
            let fresh = self.g.nodes[task.node as usize].fresh.is_some();
            deal.push(TaskInput {
                saves: saver.is_some() && !task.saved && !fresh,
                job,
                ctx: self.context(&task, step),
                node: task.node,
            });
            running.push(task);
        }
        let shared = StepShared {
            state: self.state.clone(),
            g: self.g.clone(),
            saver,
            span: tracing::Span::current(),
            timed: self.times_tasks(),
        };
        self.executor.run_wide(deal, shared, outputs).await;
    }

    /// Takes the step's results in task order: each task finished (through its node's error
    /// handler when it failed and has one, its writes stored in the node cache), failed, or
    /// paused; and what a stream reports of each.
    async fn take_results(
        &mut self,
        running: &mut Vec<Running>,
        outputs: &mut Vec<TaskOutput<S>>,
    ) -> Result<Taken<S>, Error> {
        let mut taken = Taken {
            done: std::mem::take(&mut self.done),
            failure: None,
            store_failure: None,
            paused: Vec::new(),
            unsaved: std::mem::take(&mut self.unsaved),
        };
        taken.done.reserve(running.len());
        taken.unsaved.clear();
        self.report.clear();
        for (task, output) in running.drain(..).zip(outputs.drain(..)) {
            let (node, push) = (task.node, task.push);
            if let Some((question, answers)) = task.scratch.as_ref().and_then(|s| s.paused()) {
                taken.paused.push((node, push, question, answers));
                continue;
            }
            // Writes saved as the task ended are not saved again if the step does not complete.
            let saved = match output.saved {
                Ok(saved) => saved,
                Err(e) => {
                    taken.store_failure.get_or_insert(e);
                    false
                }
            };
            let result = self.finish_task(node, push.is_none(), output.result);
            let has_handler = self.g.nodes[node as usize].handler.is_some();
            // A failed task with a handler is reported with its error, the handler as a task of
            // its own (how long the handler took, to report it).
            let (result, handler_took) = match result {
                Err(e) if has_handler && e.node_name().is_some() && !e.is_invalid_update() => {
                    let handler = self.g.nodes[node as usize].handler.clone().expect("a handler");
                    self.note(node, push, output.duration, Err(e.to_string()), false);
                    let started = self.times_tasks().then(Instant::now);
                    let handled = self.handle(node, push.is_none(), e, &handler);
                    (handled, Some(started.map_or(Duration::ZERO, |s| s.elapsed())))
                }
                r => (r, None),
            };
            if let (Ok(d), Some(CacheLookup::Miss(key)), None) = (&result, &task.cache_key, &taken.store_failure) {
                taken.store_failure = self.store_in_cache(node, key, &d.command).await.err();
            }
            // A task's fresh read runs where its routers do: writes saved after routing include
            // its update; writes saved as the task ended (not routed yet) do not.
            let result = match result {
                Ok(d) if !(d.handled || (task.saved && task.routed)) => self.then_fresh(d),
                r => r,
            };
            match handler_took {
                Some(took) => self.note_result(&task, took, &result, true),
                None => self.note_result(&task, output.duration, &result, false),
            }
            match result {
                Ok(d) => {
                    if !task.saved && !saved {
                        taken.unsaved.push((taken.done.len(), push));
                    }
                    taken.done.push(Finished {
                        routed: task.routed,
                        ..d
                    });
                }
                Err(e) => {
                    taken.failure.get_or_insert((e, node, push));
                }
            }
        }
        Ok(taken)
    }

    /// Notes what a stream reports of `task`'s result (of its node, or of its error handler).
    fn note_result(&mut self, task: &Running, duration: Duration, result: &Result<Finished<S>, Error>, handler: bool) {
        if self.sink.is_none() {
            return;
        }
        let streaming = self.sink.as_ref().is_some_and(|s| s.wants(StreamMode::UPDATES));
        let outcome = match result {
            Ok(d) => Ok(streaming.then(|| d.command.update.clone())),
            Err(e) => Err(e.to_string()),
        };
        let hit = matches!(task.cache_key, Some(CacheLookup::Hit));
        let cached = (task.saved || hit) && !handler;
        self.note(task.node, task.push, duration, outcome.map(|u| (u, cached)), handler);
    }

    /// Notes what a stream reports of one task: its update (and whether it was cached), or its error.
    fn note(
        &mut self,
        node: u32,
        push: Option<usize>,
        duration: Duration,
        outcome: Result<(Option<S::Update>, bool), String>,
        handler: bool,
    ) {
        if self.sink.is_none() {
            return;
        }
        let (update, cached, error) = match outcome {
            Ok((update, cached)) => (update, cached, None),
            Err(e) => (None, false, Some(e)),
        };
        // Made now, while the step's base checkpoint is current: its end is reported after.
        let key = self.times_tasks().then(|| {
            let mut id = self.task_id(node, push);
            if handler {
                id.push_str(":error_handler");
            }
            self.task_key(&id)
        });
        self.report.push(TaskReport {
            node,
            push,
            duration,
            error,
            update,
            cached,
            handler,
            key,
        });
    }

    /// The state with the writes of a paused step's finished tasks applied (LangGraph streams it
    /// before the interrupt), when a stream wants values and some task finished. Writes that do
    /// not apply send nothing here: the resumed step reports their error.
    fn pending_values(&self, done: &[Finished<S>]) -> Option<Arc<S>> {
        let wanted = self.sink.as_ref().is_some_and(|s| s.wants(StreamMode::VALUES));
        if !wanted || done.is_empty() {
            return None;
        }
        let mut state = (*self.state).clone();
        let mut channels = self.channels.clone();
        let mut updates: Vec<S::Update> = done.iter().map(|d| d.command.update.clone()).collect();
        let mut changed = vec![false; self.g.n_fields()];
        state.apply(&mut channels, &mut updates, false, &mut changed).ok()?;
        Some(Arc::new(state))
    }

    /// A step that completed, in a run that keeps task results (`RunConfig::task_results`),
    /// keeps the writes of its tasks that did not save them as they ended (a lone task, a node
    /// with a fresh read), to store against the checkpoint it started from with the step's own
    /// checkpoint, in one call: where a thread's history finds each task's result (the update
    /// it returned). Not on the checkpoint the run started from: those writes would outlive a
    /// rollback of the run (to that checkpoint), and replace the rows of a question the task
    /// answered, which the rollback brings back. Nothing under exit durability, which keeps no
    /// history.
    pub(crate) fn keep_completed(&mut self, done: &[Finished<S>]) -> Result<(), Error> {
        let at = self
            .persist
            .on()
            .filter(|p| p.info.task_results && p.info.durability != Durability::Exit && p.wrote_current())
            .and_then(|p| Some((p.info.ns.clone(), p.current.clone()?)));
        let Some((ns, checkpoint)) = at else { return Ok(()) };
        let mut writes = Vec::with_capacity(self.unsaved.len());
        for (i, push) in &self.unsaved {
            let d = &done[*i];
            let task_id = self.task_id(d.node, *push);
            writes.push(TaskWrites {
                ns: ns.clone(),
                checkpoint: checkpoint.clone(),
                rows: pending_rows(&task_id, vec![(WRITES, self.save_task(&d.command, d.routed)?)]),
                task_id,
            });
        }
        if let Some(p) = self.persist.on_mut() {
            p.step_writes.append(&mut writes);
        }
        Ok(())
    }

    /// A step that did not complete keeps the writes of the tasks that succeeded, so a resume
    /// does not run them again, and the error or question of the others.
    fn keep_incomplete(&mut self, taken: &Taken<S>) -> Result<(), Error> {
        if !self.persist.is_on() {
            return Ok(());
        }
        let mut rows = Vec::new();
        for (i, push) in &taken.unsaved {
            let d = &taken.done[*i];
            rows.push((
                self.task_id(d.node, *push),
                vec![(WRITES, self.save_task(&d.command, d.routed)?)],
            ));
        }
        if let Some((e, node, push)) = &taken.failure {
            rows.push((self.task_id(*node, *push), vec![(ERROR, e.to_string().into_bytes())]));
        }
        for (node, push, question, answers) in &taken.paused {
            // JSON values always serialize: `to_vec` fails only on a writer's I/O.
            let q = serde_json::to_vec(question).expect("a JSON value serializes");
            let a = serde_json::to_vec(answers).expect("JSON values serialize");
            rows.push((self.task_id(*node, *push), vec![(INTERRUPT, q), (RESUME, a)]));
        }
        if let Some(p) = self.persist.on_mut() {
            p.rows = rows;
        }
        Ok(())
    }

    /// The pauses of the tasks that asked a question.
    fn pauses_of(&self, paused: Vec<Asked>) -> Vec<Paused> {
        paused
            .into_iter()
            .map(|(node, push, question, _)| Paused {
                node: self.g.node_name(node),
                id: self.pause_id(node, push),
                question: Some(question),
                kind: PauseKind::Interrupt,
            })
            .collect()
    }

    /// Whether the run reports its tasks' durations (a stream of task events).
    fn times_tasks(&self) -> bool {
        self.sink.as_ref().is_some_and(|s| s.wants(StreamMode::TASKS))
    }

    /// The context of a task of step `step`.
    fn context(&self, task: &Running, step: i64) -> Context {
        let node = self.g.names[task.node as usize].clone();
        let emitter = self.sink.as_ref().and_then(|s| s.emitter(node.clone(), step));
        // A task's id and key are made only when the run streams messages, tools or subgraphs.
        let ids = self
            .sink
            .as_ref()
            .filter(|s| s.wants(StreamMode::MESSAGES) || s.wants(StreamMode::TOOLS) || s.streams_subgraphs())
            .map(|_| {
                let id = self.task_id(task.node, task.push);
                let key = self.task_key(&id);
                (id, key)
            });
        let ids = ids.as_ref().map(|(id, key)| (id.as_str(), key.as_str()));
        let emitter_of = |kind| {
            let (sink, ids) = self.sink.as_ref().zip(ids)?;
            sink.task_emitter(kind, &node, ids, task.push, step)
        };
        let (messages, tools) = (emitter_of(TaskEmits::Message), emitter_of(TaskEmits::Tool));
        let forward = self
            .sink
            .as_ref()
            .zip(ids)
            .filter(|(s, _)| s.streams_subgraphs())
            .and_then(|(s, ids)| s.forward(&node, ids, step));
        let persist = self.persist.on();
        let run = persist.map(|p| p.info.clone());
        let base = persist.and_then(|p| p.current.clone());
        Context {
            node,
            push: task.push,
            step,
            stop: self.stop,
            limit: usize::try_from(self.limit).unwrap_or(usize::MAX),
            scratch: task.scratch.clone(),
            run,
            base,
            streams: Streams::of(emitter, (messages, tools), forward),
            store: self.store.clone(),
            context: self.context.clone(),
        }
    }

    fn finish_task(&self, node: u32, pull: bool, result: Result<Command<S>, Failure>) -> Result<Finished<S>, Error> {
        let name = &self.g.names[node as usize];
        let command = match result {
            Ok(Command { parent: Some(p), .. }) => return Err(Error::to_parent(name, p)),
            Ok(c) => c,
            Err(Failure::Error(e)) => return Err(Error::node(name, self.step, e)),
            Err(Failure::Timeout(limit)) => return Err(Error::timeout(name, self.step, limit)),
            Err(Failure::Panic(message)) => return Err(Error::panic(name, self.step, message)),
        };
        if let Some(f) = self.g.undeclared_write(node, &command.update) {
            return Err(Error::undeclared_write(name, self.g.fields[f].name.clone(), self.step));
        }
        Ok(Finished {
            node,
            pull,
            command,
            routed: false,
            handled: false,
        })
    }

    /// Runs `node`'s error handler on its failure `e`: the handler's command stands in for the
    /// node's. A failing handler fails the run.
    fn handle(
        &self,
        node: u32,
        pull: bool,
        e: Error,
        handler: &crate::graph::HandlerFn<S>,
    ) -> Result<Finished<S>, Error> {
        let name = &self.g.names[node as usize];
        let failure = crate::graph::NodeError {
            node: name.to_string(),
            error: e.to_string(),
        };
        let handled = std::panic::catch_unwind(AssertUnwindSafe(|| handler(&self.state, &failure)))
            .unwrap_or_else(|p| Err(format!("it panicked: {}", panic_message(p)).into()));
        let command = handled.map_err(|h| {
            Error::node(
                name,
                self.step,
                format!("its error handler failed: {h} (handling: {e})").into(),
            )
        })?;
        Ok(Finished {
            node,
            pull,
            command,
            routed: false,
            handled: true,
        })
    }

    /// Takes cached writes for the cacheable tasks whose key was seen, and notes the key of the
    /// others to store their writes once they succeed.
    async fn look_up_cache(&self, tasks: &mut [Task<S>]) -> Result<(), Error> {
        let Some(cache) = &self.g.cache else { return Ok(()) };
        for t in tasks
            .iter_mut()
            .filter(|t| !t.saved && t.failed.is_none() && t.push.is_none())
        {
            let Some(policy) = &self.g.nodes[t.node as usize].cache else {
                continue;
            };
            let name = &self.g.names[t.node as usize];
            let user_key = std::panic::catch_unwind(AssertUnwindSafe(|| (policy.key)(&self.state)))
                .map_err(|p| Error::panic(name, self.step, format!("its cache key panicked: {}", panic_message(p))))?;
            let key = format!("{name}:{user_key}");
            let hit = cache.get(&key).await.map_err(|e| Error::cache(name, self.step, e))?;
            match hit {
                Some(bytes) => {
                    t.job = Job::Ready(Box::new(self.load_task(&bytes)?.0));
                    t.cache_key = Some(CacheLookup::Hit);
                }
                None => t.cache_key = Some(CacheLookup::Miss(key)),
            }
        }
        Ok(())
    }

    async fn store_in_cache(&self, node: u32, key: &str, command: &Command<S>) -> Result<(), Error> {
        let (Some(cache), Some(policy)) = (&self.g.cache, &self.g.nodes[node as usize].cache) else {
            return Ok(());
        };
        // A cache hit runs its task's routers as a fresh task's run: no flag to keep.
        let bytes = self.save_task(command, true)?;
        cache
            .put(key, bytes, policy.ttl)
            .await
            .map_err(|e| Error::cache(&self.g.names[node as usize], self.step, e))
    }
}
