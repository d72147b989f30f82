//! The operations a [`Store`](super::Store) runs in a batch (LangGraph's `GetOp`, `PutOp`,
//! `SearchOp`, `ListNamespacesOp`) and what each gives back.

use super::{Item, SearchItem};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Reads one item.
#[derive(Debug, Clone, PartialEq)]
pub struct GetOp {
    /// The item's namespace.
    pub namespace: Vec<String>,
    /// The item's key.
    pub key: String,
    /// Whether to restart the item's TTL; `None` follows the store's [`TtlConfig`](super::TtlConfig).
    pub refresh_ttl: Option<bool>,
}

/// Which fields of a put value are embedded for search.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Index {
    /// The fields of the store's [`IndexConfig`](super::IndexConfig) (LangGraph's `index=None`).
    #[default]
    Default,
    /// Not indexed (LangGraph's `index=False`): found by filters, never by a query.
    Off,
    /// These field paths (`"title"`, `"sections[*].text"`, `"authors[0].name"`).
    Fields(Vec<String>),
}

/// Writes one item, or deletes it (`value: None`).
#[derive(Debug, Clone, PartialEq)]
pub struct PutOp {
    /// The item's namespace.
    pub namespace: Vec<String>,
    /// The item's key.
    pub key: String,
    /// The value (a JSON object), or `None` to delete the item.
    pub value: Option<Map<String, Value>>,
    /// Which fields to embed.
    pub index: Index,
    /// Minutes the item lives after its last write (or read, when reads refresh); `None` is the
    /// store's default TTL, if any.
    pub ttl: Option<f64>,
}

/// Finds items under a namespace prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOp {
    /// The labels every found item's namespace starts with (empty: all).
    pub namespace_prefix: Vec<String>,
    /// Conditions on the value's fields: `{"field": value}` (equality) or
    /// `{"field": {"$gt": 3}}` (`$eq $ne $gt $gte $lt $lte`); dotted paths reach nested fields.
    pub filter: Option<Map<String, Value>>,
    /// A natural-language query, ranking items by similarity when the store has an index.
    pub query: Option<String>,
    /// At most this many items (LangGraph's default is 10).
    pub limit: usize,
    /// Skips this many items first.
    pub offset: usize,
    /// Whether to restart the found items' TTLs; `None` follows the store's configuration.
    pub refresh_ttl: Option<bool>,
}

impl SearchOp {
    /// A search of everything under `prefix`, with LangGraph's defaults (limit 10).
    pub fn new(prefix: &[&str]) -> Self {
        Self {
            namespace_prefix: prefix.iter().map(|l| (*l).to_owned()).collect(),
            filter: None,
            query: None,
            limit: 10,
            offset: 0,
            refresh_ttl: None,
        }
    }
    /// Keeps the items whose value matches `filter` (a JSON object; see [`SearchOp::filter`]).
    pub fn filter(mut self, filter: Value) -> Self {
        self.filter = filter.as_object().cloned();
        self
    }
    /// Ranks by similarity to `query`.
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }
    /// Sets the limit.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
    /// Sets the offset.
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }
    /// Sets whether found items' TTLs restart.
    pub fn refresh_ttl(mut self, refresh: bool) -> Self {
        self.refresh_ttl = Some(refresh);
        self
    }
}

/// A condition on a namespace's first or last labels; `"*"` matches any one label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MatchCondition {
    /// The namespace starts with these labels.
    Prefix(Vec<String>),
    /// The namespace ends with these labels.
    Suffix(Vec<String>),
}

impl MatchCondition {
    /// Whether `namespace` meets the condition.
    pub fn matches(&self, namespace: &[String]) -> bool {
        let fits = |want: &[String], got: &[String]| want.iter().zip(got).all(|(w, g)| w == "*" || w == g);
        match self {
            Self::Prefix(p) => p.len() <= namespace.len() && fits(p, &namespace[..p.len()]),
            Self::Suffix(s) => s.len() <= namespace.len() && fits(s, &namespace[namespace.len() - s.len()..]),
        }
    }
}

/// Lists the namespaces that hold items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListNamespacesOp {
    /// Conditions every listed namespace meets.
    pub match_conditions: Vec<MatchCondition>,
    /// Truncates longer namespaces to this many labels (duplicates then listed once).
    pub max_depth: Option<usize>,
    /// At most this many namespaces (LangGraph's default is 100).
    pub limit: usize,
    /// Skips this many first.
    pub offset: usize,
}

impl Default for ListNamespacesOp {
    fn default() -> Self {
        Self {
            match_conditions: Vec::new(),
            max_depth: None,
            limit: 100,
            offset: 0,
        }
    }
}

/// One operation of a [`batch`](super::Store::batch).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Reads an item.
    Get(GetOp),
    /// Writes or deletes an item.
    Put(PutOp),
    /// Finds items.
    Search(SearchOp),
    /// Lists namespaces.
    ListNamespaces(ListNamespacesOp),
}

/// What one operation of a batch gave back, in the order of the operations.
#[derive(Debug, Clone, PartialEq)]
pub enum OpResult {
    /// A get's item, or `None`.
    Item(Option<Item>),
    /// A put or delete: nothing.
    Done,
    /// A search's items.
    Items(Vec<SearchItem>),
    /// A listing's namespaces.
    Namespaces(Vec<Vec<String>>),
}
