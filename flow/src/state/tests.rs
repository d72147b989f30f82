//! The field table of a loaded flow: owned by its schema, freed with the flow.

use crate::{Flow, Registry};
use serde_json::json;
use std::borrow::Cow;
use std::sync::Arc;
use weir_runtime::State;

const FLOW: &str = r#"{
  "nodes": [{"id": "s", "type": "start"}, {"id": "e", "type": "end"}],
  "edges": [{"id": "e1", "source": "s", "target": "e"}],
  "state": {"a_field_name_read_from_a_file": {"type": "string"}}
}"#;

#[test]
fn a_loaded_flows_field_names_are_owned_and_freed_with_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut tables = Vec::new();
    for _ in 0..20 {
        let flow = Flow::from_json(FLOW, &Registry::new()).unwrap();
        let out = rt
            .block_on(flow.invoke(json!({"a_field_name_read_from_a_file": "x"})))
            .unwrap();
        assert_eq!(out.fields()[0].name(), "a_field_name_read_from_a_file");
        assert!(
            out.fields().iter().all(|f| matches!(f.name, Cow::Owned(_))),
            "a flow's field names are owned by its schema, not leaked to be 'static"
        );
        tables.push((Arc::downgrade(&flow.schema), Arc::downgrade(&flow.schema.infos)));
        drop((flow, out));
    }
    for (schema, infos) in &tables {
        assert!(schema.upgrade().is_none(), "the schema outlived its flow");
        assert!(infos.upgrade().is_none(), "the field table outlived its flow");
    }
}
