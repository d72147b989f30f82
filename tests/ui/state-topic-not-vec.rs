use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research {
    #[channel(topic)]
    events: String,
}

fn main() {}
