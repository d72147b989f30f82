//! A compiled graph: the static tables of [`GraphInner`], shared by every copy, and the checkpointer its
//! runs checkpoint with. Running it is the loop's business (`pregel`, which adds the methods).

use super::compile::GraphInner;
use crate::checkpoint::Checkpointer;
use crate::state::State;
use std::fmt;
use std::sync::Arc;

/// A compiled graph, ready to run. Cheap to clone; runs may go on concurrently.
pub struct CompiledGraph<S: State> {
    /// The compiled tables, shared by every copy of the graph, whatever its checkpointer.
    pub(crate) inner: Arc<GraphInner<S>>,
    pub(crate) checkpointer: Option<Arc<dyn Checkpointer>>,
}

impl<S: State> Clone for CompiledGraph<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            checkpointer: self.checkpointer.clone(),
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
    pub(crate) fn new(inner: GraphInner<S>, checkpointer: Option<Arc<dyn Checkpointer>>) -> Self {
        Self {
            inner: Arc::new(inner),
            checkpointer,
        }
    }
}
