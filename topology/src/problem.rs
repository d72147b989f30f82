//! What [`check`](crate::check) reports.

use std::fmt;

use crate::decl::Site;

/// One problem with a graph's wiring, at the site of the token at fault.
///
/// Its [`Display`](fmt::Display) is the message shown to the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The token at fault.
    pub site: Site,
    /// What is wrong.
    pub kind: ProblemKind,
    /// Other sites worth pointing at (the first declaration of a duplicate, the other node's
    /// write), in the order the message names them.
    pub related: Vec<Site>,
}

impl Problem {
    pub(crate) fn new(site: Site, kind: ProblemKind) -> Self {
        Problem {
            site,
            kind,
            related: Vec::new(),
        }
    }

    pub(crate) fn with_related(mut self, site: Site) -> Self {
        self.related.push(site);
        self
    }
}

/// The kinds of [`Problem`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProblemKind {
    /// A node named like `START` or `END` (or their internal names `__start__`, `__end__`).
    ReservedName {
        /// The name.
        name: String,
    },
    /// A node declared a second time; reported at the second declaration, related to the first.
    DuplicateNode {
        /// The name.
        name: String,
    },
    /// A name in an edge, join, route or send that no node declares.
    UnknownNode {
        /// The unknown name.
        name: String,
        /// The closest declared name, if close enough.
        suggestion: Option<String>,
        /// Every declared node, in declaration order, for when there is no suggestion.
        declared: Vec<String>,
    },
    /// `END` used as the source of a connection.
    FromEnd {
        /// The connection.
        what: ConnectionKind,
    },
    /// `START` used as the target of a connection.
    IntoStart {
        /// The connection.
        what: ConnectionKind,
    },
    /// A send whose target is `END`.
    SendToEnd,
    /// A join with no predecessors.
    EmptyJoin,
    /// A join that names the same predecessor twice; reported at the second mention.
    DuplicateJoinSource {
        /// The predecessor.
        name: String,
    },
    /// A route with no targets.
    EmptyRoute,
    /// Nothing leaves `START`; reported at the graph's own site.
    NoEntry,
    /// No path from `START` leads to the node.
    Unreachable {
        /// The node.
        name: String,
    },
    /// Every path from the node loops forever: it never reaches `END` nor a node that stops.
    NoPathToEnd {
        /// The node.
        name: String,
    },
    /// Two nodes that can run in the same step both write a single-value field; reported at the
    /// second node's write, related to the first's.
    WriteConflict {
        /// The node declared first.
        first: String,
        /// The node declared second.
        second: String,
        /// The field.
        field: String,
    },
    /// A node started by `Send` can run several times in one step and writes a single-value field.
    SendWriteConflict {
        /// The node.
        node: String,
        /// The field.
        field: String,
    },
    /// A join whose target a loop leads back to one of its sources but not to another, and
    /// enters only through the join (see [`starving_joins`](crate::starving_joins)).
    StarvingJoin {
        /// The join's target.
        target: String,
        /// A source the loop runs again.
        looped: String,
        /// A source the loop never runs again.
        left: String,
    },
}

/// The kind of connection a [`ProblemKind::FromEnd`] or [`ProblemKind::IntoStart`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnectionKind {
    /// A plain edge.
    Edge,
    /// A join.
    Join,
    /// A conditional route.
    Route,
    /// A send.
    Send,
}

impl fmt::Display for ConnectionKind {
    /// The connection with its article: `an edge`, `a join`, `a route`, `a send`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConnectionKind::Edge => "an edge",
            ConnectionKind::Join => "a join",
            ConnectionKind::Route => "a route",
            ConnectionKind::Send => "a send",
        })
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, f)
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProblemKind::ReservedName { name } => write!(
                f,
                "node name `{name}` is reserved for START and END; choose another name"
            ),
            ProblemKind::DuplicateNode { name } => {
                write!(f, "node `{name}` is declared twice; node names must be unique")
            }
            ProblemKind::UnknownNode {
                name,
                suggestion,
                declared,
            } => {
                write!(f, "unknown node `{name}`; ")?;
                if let Some(suggestion) = suggestion {
                    write!(f, "did you mean `{suggestion}`?")
                } else if declared.is_empty() {
                    f.write_str("no nodes are declared")
                } else {
                    f.write_str("declared nodes are ")?;
                    for (i, node) in declared.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        write!(f, "`{node}`")?;
                    }
                    Ok(())
                }
            }
            ProblemKind::FromEnd { what } => write!(f, "END cannot be the source of {what}; nothing runs after END"),
            ProblemKind::IntoStart { what } => {
                write!(f, "START cannot be the target of {what}; START only begins the run")
            }
            ProblemKind::SendToEnd => f.write_str("a send cannot target END; send packets go to a node"),
            ProblemKind::EmptyJoin => f.write_str("join has no predecessors; list the nodes it waits for"),
            ProblemKind::DuplicateJoinSource { name } => {
                write!(f, "join names `{name}` twice; list each predecessor once")
            }
            ProblemKind::EmptyRoute => f.write_str("route has no targets; map each choice to a node or END"),
            ProblemKind::NoEntry => f.write_str("the graph has no entry: add an edge from START"),
            ProblemKind::Unreachable { name } => write!(
                f,
                "node `{name}` is unreachable: no path from START leads to it; \
                 add an edge into it or remove it"
            ),
            ProblemKind::NoPathToEnd { name } => write!(
                f,
                "node `{name}` never reaches END: every path from it loops forever; \
                 add an edge or a route to END"
            ),
            ProblemKind::WriteConflict { first, second, field } => write!(
                f,
                "nodes `{first}` and `{second}` can run in the same step and both write \
                 `{field}`, which takes one value per step; give `{field}` a reducer or let \
                 one of them write it"
            ),
            ProblemKind::SendWriteConflict { node, field } => write!(
                f,
                "node `{node}` can run several times in the same step (once per Send) and \
                 writes `{field}`, which takes one value per step; give `{field}` a reducer or \
                 write it from a node that runs once"
            ),
            ProblemKind::StarvingJoin { target, looped, left } => write!(
                f,
                "join into `{target}` can starve: after `{target}` runs, a loop leads back to \
                 `{looped}` but never to `{left}`, so the next time `{target}` waits for `{left}` \
                 forever"
            ),
        }
    }
}

impl std::error::Error for Problem {}
