//! The Pregel superstep loop: plan the tasks of a step from channel versions, run them
//! concurrently, apply their writes at the step boundary in task order, repeat.
//!
//! `drive` is the loop, phase by phase; `run` holds the loop's state and plans a step (`tick`),
//! `run::step` executes it on the `executor`, `run::apply` is the step boundary (`after_tick`);
//! `persist` (the checkpoint component), `record`, `pending`, `body`, `restore` and `writer` are
//! its checkpoints; `spans` are its `tracing` spans.

mod body;
mod checkpoints;
mod command;
mod compiled;
mod config;
mod control;
mod drive;
mod edit;
mod executor;
mod migrate;
mod outcome;
mod pending;
mod persist;
mod record;
mod restore;
mod run;
mod snapshot;
mod spans;
mod stream;
mod subgraph;
mod task;
mod writer;

pub use command::{Answer, RunCommand};
pub use config::{DrainHandle, IntoInput, RunConfig, RunInput};
pub use edit::{StateEdit, AS_COPY, AS_END, AS_INPUT};
pub use outcome::Outcome;
pub use snapshot::{StateSnapshot, TaskSnapshot};
pub use stream::{writes_json, Event, MessageMeta, RunStream, StreamMode};
pub use subgraph::subgraph;
// What the functional API (`crate::func`) saves a task call's result through.
pub(crate) use persist::{checkpointer_error, Persist, MAX_CHAIN};
pub(crate) use writer::{QueuedWrites, WriterQueue};
