//! [`StoreError`]: why a store operation failed — bad input (a namespace, a filter, a TTL) or
//! the backend underneath (SQLite, PostgreSQL, the embeddings).

use crate::BoxError;
use std::fmt;

/// A failed store operation. Bad input names the thing at fault (`namespace ("a", "")`,
/// `filter operator $in`); a backend failure names the backend and keeps its error as `source()`.
#[derive(Debug)]
pub struct StoreError {
    kind: Kind,
    message: String,
    source: Option<BoxError>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Invalid,
    Backend,
}

impl StoreError {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self {
            kind: Kind::Invalid,
            message: message.into(),
            source: None,
        }
    }

    pub(crate) fn backend(context: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self {
            kind: Kind::Backend,
            message: context.into(),
            source: Some(source.into()),
        }
    }

    /// Whether the caller's input was at fault (a bad namespace, filter, TTL or index
    /// configuration), rather than the backend.
    pub fn is_invalid(&self) -> bool {
        self.kind == Kind::Invalid
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{}: {source}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}
