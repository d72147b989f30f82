use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
#[state(version = 2)]
#[migrate(from = 1, retype(count, with = count_from_text))]
struct Chat {
    count: u64,
}

fn count_from_text(text: String) -> String {
    text
}

fn main() {}
