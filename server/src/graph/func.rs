//! Serving an entrypoint: [`Serve`] for a compiled [`Func`] (`#[entrypoint]`'s), and the codec
//! that gives its one-node graph over [`FuncState`] the JSON shapes LangGraph's server gives a
//! functional graph. LangGraph compiles an `@entrypoint` to a Pregel whose input channel is
//! `__start__` and whose output and stream channel is `__end__`, so the client sees the
//! function's values, not a state object: a run's `input` is the entrypoint's input as it is (an
//! `I`, checked before the run is queued), `runs/wait` and the thread's `values` are its return
//! value (`null` until it first returns), and the `updates` event of the entrypoint is
//! `{<name>: <return value>}`. A state edit (`values` of `POST /threads/{id}/state`) writes, as in
//! LangGraph, a new return value that is also the next call's `previous`.
//!
//! Schemas: the input's is `I`'s, the output's `O`'s, and the state's, since the values are the
//! return value, `O`'s too; the context's is `X`'s (`null` for none).

use super::bridge::Bridge;
use super::typed::{context_schema, decode_context, Serve};
use super::{Codec, GraphError, Schemas, ServedGraph};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use std::marker::PhantomData;
use std::sync::Arc;
use weir_runtime::checkpoint::Checkpointer;
use weir_runtime::func::{Func, FuncState, FuncStateUpdate};
use weir_runtime::store::Store;
use weir_runtime::{ContextValue, RunContext};

impl<I, O, X> Serve for Func<I, O, X>
where
    I: Serialize + DeserializeOwned + schemars::JsonSchema + 'static,
    O: DeserializeOwned + schemars::JsonSchema + 'static,
    X: ContextValue + DeserializeOwned + schemars::JsonSchema,
{
    fn into_served_with(self, saver: Arc<dyn Checkpointer>, store: Option<Arc<dyn Store>>) -> Arc<dyn ServedGraph> {
        let mut graph = self.graph().with_checkpointer_arc(saver.clone());
        if let Some(store) = store {
            graph = graph.with_store(store);
        }
        // As for a typed graph: the bridge runs it untyped, the codec decodes the context into `X`.
        let graph = graph.erase_context();
        Arc::new(Bridge::new(graph, saver, FuncCodec::<I, O, X>(PhantomData)))
    }
}

/// The types an entrypoint's codec decodes and describes: its input, return value and context.
type Types<I, O, X> = PhantomData<fn() -> (I, O, X)>;

/// The codec of an entrypoint of input `I`, return value `O` and run context `X`.
struct FuncCodec<I, O, X>(Types<I, O, X>);

/// `json` as a `T`, or [`GraphError::Invalid`] naming the path at fault under `path`.
fn check_as<T: DeserializeOwned>(json: &Value, path: &str) -> Result<(), GraphError> {
    serde_path_to_error::deserialize::<_, T>(json.clone())
        .map(drop)
        .map_err(|e| {
            let at = e.path().to_string();
            let at = if at == "." { String::new() } else { format!(".{at}") };
            GraphError::Invalid(format!("{path}{at}: {}", e.into_inner()))
        })
}

impl<I, O, X> Codec<FuncState> for FuncCodec<I, O, X>
where
    I: DeserializeOwned + schemars::JsonSchema + 'static,
    O: DeserializeOwned + schemars::JsonSchema + 'static,
    X: ContextValue + DeserializeOwned + schemars::JsonSchema,
{
    fn decode(&self, json: &Value, path: &str) -> Result<FuncStateUpdate, GraphError> {
        if path == "input" {
            check_as::<I>(json, path)?;
            return Ok(FuncStateUpdate::input(json.clone()));
        }
        // A state edit, made as the entrypoint: its value is the new return value and the next
        // call's `previous` (LangGraph's writers pluck both from a plain value).
        check_as::<O>(json, path)?;
        let mut u = FuncStateUpdate::default();
        u.output.push(json.clone());
        u.previous.push(json.clone());
        Ok(u)
    }

    fn values(&self, state: &FuncState) -> Value {
        state.output.clone()
    }

    fn update(&self, update: &FuncStateUpdate) -> Value {
        update.output.iter().last().cloned().unwrap_or(Value::Null)
    }

    fn schemas(&self) -> Schemas {
        let output = serde_json::to_value(schemars::schema_for!(O)).unwrap_or(Value::Null);
        Schemas {
            input: serde_json::to_value(schemars::schema_for!(I)).unwrap_or(Value::Null),
            output: output.clone(),
            state: output,
            config: Value::Null,
            context: context_schema::<X>(),
        }
    }

    fn context(&self, context: &Map<String, Value>) -> Result<RunContext, GraphError> {
        decode_context::<X>(context)
    }
}
