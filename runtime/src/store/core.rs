//! The semantics every backend shares: validation, TTL, embedding on put, filters, ranking,
//! pagination and namespace listing, run over a [`Backend`]'s rows.

use super::backend::{after, Backend, Row, Scan, Vectors, Write};
use super::filter::{check_filter, texts_at};
use super::item::{item_prefix, join, show, split};
use super::op::{GetOp, Index, ListNamespacesOp, Op, OpResult, PutOp, SearchOp};
use super::{cosine, Item, SearchItem, StoreConfig, StoreError, MAX_TTL_MINUTES};
use std::collections::BTreeSet;

/// A backend with the store's configuration.
#[derive(Debug)]
pub(crate) struct Core<B> {
    pub(crate) backend: B,
    pub(crate) config: StoreConfig,
}

impl<B: Backend> Core<B> {
    /// Runs `ops` in order, each seeing what the ones before it wrote. A run of puts goes to
    /// the backend as one write (one transaction); a read after it sees it.
    pub(crate) async fn batch(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, StoreError> {
        let mut results = Vec::with_capacity(ops.len());
        let mut writes = Vec::new();
        for op in ops {
            let op = match op {
                Op::Put(op) => match self.prepare(op).await {
                    Ok(w) => {
                        writes.push(w);
                        results.push(OpResult::Done);
                        continue;
                    }
                    Err(e) => {
                        self.flush(&mut writes).await?;
                        return Err(e);
                    }
                },
                read => read,
            };
            self.flush(&mut writes).await?;
            results.push(match op {
                Op::Get(op) => OpResult::Item(self.get(op).await?),
                Op::Search(op) => OpResult::Items(self.search(op).await?),
                Op::ListNamespaces(op) => OpResult::Namespaces(self.list_namespaces(op).await?),
                Op::Put(_) => unreachable!("puts were taken above"),
            });
        }
        self.flush(&mut writes).await?;
        Ok(results)
    }

    async fn flush(&self, writes: &mut Vec<Write>) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        self.backend.write(std::mem::take(writes)).await
    }

    /// Deletes the expired rows.
    pub(crate) async fn sweep(&self) -> Result<usize, StoreError> {
        self.backend.sweep(self.config.clock.now()).await
    }

    fn refreshes(&self, asked: Option<bool>) -> bool {
        asked.unwrap_or_else(|| self.config.ttl.as_ref().is_none_or(|t| t.refresh_on_read))
    }

    async fn get(&self, op: GetOp) -> Result<Option<Item>, StoreError> {
        self.get_at(item_prefix(&op.namespace)?, op.key, op.refresh_ttl).await
    }

    /// The item at `key` under the dot-joined `prefix` of a valid namespace: what
    /// [`Store::get`](super::Store::get) runs, without a batch around it.
    pub(crate) async fn get_at(
        &self,
        prefix: String,
        key: String,
        refresh_ttl: Option<bool>,
    ) -> Result<Option<Item>, StoreError> {
        let now = self.config.clock.now();
        let Some(row) = self.backend.get(&prefix, &key, now).await? else {
            return Ok(None);
        };
        if row.ttl_minutes.is_some() && self.refreshes(refresh_ttl) {
            self.backend.touch(vec![(prefix, key)], now).await?;
        }
        Ok(Some(item(row)))
    }

    /// A put's write: checked, its TTL decided, its fields embedded.
    async fn prepare(&self, op: PutOp) -> Result<Write, StoreError> {
        let prefix = item_prefix(&op.namespace)?;
        let Some(value) = op.value else {
            return Ok(Write::Delete { prefix, key: op.key });
        };
        let ttl = op.ttl.or_else(|| self.config.ttl.as_ref().and_then(|t| t.default_ttl));
        if let Some(t) = ttl.filter(|t| !(*t > 0.0 && *t <= MAX_TTL_MINUTES)) {
            return Err(StoreError::invalid(format!(
                "item {:?} in namespace {}: ttl must be a positive number of minutes up to {MAX_TTL_MINUTES}, not {t:?}",
                op.key,
                show(&op.namespace)
            )));
        }
        let value = serde_json::Value::Object(value);
        let vectors = self.embed(&value, &op.index).await?;
        let now = self.config.clock.now();
        let row = Row {
            prefix,
            key: op.key,
            value,
            created_at: now,
            updated_at: now,
            expires_at: ttl.map(|t| after(now, t)),
            ttl_minutes: ttl,
        };
        Ok(Write::Put(row, vectors))
    }

    /// The vectors of a value's indexed fields (none without an index or with `Index::Off`).
    async fn embed(&self, value: &serde_json::Value, index: &Index) -> Result<Vectors, StoreError> {
        let Some(config) = &self.config.index else {
            return Ok(Vec::new());
        };
        let paths = match index {
            Index::Off => return Ok(Vec::new()),
            Index::Default => &config.fields,
            Index::Fields(fields) => fields,
        };
        let mut names = Vec::new();
        let mut texts = Vec::new();
        for path in paths {
            for (i, text) in texts_at(value, path).into_iter().enumerate() {
                names.push(if i == 0 { path.clone() } else { format!("{path}#{i}") });
                texts.push(text);
            }
        }
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let vectors = config
            .embed
            .embed_documents(&texts)
            .await
            .map_err(|e| StoreError::backend("the embeddings failed", e))?;
        if let Some(v) = vectors.iter().find(|v| v.len() != config.dims) {
            return Err(StoreError::invalid(format!(
                "the embeddings gave a vector of {} dimensions; the index is configured with {}",
                v.len(),
                config.dims
            )));
        }
        Ok(names.into_iter().zip(vectors).collect())
    }

    async fn search(&self, op: SearchOp) -> Result<Vec<SearchItem>, StoreError> {
        if let Some(label) = op.namespace_prefix.iter().find(|l| l.is_empty() || l.contains('.')) {
            return Err(StoreError::invalid(format!(
                "namespace prefix {}: label {label:?} is empty or contains a `.`",
                show(&op.namespace_prefix)
            )));
        }
        if let Some(filter) = &op.filter {
            check_filter(filter)?;
        }
        let now = self.config.clock.now();
        let query = match (&op.query, &self.config.index) {
            (Some(q), Some(index)) => Some(
                index
                    .embed
                    .embed_query(q)
                    .await
                    .map_err(|e| StoreError::backend("the embeddings failed on the query", e))?,
            ),
            _ => None,
        };
        let prefix = join(&op.namespace_prefix);
        let scan = Scan {
            prefix: &prefix,
            now,
            filter: op.filter.as_ref(),
            vectors: query.is_some(),
            // Without a query the backend orders and pages (in SQL where it has it).
            page: query.is_none().then_some((op.offset, op.limit)),
        };
        let rows = self.backend.scan(scan).await?;
        let page: Vec<(Row, Option<f64>)> = match &query {
            None => rows.into_iter().map(|(row, _)| (row, None)).collect(),
            Some(q) => {
                let mut found: Vec<(Row, Option<f64>)> = rows
                    .into_iter()
                    .map(|(row, vectors)| {
                        let score = best_score(q, &vectors);
                        (row, score)
                    })
                    .collect();
                rank(&mut found);
                found.into_iter().skip(op.offset).take(op.limit).collect()
            }
        };
        if self.refreshes(op.refresh_ttl) {
            let keys: Vec<(String, String)> = page
                .iter()
                .filter(|(r, _)| r.ttl_minutes.is_some())
                .map(|(r, _)| (r.prefix.clone(), r.key.clone()))
                .collect();
            if !keys.is_empty() {
                self.backend.touch(keys, now).await?;
            }
        }
        Ok(page
            .into_iter()
            .map(|(row, score)| SearchItem { item: item(row), score })
            .collect())
    }

    async fn list_namespaces(&self, op: ListNamespacesOp) -> Result<Vec<Vec<String>>, StoreError> {
        let prefixes = self.backend.prefixes(self.config.clock.now()).await?;
        let listed: BTreeSet<Vec<String>> = prefixes
            .iter()
            .map(|p| split(p))
            .filter(|ns| op.match_conditions.iter().all(|c| c.matches(ns)))
            .map(|mut ns| {
                if let Some(depth) = op.max_depth {
                    ns.truncate(depth);
                }
                ns
            })
            .collect();
        Ok(listed.into_iter().skip(op.offset).take(op.limit).collect())
    }
}

/// The closest of an item's vectors to the query.
fn best_score(query: &[f32], vectors: &Vectors) -> Option<f64> {
    vectors.iter().map(|(_, v)| cosine(query, v)).reduce(f64::max)
}

/// A query ranks by score (items without vectors last); ties go by namespace and key, so every
/// backend gives one order.
fn rank(found: &mut [(Row, Option<f64>)]) {
    found.sort_by(|(a, sa), (b, sb)| {
        sb.unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&sa.unwrap_or(f64::NEG_INFINITY))
            .then_with(|| a.prefix.cmp(&b.prefix))
            .then_with(|| a.key.cmp(&b.key))
    });
}

fn item(row: Row) -> Item {
    Item {
        namespace: split(&row.prefix),
        key: row.key,
        value: row.value,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}
