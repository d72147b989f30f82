//! The published JSON Schema is the one generated from the Rust types.

use std::path::Path;

/// Regenerate with `WEIR_BLESS=1 cargo test -p weir-flow --test schema`.
#[test]
fn the_committed_schema_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/flow.schema.json");
    let generated = serde_json::to_string_pretty(&weir_flow::json_schema()).unwrap() + "\n";
    if std::env::var_os("WEIR_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    // Compared as JSON, not text: a crate built in the same workspace with serde_json's
    // `preserve_order` (weir-server) changes the generated keys' order, not the schema.
    let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).ok();
    assert!(
        parse(&committed).is_some() && parse(&committed) == parse(&generated),
        "flow/schema/flow.schema.json is stale; regenerate it with `WEIR_BLESS=1 cargo test -p weir-flow --test schema`"
    );
}

#[test]
fn the_schema_names_the_format() {
    let s = weir_flow::json_schema();
    assert_eq!(s["title"], "weir flow");
    assert_eq!(s["required"], serde_json::json!(["nodes"]));
    let types: Vec<&str> = s["$defs"]["FieldType"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["const"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["string", "number", "bool", "list", "object"]);
}
