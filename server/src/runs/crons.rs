//! Crons (LangGraph's `/runs/crons`): making and changing them, and the scheduler that fires
//! them. A cron keeps the body of the runs it makes (its `payload`, checked as a run's body is
//! when the cron is made or changed) and when it fires next. Every worker process runs the
//! scheduler: each tick it takes the crons that are due ([`Catalog::take_due_crons`], which moves
//! their next time on in the same transaction, so that one scheduler takes each firing) and
//! makes each one's run, as `POST /threads/{id}/runs` would, on the cron's thread or on a new one.
//! A firing missed while no scheduler ran is not made up for: the cron fires next at its next
//! time after the tick that finds it (LangGraph's behaviour). A firing whose run cannot be made
//! (its thread deleted meanwhile, its queue full) is logged and skipped.
//!
//! [`Catalog::take_due_crons`]: crate::db::Catalog::take_due_crons

use super::create::RunCreate;
use super::{Manager, RunError};
use crate::cron::Schedule;
use crate::model::{wire_time, zone, Cron, Object, OnCompletion};
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

/// How many due crons one tick fires at most (the rest fire at the next tick).
const TICK_LIMIT: usize = 100;

/// A cron's own fields, beside its runs' body: those of `POST /runs/crons` and
/// `POST /threads/{id}/runs/crons` (where `schedule` is required), and those a
/// `PATCH /runs/crons/{id}` changes (where which keys were given, `end_time: null` clearing the
/// end time, is read from the body itself: [`Manager::update_cron`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CronFields {
    /// When it fires ([`Schedule`]'s syntax).
    pub schedule: Option<String>,
    /// The IANA zone its schedule reads (UTC when absent).
    pub timezone: Option<String>,
    /// When it stops firing (RFC 3339; a time without offset is UTC).
    pub end_time: Option<String>,
    /// Whether it fires (default `true`).
    pub enabled: Option<bool>,
    /// For a stateless cron: `delete` (the default) or `keep` each run's thread.
    pub on_run_completed: Option<OnCompletion>,
    /// The cron's metadata (its runs' metadata starts from it); in a patch, pairs merged into
    /// it (and the runs' metadata, replaced).
    pub metadata: Option<Object>,
}

/// The keys of a `PATCH /runs/crons/{id}` that are the cron's own (`metadata` is also the runs').
const OWN_KEYS: &[&str] = &["schedule", "timezone", "end_time", "enabled", "on_run_completed"];

/// The keys of a `PATCH /runs/crons/{id}` that are the runs' body, merged into the cron's payload.
const PAYLOAD_KEYS: &[&str] = &[
    "metadata",
    "input",
    "config",
    "context",
    "webhook",
    "interrupt_before",
    "interrupt_after",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "durability",
];

/// A schedule checked: it parses and has a time left; the message names `schedule`.
fn checked_schedule(text: &str) -> Result<(), RunError> {
    let schedule =
        Schedule::parse(text).map_err(|e| RunError::Invalid(format!("body field `schedule`: `{text}`: {e}")))?;
    if schedule
        .next_after(jiff::Timestamp::now(), &jiff::tz::TimeZone::UTC)
        .is_none()
    {
        return Err(RunError::Invalid(format!(
            "body field `schedule`: `{text}` has no time in the next five years"
        )));
    }
    Ok(())
}

/// A zone name checked (the message names `timezone`).
fn checked_zone(name: Option<&str>) -> Result<(), RunError> {
    zone(name)
        .map(|_| ())
        .map_err(|e| RunError::Invalid(format!("body field `timezone`: {e}")))
}

/// An end time read: RFC 3339, or a date and time without offset, taken as UTC (what Python's
/// `datetime.isoformat()` writes for a naive time).
fn end_time(text: &str) -> Result<String, RunError> {
    let at = text
        .parse::<jiff::Timestamp>()
        .or_else(|_| {
            text.parse::<jiff::civil::DateTime>()
                .and_then(|t| t.to_zoned(jiff::tz::TimeZone::UTC))
                .map(|z| z.timestamp())
        })
        .map_err(|_| {
            RunError::Invalid(format!(
                "body field `end_time`: `{text}` is not a date and time (RFC 3339, such as `2027-01-31T09:00:00+00:00`)"
            ))
        })?;
    Ok(wire_time(at))
}

/// `body` without its `null`s: the keys a client left out.
fn given(body: Object) -> Object {
    body.into_iter().filter(|(_, v)| !v.is_null()).collect()
}

impl Manager {
    /// Makes a cron on `thread_id` (`None`: a stateless cron, a new thread for each run) from a
    /// create body: `body` is the whole body as sent, `run` and `cron` its two readings.
    ///
    /// # Errors
    /// 422 naming the field at fault (a schedule, zone or end time that cannot be read, a
    /// schedule with no time left, a run body a run would be refused for); 404 for an unknown
    /// assistant or thread.
    pub async fn create_cron(
        &self,
        thread_id: Option<&str>,
        body: Object,
        run: RunCreate,
        cron: CronFields,
    ) -> Result<Cron, RunError> {
        let Some(schedule) = cron.schedule.as_deref() else {
            return Err(RunError::Invalid(
                "body field `schedule`: missing; a cron schedule, such as `*/5 * * * *`".to_owned(),
            ));
        };
        checked_schedule(schedule)?;
        checked_zone(cron.timezone.as_deref())?;
        let end = cron.end_time.as_deref().map(end_time).transpose()?;
        if thread_id.is_some() && cron.on_run_completed.is_some() {
            return Err(on_thread_completion());
        }
        let assistant = self.check(&run).await?.assistant;
        if let Some(tid) = thread_id {
            if self.inner.catalog.get_thread_without_values(tid).await?.is_none() {
                return Err(RunError::NotFound(format!("Thread with ID '{tid}' not found.")));
            }
        }
        let cron_id = uuid::Uuid::now_v7().to_string();
        let mut payload = given(body);
        payload.insert("assistant_id".into(), json!(assistant.assistant_id));
        with_cron_id(&mut payload, &cron_id);
        let at = crate::model::now();
        let mut made = Cron {
            cron_id,
            assistant_id: assistant.assistant_id,
            thread_id: thread_id.map(str::to_owned),
            user_id: String::new(),
            end_time: end,
            schedule: schedule.to_owned(),
            timezone: cron.timezone,
            payload,
            next_run_date: None,
            metadata: cron.metadata.unwrap_or_default(),
            on_run_completed: thread_id.is_none().then(|| cron.on_run_completed.unwrap_or_default()),
            enabled: cron.enabled.unwrap_or(true),
            created_at: at.clone(),
            updated_at: at,
        };
        made.next_run_date = made.following(jiff::Timestamp::now());
        self.inner.catalog.put_cron(&made).await?;
        Ok(made)
    }

    /// Changes the cron `cron_id` by a `PATCH` body (`body`, the body as sent; `patch`, its
    /// typed reading): the cron's own fields, and the fields of its runs' body merged into its
    /// payload, which is then checked again as a run's body. A new schedule or zone, or turning
    /// it back on, moves its next time to the first after now.
    ///
    /// # Errors
    /// 400 for a body that changes nothing; 404 for an unknown cron; 422 naming the field at
    /// fault.
    pub async fn update_cron(&self, cron_id: &str, body: Object, patch: CronFields) -> Result<Cron, RunError> {
        let known = |k: &str| OWN_KEYS.contains(&k) || PAYLOAD_KEYS.contains(&k);
        if let Some(key) = body.keys().find(|k| !known(k)) {
            return Err(RunError::Invalid(format!(
                "body field `{key}`: a cron's update has no such field; the fields are {}, {}",
                OWN_KEYS.join(", "),
                PAYLOAD_KEYS.join(", ")
            )));
        }
        let clears_end = body.get("end_time").is_some_and(Value::is_null);
        let body = given(body);
        if body.is_empty() && !clears_end {
            return Err(RunError::BadRequest("No fields to update".to_owned()));
        }
        let Some(mut cron) = self.inner.catalog.get_cron(cron_id).await? else {
            return Err(RunError::NotFound(format!("Cron '{cron_id}' not found")));
        };
        let mut reschedule = false;
        if let Some(schedule) = &patch.schedule {
            checked_schedule(schedule)?;
            cron.schedule.clone_from(schedule);
            reschedule = true;
        }
        if let Some(name) = patch.timezone {
            checked_zone(Some(&name))?;
            cron.timezone = Some(name);
            reschedule = true;
        }
        if clears_end {
            cron.end_time = None;
        } else if let Some(text) = &patch.end_time {
            cron.end_time = Some(end_time(text)?);
        }
        if let Some(enabled) = patch.enabled {
            reschedule |= enabled && !cron.enabled;
            cron.enabled = enabled;
        }
        if let Some(completion) = patch.on_run_completed {
            if cron.thread_id.is_some() {
                return Err(on_thread_completion());
            }
            cron.on_run_completed = Some(completion);
        }
        if let Some(metadata) = patch.metadata {
            cron.metadata.extend(metadata);
        }
        let changes: Vec<(String, Value)> = body
            .into_iter()
            .filter(|(k, _)| PAYLOAD_KEYS.contains(&k.as_str()))
            .collect();
        // Only a change of the runs' body is checked as one: a cron whose graph has changed
        // under it can still be turned off, rescheduled or relabelled.
        if !changes.is_empty() {
            let mut payload = cron.payload.clone();
            payload.extend(changes);
            with_cron_id(&mut payload, &cron.cron_id);
            let run: RunCreate = serde_json::from_value(Value::Object(payload.clone()))
                .map_err(|e| RunError::Invalid(format!("body: the cron's runs' body would not be a run's: {e}")))?;
            self.check(&run).await?;
            cron.payload = payload;
        }
        if reschedule {
            cron.next_run_date = cron.following(jiff::Timestamp::now());
        }
        cron.updated_at = crate::model::now();
        self.inner.catalog.put_cron(&cron).await?;
        Ok(cron)
    }

    /// Fires the crons due now, once: what each worker's scheduler does every
    /// [`ManagerConfig::cron_poll`](super::ManagerConfig::cron_poll). Returns how many runs it
    /// made.
    ///
    /// # Errors
    /// When the catalog cannot hand out the due crons; a firing whose run cannot be made is
    /// logged, and the others go on.
    pub async fn fire_due_crons(&self) -> Result<usize, RunError> {
        let due = self
            .inner
            .catalog
            .take_due_crons(jiff::Timestamp::now(), TICK_LIMIT)
            .await?;
        let mut made = 0;
        for cron in due {
            match self.fire(&cron).await {
                Ok(()) => made += 1,
                Err(e) => {
                    tracing::warn!(cron = %cron.cron_id, error = %e, "a cron's run could not be made; it fires again at its next time")
                }
            }
        }
        Ok(made)
    }

    /// Makes one firing's run: the cron's payload as a run's body, its metadata under the
    /// payload's, on its thread or on a new one (kept or deleted after, as it says).
    async fn fire(&self, cron: &Cron) -> Result<(), RunError> {
        let mut run: RunCreate = serde_json::from_value(Value::Object(cron.payload.clone())).map_err(|e| {
            RunError::Internal(format!(
                "the stored body of cron `{}` cannot be read: {e}",
                cron.cron_id
            ))
        })?;
        let mut metadata = cron.metadata.clone();
        metadata.extend(run.metadata.take().unwrap_or_default());
        run.metadata = Some(metadata);
        if cron.thread_id.is_none() {
            run.on_completion = cron.on_run_completed;
        }
        let made = self.create(cron.thread_id.as_deref(), run).await?;
        tracing::debug!(cron = %cron.cron_id, run = %made.run_id, thread = %made.thread_id, "a cron made a run");
        Ok(())
    }

    /// Fires the due crons every `every` until the manager stops.
    pub(super) async fn fire_crons_every(&self, every: Duration) {
        let mut timer = tokio::time::interval(every);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            timer.tick().await;
            if let Err(e) = self.fire_due_crons().await {
                tracing::warn!(error = %e, "the cron scheduler failed; it tries again at its next tick");
            }
        }
    }
}

/// The 422 of `on_run_completed` on a thread's cron.
fn on_thread_completion() -> RunError {
    RunError::Invalid(
        "body field `on_run_completed`: only a stateless cron's runs have threads of their own to keep or delete; \
         a thread's cron runs on its thread"
            .to_owned(),
    )
}

/// Sets `config.configurable.cron_id` in a cron's payload, as LangGraph's runs of a cron carry it.
fn with_cron_id(payload: &mut Object, cron_id: &str) {
    let config = payload.entry("config").or_insert_with(|| json!({}));
    if !config.is_object() {
        *config = json!({});
    }
    let configurable = config
        .as_object_mut()
        .expect("made an object above")
        .entry("configurable")
        .or_insert_with(|| json!({}));
    if !configurable.is_object() {
        *configurable = json!({});
    }
    configurable
        .as_object_mut()
        .expect("made an object above")
        .insert("cron_id".into(), json!(cron_id));
}
