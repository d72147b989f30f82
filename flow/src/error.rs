//! What loading a flow can report, and what a run of one can fail with.

use std::fmt;

/// One problem with a flow file: a message naming the node or edge at fault, and the JSON path
/// of the value at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    message: String,
    path: String,
    id: Option<String>,
}

impl Diagnostic {
    pub(crate) fn new(path: impl Into<String>, id: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            path: path.into(),
            id: id.map(str::to_owned),
        }
    }

    /// What is wrong, naming the node or edge id in backticks.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Where, as a JSON path into the file: `$.nodes[2].data.branches[0]`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The id of the node or edge at fault, when there is one.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// A flow could not be loaded: every problem found, in file order within each rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    diagnostics: Vec<Diagnostic>,
}

impl LoadError {
    pub(crate) fn new(diagnostics: Vec<Diagnostic>) -> Self {
        debug_assert!(!diagnostics.is_empty());
        Self { diagnostics }
    }

    /// Every problem found.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The messages alone, in order.
    pub fn messages(&self) -> Vec<&str> {
        self.diagnostics.iter().map(Diagnostic::message).collect()
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

/// A run of a flow failed: a node failed (its message names it), the recursion limit was reached,
/// the input did not fit the state, or the run stopped before an end node while a join still
/// waited (the message names the join, what it waited for and what it had).
#[derive(Debug)]
pub struct RunError {
    message: String,
    node: Option<String>,
    /// The limit, when the run reached it.
    recursion_limit: Option<usize>,
    pause: Option<Box<crate::event::Pause>>,
    source: Option<Box<weir_runtime::Error>>,
}

impl RunError {
    pub(crate) fn input(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            node: None,
            recursion_limit: None,
            pause: None,
            source: None,
        }
    }

    /// A run stopped before an end node while the join `node` waited.
    pub(crate) fn stalled(node: &str, message: String) -> Self {
        Self::at_node(node, message)
    }

    /// A resume with a choice the paused `node` does not offer.
    pub(crate) fn choice(node: &str, message: String) -> Self {
        Self::at_node(node, message)
    }

    fn at_node(node: &str, message: String) -> Self {
        Self {
            message,
            node: Some(node.to_owned()),
            recursion_limit: None,
            pause: None,
            source: None,
        }
    }

    pub(crate) fn paused(pauses: Vec<crate::event::Pause>) -> Self {
        let first = pauses.into_iter().next();
        Self {
            message: first
                .as_ref()
                .map_or_else(|| "the run paused".to_owned(), ToString::to_string),
            node: first.as_ref().map(|p| p.node.clone()),
            recursion_limit: None,
            pause: first.map(Box::new),
            source: None,
        }
    }

    /// `limit` is the run's recursion limit, for the message.
    pub(crate) fn from_runtime(e: weir_runtime::Error, limit: usize) -> Self {
        let pause = e
            .pauses()
            .first()
            .map(|p| Box::new(crate::event::Pause::from_runtime(p)));
        // The runtime's message names its own `RunConfig`, which a flow's user never sees.
        let recursion_limit = e.is_recursion_limit().then_some(limit);
        let mut message = match recursion_limit {
            Some(limit) => recursion_message(limit, "with `LoadOptions::recursion_limit`"),
            None => e.to_string(),
        };
        let node = e.node_name().map(|n| {
            // A pausing output's asking node is the output, to the flow's user.
            let id = crate::node::flow_node(n);
            if id != n {
                message = message.replace(&format!("`{n}`"), &format!("`{id}`"));
            }
            id.to_owned()
        });
        Self {
            message,
            node,
            recursion_limit,
            pause,
            source: Some(Box::new(e)),
        }
    }

    /// The node that failed, when one did.
    pub fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    /// When the run stopped at an `output` node asking for a choice: the question.
    pub fn pause(&self) -> Option<&crate::event::Pause> {
        self.pause.as_deref()
    }

    /// Whether the run hit its recursion limit.
    pub fn is_recursion_limit(&self) -> bool {
        self.recursion_limit.is_some()
    }

    /// The same error, with a recursion limit's advice on raising it replaced by `how` (a front
    /// end's own way, such as a command-line flag); other errors are unchanged.
    #[must_use]
    pub fn raise_limit_with(mut self, how: &str) -> Self {
        if let Some(limit) = self.recursion_limit {
            self.message = recursion_message(limit, how);
        }
        self
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RunError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().and_then(|e| std::error::Error::source(&**e))
    }
}

fn recursion_message(limit: usize, how: &str) -> String {
    format!(
        "the run reached its recursion limit of {limit} steps before an end node; a loop may not \
         stop: check its condition, or raise the limit {how}"
    )
}

/// Names in backticks, comma-separated: `` `a`, `b` ``.
pub(crate) fn ticks<'s>(names: impl IntoIterator<Item = &'s str>) -> String {
    names
        .into_iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
