use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research {
    #[reducer(append, update = String)]
    notes: Vec<String>,
}

fn main() {}
