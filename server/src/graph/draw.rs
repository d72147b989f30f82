//! The `/assistants/{id}/graph` drawing: nodes and edges read back from the graph's Mermaid
//! chart (the one drawing weir keeps of a compiled graph), in LangGraph's JSON shape. A route's
//! targets are edges with `"conditional": true`. With `xray`, a node added as a subgraph is
//! drawn as its subgraph's nodes, their ids prefixed with the node's (`inner:a`, named `a`), the
//! edges into it going to the subgraph's first nodes and the edges out of it leaving its last
//! ones (one level: a subgraph's own subgraphs stay nodes).

use serde_json::{json, Map, Value};

/// A parsed drawing: nodes as `(id, name)`, edges as `(source id, target id, conditional)`.
#[derive(Debug, Default)]
struct Drawing {
    nodes: Vec<(String, String)>,
    edges: Vec<(String, String, bool)>,
}

/// The drawing of the graph whose Mermaid chart is `mermaid`, its subgraph nodes (`(node,
/// chart)`) drawn inside when `xray` is above 0.
pub(crate) fn drawing<'a>(mermaid: &str, subgraphs: impl Iterator<Item = (&'a str, &'a str)>, xray: u32) -> Value {
    let mut d = parse(mermaid);
    if xray > 0 {
        for (node, chart) in subgraphs {
            expand(&mut d, node, parse(chart));
        }
    }
    to_json(d)
}

/// Node `node` of `d` replaced by the inside of `sub`.
fn expand(d: &mut Drawing, node: &str, sub: Drawing) {
    let Some(at) = d.nodes.iter().position(|(id, _)| id == node) else {
        return;
    };
    let prefixed = |id: &str| format!("{node}:{id}");
    let firsts: Vec<String> = sub
        .edges
        .iter()
        .filter(|e| e.0 == "__start__")
        .map(|e| prefixed(&e.1))
        .collect();
    let lasts: Vec<String> = sub
        .edges
        .iter()
        .filter(|e| e.1 == "__end__")
        .map(|e| prefixed(&e.0))
        .collect();
    let inner = sub
        .nodes
        .into_iter()
        .filter(|(id, _)| id != "__start__" && id != "__end__")
        .map(|(id, name)| (prefixed(&id), name));
    d.nodes.splice(at..=at, inner);
    let mut edges = Vec::new();
    for (from, to, conditional) in std::mem::take(&mut d.edges) {
        match (from == node, to == node) {
            (false, false) => edges.push((from, to, conditional)),
            (false, true) => edges.extend(firsts.iter().map(|f| (from.clone(), f.clone(), conditional))),
            (true, false) => edges.extend(lasts.iter().map(|l| (l.clone(), to.clone(), conditional))),
            (true, true) => edges.extend(
                lasts
                    .iter()
                    .flat_map(|l| firsts.iter().map(|f| (l.clone(), f.clone(), conditional))),
            ),
        }
    }
    let inside = sub
        .edges
        .into_iter()
        .filter(|(f, t, _)| f != "__start__" && t != "__end__");
    edges.extend(inside.map(|(f, t, c)| (prefixed(&f), prefixed(&t), c)));
    d.edges = edges;
}

/// The nodes and edges of a Mermaid chart, named by node name.
fn parse(mermaid: &str) -> Drawing {
    let mut ids: Vec<(String, String)> = Vec::new(); // (mermaid id, node name)
    let mut edges = Vec::new();
    for line in mermaid.lines().map(str::trim) {
        if let Some((from, rest)) = line.split_once(" -.-> ").or_else(|| line.split_once(" -.->|")) {
            let to = rest.rsplit(' ').next().unwrap_or(rest).trim_end_matches(';');
            edges.push((from.to_owned(), to.to_owned(), true));
        } else if let Some((from, to)) = line.split_once(" --> ") {
            edges.push((from.to_owned(), to.trim_end_matches(';').to_owned(), false));
        } else if let Some(node) = node_line(line) {
            ids.push(node);
        }
    }
    let name_of = |id: &str| {
        ids.iter()
            .find(|(i, _)| i == id)
            .map_or_else(|| id.to_owned(), |(_, n)| n.clone())
    };
    let edges = edges
        .into_iter()
        .map(|(f, t, c)| (name_of(&f), name_of(&t), c))
        .collect();
    // The end is drawn last, as LangGraph's server does.
    let (mut nodes, end): (Vec<_>, Vec<_>) = ids
        .iter()
        .map(|(_, n)| (n.clone(), n.clone()))
        .partition(|(id, _)| id != "__end__");
    nodes.extend(end);
    Drawing { nodes, edges }
}

fn to_json(d: Drawing) -> Value {
    let nodes: Vec<Value> = d
        .nodes
        .into_iter()
        .map(|(id, name)| {
            if id == "__end__" {
                json!({"id": id})
            } else {
                json!({"id": id, "type": "runnable", "data": {"name": name}})
            }
        })
        .collect();
    let edges: Vec<Value> = d
        .edges
        .into_iter()
        .map(|(from, to, conditional)| {
            let mut e = Map::new();
            e.insert("source".into(), Value::String(from));
            e.insert("target".into(), Value::String(to));
            if conditional {
                e.insert("conditional".into(), Value::Bool(true));
            }
            Value::Object(e)
        })
        .collect();
    json!({"nodes": nodes, "edges": edges})
}

/// A node declaration: `id(id)`, `id["name"]`, or the start and end markers.
fn node_line(line: &str) -> Option<(String, String)> {
    if line.starts_with("__start__(") {
        return Some(("__start__".into(), "__start__".into()));
    }
    if line.starts_with("__end__(") {
        return Some(("__end__".into(), "__end__".into()));
    }
    if let Some((id, rest)) = line.split_once("[\"") {
        let name = rest.strip_suffix("\"]")?.replace("#quot;", "\"").replace("#124;", "|");
        return Some((id.to_owned(), name));
    }
    let (id, rest) = line.split_once('(')?;
    (rest.strip_suffix(')')? == id).then(|| (id.to_owned(), id.to_owned()))
}
