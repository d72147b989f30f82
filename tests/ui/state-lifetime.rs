use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research<'a> {
    question: &'a str,
}

fn main() {}
