//! A command as a run's input (LangGraph's `Command(resume=…, update=…, goto=…)` given to
//! `invoke`): [`RunCommand`] and its [`Answer`], and the JSON form a server decodes
//! (`json.rs`). How the loop keeps and applies a command's update and goto as the null task's
//! pending writes is `run/null.rs`.
//!
//! A command goes on from the thread's latest checkpoint, as a resume does. Its update and its
//! goto are saved first, as the pending writes of the null task on that checkpoint (LangGraph's
//! `NULL_TASK_ID` writes), then every null write of the checkpoint is applied to the loaded
//! state (an earlier command's too, whose step never completed: it counts once, since the state
//! is loaded afresh), without a step of their own; then the answers go to the paused tasks and the
//! step the thread stopped at runs, with the tasks the goto added.

mod json;

use super::config::{IntoInput, RunInput};
use crate::error::Error;
use crate::graph::Goto;
use crate::state::{State, Update};
use std::fmt;

/// The id under which a command's update and goto are saved as pending writes: LangGraph's
/// `NULL_TASK_ID`, which no task of a step has.
pub(crate) const NULL_TASK: &str = "00000000-0000-0000-0000-000000000000";

/// A command given to a run as its input (LangGraph's `Command` as graph input): answer the
/// paused tasks, update the state, and add tasks to the step the thread stopped at, in one call.
///
/// Give it to [`invoke`](crate::CompiledGraph::invoke), [`run`](crate::CompiledGraph::run) or
/// [`stream`](crate::CompiledGraph::stream) in place of an input. The run goes on from the
/// thread's latest checkpoint (or `RunConfig::checkpoint_id`, a fork) as
/// [`resume`](crate::CompiledGraph::resume) does: `update` is applied as if written before the
/// step ran, `goto` adds tasks to that step, and `resume` answers its paused tasks. The update
/// and goto are saved first as pending writes of the checkpoint, so a run that stops before the
/// step completes (a crash, a pause, a failure) applies them again, once, when the thread goes on.
/// A JSON command (a server's `{"command": …}`) decodes with
/// [`CompiledGraph::command_from_json`](crate::CompiledGraph::command_from_json).
///
/// # Examples
///
/// ```
/// # weir_runtime::__doc_state!();
/// use weir_runtime::RunCommand;
/// let command = RunCommand::<Doc>::new()
///     .resume("yes")
///     .update(DocUpdate::default().text("edited".into()))
///     .goto("review");
/// assert!(command.resume.is_some() && command.update.is_some());
/// assert_eq!(command.goto.len(), 1);
/// ```
pub struct RunCommand<S: State> {
    /// The answer to the paused tasks, or `None` to answer nothing (a paused task asks again).
    pub resume: Option<Answer>,
    /// Writes applied to the state before the step runs again, as if a node had returned them.
    pub update: Option<S::Update>,
    /// Tasks added to the step: nodes (by id or name) and `Send`s.
    pub goto: Vec<Goto<S>>,
}

impl<S: State> Default for RunCommand<S> {
    fn default() -> Self {
        Self {
            resume: None,
            update: None,
            goto: Vec::new(),
        }
    }
}

impl<S: State> fmt::Debug for RunCommand<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunCommand")
            .field("resume", &self.resume)
            .field("update", &self.update)
            .field("goto", &self.goto)
            .finish()
    }
}

impl<S: State> RunCommand<S> {
    /// A command that does nothing yet (a run refuses it as it is: give it an answer, an update
    /// or a goto).
    pub fn new() -> Self {
        Self::default()
    }
    /// Answers the only paused task with `answer` (see [`Answer::new`]).
    pub fn resume(mut self, answer: impl serde::Serialize) -> Self {
        self.resume = Some(Answer::new(answer));
        self
    }
    /// Answers several paused tasks, each by its [`Paused::id`](crate::Paused::id) (see
    /// [`Answer::by_id`]).
    pub fn resume_map<K: Into<String>, A: serde::Serialize>(
        mut self,
        answers: impl IntoIterator<Item = (K, A)>,
    ) -> Self {
        self.resume = Some(Answer::by_id(answers));
        self
    }
    /// Sets the update.
    pub fn update(mut self, update: S::Update) -> Self {
        self.update = Some(update);
        self
    }
    /// Adds a task to the step: a node, by id or name, or a `Send`.
    pub fn goto(mut self, to: impl Into<Goto<S>>) -> Self {
        self.goto.push(to.into());
        self
    }

    /// The answers (each with the id of the task it answers, `None`: the only paused task), and
    /// the null task's writes: the update, when it writes a field, and the goto.
    ///
    /// # Errors
    /// When the command holds nothing, or an answer could not be serialized.
    pub(crate) fn into_parts(self, n_fields: usize) -> Result<Parts<S>, Error> {
        let update = self.update.filter(|u| (0..n_fields).any(|f| u.is_written(f)));
        if self.resume.is_none() && update.is_none() && self.goto.is_empty() {
            return Err(Error::config(
                "the command has no `resume`, no `update` that writes a field and no `goto`: nothing to run",
            ));
        }
        let answers = match self.resume {
            Some(answer) => answer.into_answers()?,
            None => Vec::new(),
        };
        let null = (update.is_some() || !self.goto.is_empty()).then(|| crate::graph::Command {
            update: update.unwrap_or_default(),
            goto: self.goto,
            parent: None,
        });
        Ok((answers, null))
    }
}

/// A command's answers, and its update and goto as the null task's command.
pub(crate) type Parts<S> = (
    Vec<(Option<String>, serde_json::Value)>,
    Option<crate::graph::Command<S>>,
);

#[doc(hidden)]
#[derive(Debug)]
pub enum AsCommand {}

impl<S: State> IntoInput<S, AsCommand> for RunCommand<S> {
    fn into_input(self) -> RunInput<S> {
        RunInput::Command(self)
    }
}

/// The answer a [`RunCommand`] gives the paused tasks (LangGraph's `Command.resume`): one value
/// for the only paused task, or values by the id of the pause each answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer(Repr);

#[derive(Debug, Clone, PartialEq)]
enum Repr {
    One(serde_json::Value),
    ById(Vec<(String, serde_json::Value)>),
    /// An answer that could not be serialized: the run reports it.
    Unsaved(String),
}

impl Answer {
    /// One answer, for the only paused task: its
    /// [`Context::interrupt`](crate::Context::interrupt) call returns it.
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_runtime::Answer;
    /// assert_eq!(Answer::new(3), Answer::from_json(serde_json::json!(3)));
    /// ```
    pub fn new(answer: impl serde::Serialize) -> Self {
        match serde_json::to_value(answer) {
            Ok(v) => Self(Repr::One(v)),
            Err(e) => Self(Repr::Unsaved(e.to_string())),
        }
    }

    /// Answers by the [`Paused::id`](crate::Paused::id) (or the task id) of the pause each
    /// answers (LangGraph's resume map).
    ///
    /// # Examples
    ///
    /// ```
    /// use weir_runtime::Answer;
    /// let id = "0123456789abcdef0123456789abcdef";
    /// let json = serde_json::json!({ id: "yes" });
    /// assert_eq!(Answer::by_id([(id, "yes")]), Answer::from_json(json));
    /// ```
    pub fn by_id<K: Into<String>, A: serde::Serialize>(answers: impl IntoIterator<Item = (K, A)>) -> Self {
        let mut out = Vec::new();
        for (id, answer) in answers {
            match serde_json::to_value(answer) {
                Ok(v) => out.push((id.into(), v)),
                Err(e) => return Self(Repr::Unsaved(e.to_string())),
            }
        }
        Self(Repr::ById(out))
    }

    /// An answer as LangGraph reads `Command.resume`: an object whose every key is a pause id
    /// (32 hex digits) answers each of those pauses; any other value is one answer.
    pub fn from_json(value: serde_json::Value) -> Self {
        match value {
            serde_json::Value::Object(map) if !map.is_empty() && map.keys().all(|k| is_pause_id(k)) => {
                Self(Repr::ById(map.into_iter().collect()))
            }
            other => Self(Repr::One(other)),
        }
    }

    /// Each answer with the id of the task it answers (`None`: the only paused task).
    fn into_answers(self) -> Result<Vec<(Option<String>, serde_json::Value)>, Error> {
        match self.0 {
            Repr::One(v) => Ok(vec![(None, v)]),
            Repr::ById(answers) if answers.is_empty() => Err(Error::config(
                "the command's `resume` map is empty: name each paused task it answers",
            )),
            Repr::ById(answers) => Ok(answers.into_iter().map(|(id, v)| (Some(id), v)).collect()),
            Repr::Unsaved(e) => Err(Error::config(format!("the answer cannot be saved: {e}"))),
        }
    }
}

/// Whether `key` looks like a pause id: 32 hex digits.
fn is_pause_id(key: &str) -> bool {
    key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit())
}
