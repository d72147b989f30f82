use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research {
    #[reducer(merge)]
    notes: Vec<String>,
}

fn main() {}
