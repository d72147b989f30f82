use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research {
    #[reducer(add)]
    notes: Vec<String>,
}

fn main() {
    let _ = ResearchUpdate::default().notes(vec![]);
}
