//! The channel kinds of LangGraph 1.2.9 (`langgraph/channels/*.py`), one state machine each, one
//! file per family.

mod barrier;
mod last;
mod reducer;
mod topic;
mod transient;

pub use barrier::{NamedBarrierValue, NamedBarrierValueAfterFinish};
pub use last::{AnyValue, LastValue, LastValueAfterFinish};
pub use reducer::{BinaryOperatorAggregate, Folded, ReducerWrite};
pub use topic::Topic;
pub use transient::{EphemeralValue, UntrackedValue};
