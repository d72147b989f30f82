//! The dynamic state: the fields a flow declares, known only when it is loaded, implementing the
//! runtime's [`State`] trait so flows run on the same loop as `derive(State)` structs.
//!
//! # Fields known at run time
//!
//! A flow's fields are read from its file, so [`State::FIELDS`] (a constant) is empty: each
//! [`FlowState`] carries its own field table, returned by [`State::fields`], and a loaded flow
//! hands the runtime an empty, laid-out prototype ([`GraphBuilder::with_prototype`]) that every
//! run starts from. The declared fields come first, in name order, then weir's hidden ones.
//! Checkpoints store each field self-described (name, type, reducer, value).
//!
//! [`GraphBuilder::with_prototype`]: weir_runtime::GraphBuilder::with_prototype

use crate::format::{FieldType, StateSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use weir_runtime::channel::{BinaryOperatorAggregate, Channel, LastValue, ReducerWrite};
use weir_runtime::state::{apply_field, FieldError, MigrateError, Migration};
use weir_runtime::{ChannelKind, CodecError, FieldInfo, State, Update, Writes};

mod migrate;
mod reduce;
pub(crate) use migrate::Migrations;
pub(crate) use reduce::Reduce;

/// The hidden field counting how many times each node ran in the run (for `max_steps`).
pub(crate) const STEPS_FIELD: &str = "__steps";
/// The hidden field where a `condition` or `output` node leaves the handle it chose
/// (`{node: handle}`), for its router.
pub(crate) const ROUTE_FIELD: &str = "__route";
/// The hidden field holding the step each node last ran at in the run (`{node: step}`), to tell
/// what a join still waits for when a run stops short of an end node.
pub(crate) const LAST_FIELD: &str = "__last";
/// The hidden field holding the message each pausing `output` node sent (`{node: text}`): the
/// question its asking node puts to a person, the very text they were shown.
pub(crate) const ASKED_FIELD: &str = "__asked";
/// The hidden fields, in slot order after the declared ones.
pub(crate) const HIDDEN_FIELDS: [&str; 4] = [STEPS_FIELD, ROUTE_FIELD, LAST_FIELD, ASKED_FIELD];

/// One field of a flow's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FieldDef {
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) ty: FieldType,
    pub(crate) reducer: Reduce,
    #[serde(skip)]
    pub(crate) default: Option<Value>,
    #[serde(skip)]
    pub(crate) description: Option<String>,
}

impl FieldDef {
    /// The value the field starts from: its declared default, or the reducer's identity.
    fn initial(&self) -> Value {
        if let Some(d) = &self.default {
            if self.reducer != Reduce::Last {
                return d.clone();
            }
        }
        match self.reducer {
            Reduce::Last => Value::Null,
            Reduce::Append => Value::Array(Vec::new()),
            Reduce::Add => Value::from(0),
            Reduce::Merge | Reduce::Count => Value::Object(Map::new()),
        }
    }

    fn channel(&self) -> Chan {
        match self.reducer {
            Reduce::Last => Chan::Last(LastValue::new()),
            Reduce::Append => Chan::Reduce(BinaryOperatorAggregate::new(reduce::append)),
            Reduce::Add => Chan::Reduce(BinaryOperatorAggregate::new(reduce::add)),
            Reduce::Merge => Chan::Reduce(BinaryOperatorAggregate::new(reduce::merge)),
            Reduce::Count => Chan::Reduce(BinaryOperatorAggregate::new(reduce::count)),
        }
    }

    pub(crate) fn is_hidden(&self) -> bool {
        self.name.starts_with("__")
    }
}

/// The fields of a loaded flow's state, in slot order: declared fields by name, then hidden ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    pub(crate) fields: Vec<Arc<FieldDef>>,
    pub(crate) infos: Arc<[FieldInfo]>,
    by_name: HashMap<String, usize>,
    /// The state's version and the migrations from older ones.
    pub(crate) migrations: Arc<Migrations>,
}

impl Schema {
    /// The schema of `spec`'s fields plus weir's hidden ones.
    pub(crate) fn new(spec: &StateSpec) -> Self {
        let mut fields: Vec<Arc<FieldDef>> = spec
            .fields
            .iter()
            .map(|(name, f)| {
                Arc::new(FieldDef {
                    name: name.clone(),
                    ty: f.ty,
                    reducer: f.reducer.into(),
                    default: f.default.clone(),
                    description: f.description.clone(),
                })
            })
            .collect();
        fields.push(Arc::new(FieldDef {
            name: STEPS_FIELD.to_owned(),
            ty: FieldType::Object,
            reducer: Reduce::Count,
            default: None,
            description: None,
        }));
        for name in [ROUTE_FIELD, LAST_FIELD, ASKED_FIELD] {
            fields.push(Arc::new(FieldDef {
                name: name.to_owned(),
                ty: FieldType::Object,
                reducer: Reduce::Merge,
                default: None,
                description: None,
            }));
        }
        let infos = fields
            .iter()
            .map(|f| {
                let kind = if f.reducer == Reduce::Last {
                    ChannelKind::LastValue
                } else {
                    ChannelKind::Reducer
                };
                // Owned by the schema, and freed with the flow: nothing is leaked per load.
                FieldInfo::owned(f.name.clone(), kind)
            })
            .collect();
        let by_name = fields.iter().enumerate().map(|(i, f)| (f.name.clone(), i)).collect();
        Self {
            fields,
            infos,
            by_name,
            migrations: Arc::default(),
        }
    }

    /// The same fields, at the version `migrations` says, with its migrations; a field they add
    /// starts at its declared default.
    pub(crate) fn with_migrations(mut self, mut migrations: Migrations) -> Self {
        for def in &self.fields {
            if let Some(value) = def.default.clone() {
                migrations.set_default(SavedField {
                    def: (**def).clone(),
                    value,
                });
            }
        }
        self.migrations = Arc::new(migrations);
        self
    }

    /// The slot of the field `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The declared field `name`, if any (hidden fields are not declared).
    pub(crate) fn declared(&self, name: &str) -> Option<&FieldDef> {
        self.index(name).map(|i| &*self.fields[i]).filter(|f| !f.is_hidden())
    }

    /// The JSON Schema of one declared field's value: its JSON type, with its description and
    /// default when the flow gives them (`None` for a hidden or unknown field).
    pub fn field_json_schema(&self, name: &str) -> Option<Value> {
        let f = self.declared(name)?;
        let ty = match f.ty {
            FieldType::String => "string",
            FieldType::Number => "number",
            FieldType::Bool => "boolean",
            FieldType::List => "array",
            FieldType::Object => "object",
        };
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), Value::String(ty.into()));
        if let Some(d) = &f.description {
            schema.insert("description".into(), Value::String(d.clone()));
        }
        if let Some(d) = &f.default {
            schema.insert("default".into(), d.clone());
        }
        Some(Value::Object(schema))
    }

    /// The declared fields' names, in slot order.
    pub fn field_names(&self) -> Vec<&str> {
        self.fields
            .iter()
            .filter(|f| !f.is_hidden())
            .map(|f| f.name.as_str())
            .collect()
    }
}

/// Whether `v` may be written to the field `def`.
pub(crate) fn fits(def: &FieldDef, v: &serde_json::Value) -> bool {
    match def.reducer {
        Reduce::Last => def.ty.admits(v),
        Reduce::Append => !v.is_null(),
        Reduce::Add => v.is_number(),
        Reduce::Merge | Reduce::Count => v.is_object(),
    }
}

/// The channel of one slot: the runtime's own kinds.
#[derive(Debug, Clone)]
enum Chan {
    Last(LastValue),
    Reduce(BinaryOperatorAggregate<Value, Value>),
}

/// The channels of a [`FlowState`], one per laid-out slot.
#[derive(Debug, Clone, Default)]
pub struct FlowChannels {
    chans: Vec<Chan>,
}

#[derive(Debug, Clone)]
struct Slot {
    /// `None` until the slot's field is known (a slot restored empty from a checkpoint).
    def: Option<Arc<FieldDef>>,
    value: Value,
}

/// A flow's state: one JSON value per declared field.
#[derive(Debug, Clone)]
pub struct FlowState {
    slots: Vec<Slot>,
    fields: Arc<[FieldInfo]>,
    migrations: Arc<Migrations>,
}

impl Default for FlowState {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            fields: Arc::from(Vec::new()),
            migrations: Arc::default(),
        }
    }
}

impl FlowState {
    /// The value of the field `name`, or `None` when it was never written (or is not declared).
    ///
    /// # Examples
    ///
    /// ```
    /// # use weir_flow::{Flow, Registry};
    /// let flow = Flow::from_json(r#"{
    ///   "nodes": [{"id": "s", "type": "start"}, {"id": "e", "type": "end"}],
    ///   "edges": [{"id": "e1", "source": "s", "target": "e"}],
    ///   "state": {"topic": {"type": "string"}}
    /// }"#, &Registry::new()).unwrap();
    /// # let rt = tokio::runtime::Runtime::new().unwrap();
    /// let out = rt.block_on(flow.invoke(serde_json::json!({"topic": "rust"}))).unwrap();
    /// assert_eq!(out.get("topic"), Some(&serde_json::json!("rust")));
    /// ```
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.slots.iter().find_map(|s| match &s.def {
            Some(d) if d.name == name && s.value != Value::Null => Some(&s.value),
            _ => None,
        })
    }

    /// The hidden field `name`'s value, by name.
    pub(crate) fn hidden(&self, name: &str) -> Option<&Value> {
        self.slots.iter().find_map(|s| match &s.def {
            Some(d) if d.name == name => Some(&s.value),
            _ => None,
        })
    }

    /// The declared fields that hold a value, as a JSON object (hidden fields left out).
    pub fn to_json(&self) -> Map<String, Value> {
        self.slots
            .iter()
            .filter_map(|s| {
                let d = s.def.as_ref()?;
                (!d.is_hidden() && s.value != Value::Null).then(|| (d.name.clone(), s.value.clone()))
            })
            .collect()
    }

    /// The empty state of `schema`, laid out: where every run of the flow starts.
    pub(crate) fn prototype(schema: &Schema) -> (Self, FlowChannels) {
        let mut state = Self::default();
        let mut channels = FlowChannels::default();
        state.adopt(schema, &mut channels);
        (state, channels)
    }

    /// Lays out the slots of `schema` not yet known.
    fn adopt(&mut self, schema: &Schema, channels: &mut FlowChannels) {
        if self.fields.len() < schema.infos.len() {
            self.fields = schema.infos.clone();
            self.migrations = schema.migrations.clone();
        }
        for (i, def) in schema.fields.iter().enumerate() {
            if i >= self.slots.len() {
                self.slots.push(Slot {
                    def: Some(def.clone()),
                    value: def.initial(),
                });
                channels.chans.push(def.channel());
            } else if self.slots[i].def.is_none() {
                self.slots[i] = Slot {
                    def: Some(def.clone()),
                    value: def.initial(),
                };
                channels.chans[i] = def.channel();
            }
        }
    }
}

/// The writes of one node: `(slot, value)` pairs in the order written.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FlowUpdate {
    #[serde(skip)]
    schema: Option<Arc<Schema>>,
    writes: Vec<(u32, Value)>,
}

impl FlowUpdate {
    pub(crate) fn new(schema: &Arc<Schema>) -> Self {
        Self {
            schema: Some(schema.clone()),
            writes: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, slot: usize, value: Value) {
        self.writes.push((slot as u32, value));
    }

    fn take(&mut self, slot: usize) -> Writes<Value> {
        let mut out = Writes::None;
        if self.writes.iter().any(|(s, _)| *s as usize == slot) {
            let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.writes)
                .into_iter()
                .partition(|(s, _)| *s as usize == slot);
            self.writes = rest;
            for (_, v) in mine {
                out.push(v);
            }
        }
        out
    }
}

impl Update for FlowUpdate {
    type State = FlowState;
    fn is_written(&self, index: usize) -> bool {
        self.writes.iter().any(|(s, _)| *s as usize == index)
    }
    fn merge(&mut self, later: Self) {
        if self.schema.is_none() {
            self.schema = later.schema;
        }
        self.writes.extend(later.writes);
    }
}

impl State for FlowState {
    type Update = FlowUpdate;
    type Channels = FlowChannels;
    const FIELDS: &'static [FieldInfo] = &[];

    fn fields(&self) -> &[FieldInfo] {
        &self.fields
    }

    fn empty() -> (Self, FlowChannels) {
        (Self::default(), FlowChannels::default())
    }

    fn version(&self) -> u32 {
        self.migrations.version()
    }

    fn migrate(&self, from: u32, saved: &mut Migration) -> Result<(), MigrateError> {
        self.migrations.step(from, saved)
    }

    fn update_fields(&self, version: u32, saved: Value) -> Result<Map<String, Value>, MigrateError> {
        self.migrations.update_fields(version, saved)
    }

    fn update_from_fields(&self, fields: Map<String, Value>) -> Value {
        self.migrations.update_from_fields(fields)
    }

    fn into_update(self) -> FlowUpdate {
        let writes = self
            .slots
            .into_iter()
            .enumerate()
            .filter(|(_, s)| s.def.is_some() && s.value != Value::Null)
            .map(|(i, s)| (i as u32, s.value))
            .collect();
        FlowUpdate { schema: None, writes }
    }

    fn is_available(&self, channels: &FlowChannels, index: usize) -> bool {
        match (self.slots.get(index), channels.chans.get(index)) {
            (Some(s), Some(Chan::Last(c))) => Channel::<Value>::is_available(c, &s.value),
            (Some(s), Some(Chan::Reduce(c))) => s.def.is_some() && c.is_available(&s.value),
            _ => false,
        }
    }

    fn apply(
        &mut self,
        channels: &mut FlowChannels,
        updates: &mut [FlowUpdate],
        bump: bool,
        changed: &mut [bool],
    ) -> Result<(), FieldError> {
        if let Some(schema) = updates.iter().find_map(|u| u.schema.clone()) {
            self.adopt(&schema, channels);
        }
        for (i, (slot, chan)) in self.slots.iter_mut().zip(&mut channels.chans).enumerate() {
            changed[i] = match chan {
                Chan::Last(c) => apply_field(i, &mut slot.value, c, updates, |u| u.take(i), bump)?,
                Chan::Reduce(c) => apply_field(
                    i,
                    &mut slot.value,
                    c,
                    updates,
                    |u| {
                        u.take(i)
                            .into_iter()
                            .map(ReducerWrite::Reduce)
                            .fold(Writes::None, |mut w, x| {
                                w.push(x);
                                w
                            })
                    },
                    bump,
                )?,
            };
        }
        Ok(())
    }

    fn consume(&mut self, _: &mut FlowChannels, _: usize) -> bool {
        false
    }

    fn finish(&mut self, _: &mut FlowChannels, _: &mut [bool]) {}

    fn save_field(&self, channels: &FlowChannels, index: usize) -> Result<Option<Vec<u8>>, CodecError> {
        let (Some(slot), Some(chan)) = (self.slots.get(index), channels.chans.get(index)) else {
            return Ok(None);
        };
        let Some(def) = &slot.def else {
            return Ok(None);
        };
        let saved = match chan {
            Chan::Last(c) => Channel::<Value>::checkpoint(c, &slot.value).is_some(),
            Chan::Reduce(c) => c.checkpoint(&slot.value).is_some(),
        };
        if !saved {
            return Ok(None);
        }
        serde_json::to_vec(&SavedField {
            def: (**def).clone(),
            value: slot.value.clone(),
        })
        .map(Some)
        .map_err(|e| CodecError::new(def.name.clone(), e))
    }

    fn load_field(&mut self, channels: &mut FlowChannels, index: usize, chain: &[Vec<u8>]) -> Result<(), CodecError> {
        let slot_name = self.fields.get(index).map_or("?", FieldInfo::name);
        let restored = match chain {
            [] => None,
            [bytes] => Some(serde_json::from_slice::<SavedField>(bytes).map_err(|e| CodecError::new(slot_name, e))?),
            _ => {
                return Err(CodecError::new(
                    slot_name,
                    "appended items saved for a flow field, which saves whole values",
                ))
            }
        };
        while self.slots.len() <= index {
            self.slots.push(Slot {
                def: None,
                value: Value::Null,
            });
            channels.chans.push(Chan::Last(LastValue::new()));
        }
        match restored {
            None => {
                // Empty: keep what is known of the field, forget its value.
                let def = self.slots[index].def.clone();
                self.slots[index].value = def.as_ref().map_or(Value::Null, |d| d.initial());
                channels.chans[index] = def.map_or(Chan::Last(LastValue::new()), |d| d.channel());
            }
            Some(saved) => {
                let def = Arc::new(saved.def);
                channels.chans[index] = match def.channel() {
                    Chan::Last(c) => Chan::Last(Channel::<Value>::from_checkpoint(&c, Some(()))),
                    Chan::Reduce(c) => Chan::Reduce(c.from_checkpoint(Some(()))),
                };
                self.slots[index] = Slot {
                    def: Some(def),
                    value: saved.value,
                };
            }
        }
        Ok(())
    }
}

/// A slot as checkpoints store it: self-describing, so that it decodes without the flow.
#[derive(Serialize, Deserialize)]
pub(crate) struct SavedField {
    #[serde(flatten)]
    def: FieldDef,
    value: Value,
}

#[cfg(test)]
mod tests;
