//! The phases over the file's nodes: the state section, the ids, each node instantiated
//! through the registry.

use super::loader::{edge_path, node_path, LNode, Loader};
use crate::error::ticks;
use crate::format::FieldType;
use crate::state::{Migrations, Schema};
use std::collections::HashMap;
use weir_topology as topology;

impl Loader<'_> {
    /// The state section: reserved names, reducers that fit their type, defaults of the type;
    /// its version and migrations.
    pub(super) fn state_schema(&mut self) -> Schema {
        for (name, f) in &self.file.state.fields {
            let path = format!("$.state.{name}");
            if name.starts_with("__") {
                self.error(
                    &path,
                    None,
                    format!("field name `{name}` is reserved: names starting with `__` are weir's"),
                );
            }
            let fits = matches!(
                (f.reducer, f.ty),
                (crate::format::ReducerKind::Last, _)
                    | (crate::format::ReducerKind::Append, FieldType::List)
                    | (crate::format::ReducerKind::Add, FieldType::Number)
                    | (crate::format::ReducerKind::Merge, FieldType::Object)
            );
            if !fits {
                let wants = match f.reducer {
                    crate::format::ReducerKind::Append => "list",
                    crate::format::ReducerKind::Add => "number",
                    _ => "object",
                };
                self.error(
                    format!("{path}.reducer"),
                    None,
                    format!(
                        "field `{name}` is a {}, but reducer `{}` takes a {wants} field",
                        f.ty,
                        f.reducer.as_str()
                    ),
                );
            }
            if let Some(d) = &f.default {
                if !f.ty.admits(d) {
                    self.error(
                        format!("{path}.default"),
                        None,
                        format!(
                            "field `{name}` has a default of type {}; it is declared {}",
                            FieldType::name_of(d),
                            f.ty
                        ),
                    );
                }
            }
        }
        let names: Vec<String> = self.file.state.fields.keys().cloned().collect();
        let (migrations, problems) = Migrations::new(self.file.state_version, &self.file.migrations, &names);
        for p in problems {
            self.error(p.path, None, p.message);
        }
        Schema::new(&self.file.state).with_migrations(migrations)
    }

    /// Ids are unique across nodes and edges, and usable as node names.
    pub(super) fn ids(&mut self) {
        let mut seen: HashMap<&str, String> = HashMap::new();
        let file = self.file;
        let all = file
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.as_str(), format!("{}.id", node_path(i)), "node"))
            .chain(
                file.edges
                    .iter()
                    .enumerate()
                    .map(|(j, e)| (e.id.as_str(), format!("{}.id", edge_path(j)), "edge")),
            );
        for (id, path, what) in all {
            if let Some(first) = seen.get(id) {
                self.error(
                    &path,
                    Some(id),
                    format!("{what} id `{id}` is already used at `{first}`; ids must be unique"),
                );
            } else {
                seen.insert(id, path.trim_end_matches(".id").to_owned());
            }
            if what == "node" && id.contains(['|', ':']) {
                self.error(&path, Some(id), format!("node id `{id}` may not contain `|` or `:`"));
            }
            if what == "node" && id.ends_with(crate::node::ASK_SUFFIX) {
                self.error(
                    &path,
                    Some(id),
                    format!(
                        "node id `{id}` may not end with `{}`: weir names the question of an `output` node so",
                        crate::node::ASK_SUFFIX
                    ),
                );
            }
        }
    }

    /// Each node through the registry; notes are skipped.
    pub(super) fn instantiate(&mut self, schema: &Schema) -> Vec<LNode> {
        let mut out = Vec::new();
        let types = self.registry.types();
        for (i, n) in self.file.nodes.iter().enumerate() {
            if n.kind == "note" {
                continue;
            }
            let path = node_path(i);
            let mut data = n.data.clone();
            let max_steps = match data.remove("max_steps") {
                None => self.file.max_steps.unwrap_or(self.options.max_steps),
                Some(v) => match v.as_u64().filter(|m| (1..=u64::from(u32::MAX)).contains(m)) {
                    Some(m) => m as u32,
                    None => {
                        self.error(
                            format!("{path}.data.max_steps"),
                            Some(&n.id),
                            format!("node `{}` has `max_steps` {v}; it must be a positive integer", n.id),
                        );
                        1
                    }
                },
            };
            match self.registry.build(&n.kind, &data, schema) {
                None => {
                    let hint = match topology::suggest(&n.kind, types.iter().copied()) {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!("registered types are {}", ticks(types.iter().copied())),
                    };
                    self.error(
                        format!("{path}.type"),
                        Some(&n.id),
                        format!("node `{}` has unknown type `{}`; {hint}", n.id, n.kind),
                    );
                }
                Some(Err(errors)) => {
                    for e in errors {
                        self.error(
                            format!("{path}.data{}", e.path),
                            Some(&n.id),
                            format!("node `{}`: {}", n.id, e.message),
                        );
                    }
                }
                Some(Ok(imp)) => out.push(LNode {
                    at: i,
                    id: n.id.clone(),
                    imp,
                    max_steps,
                }),
            }
        }
        out
    }
}
