use weir::prelude::*;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Model;

#[derive(State, Clone, Debug)]
struct Research {
    question: String,
    model: Model,
}

fn main() {}
