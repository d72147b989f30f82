use std::collections::BTreeMap;
use weir::prelude::*;

fn keep_max(best: &mut f64, score: f64) {
    *best = best.max(score);
}
fn push_one(log: &mut Vec<String>, line: String) {
    log.push(line);
}

#[derive(State, Clone, Debug, Default)]
struct Research {
    question: String,
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(add)]
    llm_calls: u32,
    #[reducer(merge)]
    sources: BTreeMap<String, u32>,
    #[reducer(with = keep_max)]
    best: f64,
    #[reducer(with = push_one, update = String)]
    log: Vec<String>,
    #[channel(ephemeral)]
    scratch: Option<String>,
    #[channel(topic)]
    events: Vec<String>,
    #[channel(topic, accumulate)]
    history: Vec<String>,
}

#[derive(State, Clone, Debug, Default)]
struct Gen<T: Clone + std::fmt::Debug + Default + Send + Sync + 'static> {
    #[reducer(append)]
    items: Vec<T>,
    last: T,
}

#[test]
fn smoke() {
    let u = ResearchUpdate::default().notes(vec!["a".into()]).llm_calls(1);
    assert!(u.is_written(Research::__WEIR_FIELD_notes));
    let _ = GenUpdate::<u8>::default().items(vec![1]);
}
