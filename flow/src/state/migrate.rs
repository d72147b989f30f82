//! A flow's state versions: the `state_version` and `migrations` of its file, checked at load
//! and run on a checkpoint saved by an older version of the flow ([`State::migrate`]).
//!
//! A flow's checkpoints describe each field (name, type, reducer, value), and its pending
//! writes address fields by slot; slots are laid out by name, so the slots of an older version
//! are known from the current fields and the migrations between (each version's declared
//! names, found backwards). A rename rewrites the saved field's name, a retype its value
//! (through a CEL expression over `value`) and its type, taken from the new value.
//!
//! [`State::migrate`]: weir_runtime::State::migrate

use super::{SavedField, HIDDEN_FIELDS};
use crate::format::{FieldType, MigrationSpec};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use weir_runtime::state::{MigrateError, Migration};

/// The state versions of a loaded flow: its version and the step from each older one.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Migrations {
    version: u32,
    steps: BTreeMap<u32, MigrationSpec>,
    /// The declared fields of each version, sorted (as their slots are laid out).
    layouts: BTreeMap<u32, Vec<String>>,
    /// The current fields that declare a default, each saved at it: what a field added by a
    /// migration starts from.
    defaults: BTreeMap<String, Vec<u8>>,
}

/// A problem with a flow's versions, at a JSON path of the file.
pub(crate) struct Problem {
    pub(crate) path: String,
    pub(crate) message: String,
}

impl Migrations {
    /// The versions of a flow whose current fields are `fields`, checked: every older version
    /// has its step, each step names fields that exist on its side, and each expression
    /// compiles. The problems found are returned with what could be built.
    pub(crate) fn new(version: Option<u32>, specs: &[MigrationSpec], fields: &[String]) -> (Self, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut problem = |path: String, message: String| problems.push(Problem { path, message });
        let version = version.unwrap_or(1);
        if version == 0 {
            problem("$.state_version".into(), "state versions start at 1".into());
        }
        let mut steps = BTreeMap::new();
        for (i, spec) in specs.iter().enumerate() {
            let path = format!("$.migrations[{i}].from");
            if spec.from == 0 || spec.from >= version {
                problem(
                    path,
                    format!(
                        "`from` {} is not an older state version: the flow is at state version {version}",
                        spec.from
                    ),
                );
            } else if steps.insert(spec.from, (i, spec.clone())).is_some() {
                problem(path, format!("a second migration from state version {}", spec.from));
            }
        }
        let missing: Vec<String> = (1..version)
            .filter(|v| !steps.contains_key(v))
            .map(|v| v.to_string())
            .collect();
        if !missing.is_empty() {
            problem(
                "$.migrations".into(),
                format!(
                    "the flow is at state version {version} but has no migration from state version {}: add `{{\"from\": {}}}` (with nothing else when only the version changed)",
                    missing.join(", "),
                    missing[0]
                ),
            );
        }
        // Each version's fields, backwards from the current ones.
        let mut layouts = BTreeMap::new();
        let mut names: BTreeSet<String> = fields.iter().cloned().collect();
        layouts.insert(version, names.iter().cloned().collect::<Vec<_>>());
        for (from, (i, spec)) in steps.iter().rev() {
            let next = from + 1;
            let at = |key: &str, name: &str| format!("$.migrations[{i}].{key}.{name}");
            for (field, expr) in &spec.retype {
                if !names.contains(field) {
                    problem(
                        at("retype", field),
                        format!("the flow has no field `{field}` at state version {next}"),
                    );
                }
                if let Err(e) = cel::Program::compile(expr) {
                    let e = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
                    problem(
                        at("retype", field),
                        format!("the retype of `{field}` is not a valid expression: {e}"),
                    );
                }
            }
            for field in &spec.add {
                if !names.remove(field) {
                    problem(
                        format!("$.migrations[{i}].add"),
                        format!("the flow has no field `{field}` at state version {next}"),
                    );
                }
            }
            for field in &spec.drop {
                if !names.insert(field.clone()) {
                    problem(
                        format!("$.migrations[{i}].drop"),
                        format!("the flow still has a field `{field}` at state version {next}: it cannot be dropped"),
                    );
                }
            }
            for (old, new) in spec.rename.iter().rev() {
                if !names.remove(new) {
                    problem(
                        at("rename", old),
                        format!("the flow has no field `{new}` at state version {next}"),
                    );
                }
                names.insert(old.clone());
            }
            layouts.insert(*from, names.iter().cloned().collect());
        }
        let steps = steps.into_iter().map(|(from, (_, spec))| (from, spec)).collect();
        (
            Self {
                version,
                steps,
                layouts,
                defaults: BTreeMap::new(),
            },
            problems,
        )
    }

    /// Keeps `field` saved at its declared default, for a migration that adds it.
    pub(crate) fn set_default(&mut self, field: SavedField) {
        if let Ok(bytes) = serde_json::to_vec(&field) {
            self.defaults.insert(field.def.name.clone(), bytes);
        }
    }

    /// Whether a step after `from` renames, drops or retypes `name`: then `name` is not yet the
    /// current field of that name.
    fn touched_after(&self, from: u32, name: &str) -> bool {
        self.steps.range(from + 1..).any(|(_, s)| {
            s.rename.contains_key(name) || s.drop.iter().any(|d| d == name) || s.retype.contains_key(name)
        })
    }

    /// The flow's state version.
    pub(crate) fn version(&self) -> u32 {
        self.version.max(1)
    }

    /// The slot names of `version`: its declared fields by name, then weir's hidden ones.
    fn slots(&self, version: u32) -> Option<Vec<&str>> {
        let declared = self.layouts.get(&version)?;
        Some(
            declared
                .iter()
                .map(String::as_str)
                .chain(HIDDEN_FIELDS.iter().copied())
                .collect(),
        )
    }

    /// Brings `saved` from `from` to `from + 1`.
    pub(crate) fn step(&self, from: u32, saved: &mut Migration) -> Result<(), MigrateError> {
        let Some(spec) = self.steps.get(&from) else {
            return Err(MigrateError::new(
                "",
                format_args!("the flow has no migration from state version {from}"),
            ));
        };
        for (old, new) in &spec.rename {
            saved.rename(old, new)?;
            saved.map_saved(new, |chain| rewrite(new, chain, |field| field.def.name.clone_from(new)))?;
        }
        for field in &spec.drop {
            saved.drop_field(field);
        }
        for field in &spec.add {
            match self.defaults.get(field).filter(|_| !self.touched_after(from, field)) {
                Some(blob) => saved.add_value(field, Some(blob.clone()))?,
                None => saved.add(field)?,
            }
        }
        for (field, expr) in &spec.retype {
            let program = cel::Program::compile(expr)
                .map_err(|e| MigrateError::new(field.as_str(), format_args!("the retype expression: {e}")))?;
            let convert = |v: Value| -> Result<Value, MigrateError> {
                let mut ctx = cel::Context::default();
                ctx.add_variable_from_value("value", crate::builtins::cel_value(&v));
                let out = program
                    .execute(&ctx)
                    .map_err(|e| MigrateError::new(field.as_str(), format_args!("`{expr}` failed on {v}: {e}")))?;
                out.json()
                    .map_err(|e| MigrateError::new(field.as_str(), format_args!("`{expr}` gave no JSON value: {e}")))
            };
            let mut failed = None;
            saved.map_saved(field, |chain| {
                rewrite(field, chain, |saved| match convert(std::mem::take(&mut saved.value)) {
                    Ok(v) => {
                        if let Some(ty) = FieldType::of(&v) {
                            saved.def.ty = ty;
                        }
                        saved.value = v;
                    }
                    Err(e) => failed = Some(e),
                })
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
            saved.map_writes(field, convert)?;
        }
        Ok(())
    }

    /// A saved [`FlowUpdate`](super::FlowUpdate) of state `version` (`{"writes": [[slot, v], …]}`)
    /// as its writes by field name: `{"field": {"Many": [v, …]}}`.
    pub(crate) fn update_fields(&self, version: u32, saved: Value) -> Result<Map<String, Value>, MigrateError> {
        let slots = self
            .slots(version)
            .ok_or_else(|| MigrateError::new("", format_args!("the flow does not know state version {version}")))?;
        let writes = saved
            .get("writes")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut out: Map<String, Value> = Map::new();
        for w in writes {
            let (Some(slot), Some(value)) = (w.get(0).and_then(Value::as_u64), w.get(1)) else {
                return Err(MigrateError::new(
                    "",
                    format_args!("a saved write {w} is not `[slot, value]`"),
                ));
            };
            let name = slots.get(slot as usize).ok_or_else(|| {
                MigrateError::new(
                    "",
                    format_args!("a saved write to slot {slot}, which state version {version} does not have"),
                )
            })?;
            let entry = out
                .entry((*name).to_owned())
                .or_insert_with(|| serde_json::json!({"Many": []}));
            if let Some(list) = entry.get_mut("Many").and_then(Value::as_array_mut) {
                list.push(value.clone());
            }
        }
        Ok(out)
    }

    /// The inverse of [`update_fields`](Self::update_fields), in the current version's slots.
    pub(crate) fn update_from_fields(&self, fields: Map<String, Value>) -> Value {
        let slots = self.slots(self.version()).unwrap_or_default();
        let mut writes = Vec::new();
        for (name, w) in fields {
            let Some(slot) = slots.iter().position(|s| *s == name) else {
                continue;
            };
            let values = match w {
                Value::Object(mut o) => match (o.remove("One"), o.remove("Many")) {
                    (Some(v), _) => vec![v],
                    (_, Some(Value::Array(vs))) => vs,
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            };
            writes.extend(values.into_iter().map(|v| serde_json::json!([slot, v])));
        }
        serde_json::json!({ "writes": writes })
    }
}

/// Rewrites each saved field of `chain` (a flow field saves one whole value) with `f`.
fn rewrite(name: &str, chain: Vec<Vec<u8>>, mut f: impl FnMut(&mut SavedField)) -> Result<Vec<Vec<u8>>, MigrateError> {
    chain
        .into_iter()
        .map(|link| {
            let mut saved: SavedField = serde_json::from_slice(&link)
                .map_err(|e| MigrateError::new(name, format_args!("the saved field does not decode: {e}")))?;
            f(&mut saved);
            serde_json::to_vec(&saved).map_err(|e| MigrateError::new(name, e))
        })
        .collect()
}
