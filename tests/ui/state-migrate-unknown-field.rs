use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
#[state(version = 2)]
#[migrate(from = 1, rename(from = notes, to = mesages), drop(tags))]
struct Chat {
    messages: Vec<String>,
    tags: Vec<String>,
}

fn main() {}
