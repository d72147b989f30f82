use weir_agent::tool;

/// Not a fn.
#[tool]
struct Search {
    query: String,
}

fn main() {}
