//! A state's updates as JSON objects `{field: value}`: how a subgraph's events travel in its
//! caller's stream, and what a server sends for them.

use super::Event;
use crate::channel::ReducerWrite;
use crate::graph::SubgraphEvent;
use crate::state::{ChannelKind, FieldInfo, State, Update};
use serde_json::{Map, Value};

/// An update as a JSON object `{field: value}` of the fields it writes, the shape of a LangGraph
/// `updates` payload: a field written once maps to the value written, a field written several
/// times by one update to the list of its writes; a reducer field's write is its value (to fold
/// in, or to overwrite with). An update that does not serialize as a map of fields (a loaded
/// workflow's) is given as it serializes; one that does not serialize at all is `null`.
///
/// The whole state is `writes_json(state.fields(), &state.clone().into_update())`.
///
/// ```
/// # weir_runtime::__doc_state!();
/// let update = DocUpdate::default().text("hi".into());
/// let json = weir_runtime::writes_json(<Doc as weir_runtime::State>::FIELDS, &update);
/// assert_eq!(json, serde_json::json!({"text": "hi"}));
/// ```
pub fn writes_json<U: Update>(fields: &[FieldInfo], update: &U) -> Value {
    let map = match serde_json::to_value(update) {
        Ok(Value::Object(map)) => map,
        Ok(other) => return other,
        Err(_) => return Value::Null,
    };
    let mut out = Map::with_capacity(map.len());
    for (name, writes) in map {
        let reducer = fields
            .iter()
            .any(|f| f.name() == name && f.kind == ChannelKind::Reducer);
        let value = match writes {
            // `Writes::None`: the field is not written.
            Value::String(s) if s == "None" => continue,
            Value::Object(mut o) if o.len() == 1 && o.contains_key("One") => {
                write_value(o.remove("One").unwrap_or_default(), reducer)
            }
            Value::Object(mut o) if o.len() == 1 && o.contains_key("Many") => match o.remove("Many") {
                Some(Value::Array(ws)) => Value::Array(ws.into_iter().map(|w| write_value(w, reducer)).collect()),
                other => other.unwrap_or_default(),
            },
            other => other,
        };
        out.insert(name, value);
    }
    Value::Object(out)
}

/// One write's value: a reducer's write is a [`ReducerWrite`], whichever variant.
fn write_value(write: Value, reducer: bool) -> Value {
    if !reducer {
        return write;
    }
    match serde_json::from_value::<ReducerWrite<Value, Value>>(write.clone()) {
        Ok(ReducerWrite::Reduce(v) | ReducerWrite::Overwrite(v)) => v,
        Err(_) => write,
    }
}

/// A subgraph's event as its caller's stream carries it; `None` for its pause, which its caller
/// reports as its own.
pub(super) fn erase<S: State>(event: Event<S>, fields: &[FieldInfo]) -> Option<SubgraphEvent> {
    Some(match event {
        Event::Values { step, state } => SubgraphEvent::Values {
            step,
            state: writes_json(fields, &(*state).clone().into_update()),
        },
        Event::Update {
            step,
            node,
            key,
            update,
            cached,
        } => SubgraphEvent::Update {
            step,
            node,
            key,
            update: writes_json(fields, &update),
            cached,
        },
        Event::TaskStart { step, id, key, node } => SubgraphEvent::TaskStart { step, id, key, node },
        Event::TaskEnd {
            step,
            id,
            key,
            node,
            duration,
            error,
        } => SubgraphEvent::TaskEnd {
            step,
            id,
            key,
            node,
            duration,
            error,
        },
        Event::Checkpoint {
            step,
            id,
            source,
            next,
            keys,
        } => SubgraphEvent::Checkpoint {
            step,
            id,
            source,
            next,
            keys,
        },
        Event::Custom { step, node, value } => SubgraphEvent::Custom { step, node, value },
        Event::Message { chunk, meta } => SubgraphEvent::Message { chunk, meta },
        Event::Tool { event, meta } => SubgraphEvent::Tool { event, meta },
        Event::Paused(_) => return None,
        // A deeper subgraph's events go to the root stream directly, never through this one.
        Event::Subgraph { .. } => return None,
    })
}
