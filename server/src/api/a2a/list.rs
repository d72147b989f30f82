//! `ListTasks` (A2A 1.0): this assistant's tasks, newest first (by their status's time), a page
//! at a time: those of one context (`contextId`), or of the contexts (threads) the assistant
//! last ran on, at most [`CONTEXTS_LOOKED_AT`] of them; filtered by state (`status`) and by
//! `statusTimestampAfter`, with `historyLength` messages of history and the artifacts only when
//! `includeArtifacts` asks. The page token is the number of tasks before the page.

use super::task::TaskState;
use super::{internal, v1, A2a, Found, RpcFailure, INVALID_PARAMS};
use crate::db::ThreadQuery;
use crate::model::{Run, Thread, ThreadStatus};
use serde_json::{json, Value};
use std::collections::HashSet;

/// How many of an assistant's latest threads a list without `contextId` looks through.
const CONTEXTS_LOOKED_AT: usize = 1_000;

/// The page size when none is asked (LangGraph's), and the most one may ask.
const PAGE: usize = 50;
const MAX_PAGE: usize = 100;

/// The 1.0 states a `status` filter may name.
const STATES: [TaskState; 6] = [
    TaskState::Submitted,
    TaskState::Working,
    TaskState::InputRequired,
    TaskState::Completed,
    TaskState::Canceled,
    TaskState::Failed,
];

fn invalid(why: impl Into<String>) -> RpcFailure {
    (INVALID_PARAMS, why.into())
}

/// `params.<field>` as a string, if given.
fn text<'a>(params: &'a Value, field: &str) -> Result<Option<&'a str>, RpcFailure> {
    match params.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(invalid(format!("params field `{field}`: expected a string"))),
    }
}

impl A2a {
    /// `ListTasks`: a page of this assistant's tasks, in 1.0's form.
    pub(super) async fn list(&self, params: &Value) -> Result<Value, RpcFailure> {
        let size = match params.get("pageSize") {
            None | Some(Value::Null) => PAGE,
            Some(n) => n
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| (1..=MAX_PAGE).contains(n))
                .ok_or_else(|| {
                    invalid(format!(
                        "params field `pageSize`: expected a whole number from 1 to {MAX_PAGE}"
                    ))
                })?,
        };
        let offset = match text(params, "pageToken")? {
            None | Some("") => 0,
            Some(token) => token.parse().map_err(|_| {
                invalid(format!(
                    "params field `pageToken`: `{token}` is not a token this server gave"
                ))
            })?,
        };
        let status = match text(params, "status")? {
            None | Some("TASK_STATE_UNSPECIFIED") => None,
            Some(s) => Some(
                STATES
                    .into_iter()
                    .find(|state| v1::state(state.as_str()) == s || state.as_str() == s)
                    .ok_or_else(|| invalid(format!("params field `status`: `{s}` is not a task state")))?,
            ),
        };
        let after = text(params, "statusTimestampAfter")?
            .map(|t| {
                t.parse::<jiff::Timestamp>().map_err(|e| {
                    invalid(format!(
                        "params field `statusTimestampAfter`: `{t}` is not an RFC 3339 time: {e}"
                    ))
                })
            })
            .transpose()?;
        let view = self.view(params, "")?;
        let with_artifacts = params.get("includeArtifacts").and_then(Value::as_bool).unwrap_or(false);

        let threads = self.contexts(text(params, "contextId")?).await?;
        let mut tasks: Vec<(Found, TaskState)> = Vec::new();
        for thread in &threads {
            let runs = self.context_runs(&thread.thread_id).await?;
            tasks.extend(self.tasks_of(thread, runs));
        }
        tasks.retain(|(found, state)| {
            let updated = found.latest.updated_at.parse::<jiff::Timestamp>().ok();
            status.is_none_or(|s| s == *state) && after.is_none_or(|a| updated.is_some_and(|u| u >= a))
        });
        tasks.sort_by(|(a, _), (b, _)| b.latest.updated_at.cmp(&a.latest.updated_at));
        let total = tasks.len();
        let mut page = Vec::new();
        for (found, _) in tasks.iter().skip(offset).take(size) {
            let mut task = self.task(found, view).await?;
            if !with_artifacts {
                if let Some(t) = task.as_object_mut() {
                    t.remove("artifacts");
                }
            }
            page.push(v1::task(&task));
        }
        let next = if offset + size < total {
            (offset + size).to_string()
        } else {
            String::new()
        };
        Ok(json!({"tasks": page, "nextPageToken": next, "pageSize": size, "totalSize": total}))
    }

    /// The threads whose tasks are listed: the one named (none when it does not exist), or
    /// those this assistant last ran on.
    async fn contexts(&self, context_id: Option<&str>) -> Result<Vec<Thread>, RpcFailure> {
        let catalog = &self.state.catalog;
        if let Some(id) = context_id {
            let thread = catalog.get_thread_without_values(id).await.map_err(internal)?;
            return Ok(thread.into_iter().collect());
        }
        let mut metadata = serde_json::Map::new();
        metadata.insert("assistant_id".to_owned(), json!(self.assistant.assistant_id));
        let query = ThreadQuery {
            metadata: Some(metadata),
            limit: CONTEXTS_LOOKED_AT,
            sort_by: Some("updated_at".to_owned()),
            without_values: true,
            ..ThreadQuery::default()
        };
        catalog.search_threads(&query).await.map_err(internal)
    }

    /// The tasks of this assistant among a thread's runs (newest first): each task once, as its
    /// latest run, with its state (the thread's interrupt is its latest run's).
    fn tasks_of(&self, thread: &Thread, runs: Vec<Run>) -> Vec<(Found, TaskState)> {
        let newest = runs.first().map(|r| r.run_id.clone());
        let starts = std::sync::Arc::new(super::task::starts(&runs, &self.assistant.assistant_id));
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for run in runs {
            if run.assistant_id != self.assistant.assistant_id {
                continue;
            }
            let task_id = super::task::task_of(&run);
            if !seen.insert(task_id.clone()) {
                continue;
            }
            let asks = newest.as_deref() == Some(run.run_id.as_str()) && thread.status == ThreadStatus::Interrupted;
            let state = TaskState::of(run.status, asks);
            let starts = Some(starts.clone());
            out.push((
                Found {
                    latest: run,
                    task_id,
                    starts,
                },
                state,
            ));
        }
        out
    }
}
