use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
#[state(krate = weir)]
struct Research {
    question: String,
}

fn main() {
    let _ = ResearchUpdate::default().question(String::new());
}
