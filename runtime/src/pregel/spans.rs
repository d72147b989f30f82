//! The `tracing` spans of a run: `weir.run` (its thread, namespace and, when its metadata has
//! one, the server's run id), `weir.step` (its step and number of tasks) and `weir.task` (its node
//! and step), each given how it ended as it ends: `status` (`ok`, `error` or `interrupted`), the
//! `error` message, and the `otel.status_code` / `otel.status_description` fields that
//! `tracing-opentelemetry` turns into the span's OpenTelemetry status.
//!
//! Fields known only at the end are declared `Empty` and recorded then. Nothing is formatted
//! when no subscriber listens: a disabled span records nothing, and the error is formatted by the
//! subscriber that records it.

use super::executor::Failure;
use super::outcome::Outcome;
use super::run::StepEnd;
use crate::error::Error;
use crate::graph::{Command, Context};
use crate::signal::Interrupt;
use crate::state::State;
use crate::BoxError;
use std::fmt;
use tracing::field::{display, Empty};
use tracing::Span;

/// The span of a run on `thread` in namespace `ns`, with the run id its metadata carries.
pub(crate) fn run(thread: &str, ns: &str, run_id: Option<&str>) -> Span {
    tracing::info_span!(
        "weir.run",
        thread,
        ns,
        run_id,
        status = Empty,
        error = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// The span of step `step`, which runs `tasks` tasks.
pub(crate) fn step(step: i64, tasks: usize) -> Span {
    tracing::info_span!(
        "weir.step",
        step,
        // Signed: OpenTelemetry's integers are, and an unsigned field would be exported as text.
        tasks = tasks as i64,
        status = Empty,
        error = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// The span of the task `ctx` belongs to: a child of `parent` (the step's span, where a wide
/// step's tasks run on other workers), or of the current span (the step's, for a lone task run
/// in place).
pub(crate) fn task(parent: Option<&Span>, ctx: &Context) -> Span {
    macro_rules! task_span {
        ($($parent:tt)*) => {
            tracing::info_span!(
                $($parent)*
                "weir.task",
                node = &*ctx.node,
                step = ctx.step,
                status = Empty,
                error = Empty,
                otel.status_code = Empty,
                otel.status_description = Empty,
            )
        };
    }
    match parent {
        Some(parent) => task_span!(parent: parent,),
        None => task_span!(),
    }
}

/// How a run, step or task ended, as its span says.
enum End<'a> {
    Ok,
    Interrupted,
    Error(&'a dyn fmt::Display),
}

/// Records how the span's run, step or task ended. An interruption is not an error: its
/// OpenTelemetry status stays unset.
fn record(span: &Span, end: End<'_>) {
    if span.is_disabled() {
        return;
    }
    match end {
        End::Ok => {
            span.record("status", "ok");
            span.record("otel.status_code", "ok");
        }
        End::Interrupted => {
            span.record("status", "interrupted");
        }
        End::Error(e) => {
            span.record("status", "error");
            span.record("error", display(e));
            span.record("otel.status_code", "error");
            // Last: `tracing-opentelemetry` sets the error status with this message.
            span.record("otel.status_description", display(e));
        }
    }
}

/// Records how a run ended: done, paused, or failed.
pub(crate) fn end_run<S: State>(span: &Span, result: &Result<Outcome<S>, Error>) {
    record(
        span,
        match result {
            Ok(Outcome::Done(_)) => End::Ok,
            Ok(Outcome::Paused { .. }) => End::Interrupted,
            Err(e) if e.is_paused() => End::Interrupted,
            Err(e) => End::Error(e),
        },
    );
}

/// Records how a step ended: every task finished, some paused, or one failed.
pub(crate) fn end_step<S: State>(span: &Span, result: &Result<StepEnd<S>, Error>) {
    record(
        span,
        match result {
            Ok(StepEnd::Ran(_)) => End::Ok,
            Ok(StepEnd::Paused(..)) => End::Interrupted,
            Err(e) if e.is_paused() => End::Interrupted,
            Err(e) => End::Error(e),
        },
    );
}

/// Records how a task ended: its node returned a command, paused on an interrupt, or failed
/// (after its retries), timed out or panicked.
pub(crate) fn end_task<S: State>(span: &Span, result: &Result<Command<S>, Failure>) {
    record(
        span,
        match result {
            Ok(_) => End::Ok,
            Err(Failure::Error(e)) if is_pause(e) => End::Interrupted,
            Err(f) => End::Error(f),
        },
    );
}

/// Whether a node's error is its pause: an [`Interrupt`] asking, or a subgraph that paused.
fn is_pause(e: &BoxError) -> bool {
    e.downcast_ref::<Interrupt>().is_some_and(Interrupt::is_pause)
        || e.downcast_ref::<Error>().is_some_and(Error::is_paused)
}
