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
pub use format::{json_schema, EdgeSpec, FieldSpec, FieldType, FlowFile, NodeSpec, ReducerKind, StateSpec};
pub use load::{Flow, LoadOptions};
pub use node::{DataError, Fields, NodeImpl};
pub use registry::Registry;
pub use state::{FlowChannels, FlowState, FlowUpdate, Schema};
