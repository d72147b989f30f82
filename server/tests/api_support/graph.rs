//! `chain`, the captures' first graph (`a` writes `a:<topic>` to `log`, then `b` writes `b`), as a
//! JSON flow.

use serde_json::json;
use weir_flow::{Flow, LoadOptions, Registry};

pub fn chain() -> Flow {
    let flow = json!({
        "nodes": [
            {"id": "start", "type": "start"},
            {"id": "a", "type": "set", "data": {"assign": {"log": "a:{{ topic }}"}}},
            {"id": "b", "type": "set", "data": {"assign": {"log": "b"}}},
            {"id": "end", "type": "end"}
        ],
        "edges": [
            {"id": "e1", "source": "start", "target": "a"},
            {"id": "e2", "source": "a", "target": "b"},
            {"id": "e3", "source": "b", "target": "end"}
        ],
        "state": {"topic": {"type": "string"}, "log": {"type": "list", "reducer": "append"}}
    });
    Flow::load(&flow.to_string(), &Registry::new(), LoadOptions::default()).expect("the chain flow loads")
}
