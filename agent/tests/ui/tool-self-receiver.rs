use weir_agent::tool;

struct Index;

impl Index {
    /// Searches the index.
    #[tool]
    fn search(&self, query: String) -> String {
        query
    }
}

fn main() {}
