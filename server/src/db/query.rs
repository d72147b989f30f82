//! The searches' SQL, shared by both backends: the `WHERE` clause of a filter, the `ORDER BY` of
//! a sort, the page; each in the dialect of its backend, with the arguments to bind in order.

use super::{AssistantQuery, CronQuery, ThreadQuery, VersionQuery};
use crate::model::Object;

/// Which database the SQL is for: they differ in placeholders, JSON and arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// An argument of a search.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    /// A text (an id, a name, a status).
    Text(String),
    /// A JSON document, as text (a containment pattern).
    Json(String),
    /// A list of texts (ids).
    Texts(Vec<String>),
}

/// The `WHERE` clause (empty, or starting with ` WHERE`) and its arguments.
#[derive(Debug, Default)]
pub(crate) struct Filter {
    pub(crate) sql: String,
    pub(crate) args: Vec<Arg>,
}

impl Filter {
    fn placeholder(&self, dialect: Dialect) -> String {
        match dialect {
            Dialect::Sqlite => format!("?{}", self.args.len()),
            Dialect::Postgres => format!("${}", self.args.len()),
        }
    }

    fn push(&mut self, condition: &str) {
        self.sql.push_str(if self.sql.is_empty() { " WHERE " } else { " AND " });
        self.sql.push_str(condition);
    }

    fn equals(&mut self, dialect: Dialect, column: &str, value: &str) {
        self.args.push(Arg::Text(value.to_owned()));
        let p = self.placeholder(dialect);
        self.push(&format!("{column} = {p}"));
    }

    fn contains(&mut self, dialect: Dialect, column: &str, pattern: &Object) {
        self.args
            .push(Arg::Json(serde_json::Value::Object(pattern.clone()).to_string()));
        let p = self.placeholder(dialect);
        self.push(&match dialect {
            Dialect::Sqlite => format!("server_json_contains({column}, {p})"),
            Dialect::Postgres => format!("{column} @> {p}::text::jsonb"),
        });
    }

    fn one_of(&mut self, dialect: Dialect, column: &str, values: &[String]) {
        match dialect {
            Dialect::Sqlite => {
                self.args
                    .push(Arg::Json(serde_json::to_string(values).expect("strings serialize")));
                let p = self.placeholder(dialect);
                self.push(&format!("{column} IN (SELECT value FROM json_each({p}))"));
            }
            Dialect::Postgres => {
                self.args.push(Arg::Texts(values.to_vec()));
                let p = self.placeholder(dialect);
                self.push(&format!("{column} = ANY({p}::text[])"));
            }
        }
    }
}

/// The filter of an assistant search.
pub(crate) fn assistant_filter(dialect: Dialect, query: &AssistantQuery) -> Filter {
    let mut filter = Filter::default();
    if let Some(graph_id) = &query.graph_id {
        filter.equals(dialect, "graph_id", graph_id);
    }
    if let Some(name) = &query.name {
        filter.equals(dialect, "name", name);
    }
    if let Some(metadata) = &query.metadata {
        filter.contains(dialect, "metadata", metadata);
    }
    filter
}

/// The filter of an assistant's versions.
pub(crate) fn version_filter(dialect: Dialect, assistant_id: &str, query: &VersionQuery) -> Filter {
    let mut filter = Filter::default();
    filter.equals(dialect, "assistant_id", assistant_id);
    if let Some(metadata) = &query.metadata {
        filter.contains(dialect, "metadata", metadata);
    }
    filter
}

/// The filter of a thread search.
pub(crate) fn thread_filter(dialect: Dialect, query: &ThreadQuery) -> Filter {
    let mut filter = Filter::default();
    if let Some(ids) = &query.ids {
        filter.one_of(dialect, "thread_id", ids);
    }
    if let Some(status) = query.status {
        filter.equals(dialect, "status", &super::rows::name_of(&status));
    }
    if let Some(metadata) = &query.metadata {
        filter.contains(dialect, "metadata", metadata);
    }
    if let Some(values) = &query.values {
        filter.contains(dialect, "\"values\"", values);
    }
    filter
}

/// The filter of a cron search.
pub(crate) fn cron_filter(dialect: Dialect, query: &CronQuery) -> Filter {
    let mut filter = Filter::default();
    if let Some(assistant_id) = &query.assistant_id {
        filter.equals(dialect, "assistant_id", assistant_id);
    }
    if let Some(thread_id) = &query.thread_id {
        filter.equals(dialect, "thread_id", thread_id);
    }
    if let Some(enabled) = query.enabled {
        filter.push(match (dialect, enabled) {
            (Dialect::Sqlite, true) => "enabled = 1",
            (Dialect::Sqlite, false) => "enabled = 0",
            (Dialect::Postgres, true) => "enabled",
            (Dialect::Postgres, false) => "NOT enabled",
        });
    }
    if let Some(metadata) = &query.metadata {
        filter.contains(dialect, "metadata", metadata);
    }
    filter
}

/// ` ORDER BY … LIMIT … OFFSET …` of a cron search (its sort checked by the caller).
pub(crate) fn cron_order(dialect: Dialect, query: &CronQuery) -> String {
    let by = query.sort_by.as_deref().map(super::rows::cron_sort_column);
    order_and_page(
        dialect,
        by,
        query.sort_order.as_deref(),
        "cron_id",
        query.limit,
        query.offset,
    )
}

/// The counts of pending and running runs ([`super::QueueStats`]).
pub(crate) const QUEUE_COUNTS: &str = "SELECT (SELECT COUNT(*) FROM server_runs WHERE status = 'pending'),
    (SELECT COUNT(*) FROM server_runs WHERE status = 'running')";

/// When the oldest pending run was made.
pub(crate) const OLDEST_PENDING: &str = "SELECT MIN(created_at) FROM server_runs WHERE status = 'pending'";

/// When the oldest pending run whose thread runs nothing was made.
pub(crate) const OLDEST_UNBLOCKED: &str = "SELECT MIN(r.created_at) FROM server_runs r WHERE r.status = 'pending'
    AND NOT EXISTS (SELECT 1 FROM server_runs o WHERE o.thread_id = r.thread_id AND o.status = 'running')";

/// When the pending run at the offset bound first (half their number: the median) was made.
pub(crate) fn median_pending(dialect: Dialect) -> String {
    let p = match dialect {
        Dialect::Sqlite => "?1",
        Dialect::Postgres => "$1",
    };
    format!("SELECT created_at FROM server_runs WHERE status = 'pending' ORDER BY created_at LIMIT 1 OFFSET {p}")
}

/// Checks a sort: the field is one of `fields`, the order `asc` or `desc` (any case). The
/// message names the field at fault (`` `sort_by`: … ``), which the API prefixes with where it
/// was given.
pub(crate) fn check_sort(by: Option<&str>, order: Option<&str>, fields: &[&str]) -> Result<(), String> {
    if let Some(by) = by.filter(|by| !fields.contains(by)) {
        return Err(format!("`sort_by`: `{by}` is not one of {}", fields.join(", ")));
    }
    if let Some(order) = order.filter(|o| !o.eq_ignore_ascii_case("asc") && !o.eq_ignore_ascii_case("desc")) {
        return Err(format!("`sort_order`: `{order}` is not `asc` or `desc`"));
    }
    Ok(())
}

/// ` ORDER BY … LIMIT … OFFSET …` for a checked sort; `key` breaks ties (the primary key).
pub(crate) fn order_and_page(
    dialect: Dialect,
    by: Option<&str>,
    order: Option<&str>,
    key: &str,
    limit: usize,
    offset: usize,
) -> String {
    let by = by.unwrap_or("created_at");
    let dir = match order {
        Some(o) if o.eq_ignore_ascii_case("asc") => "ASC",
        _ => "DESC",
    };
    let mut sql = format!(" ORDER BY {by} {dir}");
    if by != key {
        sql.push_str(&format!(", {key} {dir}"));
    }
    sql.push_str(&page(dialect, limit, offset));
    sql
}

/// ` LIMIT … OFFSET …`, 0 being no limit.
pub(crate) fn page(dialect: Dialect, limit: usize, offset: usize) -> String {
    let (limit, offset) = (sql_count(limit), sql_count(offset));
    match (limit, dialect) {
        (0, Dialect::Sqlite) => format!(" LIMIT -1 OFFSET {offset}"),
        (0, Dialect::Postgres) => format!(" OFFSET {offset}"),
        (limit, _) => format!(" LIMIT {limit} OFFSET {offset}"),
    }
}

/// `n` as a row count SQL takes: both databases count in signed 64 bits, so a larger one (a
/// client's `limit` of `u64::MAX`, "all" asked as `usize::MAX`) is the largest they take, which
/// means the same.
pub(crate) fn sql_count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_thread_filter_numbers_its_placeholders_in_each_dialect() {
        let query = ThreadQuery {
            ids: Some(vec!["t1".into()]),
            metadata: Some(json!({"user": "u1"}).as_object().unwrap().clone()),
            ..ThreadQuery::default()
        };
        let pg = thread_filter(Dialect::Postgres, &query);
        assert_eq!(
            pg.sql,
            " WHERE thread_id = ANY($1::text[]) AND metadata @> $2::text::jsonb"
        );
        assert_eq!(pg.args[1], Arg::Json(r#"{"user":"u1"}"#.into()));
        let lite = thread_filter(Dialect::Sqlite, &query);
        assert_eq!(
            lite.sql,
            " WHERE thread_id IN (SELECT value FROM json_each(?1)) AND server_json_contains(metadata, ?2)"
        );
    }

    #[test]
    fn a_bad_sort_is_named_with_what_is_allowed() {
        let err = check_sort(Some("colour"), None, &["name"]).unwrap_err();
        assert_eq!(err, "`sort_by`: `colour` is not one of name");
        let err = check_sort(None, Some("up"), &["name"]).unwrap_err();
        assert_eq!(err, "`sort_order`: `up` is not `asc` or `desc`");
        assert_eq!(
            order_and_page(Dialect::Sqlite, Some("name"), Some("ASC"), "id", 0, 5),
            " ORDER BY name ASC, id ASC LIMIT -1 OFFSET 5"
        );
    }
}
