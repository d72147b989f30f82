//! weir's second front end: workflows drawn in a visual editor, saved as React Flow / xyflow
//! JSON, loaded at run time onto the same runtime as `graph!` graphs, with the same shape checks
//! (from `weir-topology`) reported at load time with the JSON path of the value at fault.
//!
//! # Quick start
//!
//! ```
//! use weir_flow::{Flow, Registry};
//! use serde_json::json;
//!
//! let flow = Flow::from_json(r#"{
//!   "nodes": [
//!     {"id": "start", "type": "start"},
//!     {"id": "triage", "type": "condition",
//!      "data": {"branches": [{"id": "big", "when": "amount > 100"}]}},
//!     {"id": "flag", "type": "set", "data": {"assign": {"verdict": "review {{ amount }}"}}},
//!     {"id": "done", "type": "end"}
//!   ],
//!   "edges": [
//!     {"id": "e1", "source": "start", "target": "triage"},
//!     {"id": "e2", "source": "triage", "sourceHandle": "big", "target": "flag"},
//!     {"id": "e3", "source": "triage", "sourceHandle": "else", "target": "done"},
//!     {"id": "e4", "source": "flag", "target": "done"}
//!   ],
//!   "state": {"amount": {"type": "number"}, "verdict": {"type": "string", "default": "ok"}}
//! }"#, &Registry::new())?;
//!
//! let rt = tokio::runtime::Runtime::new()?;
//! let out = rt.block_on(flow.invoke(json!({"amount": 250})))?;
//! assert_eq!(out.get("verdict"), Some(&json!("review 250")));
//! let out = rt.block_on(flow.invoke(json!({"amount": 5})))?;
//! assert_eq!(out.get("verdict"), Some(&json!("ok")));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The run's context
//!
//! A run may carry a context, a JSON object (LangGraph's `Runtime.context`; a server run's
//! `context`; [`Flow::invoke_with_context`]): a `condition` reads it as `context` beside the
//! state's fields (`context.plan == 'pro' && amount > 100`), a `set` template or an `output`
//! message as `{{ context.user_id }}`. A flow declares no schema for it; a path a node reads that
//! the context lacks (`context.user.id`, or `context['user']['id']` in a condition) fails the
//! node, naming the node, the path and where below its `data` it is read (`has(context.vip)` or
//! `'vip' in context` in a condition asks without failing). [`Flow::context_schema`] describes
//! what the nodes read (a server reports it as the graph's `context_schema`). A state field named
//! `context` is then read as `state.context`.
//!
//! # A person in the loop
//!
//! An `output` node with `choices` (or with `"pause": true`) asks a person, as seed 003 does:
//! the node runs first — its message is sent as an [`Event::Message`] and written to its `to`
//! field — and only then does the run pause, at a hidden node after it (`<id>#ask`, reported
//! as the output's own id). [`Flow::resume`] with one of the choices routes along the edges
//! whose `sourceHandle` is that choice; an acknowledgement is a resume without a choice. A
//! choice the question does not offer is refused and the question stays. The seed stops its
//! fake node with a static `interrupt_before` and reads the choice from the state; weir's
//! hidden node asks through the runtime's interrupt instead, so the paused run carries the
//! question and its choices (what `weir state` and `weir run` print) and the answer is checked.
//!
//! # Changing the state of a deployed flow
//!
//! Checkpoints record the flow's `state_version` (1 unless the file says otherwise). When fields
//! change while threads saved by the older flow live on, raise it and give one entry of
//! `migrations` per older version: `{"from": 1, "rename": {"note": "message"}, "drop":
//! ["scratch"], "add": ["tags"], "retype": {"count": "size(value)"}}` (a retype is a CEL
//! expression over the saved `value`; an added field starts at its `default`). A checkpoint of
//! an older version is migrated as it is loaded; one of a newer version is an error. See
//! `docs/operations.md`.

#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![forbid(unsafe_code)]

// In layers, each module importing only those above it: format; state; node; builtins;
// registry; event; error; schema; runner; load; run.
mod builtins;
mod error;
mod event;
mod format;
mod load;
mod node;
mod registry;
mod run;
mod runner;
mod schema;
mod state;

pub use error::{Diagnostic, LoadError, RunError};
pub use event::{ChoiceOption, Event, Outcome, Pause, Snapshot};
pub use format::{
    json_schema, EdgeSpec, FieldSpec, FieldType, FlowFile, MigrationSpec, NodeSpec, ReducerKind, StateSpec,
};
pub use load::{Flow, LoadOptions};
pub use node::{DataError, Fields, NodeImpl};
pub use registry::Registry;
pub use state::{FlowChannels, FlowState, FlowUpdate, Schema};
