use std::collections::BTreeMap;
use weir::prelude::*;

fn merge_scores(scores: &mut BTreeMap<String, f64>, score: f64) {
    scores.insert(format!("{}", scores.len()), score);
}

#[derive(State, Clone, Debug, Default)]
struct Research {
    #[reducer(with = merge_scores)]
    scores: BTreeMap<String, f64>,
}

fn main() {}
