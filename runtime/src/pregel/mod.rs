//! The Pregel superstep loop: plan the tasks of a step from channel versions, run them
//! concurrently, apply their writes at the step boundary in task order, repeat.

mod compile;
mod config;
mod policy;
mod run;

pub(crate) use compile::{GraphInner, InputMode};
pub use config::{Context, DrainHandle, IntoInput, RunConfig};
pub(crate) use policy::NodePolicy;
pub use policy::RetryPolicy;
pub use run::Status;

use crate::error::Error;
use crate::state::State;
use std::fmt;
use std::sync::Arc;

/// A compiled graph, ready to run. Cheap to clone; runs may go on concurrently.
pub struct CompiledGraph<S: State> {
    inner: Arc<GraphInner<S>>,
}

impl<S: State> Clone for CompiledGraph<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<S: State> fmt::Debug for CompiledGraph<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("nodes", &self.inner.user_node_names())
            .finish_non_exhaustive()
    }
}

impl<S: State> CompiledGraph<S> {
    pub(crate) fn from_inner(inner: GraphInner<S>) -> Self {
        Self { inner: Arc::new(inner) }
    }

    /// The names of the graph's nodes, in the order they were added.
    pub fn node_names(&self) -> Vec<&str> {
        self.inner.user_node_names()
    }

    /// Runs the graph on `input` (a whole state, or an update writing some fields) until no node
    /// is left to run, and returns the final state.
    ///
    /// # Errors
    /// A node failed or panicked (the error names it and the step), a step's writes broke a
    /// channel's rule, the recursion limit was reached, or a drain was requested.
    pub async fn invoke<M>(&self, input: impl IntoInput<S, M>, config: &RunConfig) -> Result<S, Error> {
        let mut run = run::Loop::new(self.inner.clone(), config)?;
        run.input(input.into_update())?;
        loop {
            match run.tick() {
                Status::Pending => run.run_step().await?,
                Status::Done => return Ok(run.into_state()),
                Status::OutOfSteps => return Err(Error::recursion_limit(config.recursion_limit)),
                Status::Draining => return Err(Error::drained(run.step())),
                Status::Input | Status::InterruptBefore | Status::InterruptAfter => {
                    unreachable!("the loop reports interrupts only with a checkpointer")
                }
            }
        }
    }
}
