//! Map-reduce over `Send`: a node lists subjects, one task per subject writes a joke about it
//! (all in the same step), and a deferred node picks the best once every task is done.
//! LangGraph's map-reduce how-to, with a deterministic fake model.
//!
//! ```text
//! cargo run --example map_reduce
//! ```

use serde::{Deserialize, Serialize};
use std::time::Duration;
use weir::prelude::*;

/// The state: a topic, its subjects, the jokes (one per subject) and the best of them.
#[derive(State, Clone, Debug, Default)]
pub struct Jokes {
    /// What the jokes are about.
    pub topic: String,
    /// The subjects, one `Send` each.
    pub subjects: Vec<String>,
    /// The jokes, appended in the order the `Send`s were made.
    #[reducer(append)]
    pub jokes: Vec<String>,
    /// The best joke.
    pub best: String,
}

/// What each `Send` carries: the payload of one `generate_joke` task. It is saved with the
/// checkpoint while the task is pending, hence serde.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Subject {
    /// The subject of the joke.
    pub name: String,
    /// Its position in the list, to tell the tasks apart.
    pub index: usize,
}

/// Lists three subjects for the topic (a fake model: deterministic).
fn generate_topics(s: &Jokes) -> JokesUpdate {
    let subjects = ["lions", "elephants", "penguins"]
        .iter()
        .map(|animal| format!("{animal} ({})", s.topic))
        .collect();
    JokesUpdate::default().subjects(subjects)
}

/// The map: one `Send` per subject.
fn each_subject(s: &Jokes) -> Vec<Subject> {
    s.subjects
        .iter()
        .enumerate()
        .map(|(index, name)| Subject {
            name: name.clone(),
            index,
        })
        .collect()
}

/// One task per subject; later subjects answer sooner, yet the jokes keep the subjects' order.
async fn generate_joke(subject: &Subject) -> JokesUpdate {
    tokio::time::sleep(Duration::from_millis(3 - subject.index as u64)).await;
    let joke = format!(
        "why did the {} cross the road? to reach subject {}",
        subject.name, subject.index
    );
    JokesUpdate::default().jokes(vec![joke])
}

/// The reduce: runs once, after every joke is in.
fn best_joke(s: &Jokes) -> JokesUpdate {
    let best = s.jokes.iter().max_by_key(|j| j.len()).cloned().unwrap_or_default();
    JokesUpdate::default().best(best)
}

graph! {
    /// Map-reduce over `Send`.
    pub struct MapReduce;
    state: Jokes,
    nodes: [
        generate_topics(writes(subjects)),
        generate_joke(writes(jokes)),
        best_joke(writes(best), defer),
    ],
    START -> generate_topics;
    generate_topics -> each_subject ?> generate_joke;  // one task per payload, same step
    generate_joke -> best_joke -> END;
}

/// Runs the map-reduce on `topic`.
pub async fn map_reduce(topic: &str) -> Result<Jokes, BoxError> {
    let app = MapReduce::compile()?;
    let input = JokesUpdate::default().topic(topic.to_owned());
    Ok(app.invoke(input, &RunConfig::default()).await?)
}

#[cfg_attr(test, allow(dead_code))]
#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let out = map_reduce("animals").await?;
    for joke in &out.jokes {
        println!("joke: {joke}");
    }
    println!("best: {}", out.best);
    println!("\n{}", MapReduce::MERMAID);
    Ok(())
}
