//! The state of an entrypoint's one-node graph, written by hand as `#[derive(State)]` would write
//! it: the input, the value the entrypoint returned, and the value it saved for the next call
//! on the thread (`previous`), each a last-value channel of JSON.

use crate::channel::{Channel, LastValue};
use crate::state::{apply_field, load_field, save_field, FieldError};
use crate::{ChannelKind, CodecError, FieldInfo, State, Update, Writes};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The state of an entrypoint's graph (LangGraph's `__start__`, `__end__` and `__previous__`
/// channels): what [`CompiledGraph::get_state`](crate::CompiledGraph) shows of a functional run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FuncState {
    /// The input of the latest call.
    pub input: Value,
    /// What the entrypoint returned (LangGraph's `__end__`); `null` until it returns.
    pub output: Value,
    /// What the entrypoint saved for its next call on the thread (`previous`).
    pub previous: Value,
}

/// A partial update of a [`FuncState`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct FuncStateUpdate {
    /// The input written.
    pub input: Writes<Value>,
    /// The return value written.
    pub output: Writes<Value>,
    /// The saved value written.
    pub previous: Writes<Value>,
}

impl FuncStateUpdate {
    /// The update that starts a run on `input`.
    pub fn input(input: Value) -> Self {
        let mut u = Self::default();
        u.input.push(input);
        u
    }
}

impl Update for FuncStateUpdate {
    type State = FuncState;
    fn is_written(&self, index: usize) -> bool {
        match index {
            0 => self.input.is_some(),
            1 => self.output.is_some(),
            2 => self.previous.is_some(),
            _ => false,
        }
    }
    fn merge(&mut self, later: Self) {
        self.input.extend(later.input);
        self.output.extend(later.output);
        self.previous.extend(later.previous);
    }
}

const NAMES: [&str; 3] = ["input", "output", "previous"];

impl FuncState {
    fn field(&self, index: usize) -> &Value {
        match index {
            0 => &self.input,
            1 => &self.output,
            _ => &self.previous,
        }
    }

    fn field_mut(&mut self, index: usize) -> &mut Value {
        match index {
            0 => &mut self.input,
            1 => &mut self.output,
            _ => &mut self.previous,
        }
    }
}

impl State for FuncState {
    type Update = FuncStateUpdate;
    type Channels = [LastValue; 3];
    const FIELDS: &'static [FieldInfo] = &[
        FieldInfo::new("input", ChannelKind::LastValue),
        FieldInfo::new("output", ChannelKind::LastValue),
        FieldInfo::new("previous", ChannelKind::LastValue),
    ];

    fn empty() -> (Self, Self::Channels) {
        (Self::default(), [LastValue::new(), LastValue::new(), LastValue::new()])
    }

    fn into_update(self) -> FuncStateUpdate {
        let mut u = FuncStateUpdate::default();
        u.input.push(self.input);
        u.output.push(self.output);
        u.previous.push(self.previous);
        u
    }

    fn is_available(&self, c: &Self::Channels, i: usize) -> bool {
        i < 3 && Channel::is_available(&c[i], self.field(i))
    }

    fn apply(
        &mut self,
        c: &mut Self::Channels,
        u: &mut [FuncStateUpdate],
        bump: bool,
        changed: &mut [bool],
    ) -> Result<(), FieldError> {
        let [ci, co, cp] = c;
        changed[0] = apply_field(0, &mut self.input, ci, u, |u| u.input.take(), bump)?;
        changed[1] = apply_field(1, &mut self.output, co, u, |u| u.output.take(), bump)?;
        changed[2] = apply_field(2, &mut self.previous, cp, u, |u| u.previous.take(), bump)?;
        Ok(())
    }

    fn consume(&mut self, c: &mut Self::Channels, i: usize) -> bool {
        i < 3 && Channel::consume(&mut c[i], self.field_mut(i))
    }

    fn finish(&mut self, c: &mut Self::Channels, changed: &mut [bool]) {
        for (i, ch) in c.iter_mut().enumerate() {
            changed[i] = Channel::finish(ch, self.field_mut(i));
        }
    }

    fn save_field(&self, c: &Self::Channels, i: usize) -> Result<Option<Vec<u8>>, CodecError> {
        save_field(NAMES[i], self.field(i), &c[i])
    }

    fn load_field(&mut self, c: &mut Self::Channels, i: usize, chain: &[Vec<u8>]) -> Result<(), CodecError> {
        load_field(NAMES[i], self.field_mut(i), &mut c[i], chain)
    }
}
