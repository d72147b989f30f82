//! A step's tasks, from planned to finished: what each runs, what it came to, and what a stream
//! reports of it.

use super::executor::Job;
use crate::graph::interrupt::Scratch;
use crate::graph::Command;
use crate::state::State;
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct Task<S: State> {
    pub(crate) node: u32,
    /// Pull tasks are triggered by channels; push tasks come from a `Send` (their index).
    pub(crate) push: Option<usize>,
    pub(crate) job: Job<S>,
    /// The task's writes come from the pending writes of a step that did not complete.
    pub(crate) saved: bool,
    /// Its routers' destinations are among its saved writes: they do not run again.
    pub(crate) routed: bool,
    pub(crate) scratch: Option<Arc<Scratch>>,
    /// The node failed in a step that did not complete, and has an error handler: the handler
    /// runs, not the node again.
    pub(crate) failed: Option<String>,
    /// What the node cache had for the task, when the node is cacheable.
    pub(crate) cache_key: Option<CacheLookup>,
}

/// What the node cache had for a task.
pub(crate) enum CacheLookup {
    /// Nothing: the key to store the task's writes under once it succeeds.
    Miss(String),
    /// The task's writes: it does not run, and a stream reports its update as cached.
    Hit,
}

/// A finished task: its command, and whether its routers already ran.
pub(crate) struct Finished<S: State> {
    pub(crate) node: u32,
    pub(crate) pull: bool,
    pub(crate) command: Command<S>,
    pub(crate) routed: bool,
    /// An error handler's command: the node's own edges and routers do not fire.
    pub(crate) handled: bool,
}

/// What one task of a streamed step did.
pub(crate) struct TaskReport<S: State> {
    pub(crate) node: u32,
    pub(crate) push: Option<usize>,
    pub(crate) duration: Duration,
    pub(crate) error: Option<String>,
    pub(crate) update: Option<S::Update>,
    /// The writes were saved by a step that did not complete: reported first, as cached.
    pub(crate) cached: bool,
    /// The report is of the node's error handler, run on the node's failure.
    pub(crate) handler: bool,
    /// The task's key, made as it ran (its step's base checkpoint and step), when the stream
    /// reports task ends.
    pub(crate) key: Option<String>,
}

/// What the loop keeps of a task while its job runs: who it is, and how to take its writes.
pub(crate) struct Running {
    pub(crate) node: u32,
    pub(crate) push: Option<usize>,
    /// Its writes were saved already (it does not run again).
    pub(crate) saved: bool,
    /// Its routers' destinations are among its saved writes.
    pub(crate) routed: bool,
    /// Its interrupts: answers given, the question asked.
    pub(crate) scratch: Option<Arc<Scratch>>,
    /// What the node cache had for it, when the node is cacheable.
    pub(crate) cache_key: Option<CacheLookup>,
}

impl<S: State> Task<S> {
    /// The job to run (an error handler's failure when the node failed before), and the rest.
    pub(crate) fn start(self) -> (Job<S>, Running) {
        let job = match self.failed {
            Some(e) => Job::Failed(e),
            None => self.job,
        };
        let running = Running {
            node: self.node,
            push: self.push,
            saved: self.saved,
            routed: self.routed,
            scratch: self.scratch,
            cache_key: self.cache_key,
        };
        (job, running)
    }
}
