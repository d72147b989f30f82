//! Running a loaded flow: a run, a resume, and a thread's checkpoints, each run streaming its
//! nodes' events through its own bounded stream.

use crate::error::{ticks, RunError};
use crate::event::{Event, Outcome, Snapshot};
use crate::load::Flow;
use crate::state::{fits, FlowState, FlowUpdate, LAST_FIELD, STEPS_FIELD};
use futures::StreamExt;
use serde_json::Value;
use weir_runtime::{RunConfig, RunStream, StreamMode};

impl Flow {
    /// The update a run starts from: the input's fields (checked against the declaration), and
    /// the declared defaults of the fields it does not set.
    ///
    /// # Errors
    /// An input that is not an object, or a field not declared or of another type.
    pub(crate) fn input_update(&self, input: &Value) -> Result<FlowUpdate, RunError> {
        let Value::Object(fields) = input else {
            return Err(RunError::input(format!(
                "the input must be a JSON object of fields, not a {}",
                crate::format::FieldType::name_of(input)
            )));
        };
        let mut update = FlowUpdate::new(&self.schema);
        for (k, v) in fields {
            let Some(def) = self.schema.declared(k) else {
                return Err(RunError::input(format!(
                    "input field `{k}` is not declared; declared fields are {}",
                    ticks(self.schema.field_names())
                )));
            };
            if !fits(def, v) {
                return Err(RunError::input(format!(
                    "input field `{k}` is a {}; it is declared {}",
                    crate::format::FieldType::name_of(v),
                    def.ty
                )));
            }
            update.push(self.schema.index(k).expect("declared"), v.clone());
        }
        // A new run on a thread counts its nodes' runs afresh.
        for hidden in [STEPS_FIELD, LAST_FIELD] {
            update.push(
                self.schema.index(hidden).expect("the schema has the hidden fields"),
                Value::Null,
            );
        }
        for (i, f) in self.schema.fields.iter().enumerate() {
            if let (Some(d), crate::state::Reduce::Last) = (&f.default, f.reducer) {
                if !fields.contains_key(&f.name) {
                    update.push(i, d.clone());
                }
            }
        }
        Ok(update)
    }

    /// Runs the flow on `input` (a JSON object of fields) to the end and returns the final state.
    ///
    /// # Errors
    /// The input does not fit the state, a node failed (the error names it), a node ran more
    /// than its `max_steps`, or the run paused at an `output` node (see [`RunError::pause`]).
    pub async fn invoke(&self, input: Value) -> Result<FlowState, RunError> {
        self.invoke_with(input, |_| {}).await
    }

    /// Like [`invoke`](Self::invoke), handing each [`Event`] to `on_event` as it happens.
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke).
    pub async fn invoke_with(&self, input: Value, on_event: impl FnMut(Event)) -> Result<FlowState, RunError> {
        match self.run(input, None, on_event).await? {
            Outcome::Done(s) => Ok(s),
            Outcome::Paused { pauses, .. } => Err(RunError::paused(pauses)),
        }
    }

    /// Runs the flow on `input`, on `thread` when given (the flow needs a checkpointer, see
    /// [`LoadOptions::checkpointer`](crate::LoadOptions)), until it is done or pauses.
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke), except that a pause is an [`Outcome::Paused`].
    pub async fn run(
        &self,
        input: Value,
        thread: Option<&str>,
        on_event: impl FnMut(Event),
    ) -> Result<Outcome, RunError> {
        self.run_in(input, self.config(thread), on_event).await
    }

    async fn run_in(&self, input: Value, config: RunConfig, on_event: impl FnMut(Event)) -> Result<Outcome, RunError> {
        let update = self.input_update(&input)?;
        let run = self.graph.stream(update, &config, StreamMode::CUSTOM);
        self.stream(run, on_event).await
    }

    /// Like [`invoke`](Self::invoke), for a run with the context `context` (LangGraph's
    /// `invoke(..., context=...)`, a server run's `context`): a JSON object that conditions read
    /// as `context` (`context.tier == 'pro'`) and templates too (`{{ context.user_id }}`).
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke); also when `context` is not an object, and when a node reads
    /// a path the context does not have (the error names the node, the path and where the node
    /// reads it).
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_flow::{Flow, Registry};
    /// use serde_json::json;
    ///
    /// let flow = Flow::from_json(r#"{
    ///   "nodes": [
    ///     {"id": "start", "type": "start"},
    ///     {"id": "greet", "type": "set", "data": {"assign": {"text": "hello {{ context.user }}"}}},
    ///     {"id": "done", "type": "end"}
    ///   ],
    ///   "edges": [
    ///     {"id": "e1", "source": "start", "target": "greet"},
    ///     {"id": "e2", "source": "greet", "target": "done"}
    ///   ],
    ///   "state": {"text": {"type": "string"}}
    /// }"#, &Registry::new())?;
    /// let rt = tokio::runtime::Runtime::new()?;
    /// let out = rt.block_on(flow.invoke_with_context(json!({}), json!({"user": "ada"})))?;
    /// assert_eq!(out.get("text"), Some(&json!("hello ada")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn invoke_with_context(&self, input: Value, context: Value) -> Result<FlowState, RunError> {
        match self.run_with_context(input, None, context, |_| {}).await? {
            Outcome::Done(s) => Ok(s),
            Outcome::Paused { pauses, .. } => Err(RunError::paused(pauses)),
        }
    }

    /// Like [`run`](Self::run), for a run with the context `context` (see
    /// [`invoke_with_context`](Self::invoke_with_context)).
    ///
    /// # Errors
    /// As [`run`](Self::run) and [`invoke_with_context`](Self::invoke_with_context).
    pub async fn run_with_context(
        &self,
        input: Value,
        thread: Option<&str>,
        context: Value,
        on_event: impl FnMut(Event),
    ) -> Result<Outcome, RunError> {
        self.run_in(input, self.config_with_context(thread, context)?, on_event)
            .await
    }

    /// Goes on with `thread` from its latest checkpoint: answers the paused `output` node with
    /// `choice` (or, when it asks for an acknowledgement only, without one), or, without a
    /// question waiting, re-runs what failed.
    ///
    /// # Errors
    /// As [`run`](Self::run); also when the thread has no checkpoint or nothing is paused, and
    /// when `choice` is not one the paused question offers, or is given to a node that asks for
    /// an acknowledgement only (then nothing runs, and the question stays: resume again with one
    /// of the choices the message lists, or without one).
    pub async fn resume(
        &self,
        thread: &str,
        choice: Option<&str>,
        on_event: impl FnMut(Event),
    ) -> Result<Outcome, RunError> {
        self.resume_in(thread, choice, self.config(Some(thread)), on_event)
            .await
    }

    /// Like [`resume`](Self::resume), for a run with the context `context` (see
    /// [`invoke_with_context`](Self::invoke_with_context)): the context is the run's, not the
    /// thread's, so a resumed run that reads it is given it again.
    ///
    /// # Errors
    /// As [`resume`](Self::resume) and [`run_with_context`](Self::run_with_context).
    pub async fn resume_with_context(
        &self,
        thread: &str,
        choice: Option<&str>,
        context: Value,
        on_event: impl FnMut(Event),
    ) -> Result<Outcome, RunError> {
        let config = self.config_with_context(Some(thread), context)?;
        self.resume_in(thread, choice, config, on_event).await
    }

    async fn resume_in(
        &self,
        thread: &str,
        choice: Option<&str>,
        config: RunConfig,
        on_event: impl FnMut(Event),
    ) -> Result<Outcome, RunError> {
        let pauses = match self.state(thread).await? {
            Some(snapshot) => snapshot.pauses,
            None => Vec::new(), // the runtime says the thread has no checkpoint
        };
        let answer = match choice {
            Some(choice) => {
                check_choice(&pauses, choice)?;
                Some(Value::String(choice.to_owned()))
            }
            // An acknowledgement is an answer without a choice.
            None => pauses.iter().any(|p| p.choices.is_empty()).then_some(Value::Null),
        };
        let run = self
            .graph
            .stream_resume(answer, &config, StreamMode::CUSTOM)
            .map_err(|e| RunError::from_runtime(e, self.recursion_limit()))?;
        self.stream(run, on_event).await
    }

    /// The thread's state at its latest checkpoint, or `None` for a thread never run.
    ///
    /// # Errors
    /// When the flow has no checkpointer, or the checkpoint cannot be read.
    pub async fn state(&self, thread: &str) -> Result<Option<Snapshot>, RunError> {
        let snap = self
            .graph
            .get_state(&self.config(Some(thread)))
            .await
            .map_err(|e| RunError::from_runtime(e, self.recursion_limit()))?;
        Ok(snap.map(Snapshot::from_runtime))
    }

    /// The thread's checkpoints, newest first, at most `limit`.
    ///
    /// # Errors
    /// As [`state`](Self::state).
    pub async fn history(&self, thread: &str, limit: Option<usize>) -> Result<Vec<Snapshot>, RunError> {
        let h = self
            .graph
            .get_state_history(&self.config(Some(thread)), limit)
            .await
            .map_err(|e| RunError::from_runtime(e, self.recursion_limit()))?;
        Ok(h.into_iter().map(Snapshot::from_runtime).collect())
    }

    /// [`config`](Self::config) carrying the run context `context`, which must be an object.
    fn config_with_context(&self, thread: Option<&str>, context: Value) -> Result<RunConfig, RunError> {
        if !context.is_object() {
            return Err(RunError::input(format!(
                "the run's context must be a JSON object, not a {}",
                crate::format::FieldType::name_of(&context)
            )));
        }
        Ok(self
            .config(thread)
            .with_context(weir_runtime::RunContext::new(context).erase()))
    }

    fn config(&self, thread: Option<&str>) -> RunConfig {
        let config = match thread {
            Some(t) => RunConfig::thread(t),
            None => RunConfig::default(),
        };
        config.recursion_limit(self.recursion_limit())
    }

    /// Hands the events of `run`, this run's own bounded stream, to `on_event` as they come,
    /// then returns how the run ended. Another run of the flow streams to its own consumer.
    async fn stream(
        &self,
        mut run: RunStream<FlowState>,
        mut on_event: impl FnMut(Event),
    ) -> Result<Outcome, RunError> {
        while let Some(item) = run.next().await {
            // The nodes' own events; the run's error (its last item) is the outcome's too.
            if let Ok(weir_runtime::Event::Custom { value, .. }) = item {
                if let Ok(event) = serde_json::from_value(value) {
                    on_event(event);
                }
            }
        }
        let outcome = run
            .outcome()
            .await
            .map(Outcome::from_runtime)
            .map_err(|e| RunError::from_runtime(e, self.recursion_limit()))?;
        if let Outcome::Done(state) = &outcome {
            if let Some(e) = self.stalled(state) {
                return Err(e);
            }
        }
        Ok(outcome)
    }

    /// When the run ended without reaching an end node while a join still waited: the error
    /// naming each such join, what it waited for and what it had. A join waits when one of its
    /// upstreams ran after it last did (or it never ran) and another did not.
    fn stalled(&self, state: &FlowState) -> Option<RunError> {
        let ran = |field: &str, node: &str| state.hidden(field).and_then(|v| v.get(node)).and_then(Value::as_i64);
        if self.ends.iter().any(|e| ran(STEPS_FIELD, e).is_some()) {
            return None;
        }
        let mut waiting = Vec::new();
        for (join, sources) in self.joins() {
            let fired = ran(LAST_FIELD, join);
            let (had, missing): (Vec<&str>, Vec<&str>) = sources
                .iter()
                .map(String::as_str)
                .partition(|s| ran(LAST_FIELD, s).is_some_and(|at| fired.is_none_or(|f| at > f)));
            if !had.is_empty() && !missing.is_empty() {
                waiting.push((
                    join.as_str(),
                    format!(
                        "join `{join}` still waits for {} (it has {})",
                        ticks(missing),
                        ticks(had)
                    ),
                ));
            }
        }
        let (first, _) = *waiting.first()?;
        let what: Vec<String> = waiting.into_iter().map(|(_, w)| w).collect();
        Some(RunError::stalled(
            first,
            format!("the run stopped before reaching an end node: {}", what.join("; ")),
        ))
    }
}

/// A choice that no paused question offers is refused before resuming, so that the question
/// stays asked (resuming with it would fail the node and lose the pause); so is a choice given
/// to a node that asks for an acknowledgement only.
fn check_choice(pauses: &[crate::event::Pause], choice: &str) -> Result<(), RunError> {
    let asking: Vec<&crate::event::Pause> = pauses.iter().filter(|p| !p.choices.is_empty()).collect();
    if asking.is_empty() {
        return match pauses.first() {
            Some(p) => Err(RunError::choice(
                &p.node,
                format!(
                    "node `{}` asks for an acknowledgement, not a choice: resume without `{choice}`; the \
                     question is still waiting",
                    p.node
                ),
            )),
            None => Ok(()), // nothing is paused: the runtime says so
        };
    }
    if asking.iter().any(|p| p.choices.iter().any(|c| c.id == choice)) {
        return Ok(());
    }
    let questions: Vec<String> = asking
        .iter()
        .map(|p| {
            format!(
                "node `{}` asks \"{}\" and its choices are {}",
                p.node,
                p.question,
                ticks(p.choices.iter().map(|c| c.id.as_str()))
            )
        })
        .collect();
    Err(RunError::choice(
        &asking[0].node,
        format!(
            "`{choice}` is not a choice of the paused question: {}; the question is still waiting",
            questions.join("; ")
        ),
    ))
}
