//! The API objects as table rows, for both backends: the columns the searches filter and sort on,
//! and the rest of the object as one JSON document; and back. Also the wire timestamp of "now".

use super::DbError;
use crate::model::{Assistant, Cron, Run, RunStatus, Thread, TtlStrategy};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

pub(crate) use crate::model::now;

/// The wire name of a unit enum variant (`"idle"`, `"pending"`).
pub(crate) fn name_of<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        other => panic!("a status serializes as a string, not {other:?}"),
    }
}

/// The TTL strategy stored for thread `id` as `name`; one this weir does not know is the
/// table's fault, named.
pub(crate) fn ttl_strategy(id: &str, name: &str) -> Result<TtlStrategy, DbError> {
    TtlStrategy::parse(name).map_err(|e| DbError::Backend(format!("thread `{id}`'s stored TTL: {e}")))
}

/// The run status stored as `name`.
pub(crate) fn run_status(name: &str) -> Result<RunStatus, DbError> {
    serde_json::from_value(Value::String(name.to_owned()))
        .map_err(|_| DbError::Backend(format!("a stored run has the unknown status `{name}`")))
}

/// `value` as a JSON object without the `fields`, which come back as texts, in order.
fn split<T: Serialize>(value: &T, fields: &[&str]) -> (String, Vec<String>) {
    let mut object = match serde_json::to_value(value) {
        Ok(Value::Object(object)) => object,
        other => panic!("an API object serializes as a JSON object, not {other:?}"),
    };
    let taken = fields
        .iter()
        .map(|f| object.remove(*f).unwrap_or(Value::Null).to_string())
        .collect();
    (Value::Object(object).to_string(), taken)
}

/// The object of `kind` `id` from its document and the split-off `fields`.
fn join<T: DeserializeOwned>(kind: &str, id: &str, doc: &str, fields: &[(&str, &str)]) -> Result<T, DbError> {
    let bad = |e: serde_json::Error| DbError::Backend(format!("the stored {kind} `{id}` cannot be read: {e}"));
    let mut object: Map<String, Value> = serde_json::from_str(doc).map_err(bad)?;
    for (name, text) in fields {
        object.insert((*name).to_owned(), serde_json::from_str(text).map_err(bad)?);
    }
    serde_json::from_value(Value::Object(object)).map_err(bad)
}

/// An assistant's row.
pub(crate) struct AssistantRow {
    pub(crate) metadata: String,
    pub(crate) doc: String,
}

impl AssistantRow {
    pub(crate) fn new(assistant: &Assistant) -> Self {
        let (doc, mut taken) = split(assistant, &["metadata"]);
        AssistantRow {
            metadata: taken.remove(0),
            doc,
        }
    }
}

/// The assistant of a row.
pub(crate) fn assistant(id: &str, doc: &str, metadata: &str) -> Result<Assistant, DbError> {
    join("assistant", id, doc, &[("metadata", metadata)])
}

/// A thread's row.
pub(crate) struct ThreadRow {
    pub(crate) status: String,
    pub(crate) metadata: String,
    pub(crate) values: String,
    pub(crate) doc: String,
}

impl ThreadRow {
    pub(crate) fn new(thread: &Thread) -> Self {
        let (doc, mut taken) = split(thread, &["metadata", "values"]);
        let values = taken.pop().expect("two fields");
        ThreadRow {
            status: name_of(&thread.status),
            metadata: taken.pop().expect("two fields"),
            values,
            doc,
        }
    }
}

/// The thread of a row.
pub(crate) fn thread(id: &str, doc: &str, metadata: &str, values: &str) -> Result<Thread, DbError> {
    join("thread", id, doc, &[("metadata", metadata), ("values", values)])
}

/// A run's document: the whole run (its status and `updated_at` are columns, which win).
pub(crate) fn run_doc(run: &Run) -> String {
    serde_json::to_string(run).expect("a run serializes")
}

/// The queue's columns of a run beside its document: status, `updated_at`, `not_before`, attempt.
pub(crate) type RunColumns<'a> = (&'a str, &'a str, Option<&'a str>, i64);

/// The run of a row.
pub(crate) fn run(doc: &str, (status, updated_at, not_before, attempt): RunColumns<'_>) -> Result<Run, DbError> {
    let mut run: Run =
        serde_json::from_str(doc).map_err(|e| DbError::Backend(format!("a stored run cannot be read: {e}")))?;
    run.status = run_status(status)?;
    run.updated_at = updated_at.to_owned();
    run.not_before = not_before.map(str::to_owned);
    run.attempt =
        u32::try_from(attempt).map_err(|_| DbError::Backend(format!("a stored run has the attempt {attempt}")))?;
    Ok(run)
}

/// A cron's row: the columns searched, sorted and claimed on (times as Unix milliseconds, 0 for
/// none), and the cron as one JSON document.
pub(crate) struct CronRow {
    pub(crate) enabled: bool,
    /// When it fires next; 0 when never.
    pub(crate) due_ms: i64,
    /// When it stops firing; 0 when never.
    pub(crate) end_ms: i64,
    pub(crate) metadata: String,
    pub(crate) doc: String,
}

impl CronRow {
    pub(crate) fn new(cron: &Cron) -> Self {
        let ms = |at: &Option<String>| {
            at.as_deref()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map_or(0, |t| t.as_millisecond())
        };
        CronRow {
            enabled: cron.enabled,
            due_ms: ms(&cron.next_run_date),
            end_ms: ms(&cron.end_time),
            metadata: Value::Object(cron.metadata.clone()).to_string(),
            doc: serde_json::to_string(cron).expect("a cron serializes"),
        }
    }
}

/// The cron stored as `doc`.
pub(crate) fn cron(id: &str, doc: &str) -> Result<Cron, DbError> {
    serde_json::from_str(doc).map_err(|e| DbError::Backend(format!("the stored cron `{id}` cannot be read: {e}")))
}

/// The column a cron search's sort field is kept in.
pub(crate) fn cron_sort_column(field: &str) -> &str {
    match field {
        "next_run_date" => "due_ms",
        "end_time" => "end_ms",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ThreadStatus;
    use serde_json::json;

    #[test]
    fn a_thread_row_round_trips_with_its_metadata_and_values_apart() {
        let thread = Thread {
            thread_id: "t".into(),
            created_at: now(),
            updated_at: now(),
            state_updated_at: now(),
            metadata: json!({"user": "u1"}).as_object().unwrap().clone(),
            status: ThreadStatus::Interrupted,
            config: Map::new(),
            values: json!({"log": ["a"]}),
            interrupts: Map::new(),
            error: Value::Null,
        };
        let row = ThreadRow::new(&thread);
        assert_eq!(row.status, "interrupted");
        assert_eq!(row.values, r#"{"log":["a"]}"#);
        assert!(!row.doc.contains("u1"));
        assert_eq!(
            super::thread("t", &row.doc, &row.metadata, &row.values).unwrap(),
            thread
        );
    }

    #[test]
    fn now_is_rfc3339_with_an_explicit_utc_offset() {
        let now = now();
        assert!(now.ends_with("+00:00"), "{now}");
        assert_eq!(now.len(), "2026-12-01T18:28:43.970890+00:00".len());
    }
}
