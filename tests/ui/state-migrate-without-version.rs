use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
#[migrate(from = 1, add(tags))]
struct Chat {
    tags: Vec<String>,
}

fn main() {}
