//! Typed state migrations: a checkpoint saved by an older version of a state type, brought to
//! the current version before a single field is decoded.
//!
//! A state type has a version ([`State::version`](super::State::version), `#[state(version =
//! N)]`); each checkpoint's body records the version that saved it (none recorded: version 1).
//! Loading a checkpoint of an older version runs the type's migration steps, one version at a
//! time ([`State::migrate`](super::State::migrate)), on the checkpoint as saved: each field's
//! JSON by name, and the writes its pending tasks and its input hold for each field. A step
//! renames, drops, adds or retypes fields through a [`Migration`]. The fields a step touched are
//! saved whole in the next checkpoint, which records the current version. A checkpoint of a
//! newer version than the program's, or of an older one no step leads from, is an error naming
//! the thread, the checkpoint and both versions.

use serde::{de::DeserializeOwned, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::fmt;

/// A migration step could not bring a checkpoint to the next version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrateError {
    field: String,
    message: String,
}

impl MigrateError {
    /// An error about `field` (empty when it is about no field).
    pub fn new(field: impl Into<String>, message: impl fmt::Display) -> Self {
        Self {
            field: field.into(),
            message: message.to_string(),
        }
    }

    /// The field at fault, if any.
    pub fn field(&self) -> Option<&str> {
        (!self.field.is_empty()).then_some(self.field.as_str())
    }
}

impl fmt::Display for MigrateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "field `{}`: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for MigrateError {}

/// How a field's writes are saved, which says what a retype applies to: a plain field's write
/// is its value; a reducer field's is `Reduce(u)`, folded in, or `Overwrite(value)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Each write is the field's value (last value, any, ephemeral, topic, after finish).
    Value,
    /// Each write is a reducer's `Reduce(u)` or `Overwrite(value)`.
    Reducer,
}

/// One field of a checkpoint being migrated.
#[derive(Debug, Clone)]
pub(crate) struct SavedField {
    pub(crate) name: String,
    /// The chain of the field's blobs, oldest first; `None` when the checkpoint stores no value.
    pub(crate) chain: Option<Vec<Vec<u8>>>,
    /// The channel's version in the checkpoint; `None` for a field a step added.
    pub(crate) version: Option<u64>,
    /// The checkpoint that stores the value (the checkpoint's own, or an earlier one).
    pub(crate) blob: Option<std::sync::Arc<str>>,
}

/// A checkpoint as a migration step edits it: its fields by name, and every saved update that
/// writes them (the pending tasks' writes, the null task's, the kept input), as JSON.
///
/// Built by the loop when it loads a checkpoint of an older version; generated code (and a
/// hand-written [`State::migrate`](super::State::migrate)) calls its methods.
#[derive(Debug)]
pub struct Migration {
    pub(crate) fields: Vec<SavedField>,
    /// Each saved update's object: field name → `"None"`, `{"One": w}` or `{"Many": [w, …]}`.
    pub(crate) updates: Vec<Map<String, Value>>,
    /// Names (after renames) of the fields a step changed: saved whole in the next checkpoint.
    pub(crate) touched: BTreeSet<String>,
    /// The renames of every step, in order, for the bookkeeping keyed by channel name.
    pub(crate) renames: Vec<(String, String)>,
}

impl Migration {
    pub(crate) fn new(fields: Vec<SavedField>, updates: Vec<Map<String, Value>>) -> Self {
        Self {
            fields,
            updates,
            touched: BTreeSet::new(),
            renames: Vec::new(),
        }
    }

    /// Whether the checkpoint has a field named `name` (with or without a stored value).
    pub fn has(&self, name: &str) -> bool {
        self.fields.iter().any(|f| f.name == name)
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// `from` is now called `to`: its value, its version and its writes.
    ///
    /// # Errors
    /// When the checkpoint already has a field `to`.
    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), MigrateError> {
        if self.has(to) {
            return Err(MigrateError::new(
                from,
                format_args!("cannot be renamed `{to}`: the checkpoint already has a field `{to}`"),
            ));
        }
        if let Some(i) = self.position(from) {
            self.fields[i].name = to.to_owned();
        }
        for update in &mut self.updates {
            if let Some(w) = update.remove(from) {
                update.insert(to.to_owned(), w);
            }
        }
        self.touched.remove(from);
        self.touched.insert(to.to_owned());
        self.renames.push((from.to_owned(), to.to_owned()));
        Ok(())
    }

    /// `name` is gone: its value and its writes are dropped.
    pub fn drop_field(&mut self, name: &str) {
        self.fields.retain(|f| f.name != name);
        for update in &mut self.updates {
            update.remove(name);
        }
        self.touched.remove(name);
    }

    /// `name` is new in this version: a checkpoint of the version before has nothing of it, and
    /// it starts empty (its type's default, never written).
    ///
    /// # Errors
    /// When the checkpoint already has the field: it was not new after all.
    pub fn add(&mut self, name: &str) -> Result<(), MigrateError> {
        if self.has(name) {
            return Err(MigrateError::new(
                name,
                "is added by this step, but the checkpoint already has it",
            ));
        }
        // Every saved update has a slot per field: the new field's is empty.
        for update in &mut self.updates {
            update.entry(name.to_owned()).or_insert_with(|| Value::from("None"));
        }
        Ok(())
    }

    /// `name` is new in this version and starts from a value: `blob` is the field saved as a
    /// checkpoint saves it ([`State::save_field`](super::State::save_field)), `None` for a
    /// field whose channel stores nothing.
    ///
    /// # Errors
    /// When the checkpoint already has the field.
    pub fn add_value(&mut self, name: &str, blob: Option<Vec<u8>>) -> Result<(), MigrateError> {
        self.add(name)?;
        self.fields.push(SavedField {
            name: name.to_owned(),
            chain: blob.map(|b| vec![b]),
            version: None,
            blob: None,
        });
        self.touched.insert(name.to_owned());
        Ok(())
    }

    /// `name` has a new type: its value and each write that is a value (a plain field's write,
    /// a reducer's `Overwrite`) go through `f`.
    ///
    /// # Errors
    /// When a saved value does not decode as `Old` or the new one does not encode; the error
    /// names the field and where the value was.
    pub fn retype<Old, New>(
        &mut self,
        name: &str,
        writes: WriteKind,
        f: impl Fn(Old) -> New,
    ) -> Result<(), MigrateError>
    where
        Old: DeserializeOwned,
        New: Serialize,
    {
        let convert = |v: Value, what: &str| -> Result<Value, MigrateError> {
            let old: Old = serde_json::from_value(v)
                .map_err(|e| MigrateError::new(name, format_args!("the saved {what} does not decode: {e}")))?;
            serde_json::to_value(f(old)).map_err(|e| MigrateError::new(name, format_args!("the new {what}: {e}")))
        };
        if let Some(i) = self.position(name) {
            if let Some(chain) = self.fields[i].chain.take() {
                let (value, meta) = collapse(name, chain)?;
                let value = convert(value, "value")?;
                let bytes = serde_json::to_vec(&(value, meta)).map_err(|e| MigrateError::new(name, e))?;
                self.fields[i].chain = Some(vec![bytes]);
            }
            self.touched.insert(name.to_owned());
        }
        let variant = match writes {
            WriteKind::Value => None,
            WriteKind::Reducer => Some("Overwrite"),
        };
        self.map_writes_in(name, variant, |w| convert(w, "write"))
    }

    /// Rewrites the saved chain of `name` (its whole value, then any deltas) with `f`, for a
    /// state whose fields are not saved as `#[derive(State)]` saves them; the field is saved
    /// whole in the next checkpoint. Nothing is called for a field with no saved value.
    ///
    /// # Errors
    /// `f`'s.
    pub fn map_saved(
        &mut self,
        name: &str,
        f: impl FnOnce(Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, MigrateError>,
    ) -> Result<(), MigrateError> {
        if let Some(i) = self.position(name) {
            if let Some(chain) = self.fields[i].chain.take() {
                self.fields[i].chain = Some(f(chain)?);
            }
            self.touched.insert(name.to_owned());
        }
        Ok(())
    }

    /// Rewrites each saved write of `name` with `f` (each write as its state saves one).
    ///
    /// # Errors
    /// `f`'s.
    pub fn map_writes(
        &mut self,
        name: &str,
        f: impl FnMut(Value) -> Result<Value, MigrateError>,
    ) -> Result<(), MigrateError> {
        self.map_writes_in(name, None, f)
    }

    /// `name`'s reducer takes writes of a new type: each `Reduce(u)` write goes through `f`.
    ///
    /// # Errors
    /// When a saved write does not decode as `Old` or the new one does not encode.
    pub fn retype_reduced<Old, New>(&mut self, name: &str, f: impl Fn(Old) -> New) -> Result<(), MigrateError>
    where
        Old: DeserializeOwned,
        New: Serialize,
    {
        self.map_writes_in(name, Some("Reduce"), |w| {
            let old: Old = serde_json::from_value(w)
                .map_err(|e| MigrateError::new(name, format_args!("a saved write does not decode: {e}")))?;
            serde_json::to_value(f(old)).map_err(|e| MigrateError::new(name, format_args!("the new write: {e}")))
        })
    }

    /// Applies `f` to each saved write of `name` (to the payload of `variant` when the writes
    /// are a reducer's, leaving the other variant as it is).
    fn map_writes_in(
        &mut self,
        name: &str,
        variant: Option<&str>,
        mut f: impl FnMut(Value) -> Result<Value, MigrateError>,
    ) -> Result<(), MigrateError> {
        let mut one = |w: &mut Value| -> Result<(), MigrateError> {
            let slot = match variant {
                None => Some(w),
                Some(v) => w.as_object_mut().and_then(|o| o.get_mut(v)),
            };
            if let Some(slot) = slot {
                *slot = f(slot.take())?;
            }
            Ok(())
        };
        for update in &mut self.updates {
            let Some(writes) = update.get_mut(name) else { continue };
            match writes {
                Value::Object(o) => {
                    if let Some(w) = o.get_mut("One") {
                        one(w)?;
                    } else if let Some(Value::Array(ws)) = o.get_mut("Many") {
                        for w in ws {
                            one(w)?;
                        }
                    }
                }
                _ => continue,
            }
        }
        Ok(())
    }
}

/// A field's chain as one value: the saved `[value, meta]`, with the items of each delta
/// appended to the value (a list saved as deltas).
fn collapse(name: &str, chain: Vec<Vec<u8>>) -> Result<(Value, Value), MigrateError> {
    let mut links = chain.into_iter();
    let Some(first) = links.next() else {
        return Ok((Value::Null, Value::Null));
    };
    let (mut value, meta): (Value, Value) = serde_json::from_slice(&first)
        .map_err(|e| MigrateError::new(name, format_args!("the saved value is not a weir field: {e}")))?;
    for link in links {
        let items: Vec<Value> = serde_json::from_slice(&link)
            .map_err(|e| MigrateError::new(name, format_args!("a saved delta is not a list of items: {e}")))?;
        match &mut value {
            Value::Array(list) => list.extend(items),
            _ => {
                return Err(MigrateError::new(
                    name,
                    "items were appended to a value that is not a list",
                ))
            }
        }
    }
    Ok((value, meta))
}

/// The error of a state that has no step from `from`.
pub(crate) fn no_step(from: u32, to: u32) -> MigrateError {
    MigrateError::new(
        "",
        format_args!("the state says no way to migrate from version {from} (to {to})"),
    )
}
