//! One run of a compiled graph: `tick` plans a step, `run_step` runs its tasks and applies their
//! writes (`after_tick`), until a status says stop.

mod apply;
mod fresh;
mod null;
mod pauses;
mod step;
#[cfg(test)]
mod tests;

pub(crate) use step::StepEnd;

use super::config::{DrainHandle, RunConfig};
use super::control::Control;
use super::executor::{Executor, Job, TaskOutput};
use super::persist::{Checkpointing, Persist, TaskRecord};
use super::stream::Sink;
use super::task::{Finished, Running, Task, TaskReport};
use crate::checkpoint::Checkpointer;
use crate::error::Error;
use crate::graph::compile::{GraphInner, InputMode};
use crate::graph::interrupt::Scratch;
use crate::graph::RunInfo;
use crate::graph::{Command, Goto, Packet};
use crate::state::{FieldError, State, Update};
use std::sync::Arc;

/// What `tick` found: a step to run, or why the run stops before one (LangGraph's
/// `PregelLoop.status`, less the two it never reports: `input` is the run's start, and a stop
/// after a node is seen after the step, by `interrupt_after`). Users see it as the run's outcome
/// or error: [`Outcome::Done`](crate::Outcome::Done), a pause of kind
/// [`PauseKind::Before`](crate::PauseKind::Before), [`Error::is_recursion_limit`](crate::Error::is_recursion_limit), a drained run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// A step is planned and about to run.
    Pending,
    /// No task is left: the run is over.
    Done,
    /// A drain was requested: the run stops between steps.
    Draining,
    /// A static interrupt before a node.
    InterruptBefore,
    /// The recursion limit was reached.
    OutOfSteps,
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
    /// The run's checkpointing: its link to the checkpointer, when the graph has one.
    pub(crate) persist: Checkpointing,
    /// Where a streamed run sends its events, and what each task of the last step did.
    pub(crate) sink: Option<Sink<S>>,
    /// The store the run's tasks reach through their context.
    pub(crate) store: Option<Arc<dyn crate::store::Store>>,
    /// The run's context, which its tasks read through theirs (never checkpointed).
    pub(crate) context: Option<crate::graph::ErasedContext>,
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
    /// A step's running tasks and their outputs, in task order, then the finished ones:
    /// emptied by each step.
    running: Vec<Running>,
    outputs: Vec<TaskOutput<S>>,
    /// Where wide steps run: their task groups, aborted if the run is dropped.
    executor: Executor<S>,
    done: Vec<Finished<S>>,
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

impl<S: State> Loop<S> {
    pub(crate) fn new(
        g: Arc<GraphInner<S>>,
        checkpointer: Option<&Arc<dyn Checkpointer>>,
        config: &RunConfig,
    ) -> Result<Self, Error> {
        if config.recursion_limit < 1 {
            return Err(Error::config("recursion limit must be at least 1"));
        }
        let (state, channels) = g.prototype.clone();
        let n_channels = g.n_fields() + g.controls.len();
        let controls = g.controls.iter().map(Control::new).collect();
        let seen = g.nodes.iter().map(|n| vec![0; n.triggers.len()]).collect();
        let n_nodes = g.nodes.len();
        let n_controls = g.controls.len();
        let interrupt_before = interrupt_mask(&g, &g.interrupt_before, &config.interrupt_before)?;
        let interrupt_after = interrupt_mask(&g, &g.interrupt_after, &config.interrupt_after)?;
        let persist = persist_of(&g, checkpointer, config)?;
        if !persist.is_on() && (interrupt_before.iter().chain(&interrupt_after).any(|b| *b)) {
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
            persist,
            sink: None,
            store: config.store.clone(),
            context: config.context.erased.clone(),
            report: Vec::new(),
            interrupt_before,
            interrupt_after,
            candidates: Vec::new(),
            marked: vec![false; n_nodes],
            changed: vec![false; g.n_fields()],
            updates: Vec::new(),
            gotos: Vec::new(),
            running: Vec::new(),
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

    /// The planned tasks: node, push index, and the update of their saved writes (`None` when
    /// they have none: they run next).
    pub(crate) fn planned(&self) -> Vec<(u32, Option<usize>, Option<S::Update>)> {
        let saved = |t: &Task<S>| match (&t.job, t.saved) {
            (Job::Ready(c), true) => Some(c.update.clone()),
            _ => None,
        };
        self.tasks.iter().map(|t| (t.node, t.push, saved(t))).collect()
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

    /// The node (the start node too) that saw the newest versions: what `update_state` takes
    /// without `as_node`.
    pub(crate) fn last_node(&self) -> Option<u32> {
        let best = |n: usize| self.seen[n].iter().copied().max().unwrap_or(0);
        let max = (0..self.seen.len()).map(best).max().filter(|m| *m > 0)?;
        let mut top = (0..self.seen.len()).filter(|n| best(*n) == max);
        let first = top.next()?;
        top.next().is_none().then_some(first as u32)
    }

    /// A new input on a thread with pending tasks cancels them (LangGraph's `discard_tasks`):
    /// they count as having seen their triggers, and pending `Send`s are dropped.
    pub(crate) fn discard_pending(&mut self) -> Result<(), Error> {
        if let Some(p) = self.persist.on_mut() {
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
        if !tasks.is_empty() {
            // LangGraph applies the discarded tasks with the input: a bumping step, so fields
            // nobody writes get an empty update (an ephemeral value the paused step saw clears).
            self.changed.fill(false);
            Arc::make_mut(&mut self.state)
                .apply(&mut self.channels, &mut [], true, &mut self.changed)
                .map_err(|e| field_error(e, &[], &self.g, self.step))?;
            self.record_changed_fields(next);
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
        Ok(())
    }

    /// Plans the next step. Returns [`Status::Pending`] when there are tasks to run.
    pub(crate) fn tick(&mut self) -> Result<Status, Error> {
        if self.step > self.stop {
            return Ok(Status::OutOfSteps);
        }
        self.prepare_tasks()?;
        Ok(if self.tasks.is_empty() {
            Status::Done
        } else if self.drain.as_ref().is_some_and(DrainHandle::is_requested) {
            Status::Draining
        } else if self.should_interrupt(&self.interrupt_before, self.tasks.iter().map(|t| t.node)) {
            Status::InterruptBefore
        } else {
            Status::Pending
        })
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
                (_, true) => Job::Ready(Box::new(Command {
                    update: self.input.clone().unwrap_or_default(),
                    goto: Vec::new(),
                    parent: None,
                })),
                (Some(f), false) => Job::Node(f.clone()),
                (None, false) => Job::Empty,
            };
            self.tasks.push(Task {
                node: n,
                push: None,
                job,
                saved: false,
                routed: false,
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
                routed: false,
                scratch: None,
                failed: None,
                cache_key: None,
            });
        }
        self.take_pending_writes()
    }

    /// A checkpointed run's planned tasks take what the pending writes of an incomplete step
    /// say of them: saved writes (the task does not run again), a failure for the node's error
    /// handler, or the answers given to its interrupts.
    fn take_pending_writes(&mut self) -> Result<(), Error> {
        if let Some(p) = self.persist.on() {
            // Most steps have no pending writes: no task id to make then.
            let saved = !p.pending.is_empty();
            for i in 0..self.tasks.len() {
                let pending = if saved {
                    let id = self.task_id(self.tasks[i].node, self.tasks[i].push);
                    self.persist.on_mut().and_then(|p| p.pending.remove(&id))
                } else {
                    None
                };
                let answers = match pending {
                    Some(TaskRecord {
                        writes: Some(bytes), ..
                    }) => {
                        let (command, routed) = self.load_task(&bytes)?;
                        self.tasks[i].job = Job::Ready(Box::new(command));
                        self.tasks[i].saved = true;
                        self.tasks[i].routed = routed;
                        continue;
                    }
                    Some(TaskRecord { error: Some(e), .. })
                        if self.g.nodes[self.tasks[i].node as usize].handler.is_some() =>
                    {
                        self.tasks[i].failed = Some(e);
                        continue;
                    }
                    Some(TaskRecord { answers, .. }) => answers,
                    None => Vec::new(),
                };
                let mut scratch = Scratch::with_answers(answers);
                if crate::func::is_func::<S>() {
                    // An entrypoint's task: the task calls saved on the checkpoint, and how to save
                    // more; the cache of its cached tasks.
                    scratch.cache = self.g.cache.clone();
                    let id = self.task_id(self.tasks[i].node, self.tasks[i].push);
                    if let Some(p) = self.persist.on_mut() {
                        scratch.calls = Some(Arc::new(crate::func::CallLog::load(p, id)));
                    }
                }
                self.tasks[i].scratch = Some(Arc::new(scratch));
            }
        }
        Ok(())
    }

    /// The pending writes of the current checkpoint, for `get_state`: tasks that paused and
    /// their questions, and which tasks already have writes.
    pub(crate) fn pending(&self) -> Option<&std::collections::BTreeMap<String, TaskRecord>> {
        self.persist.on().map(|p| &p.pending)
    }
}

/// The nodes to pause at: the graph's `mask`, and the nodes this run's config `names`.
fn interrupt_mask<S: State>(g: &GraphInner<S>, mask: &[bool], names: &[String]) -> Result<Vec<bool>, Error> {
    let mut mask = mask.to_vec();
    for name in names {
        match g.node_ids.get(name) {
            Some(&n) if (n as usize) < g.n_user => mask[n as usize] = true,
            _ => return Err(Error::config(format!("interrupt names unknown node `{name}`"))),
        }
    }
    Ok(mask)
}

/// The run's checkpointing: on when the graph has a checkpointer (the run must name a thread).
fn persist_of<S: State>(
    g: &GraphInner<S>,
    checkpointer: Option<&Arc<dyn Checkpointer>>,
    config: &RunConfig,
) -> Result<Checkpointing, Error> {
    let (checkpointer, thread) = match (checkpointer, &config.thread_id) {
        (Some(c), Some(thread)) => (c, thread),
        (Some(_), None) => {
            return Err(Error::config(
                "this graph has a checkpointer: give the run a thread (`RunConfig::thread`)",
            ))
        }
        (None, _) => return Ok(Checkpointing::Off),
    };
    let info = RunInfo {
        checkpointer: checkpointer.clone(),
        thread: thread.as_str().into(),
        ns: config.ns.as_str().into(),
        durability: config.durability,
        task_results: config.task_results,
        metadata: config.metadata.clone(),
    };
    let p = Persist::new(info, g.n_fields(), g.n_fields() + g.controls.len());
    Ok(Checkpointing::On(Box::new(p)))
}

pub(crate) fn field_error<S: State>(e: FieldError, writers: &[u32], g: &GraphInner<S>, step: i64) -> Error {
    let nodes = e
        .writers
        .iter()
        .filter_map(|w| writers.get(*w))
        .map(|n| g.node_name(*n))
        .collect();
    Error::invalid_update(g.fields[e.field].name.clone(), nodes, step, e.error)
}
