use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Research {
    #[reducer(append)]
    notes: String,
}

fn main() {
    let _ = ResearchUpdate::default().notes(String::new());
}
