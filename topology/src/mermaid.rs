//! A Mermaid drawing of a topology.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use crate::decl::{Ref, Topology};

/// A Mermaid `graph TD` drawing of the topology, in the style of LangGraph's `draw_mermaid`.
///
/// `__start__` and `__end__` are drawn as LangGraph draws them (`__end__` only when something
/// leads to END); then each distinct node in declaration order; then plain edges (`a --> b;`),
/// joins (an edge from each source), routes (dashed and labelled with the choice:
/// `a -.->|More| b;`) and sends (dashed, labelled `Send`), each in declaration order. Names that
/// are not plain identifiers get an escaped id and a quoted label. The output is deterministic.
///
/// # Examples
///
/// ```
/// use weir_topology::{mermaid, NodeDecl, Ref, Topology};
///
/// let t = Topology::new()
///     .node(NodeDecl::new("a", 0))
///     .edge(Ref::Start(0), Ref::node("a", 0))
///     .edge(Ref::node("a", 0), Ref::End(0));
/// assert!(mermaid(&t).contains("\t__start__ --> a;\n\ta --> __end__;\n"));
/// ```
pub fn mermaid(t: &Topology) -> String {
    let mut ids = Ids::default();
    let mut out = String::from("graph TD;\n");
    out.push_str("\t__start__([<p>__start__</p>]):::first\n");
    let mut declared = HashSet::new();
    for node in &t.nodes {
        if declared.insert(node.name.as_str()) {
            let id = ids.id(&node.name);
            if id == node.name {
                let _ = writeln!(out, "\t{id}({id})");
            } else {
                let _ = writeln!(out, "\t{id}[\"{}\"]", escape(&node.name));
            }
        }
    }
    let ends = t.edges.iter().any(|e| matches!(e.to, Ref::End(_)))
        || t.joins.iter().any(|j| matches!(j.to, Ref::End(_)))
        || t.routes
            .iter()
            .flat_map(|r| &r.targets)
            .any(|t| matches!(t.to, Ref::End(_)));
    if ends {
        out.push_str("\t__end__([<p>__end__</p>]):::last\n");
    }

    for e in &t.edges {
        let _ = writeln!(out, "\t{} --> {};", ids.of(&e.from), ids.of(&e.to));
    }
    for j in &t.joins {
        let to = ids.of(&j.to);
        for from in &j.from {
            let _ = writeln!(out, "\t{} --> {to};", ids.of(from));
        }
    }
    for r in &t.routes {
        let from = ids.of(&r.from);
        for target in &r.targets {
            let to = ids.of(&target.to);
            match &target.label {
                Some(label) => {
                    let _ = writeln!(out, "\t{from} -.->|{}| {to};", escape(label));
                }
                None => {
                    let _ = writeln!(out, "\t{from} -.-> {to};");
                }
            }
        }
    }
    for s in &t.sends {
        let _ = writeln!(out, "\t{} -.->|Send| {};", ids.of(&s.from), ids.of(&s.to));
    }
    out.push_str("\tclassDef default fill:#f2f0ff,line-height:1.2\n");
    out.push_str("\tclassDef first fill-opacity:0\n");
    out.push_str("\tclassDef last fill:#bfb6fc\n");
    out
}

/// Mermaid ids for node names: the name itself when it is a plain identifier that Mermaid does
/// not reserve, otherwise an escaped form made unique with a numeric suffix.
#[derive(Debug, Default)]
struct Ids {
    by_name: HashMap<String, String>,
    taken: HashSet<String>,
}

impl Ids {
    fn id(&mut self, name: &str) -> String {
        if let Some(id) = self.by_name.get(name) {
            return id.clone();
        }
        let plain = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !matches!(name, "end" | "graph" | "subgraph" | "__start__" | "__end__");
        let base = if plain {
            name.to_owned()
        } else {
            let mut id = String::from("n_");
            id.extend(name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }));
            id
        };
        let mut id = base.clone();
        let mut n = 2;
        while self.taken.contains(&id) {
            id = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(id.clone());
        self.by_name.insert(name.to_owned(), id.clone());
        id
    }

    fn of(&mut self, r: &Ref) -> String {
        match r {
            Ref::Start(_) => "__start__".to_owned(),
            Ref::End(_) => "__end__".to_owned(),
            Ref::Node(name, _) => self.id(name),
        }
    }
}

/// Escapes text for a Mermaid label.
fn escape(text: &str) -> String {
    text.replace('"', "#quot;").replace('|', "#124;")
}
