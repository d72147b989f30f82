//! What a node or a router returns: `Command`, its destinations (`Goto`) and the node ids they
//! name.

use super::send::Packet;
use crate::error::BoxError;
use crate::signal::ParentCommand;
use crate::state::{State, Update};
use std::fmt;

/// A node's index in its graph, in the order nodes were added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The index (0 for the first node added).
    pub const fn index(self) -> usize {
        self.0 as usize
    }
    /// The id of the node added `index`-th. Generated code builds node ids this way.
    pub const fn from_index(index: usize) -> Self {
        Self(index as u32)
    }
}

/// Where a node or a router sends the run next.
pub enum Goto<S: State> {
    /// Trigger this node in the next step.
    Node(NodeId),
    /// Go nowhere (LangGraph's `END`): nothing is triggered.
    End,
    /// Run a node once in the next step with its own input (LangGraph's `Send`).
    Send(Packet<S>),
    /// Trigger the node of this name in the next step: resolved when the step is applied (how a
    /// subgraph's [`Command::to_parent`] names its parent's nodes).
    Named(String),
}

impl<S: State> fmt::Debug for Goto<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Node(id) => f.debug_tuple("Node").field(id).finish(),
            Self::End => f.write_str("End"),
            Self::Send(p) => f.debug_tuple("Send").field(&p.node).finish(),
            Self::Named(n) => f.debug_tuple("Named").field(n).finish(),
        }
    }
}

/// A node by name (see [`Goto::Named`]): `Command::new().goto("publish")`.
impl<S: State> From<&str> for Goto<S> {
    fn from(name: &str) -> Self {
        Self::Named(name.to_owned())
    }
}

impl<S: State> From<NodeId> for Goto<S> {
    fn from(id: NodeId) -> Self {
        Self::Node(id)
    }
}

/// What a node returns, in full: an update of the state and where to go next.
///
/// Most nodes return just an update; edges and routers then decide what runs next. A `Command`
/// adds destinations of its own (LangGraph's `Command(update=…, goto=…)`).
pub struct Command<S: State> {
    /// The node's writes.
    pub update: S::Update,
    /// Where to go, beside the node's edges.
    pub goto: Vec<Goto<S>>,
    /// A command for the graph this one runs in as a subgraph (LangGraph's
    /// `Command(graph=Command.PARENT)`): it ends this graph's run.
    pub parent: Option<ParentCommand>,
}

impl<S: State> Default for Command<S> {
    fn default() -> Self {
        Self {
            update: S::Update::default(),
            goto: Vec::new(),
            parent: None,
        }
    }
}

impl<S: State> fmt::Debug for Command<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Command")
            .field("update", &self.update)
            .field("goto", &self.goto)
            .finish()
    }
}

impl<S: State> Command<S> {
    /// A command that writes nothing and goes nowhere beside the node's edges.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the update.
    pub fn update(mut self, update: S::Update) -> Self {
        self.update = update;
        self
    }
    /// Adds a destination.
    pub fn goto(mut self, to: impl Into<Goto<S>>) -> Self {
        self.goto.push(to.into());
        self
    }

    /// A command for the parent graph: apply `update` (the parent's update type, serialized) to
    /// the parent's state and go to its nodes `goto`. The subgraph's run ends there.
    ///
    /// # Errors
    /// When `update` cannot be serialized.
    pub fn to_parent<I: Into<String>>(
        update: impl serde::Serialize,
        goto: impl IntoIterator<Item = I>,
    ) -> Result<Self, BoxError> {
        let update = serde_json::to_value(update)?;
        let goto = goto.into_iter().map(Into::into).collect();
        Ok(Self {
            parent: Some(ParentCommand { update, goto }),
            ..Self::default()
        })
    }
}

/// A value a node may return: an update, a [`Command`], `()` (no writes), a list of commands
/// (their updates concatenated in order), or a `Result` of those.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not something a node of `{S}` can return",
    note = "a node returns the state's update type, a `Command`, `()`, or a `Result` of those"
)]
pub trait NodeOutput<S: State> {
    /// Converts into a command.
    ///
    /// # Errors
    /// The node's own error, for a `Result`.
    fn into_command(self) -> Result<Command<S>, BoxError>;
}

impl<U: Update> NodeOutput<U::State> for U {
    fn into_command(self) -> Result<Command<U::State>, BoxError> {
        Ok(Command {
            update: self,
            goto: Vec::new(),
            parent: None,
        })
    }
}

impl<S: State> NodeOutput<S> for Command<S> {
    fn into_command(self) -> Result<Command<S>, BoxError> {
        Ok(self)
    }
}

impl<S: State> NodeOutput<S> for () {
    fn into_command(self) -> Result<Command<S>, BoxError> {
        Ok(Command::default())
    }
}

impl<S: State> NodeOutput<S> for Vec<Command<S>> {
    fn into_command(self) -> Result<Command<S>, BoxError> {
        let mut out = Command::<S>::default();
        for c in self {
            Update::merge(&mut out.update, c.update);
            out.goto.extend(c.goto);
            out.parent = out.parent.or(c.parent);
        }
        Ok(out)
    }
}

impl<S: State, T: NodeOutput<S>, E: Into<BoxError>> NodeOutput<S> for Result<T, E> {
    fn into_command(self) -> Result<Command<S>, BoxError> {
        self.map_err(crate::error::typed::box_typed)?.into_command()
    }
}

/// What a router may return: one destination, several, or none.
pub trait IntoGotos<S: State> {
    /// Appends the destinations to `out`.
    fn into_gotos(self, out: &mut Vec<Goto<S>>);
}

impl<S: State> IntoGotos<S> for Goto<S> {
    fn into_gotos(self, out: &mut Vec<Goto<S>>) {
        out.push(self);
    }
}

impl<S: State> IntoGotos<S> for NodeId {
    fn into_gotos(self, out: &mut Vec<Goto<S>>) {
        out.push(Goto::Node(self));
    }
}

impl<S: State, T: IntoGotos<S>> IntoGotos<S> for Vec<T> {
    fn into_gotos(self, out: &mut Vec<Goto<S>>) {
        for t in self {
            t.into_gotos(out);
        }
    }
}

impl<S: State, T: IntoGotos<S>> IntoGotos<S> for Option<T> {
    fn into_gotos(self, out: &mut Vec<Goto<S>>) {
        if let Some(t) = self {
            t.into_gotos(out);
        }
    }
}
