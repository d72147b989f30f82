use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
#[state(version = 3)]
#[migrate(from = 1, add(tags))]
struct Chat {
    messages: Vec<String>,
    tags: Vec<String>,
}

fn main() {}
