use weir::prelude::*;

#[derive(State, Clone, Debug)]
enum Research {
    Question(String),
}

fn main() {
    let _ = ResearchUpdate::default();
}
