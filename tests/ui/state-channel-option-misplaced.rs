use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research {
    #[channel(ephemeral, accumulate)]
    scratch: Vec<String>,
    #[channel(topic, unguarded)]
    events: Vec<String>,
}

fn main() {}
