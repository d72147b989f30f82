//! The error of a checkpoint saver.

use crate::error::BoxError;
use std::fmt;

/// A saver could not store or load a checkpoint.
///
/// Messages are short, lower-case and name the thread, checkpoint, file or schema at fault. Ask
/// what happened with the predicates ([`is_conflict`](Self::is_conflict), …); the underlying
/// database error, if any, is the [`source`](std::error::Error::source).
#[derive(Debug)]
pub struct SaverError {
    kind: Kind,
    source: Option<BoxError>,
}

#[derive(Debug)]
enum Kind {
    /// Another writer moved the head, or the checkpoint id exists.
    Conflict { thread: String, ns: String, detail: String },
    /// The store was written by a newer weir.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    SchemaTooNew { store: String, found: i64, supported: i64 },
    /// Stored data does not hold together (a missing blob, an undecodable row).
    Corrupt {
        thread: String,
        checkpoint: String,
        detail: String,
    },
    /// The caller handed the saver something it cannot store.
    Invalid { thread: Option<String>, detail: String },
    /// The database failed (I/O, connection, SQL).
    Backend { context: String },
    /// A read of a checkpoint that retention removed (or that never existed before the
    /// thread's pruned part ended).
    Pruned {
        thread: String,
        ns: String,
        checkpoint: String,
        through: String,
    },
}

impl SaverError {
    pub(crate) fn conflict(thread: &str, ns: &str, detail: impl Into<String>) -> Self {
        Self::new(Kind::Conflict {
            thread: thread.to_owned(),
            ns: ns.to_owned(),
            detail: detail.into(),
        })
    }
    pub(crate) fn head_moved(thread: &str, ns: &str, expected: Option<&str>, found: Option<&str>) -> Self {
        let show = |id: Option<&str>| id.map_or_else(|| "none".to_owned(), |id| format!("`{id}`"));
        Self::conflict(
            thread,
            ns,
            format!("expected head {}, found {}", show(expected), show(found)),
        )
    }
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn schema_too_new(store: impl Into<String>, found: i64, supported: i64) -> Self {
        Self::new(Kind::SchemaTooNew {
            store: store.into(),
            found,
            supported,
        })
    }
    pub(crate) fn corrupt(thread: &str, checkpoint: &str, detail: impl Into<String>) -> Self {
        Self::new(Kind::Corrupt {
            thread: thread.to_owned(),
            checkpoint: checkpoint.to_owned(),
            detail: detail.into(),
        })
    }
    pub(crate) fn invalid(thread: &str, detail: impl Into<String>) -> Self {
        Self::new(Kind::Invalid {
            thread: Some(thread.to_owned()),
            detail: detail.into(),
        })
    }
    pub(crate) fn pruned(thread: &str, ns: &str, checkpoint: &str, through: &str) -> Self {
        Self::new(Kind::Pruned {
            thread: thread.to_owned(),
            ns: ns.to_owned(),
            checkpoint: checkpoint.to_owned(),
            through: through.to_owned(),
        })
    }
    pub(crate) fn config(detail: impl Into<String>) -> Self {
        Self::new(Kind::Invalid {
            thread: None,
            detail: detail.into(),
        })
    }
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn backend(context: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self {
            kind: Kind::Backend {
                context: context.into(),
            },
            source: Some(source.into()),
        }
    }
    fn new(kind: Kind) -> Self {
        Self { kind, source: None }
    }

    /// Another writer moved the thread's head since the caller read it (or the checkpoint id was
    /// taken): nothing was stored. Reload the thread and decide again.
    pub fn is_conflict(&self) -> bool {
        matches!(self.kind, Kind::Conflict { .. })
    }
    /// The store (file or schema) was written by a newer weir; it was left untouched.
    pub fn is_schema_too_new(&self) -> bool {
        matches!(self.kind, Kind::SchemaTooNew { .. })
    }
    /// Stored data does not hold together: a blob a checkpoint points at is missing, or a row
    /// cannot be decoded.
    pub fn is_corrupt(&self) -> bool {
        matches!(self.kind, Kind::Corrupt { .. })
    }
    /// The caller asked for something a saver cannot store (a channel pointing at a blob the
    /// record lacks, a delta onto nothing, writes against an unknown checkpoint); nothing was
    /// stored. Also a saver's configuration that cannot work (a bad schema name).
    pub fn is_invalid(&self) -> bool {
        matches!(self.kind, Kind::Invalid { .. })
    }
    /// A read asked for a checkpoint of a thread that retention has pruned: its id is not
    /// greater than the id the thread was pruned through. (A checkpoint that is missing with a
    /// greater id never existed: the read finds nothing, with no error.)
    pub fn is_pruned(&self) -> bool {
        matches!(self.kind, Kind::Pruned { .. })
    }
    /// The thread at fault, where there is one.
    pub fn thread_id(&self) -> Option<&str> {
        match &self.kind {
            Kind::Conflict { thread, .. } | Kind::Corrupt { thread, .. } | Kind::Pruned { thread, .. } => Some(thread),
            Kind::Invalid { thread, .. } => thread.as_deref(),
            _ => None,
        }
    }
}

impl fmt::Display for SaverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Conflict { thread, ns, detail } => {
                write!(f, "checkpoint conflict on thread `{thread}`")?;
                if !ns.is_empty() {
                    write!(f, " (namespace `{ns}`)")?;
                }
                write!(f, ": {detail}; another writer is running this thread")
            }
            Kind::SchemaTooNew {
                store,
                found,
                supported,
            } => write!(
                f,
                "{store} has checkpoint schema version {found}, newer than version {supported} that this weir \
                 supports; it was left untouched, open it with a newer weir"
            ),
            Kind::Corrupt {
                thread,
                checkpoint,
                detail,
            } => {
                write!(f, "corrupt checkpoint `{checkpoint}` of thread `{thread}`: {detail}")
            }
            Kind::Invalid {
                thread: Some(thread),
                detail,
            } => {
                write!(f, "invalid checkpoint data for thread `{thread}`: {detail}")
            }
            Kind::Invalid { thread: None, detail } => write!(f, "invalid saver configuration: {detail}"),
            // The cause is said too: "… failed" alone does not tell a full disk from a lost
            // connection.
            Kind::Backend { context } => match &self.source {
                Some(source) => write!(f, "{context}: {source}"),
                None => f.write_str(context),
            },
            Kind::Pruned {
                thread,
                ns,
                checkpoint,
                through,
            } => {
                write!(f, "checkpoint `{checkpoint}` of thread `{thread}`")?;
                if !ns.is_empty() {
                    write!(f, " (namespace `{ns}`)")?;
                }
                write!(
                    f,
                    " was pruned: retention removed the thread's checkpoints up to `{through}`"
                )
            }
        }
    }
}

impl std::error::Error for SaverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}
