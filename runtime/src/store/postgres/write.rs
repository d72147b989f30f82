//! A batch of the PostgreSQL store's writes in two statements: the puts as one upsert of
//! `unnest`ed arrays and the deletes as one `DELETE`, whatever their number (LangGraph's
//! PostgresStore sends one multi-row `INSERT` too). A key written several times in the batch
//! is written once, as the last write left it (deleted first when a delete came before its last
//! puts): the result the writes in order would give.

use super::Fail;
use crate::checkpoint::Timestamp;
use crate::store::backend::{Row, Vectors, Write};
use std::collections::HashMap;
use tokio_postgres::Transaction;

/// Inserts or replaces the rows of the arrays `$1`…`$7` (prefix, key, value, creation, update
/// and expiry times as text, TTL), keeping a live row's `created_at`.
const UPSERT: &str = "INSERT INTO store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes)
     SELECT p, k, v::jsonb, c::timestamptz, u::timestamptz, e::timestamptz, t
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::float8[])
         AS w(p, k, v, c, u, e, t)
     ON CONFLICT (prefix, key) DO UPDATE SET value = EXCLUDED.value,
         updated_at = EXCLUDED.updated_at, expires_at = EXCLUDED.expires_at,
         ttl_minutes = EXCLUDED.ttl_minutes,
         created_at = CASE WHEN store.expires_at IS NOT NULL AND store.expires_at <= EXCLUDED.updated_at
                      THEN EXCLUDED.created_at ELSE store.created_at END";

/// Deletes the rows whose prefixes and keys are the arrays `$1` and `$2` (their vectors go
/// with them: `store_vectors` cascades).
const DELETE: &str = "DELETE FROM store WHERE (prefix, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))";

/// What a batch of writes leaves: per key, its last write.
pub(super) struct Batch<'w> {
    /// The rows put, with the creation time to store when no live row is replaced: the first
    /// put's of the run of puts that ends the key's writes.
    puts: Vec<(&'w Row, &'w Vectors, Timestamp)>,
    /// The keys deleted, run before the puts: those whose last write is a delete, and those put
    /// after a delete (their puts replace no row).
    deletes: Vec<(&'w str, &'w str)>,
}

/// A key's writes in a batch: the index of its last, the creation time its last run of puts
/// carries, and whether a delete came before that run.
#[derive(Clone, Copy)]
struct Last {
    at: usize,
    created: Option<Timestamp>,
    deleted: bool,
}

impl<'w> Batch<'w> {
    /// The last write of each key of `writes`, in the order of those last writes.
    pub(super) fn of(writes: &'w [Write]) -> Self {
        let mut last: HashMap<(&str, &str), Last> = HashMap::with_capacity(writes.len());
        for (i, w) in writes.iter().enumerate() {
            match w {
                Write::Put(row, _) => {
                    let slot = last.entry((&row.prefix, &row.key)).or_insert(Last {
                        at: i,
                        created: None,
                        deleted: false,
                    });
                    slot.at = i;
                    slot.created = Some(slot.created.unwrap_or(row.created_at));
                }
                Write::Delete { prefix, key } => {
                    let deleted = Last {
                        at: i,
                        created: None,
                        deleted: true,
                    };
                    last.insert((prefix, key), deleted);
                }
            }
        }
        let mut order: Vec<Last> = last.into_values().collect();
        order.sort_unstable_by_key(|l| l.at);
        let mut batch = Batch {
            puts: Vec::new(),
            deletes: Vec::new(),
        };
        for l in order {
            match &writes[l.at] {
                Write::Put(row, vectors) => {
                    if l.deleted {
                        batch.deletes.push((&row.prefix, &row.key));
                    }
                    batch.puts.push((row, vectors, l.created.unwrap_or(row.created_at)));
                }
                Write::Delete { prefix, key } => batch.deletes.push((prefix, key)),
            }
        }
        batch
    }

    /// Runs the batch in `tx`; `vectors`: whether the store keeps vectors.
    pub(super) async fn run(&self, tx: &Transaction<'_>, vectors: bool) -> Result<(), Fail> {
        if !self.deletes.is_empty() {
            let (prefixes, keys): (Vec<&str>, Vec<&str>) = self.deletes.iter().copied().unzip();
            tx.execute(DELETE, &[&prefixes, &keys]).await?;
        }
        if self.puts.is_empty() {
            return Ok(());
        }
        let n = self.puts.len();
        let mut columns = Columns::with_capacity(n);
        for (row, _, created) in &self.puts {
            columns.prefixes.push(&row.prefix);
            columns.keys.push(&row.key);
            columns.values.push(row.value.to_string());
            columns.created.push(created.to_string());
            columns.updated.push(row.updated_at.to_string());
            columns.expires.push(row.expires_at.map(|t| t.to_string()));
            columns.ttls.push(row.ttl_minutes);
        }
        let c = &columns;
        tx.execute(
            UPSERT,
            &[
                &c.prefixes,
                &c.keys,
                &c.values,
                &c.created,
                &c.updated,
                &c.expires,
                &c.ttls,
            ],
        )
        .await?;
        if vectors {
            for (row, vectors, _) in &self.puts {
                put_vectors(tx, row, vectors).await?;
            }
        }
        Ok(())
    }
}

/// The upsert's arrays.
struct Columns<'w> {
    prefixes: Vec<&'w str>,
    keys: Vec<&'w str>,
    values: Vec<String>,
    created: Vec<String>,
    updated: Vec<String>,
    expires: Vec<Option<String>>,
    ttls: Vec<Option<f64>>,
}

impl Columns<'_> {
    fn with_capacity(n: usize) -> Self {
        Columns {
            prefixes: Vec::with_capacity(n),
            keys: Vec::with_capacity(n),
            values: Vec::with_capacity(n),
            created: Vec::with_capacity(n),
            updated: Vec::with_capacity(n),
            expires: Vec::with_capacity(n),
            ttls: Vec::with_capacity(n),
        }
    }
}

/// Replaces a row's vectors in `store_vectors`.
async fn put_vectors(tx: &Transaction<'_>, row: &Row, vectors: &Vectors) -> Result<(), Fail> {
    tx.execute(
        "DELETE FROM store_vectors WHERE prefix = $1 AND key = $2",
        &[&row.prefix, &row.key],
    )
    .await?;
    for (field, v) in vectors {
        tx.execute(
            "INSERT INTO store_vectors (prefix, key, field_name, embedding) VALUES ($1, $2, $3, $4::text::vector)",
            &[&row.prefix, &row.key, field, &vector_text(v)],
        )
        .await?;
    }
    Ok(())
}

fn vector_text(v: &[f32]) -> String {
    let parts: Vec<String> = v.iter().map(f32::to_string).collect();
    format!("[{}]", parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn put(key: &str, at: u64) -> Write {
        let t = Timestamp::from_unix_micros(at);
        Write::Put(
            Row {
                prefix: "ns".into(),
                key: key.into(),
                value: json!({"at": at}),
                created_at: t,
                updated_at: t,
                expires_at: None,
                ttl_minutes: None,
            },
            Vec::new(),
        )
    }

    fn delete(key: &str) -> Write {
        Write::Delete {
            prefix: "ns".into(),
            key: key.into(),
        }
    }

    #[test]
    fn a_key_written_several_times_is_written_once_as_the_last_write_left_it() {
        let writes = [
            put("a", 1),
            put("b", 2),
            put("a", 3),
            delete("b"),
            put("c", 4),
            delete("c"),
            put("c", 5),
            delete("d"),
        ];
        let batch = Batch::of(&writes);
        let puts: Vec<(&str, serde_json::Value, u64)> = batch
            .puts
            .iter()
            .map(|(row, _, created)| (row.key.as_str(), row.value.clone(), created.unix_micros()))
            .collect();
        // `a`: its second value, created when first put; `c`: put again after its delete, so
        // deleted first (the put replaces no row).
        assert_eq!(puts, [("a", json!({"at": 3}), 1), ("c", json!({"at": 5}), 5)]);
        assert_eq!(batch.deletes, [("ns", "b"), ("ns", "c"), ("ns", "d")]);
    }
}
