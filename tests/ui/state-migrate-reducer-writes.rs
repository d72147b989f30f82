use weir::prelude::*;

fn add_score(total: &mut Vec<f64>, score: f64) {
    total.push(score);
}

#[derive(State, Clone, Debug, Default)]
#[state(version = 2)]
#[migrate(from = 1, retype(scores, with = from_ints))]
struct Review {
    #[reducer(with = add_score, update = f64)]
    scores: Vec<f64>,
}

fn from_ints(old: Vec<i64>) -> Vec<f64> {
    old.into_iter().map(|s| s as f64).collect()
}

fn main() {}
