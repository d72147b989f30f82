use weir::prelude::*;

// Every attribute error of a struct is reported in one compile.
#[derive(State, Clone, Debug, Default)]
struct Research {
    #[reducer(apend)]
    notes: Vec<String>,
    #[channel(topik)]
    events: Vec<String>,
    #[reducer(add)]
    #[reducer(add)]
    llm_calls: u32,
}

fn main() {
    let _ = ResearchUpdate::default().notes(vec![]).events(vec![]).llm_calls(1);
}
