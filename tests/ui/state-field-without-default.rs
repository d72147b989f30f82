use weir::prelude::*;

#[derive(Clone, Debug)]
struct Model;

#[derive(State, Clone, Debug)]
struct Research {
    question: String,
    model: Model,
}

fn main() {}
