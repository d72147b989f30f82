//! One run of a compiled graph: `tick` plans a step, `run_step` runs its tasks and applies their
//! writes (`after_tick`), until a status says stop.

use super::compile::{ControlSpec, GraphInner, InputMode};
use super::config::{Context, DrainHandle, RunConfig, RunInfo};
use super::executor::{panic_message, run_job, Executor, Failure, Job, TaskInput, TaskOutput};
use super::interrupt::Scratch;
use super::persist::{Pending, Persist, ERROR, INTERRUPT, RESUME, WRITES};
use super::stream::{Sink, StreamMode};
use crate::channel::{Channel, EphemeralValue, LastValueAfterFinish, NamedBarrierValue, NamedBarrierValueAfterFinish};
use crate::error::Error;
use crate::graph::{Command, Goto, Packet};
use crate::signal::{PauseKind, Paused};
use crate::state::{FieldError, State, Update};
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// Where a run stands (LangGraph's `PregelLoop.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The input has not been applied yet.
    Input,
    /// A step is planned and about to run.
    Pending,
    /// No task is left: the run is over.
    Done,
    /// A drain was requested: the run stops between steps.
    Draining,
    /// A static interrupt before a node.
    InterruptBefore,
    /// A static interrupt after a node.
    InterruptAfter,
    /// The recursion limit was reached.
    OutOfSteps,
}

/// An internal channel's state.
#[derive(Debug, Clone)]
pub(crate) enum Control {
    Branch(EphemeralValue),
    Deferred(LastValueAfterFinish),
    Join(NamedBarrierValue<u32>),
    DeferredJoin(NamedBarrierValueAfterFinish<u32>),
}

impl Control {
    pub(crate) fn new(spec: &ControlSpec) -> Self {
        match spec {
            ControlSpec::Branch { deferred: false } => Self::Branch(EphemeralValue::unguarded()),
            ControlSpec::Branch { deferred: true } => Self::Deferred(LastValueAfterFinish::new()),
            ControlSpec::Join {
                sources,
                deferred: false,
            } => Self::Join(NamedBarrierValue::new(sources.iter().copied())),
            ControlSpec::Join {
                sources,
                deferred: true,
            } => Self::DeferredJoin(NamedBarrierValueAfterFinish::new(sources.iter().copied())),
        }
    }
    pub(crate) fn is_available(&self) -> bool {
        match self {
            Self::Branch(c) => c.is_available(&()),
            Self::Deferred(c) => Channel::<()>::is_available(c, &()),
            Self::Join(c) => c.is_available(&()),
            Self::DeferredJoin(c) => c.is_available(&()),
        }
    }
    /// `update` with `count` branch writes, or the barrier `names`.
    pub(crate) fn update(&mut self, count: usize, names: &[u32]) -> bool {
        let changed = match self {
            Self::Branch(c) => c.update(&mut (), std::iter::repeat_n((), count)),
            Self::Deferred(c) => c.update(&mut (), std::iter::repeat_n((), count)),
            Self::Join(c) => c.update(&mut (), names.iter().copied()),
            Self::DeferredJoin(c) => c.update(&mut (), names.iter().copied()),
        };
        // Internal channels are written only with names they wait for: they cannot refuse.
        changed.unwrap_or(false)
    }
    pub(crate) fn consume(&mut self) -> bool {
        match self {
            Self::Branch(c) => c.consume(&mut ()),
            Self::Deferred(c) => c.consume(&mut ()),
            Self::Join(c) => c.consume(&mut ()),
            Self::DeferredJoin(c) => c.consume(&mut ()),
        }
    }
    pub(crate) fn finish(&mut self) -> bool {
        match self {
            Self::Branch(c) => c.finish(&mut ()),
            Self::Deferred(c) => c.finish(&mut ()),
            Self::Join(c) => c.finish(&mut ()),
            Self::DeferredJoin(c) => c.finish(&mut ()),
        }
    }
}

pub(crate) struct Task<S: State> {
    pub(crate) node: u32,
    /// Pull tasks are triggered by channels; push tasks come from a `Send` (their index).
    pub(crate) push: Option<usize>,
    job: Job<S>,
    /// The task's writes come from the pending writes of a step that did not complete.
    saved: bool,
    scratch: Option<Arc<Scratch>>,
    /// The node failed in a step that did not complete, and has an error handler: the handler
    /// runs, not the node again.
    failed: Option<String>,
    /// The task's key in the node cache, when the node is cacheable and missed.
    cache_key: Option<String>,
}

/// A finished task: its command, and whether its routers already ran.
pub(crate) struct Done<S: State> {
    pub(crate) node: u32,
    pub(crate) pull: bool,
    pub(crate) command: Command<S>,
    pub(crate) routed: bool,
    /// An error handler's command: the node's own edges and routers do not fire.
    pub(crate) handled: bool,
}

pub(crate) struct Loop<S: State> {
    pub(crate) g: Arc<GraphInner<S>>,
    pub(crate) state: Arc<S>,
    pub(crate) channels: S::Channels,
    pub(crate) controls: Vec<Control>,
    /// One version per channel id; 0 = never written.
    pub(crate) versions: Vec<u64>,
    /// The greatest of `versions`: the next step's version is one more.
    pub(crate) max_version: u64,
    /// Per node, per trigger: the version last seen.
    pub(crate) seen: Vec<Vec<u64>>,
    /// `Send`s for the next step (LangGraph's `__pregel_tasks` topic).
    pub(crate) sends: Vec<Packet<S>>,
    /// Channels updated by the last step (and still available).
    pub(crate) updated: Vec<u32>,
    pub(crate) step: i64,
    /// The last step the run may take, and how many steps it may take from where it starts
    /// (the recursion limit, saturated: a limit past `i64::MAX` steps is no limit).
    pub(crate) stop: i64,
    pub(crate) limit: i64,
    pub(crate) input: Option<S::Update>,
    drain: Option<DrainHandle>,
    pub(crate) tasks: Vec<Task<S>>,
    status: Status,
    /// The run's link to its saver, when the graph has one.
    pub(crate) persist: Option<Persist>,
    /// Where a streamed run sends its events, and what each task of the last step did.
    pub(crate) sink: Option<Sink<S>>,
    pub(crate) report: Vec<TaskReport<S>>,
    /// Nodes to pause before and after: the graph's and this run's.
    interrupt_before: Vec<bool>,
    interrupt_after: Vec<bool>,
    // Buffers reused from step to step.
    candidates: Vec<u32>,
    marked: Vec<bool>,
    changed: Vec<bool>,
    updates: Vec<S::Update>,
    /// Where a lone task's routers write, when its command has no destinations of its own.
    gotos: Vec<Goto<S>>,
    /// The outcomes of a step's tasks, then the finished ones: emptied by each step.
    results: Vec<TaskResult<S>>,
    outputs: Vec<TaskOutput<S>>,
    /// Where wide steps run: their task groups, aborted if the run is dropped.
    executor: Executor<S>,
    done: Vec<Done<S>>,
    /// The finished tasks whose writes are not saved yet (their index in `done`, push index).
    unsaved: Vec<(usize, Option<usize>)>,
    /// The nodes whose writes the last applied step applied, in task order.
    pub(crate) writers: Vec<u32>,
    branch_writes: Vec<usize>,
    join_writes: Vec<Vec<u32>>,
    /// Internal channels written this step, and those available after the last one: the only
    /// ones a step boundary needs to visit (a chain of a thousand nodes has a thousand of them).
    touched: Vec<u32>,
    pub(crate) live: Vec<u32>,
}

/// What one task of a streamed step did.
pub(crate) struct TaskReport<S: State> {
    pub(crate) node: u32,
    pub(crate) push: Option<usize>,
    pub(crate) duration: Duration,
    pub(crate) error: Option<String>,
    pub(crate) update: Option<S::Update>,
}

/// What a task of a step came to, with what the loop needs to take its writes: its node, push
/// index, whether its writes were saved already, its interrupts, and its key in the node cache.
struct TaskResult<S: State> {
    node: u32,
    push: Option<usize>,
    saved: bool,
    scratch: Option<Arc<Scratch>>,
    cache_key: Option<String>,
    output: TaskOutput<S>,
}

impl<S: State> TaskResult<S> {
    fn new(
        node: u32,
        push: Option<usize>,
        saved: bool,
        scratch: Option<Arc<Scratch>>,
        cache_key: Option<String>,
        output: TaskOutput<S>,
    ) -> Self {
        Self {
            node,
            push,
            saved,
            scratch,
            cache_key,
            output,
        }
    }
}

/// How a step ended.
pub(crate) enum StepEnd {
    /// Its writes were applied; [`Loop::writers`] names the nodes that wrote.
    Applied,
    /// Nodes paused: nothing was applied; the step runs again on resume.
    Paused(Vec<Paused>),
}

impl<S: State> Loop<S> {
    pub(crate) fn new(g: Arc<GraphInner<S>>, config: &RunConfig) -> Result<Self, Error> {
        if config.recursion_limit < 1 {
            return Err(Error::config("recursion limit must be at least 1"));
        }
        let (state, channels) = g.prototype.clone();
        let n_channels = g.n_fields() + g.controls.len();
        let controls = g.controls.iter().map(Control::new).collect();
        let seen = g.nodes.iter().map(|n| vec![0; n.triggers.len()]).collect();
        let n_nodes = g.nodes.len();
        let n_controls = g.controls.len();
        let mut interrupt_before = g.interrupt_before.clone();
        let mut interrupt_after = g.interrupt_after.clone();
        for (names, mask) in [
            (&config.interrupt_before, &mut interrupt_before),
            (&config.interrupt_after, &mut interrupt_after),
        ] {
            for name in names {
                match g.node_ids.get(name) {
                    Some(&n) if (n as usize) < g.n_user => mask[n as usize] = true,
                    _ => return Err(Error::config(format!("interrupt names unknown node `{name}`"))),
                }
            }
        }
        let persist = match (&g.saver, &config.thread_id) {
            (Some(saver), Some(thread)) => {
                let info = RunInfo {
                    saver: saver.clone(),
                    thread: thread.as_str().into(),
                    ns: config.ns.as_str().into(),
                    durability: config.durability,
                };
                Some(Persist::new(info, g.n_fields(), n_channels))
            }
            (Some(_), None) => {
                return Err(Error::config(
                    "this graph has a checkpointer: give the run a thread (`RunConfig::thread`)",
                ))
            }
            (None, _) => None,
        };
        if persist.is_none() && (interrupt_before.iter().chain(&interrupt_after).any(|b| *b)) {
            return Err(Error::config(
                "interrupts need a checkpointer to pause the run: compile the graph with one",
            ));
        }
        // A new thread: the input checkpoint is step -1.
        let step = -1;
        let limit = i64::try_from(config.recursion_limit).unwrap_or(i64::MAX);
        Ok(Self {
            state: Arc::new(state),
            channels,
            controls,
            versions: vec![0; n_channels],
            seen,
            sends: Vec::new(),
            updated: Vec::new(),
            step,
            stop: step.saturating_add(limit).saturating_add(1),
            limit,
            input: None,
            drain: config.drain.clone(),
            tasks: Vec::new(),
            status: Status::Input,
            persist,
            sink: None,
            report: Vec::new(),
            interrupt_before,
            interrupt_after,
            candidates: Vec::new(),
            marked: vec![false; n_nodes],
            changed: vec![false; g.n_fields()],
            updates: Vec::new(),
            gotos: Vec::new(),
            results: Vec::new(),
            outputs: Vec::new(),
            executor: Executor::new(),
            done: Vec::new(),
            unsaved: Vec::new(),
            writers: Vec::new(),
            branch_writes: vec![0; n_controls],
            join_writes: vec![Vec::new(); n_controls],
            touched: Vec::new(),
            live: Vec::new(),
            max_version: 0,
            g,
        })
    }

    pub(crate) fn step(&self) -> i64 {
        self.step
    }

    pub(crate) fn state(&self) -> &S {
        &self.state
    }

    /// The state, shared (the next step copies it before writing only if it is still shared).
    pub(crate) fn shared_state(&self) -> Arc<S> {
        self.state.clone()
    }

    /// The planned tasks: node, push index, and whether their writes are already saved.
    pub(crate) fn planned(&self) -> Vec<(u32, Option<usize>, bool)> {
        self.tasks.iter().map(|t| (t.node, t.push, t.saved)).collect()
    }

    /// Applies the saved writes of the planned tasks to the values (for `get_state`).
    pub(crate) fn apply_saved_writes(&mut self) -> Result<(), Error> {
        let mut updates = Vec::new();
        let mut writers = Vec::new();
        for t in &mut self.tasks {
            if let (true, Job::Ready(c)) = (t.saved, &mut t.job) {
                updates.push(std::mem::take(&mut c.update));
                writers.push(t.node);
            }
        }
        let mut changed = vec![false; self.g.n_fields()];
        let g = self.g.clone();
        Arc::make_mut(&mut self.state)
            .apply(&mut self.channels, &mut updates, false, &mut changed)
            .map_err(|e| field_error(e, &writers, &g, self.step))
    }

    /// The node that saw the newest versions: what `update_state` takes without `as_node`.
    pub(crate) fn last_node(&self) -> Option<u32> {
        let best = |n: usize| self.seen[n].iter().copied().max().unwrap_or(0);
        let max = (0..self.g.n_user).map(best).max().filter(|m| *m > 0)?;
        let mut top = (0..self.g.n_user).filter(|n| best(*n) == max);
        let first = top.next()?;
        top.next().is_none().then_some(first as u32)
    }

    /// A new input on a thread with pending tasks cancels them (LangGraph's `discard_tasks`):
    /// they count as having seen their triggers, and pending `Send`s are dropped.
    pub(crate) fn discard_pending(&mut self) -> Result<(), Error> {
        if let Some(p) = &mut self.persist {
            p.pending.clear();
        }
        self.prepare_tasks()?;
        let tasks = std::mem::take(&mut self.tasks);
        let next = self.next_version();
        let pulled: Vec<u32> = tasks.iter().filter(|t| t.push.is_none()).map(|t| t.node).collect();
        for &n in &pulled {
            self.mark_seen(n);
        }
        for &n in &pulled {
            self.consume_triggers(n, next);
        }
        self.updated.clear();
        self.recount();
        Ok(())
    }

    pub(crate) fn into_state(self) -> S {
        Arc::try_unwrap(self.state).unwrap_or_else(|shared| (*shared).clone())
    }

    fn next_version(&self) -> u64 {
        self.max_version + 1
    }

    /// After a restore: the greatest version, and the internal channels available.
    pub(crate) fn recount(&mut self) {
        self.max_version = self.versions.iter().copied().max().unwrap_or(0);
        self.live = (0..self.controls.len() as u32)
            .filter(|c| self.controls[*c as usize].is_available())
            .collect();
    }

    fn is_available(&self, channel: u32) -> bool {
        let n_fields = self.g.n_fields();
        let c = channel as usize;
        if c < n_fields {
            self.state.is_available(&self.channels, c)
        } else {
            self.controls[c - n_fields].is_available()
        }
    }

    /// Applies the run's input (LangGraph's `_first`): through `__start__`, or into the fields.
    pub(crate) fn input(&mut self, update: S::Update) -> Result<(), Error> {
        let next = self.next_version();
        match self.g.mode {
            InputMode::Start => {
                let start = self.g.start.expect("a state graph has a start node") as usize;
                self.input = Some(update);
                self.controls[start].update(1, &[]);
                let id = self.g.control_id(start);
                self.versions[id as usize] = next;
                self.max_version = next;
                self.updated.push(id);
                self.live.push(start as u32);
            }
            InputMode::Fields => {
                if !(0..self.g.n_fields()).any(|f| update.is_written(f)) {
                    return Err(Error::empty_input());
                }
                self.changed.fill(false);
                let state = Arc::make_mut(&mut self.state);
                let mut updates = [update];
                state
                    .apply(&mut self.channels, &mut updates, false, &mut self.changed)
                    .map_err(|e| field_error(e, &[], &self.g, self.step))?;
                if self.record_changed_fields(next) {
                    self.max_version = next;
                }
            }
        }
        self.step += 1;
        self.status = Status::Pending;
        Ok(())
    }

    /// Plans the next step. Returns [`Status::Pending`] when there are tasks to run.
    pub(crate) fn tick(&mut self) -> Result<Status, Error> {
        if self.step > self.stop {
            self.status = Status::OutOfSteps;
            return Ok(self.status);
        }
        self.prepare_tasks()?;
        self.status = if self.tasks.is_empty() {
            Status::Done
        } else if self.drain.as_ref().is_some_and(DrainHandle::is_requested) {
            Status::Draining
        } else if self.should_interrupt(&self.interrupt_before, self.tasks.iter().map(|t| t.node)) {
            Status::InterruptBefore
        } else {
            Status::Pending
        };
        Ok(self.status)
    }

    /// LangGraph's `should_interrupt`: a task's node is in `mask`, and something changed since
    /// the run last resumed (so a resumed run passes the breakpoint it stopped at).
    fn should_interrupt(&self, mask: &[bool], nodes: impl Iterator<Item = u32>) -> bool {
        let Some(p) = &self.persist else { return false };
        let changed = self.versions.iter().zip(&p.interrupt_seen).any(|(v, seen)| v > seen);
        changed
            && nodes
                .into_iter()
                .any(|n| mask.get(n as usize).copied().unwrap_or(false))
    }

    /// Whether the step just applied ran a node to pause after.
    pub(crate) fn interrupt_after(&self, writers: &[u32]) -> bool {
        self.should_interrupt(&self.interrupt_after, writers.iter().copied())
    }

    /// The pauses of a static interrupt on `nodes`.
    pub(crate) fn static_pauses(
        &self,
        kind: PauseKind,
        nodes: impl Iterator<Item = (u32, Option<usize>)>,
    ) -> Vec<Paused> {
        let mask = if kind == PauseKind::Before {
            &self.interrupt_before
        } else {
            &self.interrupt_after
        };
        nodes
            .filter(|(n, _)| mask.get(*n as usize).copied().unwrap_or(false))
            .map(|(n, push)| Paused {
                node: self.g.node_name(n),
                id: self.task_id(n, push),
                question: None,
                kind,
            })
            .collect()
    }

    /// Marks every channel's version as seen by the interrupts (LangGraph does this on resume).
    pub(crate) fn pass_interrupts(&mut self) {
        if let Some(p) = &mut self.persist {
            p.interrupt_seen.clone_from(&self.versions);
        }
    }

    /// LangGraph's `prepare_next_tasks`: pull tasks of the nodes whose triggers have a version
    /// newer than the one they last saw, in node-name order, then one push task per `Send`.
    /// A task that already succeeded in a step that did not complete takes its saved writes.
    pub(crate) fn prepare_tasks(&mut self) -> Result<(), Error> {
        self.tasks.clear();
        self.candidates.clear();
        for &c in &self.updated {
            for &n in &self.g.trigger_to_nodes[c as usize] {
                if !std::mem::replace(&mut self.marked[n as usize], true) {
                    self.candidates.push(n);
                }
            }
        }
        let rank = &self.g.rank;
        self.candidates.sort_unstable_by_key(|n| rank[*n as usize]);
        for i in 0..self.candidates.len() {
            let n = self.candidates[i];
            self.marked[n as usize] = false;
            let node = &self.g.nodes[n as usize];
            let triggered = node
                .triggers
                .iter()
                .zip(&self.seen[n as usize])
                .any(|(&t, &seen)| self.is_available(t) && self.versions[t as usize] > seen);
            if !triggered {
                continue;
            }
            let job = match (&node.func, Some(n) == self.g.start) {
                (_, true) => Job::Ready(Command {
                    update: self.input.clone().unwrap_or_default(),
                    goto: Vec::new(),
                    parent: None,
                }),
                (Some(f), false) => Job::Node(f.clone()),
                (None, false) => Job::Ready(Command::default()),
            };
            self.tasks.push(Task {
                node: n,
                push: None,
                job,
                saved: false,
                scratch: None,
                failed: None,
                cache_key: None,
            });
        }
        for (i, p) in self.sends.drain(..).enumerate() {
            self.tasks.push(Task {
                node: p.node.0,
                push: Some(i),
                job: Job::Packet(p),
                saved: false,
                scratch: None,
                failed: None,
                cache_key: None,
            });
        }
        if let Some(p) = &self.persist {
            // Most steps have no pending writes: no task id to make then.
            let saved = !p.pending.is_empty();
            for i in 0..self.tasks.len() {
                let pending = if saved {
                    let id = self.task_id(self.tasks[i].node, self.tasks[i].push);
                    self.persist.as_mut().and_then(|p| p.pending.remove(&id))
                } else {
                    None
                };
                let answers = match pending {
                    Some(Pending {
                        writes: Some(bytes), ..
                    }) => {
                        self.tasks[i].job = Job::Ready(self.load_task(&bytes)?);
                        self.tasks[i].saved = true;
                        continue;
                    }
                    Some(Pending { error: Some(e), .. })
                        if self.g.nodes[self.tasks[i].node as usize].handler.is_some() =>
                    {
                        self.tasks[i].failed = Some(e);
                        continue;
                    }
                    Some(Pending { answers, .. }) => answers,
                    None => Vec::new(),
                };
                self.tasks[i].scratch = Some(Arc::new(Scratch::with_answers(answers)));
            }
        }
        Ok(())
    }

    /// The pending writes of the current checkpoint, for `get_state`: tasks that paused and
    /// their questions, and which tasks already have writes.
    pub(crate) fn pending(&self) -> Option<&std::collections::BTreeMap<String, Pending>> {
        self.persist.as_ref().map(|p| &p.pending)
    }

    /// Gives the answer to the paused task `id` (or, with `None`, to the only paused task).
    pub(crate) fn answer(&mut self, id: Option<&str>, value: serde_json::Value) -> Result<(), Error> {
        let p = self
            .persist
            .as_mut()
            .ok_or_else(|| Error::config("resuming needs a checkpointer"))?;
        let paused: Vec<String> = p
            .pending
            .iter()
            .filter(|(_, t)| t.question.is_some())
            .map(|(k, _)| k.clone())
            .collect();
        let target = match (id, paused.as_slice()) {
            (Some(id), _) if paused.iter().any(|p| p == id) => id.to_owned(),
            (Some(id), _) => return Err(Error::nothing_to_resume(&p.info.thread, Some(id))),
            (None, [one]) => one.clone(),
            (None, []) => return Err(Error::nothing_to_resume(&p.info.thread, None)),
            (None, _) => return Err(Error::ambiguous_resume(&p.info.thread, &paused)),
        };
        let task = p.pending.get_mut(&target).expect("a paused task");
        task.question = None;
        task.answers.push(value);
        Ok(())
    }

    /// Runs the planned tasks concurrently, then applies their writes. A failing task fails the
    /// run, after the writes of its successful siblings are saved; pausing tasks pause it.
    pub(crate) async fn run_step(&mut self) -> Result<StepEnd, Error> {
        let mut tasks = std::mem::take(&mut self.tasks);
        let step = self.step;
        self.look_up_cache(&mut tasks).await?;
        let n_tasks = tasks.len();
        // The buffers of the last step, empty: no allocation per step.
        let mut results = std::mem::take(&mut self.results);
        results.reserve(n_tasks);
        let mut outputs = std::mem::take(&mut self.outputs);
        // Durations go to a stream's task events only: a run without them reads no clock.
        let timed = self.times_tasks();
        if n_tasks == 1 {
            // One task: run it in place, no spawn.
            let task = tasks.pop().expect("one task");
            let ctx = self.context(&task, step);
            let policy = self.g.nodes[task.node as usize].policy.clone();
            let job = match &task.failed {
                Some(e) => Job::Failed(e.clone()),
                None => task.job,
            };
            let started = timed.then(Instant::now);
            let span = tracing::info_span!("weir.task", node = &*ctx.node, step);
            // Not the executor's `run_task`: one more future around the job is a copy of it per
            // step (callgrind, loop 2000: 17.8 M -> 18.7 M instructions).
            let result = AssertUnwindSafe(run_job(job, self.state.clone(), ctx, policy).instrument(span))
                .catch_unwind()
                .await;
            let output = TaskOutput {
                result: result.unwrap_or_else(|p| Err(Failure::Panic(panic_message(p)))),
                duration: started.map_or(Duration::ZERO, |s| s.elapsed()),
            };
            results.push(TaskResult::new(
                task.node,
                task.push,
                task.saved,
                task.scratch,
                task.cache_key,
                output,
            ));
        } else {
            let mut meta = Vec::with_capacity(n_tasks);
            let mut inputs = Vec::with_capacity(n_tasks);
            for task in tasks.drain(..) {
                let ctx = self.context(&task, step);
                let job = match &task.failed {
                    Some(e) => Job::Failed(e.clone()),
                    None => task.job,
                };
                inputs.push(TaskInput {
                    job,
                    state: self.state.clone(),
                    span: tracing::info_span!("weir.task", node = &*ctx.node, step),
                    ctx,
                    policy: self.g.nodes[task.node as usize].policy.clone(),
                });
                meta.push((task.node, task.push, task.saved, task.scratch, task.cache_key));
            }
            self.executor.run_wide(inputs.into_iter(), timed, &mut outputs).await;
            for ((node, push, saved, scratch, cache_key), output) in meta.into_iter().zip(outputs.drain(..)) {
                results.push(TaskResult::new(node, push, saved, scratch, cache_key, output));
            }
        }
        self.outputs = outputs;

        // The task list is empty again: keep its allocation for the next step.
        self.tasks = tasks;
        let mut done = std::mem::take(&mut self.done);
        done.reserve(n_tasks);
        let mut failure: Option<(Error, u32, Option<usize>)> = None;
        // A cache that could not store a task's writes fails the step, once the writes of every
        // task that succeeded (that one's too) are kept for a resume.
        let mut cache_failure: Option<Error> = None;
        let mut paused = Vec::new();
        let mut unsaved = std::mem::take(&mut self.unsaved);
        unsaved.clear();
        self.report.clear();
        let streaming = self.sink.as_ref().is_some_and(|s| s.wants(StreamMode::UPDATES));
        for TaskResult {
            node,
            push,
            saved,
            scratch,
            cache_key,
            output: TaskOutput { result, duration },
        } in results.drain(..)
        {
            if let Some((question, answers)) = scratch.as_ref().and_then(|s| s.paused()) {
                paused.push((node, push, question, answers));
                continue;
            }
            let result = self.finish_task(node, push.is_none(), result);
            let result = match (result, &self.g.nodes[node as usize].handler) {
                (Err(e), Some(handler)) if e.node_name().is_some() && !e.is_invalid_update() => {
                    self.handle(node, push.is_none(), e, handler)
                }
                (r, _) => r,
            };
            if let (Ok(d), Some(key), None) = (&result, &cache_key, &cache_failure) {
                cache_failure = self.store_in_cache(node, key, &d.command).await.err();
            }
            match result {
                Ok(d) => {
                    if !saved {
                        unsaved.push((done.len(), push));
                    }
                    if self.sink.is_some() {
                        let update = streaming.then(|| d.command.update.clone());
                        self.report.push(TaskReport {
                            node,
                            push,
                            duration,
                            error: None,
                            update,
                        });
                    }
                    done.push(Done { routed: saved, ..d });
                }
                Err(e) => {
                    if self.sink.is_some() {
                        self.report.push(TaskReport {
                            node,
                            push,
                            duration,
                            error: Some(e.to_string()),
                            update: None,
                        });
                    }
                    if failure.is_none() {
                        failure = Some((e, node, push));
                    }
                }
            }
        }
        // Routers of a step with several tasks read the state with their own task's writes
        // applied and nobody else's: evaluate them on a copy before anything is applied.
        if n_tasks > 1 {
            for d in done.iter_mut().filter(|d| !d.routed) {
                if let Err(e) = self.route_fresh(d) {
                    failure.get_or_insert((e, d.node, None));
                }
            }
        }
        // A step that did not complete keeps the writes of the tasks that succeeded, so a resume
        // does not run them again, and the error or question of the others.
        let incomplete = failure.is_some() || cache_failure.is_some() || !paused.is_empty();
        if incomplete && self.persist.is_some() {
            let mut rows = Vec::new();
            for (i, push) in &unsaved {
                let d = &done[*i];
                rows.push((self.task_id(d.node, *push), vec![(WRITES, self.save_task(&d.command)?)]));
            }
            if let Some((e, node, push)) = &failure {
                rows.push((self.task_id(*node, *push), vec![(ERROR, e.to_string().into_bytes())]));
            }
            for (node, push, question, answers) in &paused {
                // JSON values always serialize: `to_vec` fails only on a writer's I/O.
                let q = serde_json::to_vec(question).expect("a JSON value serializes");
                let a = serde_json::to_vec(answers).expect("JSON values serialize");
                rows.push((self.task_id(*node, *push), vec![(INTERRUPT, q), (RESUME, a)]));
            }
            if let Some(p) = &mut self.persist {
                p.rows = rows;
            }
        }
        if let Some(e) = failure.map(|(e, _, _)| e).or(cache_failure) {
            return Err(e);
        }
        if !paused.is_empty() {
            let pauses = paused
                .into_iter()
                .map(|(node, push, question, _)| Paused {
                    node: self.g.node_name(node),
                    id: self.task_id(node, push),
                    question: Some(question),
                    kind: PauseKind::Interrupt,
                })
                .collect();
            return Ok(StepEnd::Paused(pauses));
        }
        self.results = results;
        self.unsaved = unsaved;
        self.writers.clear();
        self.writers.extend(done.iter().map(|d| d.node));
        self.after_tick(done)?;
        Ok(StepEnd::Applied)
    }

    /// Whether the run reports its tasks' durations (a stream of task events).
    fn times_tasks(&self) -> bool {
        self.sink.as_ref().is_some_and(|s| s.wants(StreamMode::TASKS))
    }

    /// The context of a task of step `step`.
    fn context(&self, task: &Task<S>, step: i64) -> Context {
        let node = self.g.names[task.node as usize].clone();
        let emitter = self.sink.as_ref().and_then(|s| s.emitter(node.clone(), step));
        let run = self.persist.as_ref().map(|p| p.info.clone());
        Context {
            node,
            push: task.push,
            step,
            scratch: task.scratch.clone(),
            emitter,
            run,
        }
    }

    fn finish_task(&self, node: u32, pull: bool, result: Result<Command<S>, Failure>) -> Result<Done<S>, Error> {
        let name = &self.g.names[node as usize];
        let command = match result {
            Ok(Command { parent: Some(p), .. }) => return Err(Error::to_parent(name, p)),
            Ok(c) => c,
            Err(Failure::Error(e)) => return Err(Error::node(name, self.step, e)),
            Err(Failure::Timeout(limit)) => return Err(Error::timeout(name, self.step, limit)),
            Err(Failure::Panic(message)) => return Err(Error::panic(name, self.step, message)),
        };
        if let Some(allowed) = &self.g.nodes[node as usize].writes {
            if let Some(f) = (0..self.g.n_fields()).find(|&f| !allowed[f] && command.update.is_written(f)) {
                return Err(Error::undeclared_write(name, self.g.fields[f].name, self.step));
            }
        }
        Ok(Done {
            node,
            pull,
            command,
            routed: false,
            handled: false,
        })
    }

    /// Runs `node`'s error handler on its failure `e`: the handler's command stands in for the
    /// node's. A failing handler fails the run.
    fn handle(&self, node: u32, pull: bool, e: Error, handler: &crate::graph::HandlerFn<S>) -> Result<Done<S>, Error> {
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
        Ok(Done {
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
                Some(bytes) => t.job = Job::Ready(self.load_task(&bytes)?),
                None => t.cache_key = Some(key),
            }
        }
        Ok(())
    }

    async fn store_in_cache(&self, node: u32, key: &str, command: &Command<S>) -> Result<(), Error> {
        let (Some(cache), Some(policy)) = (&self.g.cache, &self.g.nodes[node as usize].cache) else {
            return Ok(());
        };
        let bytes = self.save_task(command)?;
        cache
            .put(key, bytes, policy.ttl)
            .await
            .map_err(|e| Error::cache(&self.g.names[node as usize], self.step, e))
    }

    /// Runs a task's routers on the state with its own writes applied, and nobody else's.
    fn route_fresh(&self, d: &mut Done<S>) -> Result<(), Error> {
        d.routed = true;
        if d.handled || self.g.nodes[d.node as usize].routers.is_empty() {
            return Ok(());
        }
        let mut fresh = (*self.state).clone();
        let mut channels = self.channels.clone();
        let mut own = [d.command.update.clone()];
        let mut scratch = vec![false; self.g.n_fields()];
        fresh
            .apply(&mut channels, &mut own, true, &mut scratch)
            .map_err(|e| field_error(e, &[d.node], &self.g, self.step))?;
        self.route(d.node, &fresh, &mut d.command.goto)
    }

    /// Runs the routers of `task` on `state` (the state with the task's own writes applied).
    fn route(&self, node: u32, state: &S, out: &mut Vec<Goto<S>>) -> Result<(), Error> {
        for router in &self.g.nodes[node as usize].routers {
            let from = out.len();
            // A router is user code: its panic fails the run, naming the node it follows.
            std::panic::catch_unwind(AssertUnwindSafe(|| (router.func)(state, out))).map_err(|p| {
                let name = &self.g.names[node as usize];
                Error::panic(name, self.step, format!("its router panicked: {}", panic_message(p)))
            })?;
            for g in &out[from..] {
                let target = match g {
                    Goto::Node(id) => Some(id.0),
                    Goto::End => None,
                    Goto::Send(_) | Goto::Named(_) => continue,
                };
                if !router.targets.contains(&target) {
                    let what = target.map_or_else(|| "END".to_owned(), |t| self.g.node_name(t));
                    return Err(Error::unknown_target(&self.g.names[node as usize], what, self.step));
                }
            }
        }
        Ok(())
    }

    /// LangGraph's `apply_writes` and `after_tick`: the end of a superstep.
    pub(crate) fn after_tick(&mut self, mut done: Vec<Done<S>>) -> Result<(), Error> {
        let g = self.g.clone();
        let n_fields = g.n_fields();
        let routed_alone = done.len() == 1 && !done[0].routed && !done[0].handled;
        if done.iter().any(|d| Some(d.node) == g.start) {
            // The start node ran: the input is in the fields now.
            self.input = None;
        }
        // Versions seen: each pull task has now seen its triggers.
        for d in done.iter().filter(|d| d.pull) {
            self.mark_seen(d.node);
        }
        let next = self.next_version();
        let mut bumped = false;

        // Consume the triggers of the tasks that ran (a join barrier starts over).
        for d in done.iter().filter(|d| d.pull) {
            bumped |= self.consume_triggers(d.node, next);
        }
        let state = Arc::make_mut(&mut self.state);

        // Apply the fields' writes, in task order.
        self.updated.clear();
        self.changed.fill(false);
        self.updates.clear();
        self.updates
            .extend(done.iter_mut().map(|d| std::mem::take(&mut d.command.update)));
        let step = self.step;
        state
            .apply(&mut self.channels, &mut self.updates, true, &mut self.changed)
            .map_err(|e| field_error(e, &done.iter().map(|d| d.node).collect::<Vec<_>>(), &g, step))?;
        bumped |= self.record_changed_fields(next);
        if routed_alone && !g.nodes[done[0].node as usize].routers.is_empty() {
            done[0].routed = true;
            if done[0].command.goto.is_empty() {
                // No allocation per routed step: the buffer comes back below, drained.
                std::mem::swap(&mut done[0].command.goto, &mut self.gotos);
            }
            // One task: the state after the step is the state with its own writes applied.
            self.route(done[0].node, &self.state, &mut done[0].command.goto)?;
        }

        // Apply the internal channels' writes: edges, joins, gotos and sends.
        let mut sends = Vec::new();
        for d in &mut done {
            let node = &g.nodes[d.node as usize];
            if !d.handled {
                for &e in &node.edges {
                    self.write_branch(e as usize);
                }
                for &j in &node.joins {
                    if self.join_writes[j as usize].is_empty() {
                        self.touched.push(j);
                    }
                    self.join_writes[j as usize].push(d.node);
                }
            }
            for goto in d.command.goto.drain(..) {
                match goto {
                    Goto::Node(id) => self.write_branch(id.index()),
                    Goto::Named(name) => match g.node_ids.get(&name) {
                        Some(&id) if (id as usize) < g.n_user => self.write_branch(id as usize),
                        _ => return Err(Error::unknown_target(&g.names[d.node as usize], name, self.step)),
                    },
                    Goto::End => {}
                    Goto::Send(p) => sends.push(p),
                }
            }
        }
        if routed_alone && self.gotos.capacity() == 0 {
            self.gotos = std::mem::take(&mut done[0].command.goto);
        }
        // Visit the internal channels written this step, and those still available from the
        // last one (an ephemeral branch clears itself), in channel order.
        let mut visit = std::mem::take(&mut self.touched);
        visit.append(&mut self.live);
        visit.sort_unstable();
        visit.dedup();
        for &c in &visit {
            let c = c as usize;
            let control = &mut self.controls[c];
            let count = std::mem::take(&mut self.branch_writes[c]);
            let written = count > 0 || !self.join_writes[c].is_empty();
            let changed = if written {
                control.update(count, &self.join_writes[c])
            } else if control.is_available() {
                // An available channel not written this step gets `update([])`.
                control.update(0, &[])
            } else {
                false
            };
            self.join_writes[c].clear();
            if changed {
                self.versions[n_fields + c] = next;
                bumped = true;
                if control.is_available() {
                    self.updated.push((n_fields + c) as u32);
                }
            }
            if control.is_available() {
                self.live.push(c as u32);
            }
        }
        self.touched = visit;
        self.touched.clear();
        self.sends = sends;

        // Nothing will wake a node: finish the channels (deferred nodes wake up).
        if !self.updated.iter().any(|c| !g.trigger_to_nodes[*c as usize].is_empty()) {
            let state = Arc::make_mut(&mut self.state);
            self.changed.fill(false);
            state.finish(&mut self.channels, &mut self.changed);
            bumped |= self.record_changed_fields(next);
            for (c, control) in self.controls.iter_mut().enumerate() {
                if control.finish() {
                    let id = n_fields + c;
                    self.versions[id] = next;
                    bumped = true;
                    if control.is_available() {
                        self.updated.push(id as u32);
                        if !self.live.contains(&(c as u32)) {
                            self.live.push(c as u32);
                        }
                    }
                }
            }
        }
        if bumped {
            self.max_version = next;
        }
        self.step += 1;
        done.clear();
        self.done = done;
        Ok(())
    }

    /// Node `n` has seen the current version of each of its triggers.
    fn mark_seen(&mut self, n: u32) {
        for (k, &t) in self.g.nodes[n as usize].triggers.iter().enumerate() {
            let v = self.versions[t as usize];
            if v > 0 {
                self.seen[n as usize][k] = v;
            }
        }
    }

    /// Consumes node `n`'s triggers (a join barrier starts over); those that change take version
    /// `next`. Returns whether any did.
    fn consume_triggers(&mut self, n: u32, next: u64) -> bool {
        let n_fields = self.g.n_fields();
        let state = Arc::make_mut(&mut self.state);
        let mut bumped = false;
        for &t in &self.g.nodes[n as usize].triggers {
            let t = t as usize;
            let consumed = if t < n_fields {
                state.consume(&mut self.channels, t)
            } else {
                self.controls[t - n_fields].consume()
            };
            if consumed {
                self.versions[t] = next;
                bumped = true;
            }
        }
        bumped
    }

    /// Gives version `next` to every field `changed` marks, and lists the available ones as
    /// updated. Returns whether any field changed.
    fn record_changed_fields(&mut self, next: u64) -> bool {
        let mut bumped = false;
        for f in 0..self.g.n_fields() {
            if self.changed[f] {
                self.versions[f] = next;
                bumped = true;
                if self.state.is_available(&self.channels, f) {
                    self.updated.push(f as u32);
                }
            }
        }
        bumped
    }

    /// Writes the branch channel of node `c` (an edge or a goto to it).
    fn write_branch(&mut self, c: usize) {
        if self.branch_writes[c] == 0 {
            self.touched.push(c as u32);
        }
        self.branch_writes[c] += 1;
    }
}

fn field_error<S: State>(e: FieldError, writers: &[u32], g: &GraphInner<S>, step: i64) -> Error {
    let nodes = e
        .writers
        .iter()
        .filter_map(|w| writers.get(*w))
        .map(|n| g.node_name(*n))
        .collect();
    Error::invalid_update(g.fields[e.field].name, nodes, step, e.error)
}
