//! One run of a compiled graph: `tick` plans a step, `run_step` runs its tasks and applies their
//! writes (`after_tick`), until a status says stop.

use super::compile::{ControlSpec, GraphInner, InputMode};
use super::config::{Context, DrainHandle, RunConfig};
use super::NodePolicy;
use crate::channel::{Channel, EphemeralValue, LastValueAfterFinish, NamedBarrierValue, NamedBarrierValueAfterFinish};
use crate::error::{BoxError, Error};
use crate::graph::{Command, Goto, NodeFn, Packet};
use crate::state::{FieldError, State, Update};
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

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
enum Control {
    Branch(EphemeralValue),
    Deferred(LastValueAfterFinish),
    Join(NamedBarrierValue<u32>),
    DeferredJoin(NamedBarrierValueAfterFinish<u32>),
}

impl Control {
    fn new(spec: &ControlSpec) -> Self {
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
    fn is_available(&self) -> bool {
        match self {
            Self::Branch(c) => c.is_available(&()),
            Self::Deferred(c) => Channel::<()>::is_available(c, &()),
            Self::Join(c) => c.is_available(&()),
            Self::DeferredJoin(c) => c.is_available(&()),
        }
    }
    /// `update` with `count` branch writes, or the barrier `names`.
    fn update(&mut self, count: usize, names: &[u32]) -> bool {
        let changed = match self {
            Self::Branch(c) => c.update(&mut (), std::iter::repeat_n((), count)),
            Self::Deferred(c) => c.update(&mut (), std::iter::repeat_n((), count)),
            Self::Join(c) => c.update(&mut (), names.iter().copied()),
            Self::DeferredJoin(c) => c.update(&mut (), names.iter().copied()),
        };
        // Internal channels are written only with names they wait for: they cannot refuse.
        changed.unwrap_or(false)
    }
    fn consume(&mut self) -> bool {
        match self {
            Self::Branch(c) => c.consume(&mut ()),
            Self::Deferred(c) => c.consume(&mut ()),
            Self::Join(c) => c.consume(&mut ()),
            Self::DeferredJoin(c) => c.consume(&mut ()),
        }
    }
    fn finish(&mut self) -> bool {
        match self {
            Self::Branch(c) => c.finish(&mut ()),
            Self::Deferred(c) => c.finish(&mut ()),
            Self::Join(c) => c.finish(&mut ()),
            Self::DeferredJoin(c) => c.finish(&mut ()),
        }
    }
}

/// What a task runs.
enum Job<S: State> {
    Node(NodeFn<S, S>),
    Packet(Packet<S>),
    Ready(Command<S>),
}

struct Task<S: State> {
    node: u32,
    /// Pull tasks are triggered by channels; push tasks come from a `Send`.
    pull: bool,
    job: Job<S>,
}

/// A finished task: its command, and where its routers went.
struct Done<S: State> {
    node: u32,
    pull: bool,
    command: Command<S>,
}

pub(crate) struct Loop<S: State> {
    g: Arc<GraphInner<S>>,
    state: Arc<S>,
    channels: S::Channels,
    controls: Vec<Control>,
    /// One version per channel id; 0 = never written.
    versions: Vec<u64>,
    /// Per node, per trigger: the version last seen.
    seen: Vec<Vec<u64>>,
    /// `Send`s for the next step (LangGraph's `__pregel_tasks` topic).
    sends: Vec<Packet<S>>,
    /// Channels updated by the last step (and still available).
    updated: Vec<u32>,
    step: i64,
    stop: i64,
    input: Option<S::Update>,
    drain: Option<DrainHandle>,
    tasks: Vec<Task<S>>,
    status: Status,
    // Buffers reused from step to step.
    candidates: Vec<u32>,
    marked: Vec<bool>,
    changed: Vec<bool>,
    updates: Vec<S::Update>,
    branch_writes: Vec<usize>,
    join_writes: Vec<Vec<u32>>,
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
        // A new thread: the input checkpoint is step -1.
        let step = -1;
        Ok(Self {
            state: Arc::new(state),
            channels,
            controls,
            versions: vec![0; n_channels],
            seen,
            sends: Vec::new(),
            updated: Vec::new(),
            step,
            stop: step + config.recursion_limit as i64 + 1,
            input: None,
            drain: config.drain.clone(),
            tasks: Vec::new(),
            status: Status::Input,
            candidates: Vec::new(),
            marked: vec![false; n_nodes],
            changed: vec![false; g.n_fields()],
            updates: Vec::new(),
            branch_writes: vec![0; n_controls],
            join_writes: vec![Vec::new(); n_controls],
            g,
        })
    }

    pub(crate) fn step(&self) -> i64 {
        self.step
    }

    pub(crate) fn into_state(self) -> S {
        Arc::try_unwrap(self.state).unwrap_or_else(|shared| (*shared).clone())
    }

    fn next_version(&self) -> u64 {
        self.versions.iter().copied().max().unwrap_or(0) + 1
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
                self.updated.push(id);
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
                for f in 0..self.g.n_fields() {
                    if self.changed[f] {
                        self.versions[f] = next;
                        if self.state.is_available(&self.channels, f) {
                            self.updated.push(f as u32);
                        }
                    }
                }
            }
        }
        self.step += 1;
        self.status = Status::Pending;
        Ok(())
    }

    /// Plans the next step. Returns [`Status::Pending`] when there are tasks to run.
    pub(crate) fn tick(&mut self) -> Status {
        if self.step > self.stop {
            self.status = Status::OutOfSteps;
            return self.status;
        }
        self.prepare_tasks();
        self.status = if self.tasks.is_empty() {
            Status::Done
        } else if self.drain.as_ref().is_some_and(DrainHandle::is_requested) {
            Status::Draining
        } else {
            Status::Pending
        };
        self.status
    }

    /// LangGraph's `prepare_next_tasks`: pull tasks of the nodes whose triggers have a version
    /// newer than the one they last saw, in node-name order, then one push task per `Send`.
    fn prepare_tasks(&mut self) {
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
                    update: self.input.take().unwrap_or_default(),
                    goto: Vec::new(),
                }),
                (Some(f), false) => Job::Node(f.clone()),
                (None, false) => Job::Ready(Command::default()),
            };
            self.tasks.push(Task {
                node: n,
                pull: true,
                job,
            });
        }
        for p in self.sends.drain(..) {
            self.tasks.push(Task {
                node: p.node.0,
                pull: false,
                job: Job::Packet(p),
            });
        }
    }

    /// Runs the planned tasks concurrently, then applies their writes.
    pub(crate) async fn run_step(&mut self) -> Result<(), Error> {
        let tasks = std::mem::take(&mut self.tasks);
        let step = self.step;
        let mut done = Vec::with_capacity(tasks.len());
        if tasks.len() == 1 {
            // One task: run it in place, no spawn.
            let task = tasks.into_iter().next().expect("one task");
            let ctx = Context {
                node: self.g.names[task.node as usize].clone(),
                step,
            };
            let policy = self.g.nodes[task.node as usize].policy.clone();
            let result = AssertUnwindSafe(run_job(task.job, self.state.clone(), ctx, policy))
                .catch_unwind()
                .await;
            let result = result.unwrap_or_else(|p| Err(Failure::Panic(panic_message(p))));
            done.push(self.finish_task(task.node, task.pull, result)?);
        } else {
            let mut handles = Vec::with_capacity(tasks.len());
            for task in tasks {
                let ctx = Context {
                    node: self.g.names[task.node as usize].clone(),
                    step,
                };
                let policy = self.g.nodes[task.node as usize].policy.clone();
                let handle = tokio::spawn(run_job(task.job, self.state.clone(), ctx, policy));
                handles.push((task.node, task.pull, handle));
            }
            // Wait for every task, then report the first failure in task order: the same
            // failure whatever order the tasks finished in.
            let mut results = Vec::with_capacity(handles.len());
            for (node, pull, handle) in handles {
                let r = handle.await.unwrap_or_else(|e| {
                    Err(Failure::Panic(match e.try_into_panic() {
                        Ok(payload) => panic_message(payload),
                        Err(e) => e.to_string(),
                    }))
                });
                results.push((node, pull, r));
            }
            for (node, pull, r) in results {
                done.push(self.finish_task(node, pull, r)?);
            }
        }
        self.after_tick(done)
    }

    fn finish_task(&self, node: u32, pull: bool, result: Result<Command<S>, Failure>) -> Result<Done<S>, Error> {
        let name = &self.g.names[node as usize];
        let command = match result {
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
        Ok(Done { node, pull, command })
    }

    /// Runs the routers of `task` on `state` (the state with the task's own writes applied).
    fn route(&self, node: u32, state: &S, out: &mut Vec<Goto<S>>) -> Result<(), Error> {
        for router in &self.g.nodes[node as usize].routers {
            let from = out.len();
            (router.func)(state, out);
            for g in &out[from..] {
                let target = match g {
                    Goto::Node(id) => Some(id.0),
                    Goto::End => None,
                    Goto::Send(p) => Some(p.node.0),
                };
                if matches!(g, Goto::Send(_)) {
                    continue;
                }
                if !router.targets.contains(&target) {
                    let what = target.map_or_else(|| "END".to_owned(), |t| self.g.names[t as usize].to_string());
                    return Err(Error::unknown_target(&self.g.names[node as usize], what, self.step));
                }
            }
        }
        Ok(())
    }

    /// LangGraph's `apply_writes` and `after_tick`: the end of a superstep.
    fn after_tick(&mut self, mut done: Vec<Done<S>>) -> Result<(), Error> {
        let g = self.g.clone();
        let n_fields = g.n_fields();
        // Routers of a step with several tasks read the state with their own task's writes
        // applied and nobody else's: evaluate them on a copy before the step is applied.
        let routed_alone = done.len() == 1;
        if !routed_alone {
            for i in 0..done.len() {
                if g.nodes[done[i].node as usize].routers.is_empty() {
                    continue;
                }
                let mut fresh = (*self.state).clone();
                let mut channels = self.channels.clone();
                let mut own = [done[i].command.update.clone()];
                let mut scratch = vec![false; n_fields];
                fresh
                    .apply(&mut channels, &mut own, true, &mut scratch)
                    .map_err(|e| field_error(e, &[done[i].node], &g, self.step))?;
                let mut gotos = Vec::new();
                self.route(done[i].node, &fresh, &mut gotos)?;
                done[i].command.goto.extend(gotos);
            }
        }

        // Versions seen: each pull task has now seen its triggers.
        for d in done.iter().filter(|d| d.pull) {
            let node = &g.nodes[d.node as usize];
            for (k, &t) in node.triggers.iter().enumerate() {
                let v = self.versions[t as usize];
                if v > 0 {
                    self.seen[d.node as usize][k] = v;
                }
            }
        }
        let next = self.next_version();

        // Consume the triggers of the tasks that ran (a join barrier starts over).
        let state = Arc::make_mut(&mut self.state);
        for d in done.iter().filter(|d| d.pull) {
            for &t in &g.nodes[d.node as usize].triggers {
                let t = t as usize;
                let consumed = if t < n_fields {
                    state.consume(&mut self.channels, t)
                } else {
                    self.controls[t - n_fields].consume()
                };
                if consumed {
                    self.versions[t] = next;
                }
            }
        }

        // Apply the fields' writes, in task order.
        self.updated.clear();
        self.changed.fill(false);
        self.updates.clear();
        self.updates
            .extend(done.iter_mut().map(|d| std::mem::take(&mut d.command.update)));
        let writers: Vec<u32> = done.iter().map(|d| d.node).collect();
        state
            .apply(&mut self.channels, &mut self.updates, true, &mut self.changed)
            .map_err(|e| field_error(e, &writers, &g, self.step))?;
        for f in 0..n_fields {
            if self.changed[f] {
                self.versions[f] = next;
                if state.is_available(&self.channels, f) {
                    self.updated.push(f as u32);
                }
            }
        }
        if routed_alone && !g.nodes[done[0].node as usize].routers.is_empty() {
            // One task: the state after the step is the state with its own writes applied.
            let mut gotos = Vec::new();
            self.route(done[0].node, &self.state, &mut gotos)?;
            done[0].command.goto.extend(gotos);
        }

        // Apply the internal channels' writes: edges, joins, gotos and sends.
        let mut sends = Vec::new();
        for d in &mut done {
            let node = &g.nodes[d.node as usize];
            for &e in &node.edges {
                self.branch_writes[e as usize] += 1;
            }
            for &j in &node.joins {
                self.join_writes[j as usize].push(d.node);
            }
            for goto in d.command.goto.drain(..) {
                match goto {
                    Goto::Node(id) => self.branch_writes[id.index()] += 1,
                    Goto::End => {}
                    Goto::Send(p) => sends.push(p),
                }
            }
        }
        for (c, control) in self.controls.iter_mut().enumerate() {
            let count = std::mem::take(&mut self.branch_writes[c]);
            let names = std::mem::take(&mut self.join_writes[c]);
            let written = count > 0 || !names.is_empty();
            let changed = if written {
                control.update(count, &names)
            } else if control.is_available() {
                // An available channel not written this step gets `update([])`.
                control.update(0, &[])
            } else {
                false
            };
            if changed {
                let id = n_fields + c;
                self.versions[id] = next;
                if control.is_available() {
                    self.updated.push(id as u32);
                }
            }
            self.join_writes[c] = names;
            self.join_writes[c].clear();
        }
        self.sends = sends;

        // Nothing will wake a node: finish the channels (deferred nodes wake up).
        if !self.updated.iter().any(|c| !g.trigger_to_nodes[*c as usize].is_empty()) {
            let state = Arc::make_mut(&mut self.state);
            self.changed.fill(false);
            state.finish(&mut self.channels, &mut self.changed);
            for f in 0..n_fields {
                if self.changed[f] {
                    self.versions[f] = next;
                    if state.is_available(&self.channels, f) {
                        self.updated.push(f as u32);
                    }
                }
            }
            for (c, control) in self.controls.iter_mut().enumerate() {
                if control.finish() {
                    let id = n_fields + c;
                    self.versions[id] = next;
                    if control.is_available() {
                        self.updated.push(id as u32);
                    }
                }
            }
        }
        self.step += 1;
        Ok(())
    }
}

/// Why a task failed.
enum Failure {
    Error(BoxError),
    Timeout(Duration),
    Panic(String),
}

/// A node took longer than its timeout (what a retry policy's predicate sees).
#[derive(Debug)]
struct TimedOut(Duration);

impl std::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "timed out after {:?}", self.0)
    }
}

impl std::error::Error for TimedOut {}

/// Runs a task's job, with its node's timeout and retry policy.
async fn run_job<S: State>(
    job: Job<S>,
    state: Arc<S>,
    ctx: Context,
    policy: NodePolicy,
) -> Result<Command<S>, Failure> {
    let job = match job {
        Job::Ready(c) => return Ok(c),
        job => job,
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let once = async {
            match &job {
                Job::Node(f) => f.call(&state, &ctx).await,
                Job::Packet(p) => (p.run)(ctx.clone()).await,
                Job::Ready(_) => Ok(Command::default()),
            }
        };
        let result = match policy.timeout {
            Some(limit) => match tokio::time::timeout(limit, once).await {
                Ok(r) => r,
                Err(_) => Err(Box::new(TimedOut(limit)) as BoxError),
            },
            None => once.await,
        };
        let error = match result {
            Ok(c) => return Ok(c),
            Err(e) => e,
        };
        match &policy.retry {
            Some(p) if p.should_retry(attempt, &error) => tokio::time::sleep(p.sleep_for(attempt)).await,
            _ => {
                return Err(match error.downcast::<TimedOut>() {
                    Ok(t) => Failure::Timeout(t.0),
                    Err(e) => Failure::Error(e),
                })
            }
        }
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

fn field_error<S: State>(e: FieldError, writers: &[u32], g: &GraphInner<S>, step: i64) -> Error {
    let nodes = e
        .writers
        .iter()
        .filter_map(|w| writers.get(*w))
        .map(|n| g.names[*n as usize].to_string())
        .collect();
    Error::invalid_update(g.fields[e.field].name, nodes, step, e.error)
}
