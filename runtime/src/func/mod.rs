//! The functional API (LangGraph's `@entrypoint` and `@task`): plain async code whose task
//! calls are checkpointed. This module owns the entrypoint's graph and state (`entry.rs`,
//! `state.rs`), task calls and their matching to saved results (`call.rs`), and the saving and
//! loading of those results as pending writes (`log.rs`).
//!
//! An entrypoint compiles to a graph of one node over [`FuncState`]; the node runs the user's
//! function inside a scope that numbers its task calls. Each call's result is saved, as soon as
//! it ends, as a pending write on the checkpoint the entrypoint's step started from (under async
//! durability, through the run's background writer, which gathers the results of up to 10 ms and
//! stores them together, always before the step's checkpoint). After an
//! interrupt or a crash the step runs again: the entrypoint re-runs from the top, and a call at a
//! position with a saved result returns it without running (an error when the saved call was of
//! another task or had other arguments). Under exit durability results are not saved as calls
//! end, so a resumed entrypoint runs its tasks again.

mod call;
mod entry;
mod log;
mod state;

pub use call::{
    assert_saved, call_task, context, decode_args, interrupt, task_args, task_result, FuncError, Saved, TaskFuture,
    TaskOptions,
};
pub use entry::{EntryOutput, Entrypoint, Final, Func};
pub(crate) use log::{CallLog, CALL};
pub use state::{FuncState, FuncStateUpdate};

/// Whether `S` is an entrypoint's state: its tasks get a call log. Decided per state type at
/// compile time, so a graph's steps pay nothing for it.
pub(crate) fn is_func<S: 'static>() -> bool {
    std::any::TypeId::of::<S>() == std::any::TypeId::of::<FuncState>()
}
