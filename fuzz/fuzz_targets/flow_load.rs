//! Feeds flow files to the JSON loader (`Flow::from_json`), which must never panic: whatever the
//! text, it returns a flow or load errors naming their JSON paths.
//!
//! The input's first byte picks what is loaded:
//! - the rest of the input as text (any bytes, mostly not JSON);
//! - a valid flow (conditions with CEL, templates, an output with choices, a join, a state with
//!   every reducer, versions and a migration) with one value at a path chosen by the fuzzer
//!   replaced by a JSON value the fuzzer builds (a string, number, list, object, or an
//!   expression or template made of the fuzzer's characters);
//! - that valid flow with a few keys removed.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run flow_load -- -max_total_time=240`.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use std::sync::OnceLock;
use weir_flow::{Flow, Registry};

/// The registry every input is loaded with (made once: the target measures the loader).
fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Registry::new)
}

/// A flow touching most of what the loader checks, and every path into it.
fn seed() -> &'static (Value, Vec<Vec<String>>) {
    static SEED: OnceLock<(Value, Vec<Vec<String>>)> = OnceLock::new();
    SEED.get_or_init(|| {
        let seed = seed_flow();
        if let Err(e) = Flow::from_json(&seed.to_string(), registry()) {
            panic!("the seed flow does not load: {:?}", e.messages());
        }
        let mut all = Vec::new();
        paths(&seed, &mut Vec::new(), &mut all);
        (seed, all)
    })
}

fn seed_flow() -> Value {
    {
        json!({
            "nodes": [
                {"id": "start", "type": "start"},
                {"id": "triage", "type": "condition", "data": {"branches": [
                    {"id": "big", "when": "amount > 10 && context.plan == 'pro'"},
                    {"id": "tagged", "when": "size(tags) > 0"}
                ]}},
                {"id": "note", "type": "set", "data": {"assign": {"text": "{{ amount }} for {{ context.user }}"}}},
                {"id": "ask", "type": "output", "data": {
                    "message": "ok {{ text }}?", "to": "text",
                    "choices": [{"id": "yes", "label": "Yes"}, {"id": "no"}]
                }},
                {"id": "a", "type": "set", "data": {"assign": {"verdict": "a"}}},
                {"id": "b", "type": "set", "data": {"assign": {"verdict": "b"}}},
                {"id": "join", "type": "set", "data": {"assign": {"seen": "{{ verdict }}"}, "max_steps": 3}},
                {"id": "done", "type": "end"},
                {"id": "memo", "type": "note", "data": {"text": "ignored"}}
            ],
            "edges": [
                {"id": "e1", "source": "start", "target": "triage"},
                {"id": "e2", "source": "triage", "sourceHandle": "big", "target": "ask"},
                {"id": "e3", "source": "triage", "sourceHandle": "tagged", "target": "a"},
                {"id": "e4", "source": "triage", "sourceHandle": "else", "target": "note"},
                {"id": "e5", "source": "ask", "sourceHandle": "yes", "target": "a"},
                {"id": "e6", "source": "ask", "sourceHandle": "no", "target": "b"},
                {"id": "e7", "source": "note", "target": "b"},
                {"id": "e8", "source": "a", "target": "join"},
                {"id": "e9", "source": "b", "target": "join"},
                {"id": "e10", "source": "join", "target": "done"}
            ],
            "state": {
                "amount": {"type": "number", "reducer": "add", "default": 0},
                "tags": {"type": "list", "reducer": "append"},
                "meta": {"type": "object", "reducer": "merge"},
                "text": {"type": "string"},
                "verdict": {"type": "string", "default": "none", "description": "who won"},
                "seen": {"type": "string"}
            },
            "max_steps": 5,
            "state_version": 2,
            "migrations": [{
                "from": 1,
                "rename": {"note": "text"},
                "drop": ["old"],
                "add": ["meta"],
                "retype": {"amount": "int(value)"}
            }]
        })
    }
}

/// Every path (object keys and array indices) into `v`, the root included.
fn paths(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                at.push(k.clone());
                paths(child, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                at.push(i.to_string());
                paths(child, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn at_mut<'v>(v: &'v mut Value, path: &[String]) -> Option<&'v mut Value> {
    path.iter().try_fold(v, |v, key| match v {
        Value::Object(m) => m.get_mut(key),
        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
        _ => None,
    })
}

/// A JSON value from the fuzzer's bytes, biased to what the loader reads: strings that look
/// like expressions and templates, small numbers, names of the seed's nodes and fields.
fn value(u: &mut Unstructured<'_>, depth: u32) -> arbitrary::Result<Value> {
    const WORDS: &[&str] = &[
        "start", "end", "condition", "set", "output", "note", "amount", "tags", "text", "verdict", "last", "append",
        "add", "merge", "number", "list", "object", "string", "bool", "{{ amount }}", "{{", "}}", "context.plan", "&&",
        "size(", ")", "__steps", "e1", "a", "b", "join", "else",
    ];
    Ok(match u.int_in_range(0..=7)? {
        0 => Value::Null,
        1 => Value::Bool(bool::arbitrary(u)?),
        2 => json!(i64::arbitrary(u)? % 1000),
        3 => json!(f64::arbitrary(u)?),
        4 => Value::String(String::arbitrary(u)?),
        5 => {
            let n = u.int_in_range(1..=4)?;
            let mut s = String::new();
            for _ in 0..n {
                s.push_str(u.choose(WORDS)?);
                s.push(' ');
            }
            Value::String(s)
        }
        6 if depth < 3 => {
            let n = u.int_in_range(0..=3)?;
            Value::Array((0..n).map(|_| value(u, depth + 1)).collect::<arbitrary::Result<_>>()?)
        }
        _ if depth < 3 => {
            let n = u.int_in_range(0..=3)?;
            let mut m = serde_json::Map::new();
            for _ in 0..n {
                let key = u.choose(WORDS)?.to_string();
                m.insert(key, value(u, depth + 1)?);
            }
            Value::Object(m)
        }
        _ => Value::Null,
    })
}

fn load(text: &str) {
    if let Ok(flow) = Flow::from_json(text, registry()) {
        // What a loaded flow reports is built from what was loaded: it must not panic either.
        let _ = flow.mermaid();
        let _ = flow.field_names();
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => load(&String::from_utf8_lossy(rest)),
        _ => {
            let mut u = Unstructured::new(rest);
            let (seed, all) = seed();
            let mut flow = seed.clone();
            let edits = u.int_in_range(1..=3u8).unwrap_or(1);
            for _ in 0..edits {
                let Ok(path) = u.choose(all) else { break };
                let path = path.clone();
                if mode % 3 == 1 {
                    let Ok(v) = value(&mut u, 0) else { break };
                    if let Some(slot) = at_mut(&mut flow, &path) {
                        *slot = v;
                    }
                } else if let Some((key, parent)) = path.split_last() {
                    match at_mut(&mut flow, parent) {
                        Some(Value::Object(m)) => {
                            m.remove(key);
                        }
                        Some(Value::Array(items)) => {
                            if let Ok(i) = key.parse::<usize>() {
                                if i < items.len() {
                                    items.remove(i);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            load(&flow.to_string());
        }
    }
});
