use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research(String, Vec<String>);

fn main() {
    let _ = ResearchUpdate::default();
}
