use weir_agent::tool;

struct Point {
    x: i64,
}

/// Moves to a point.
#[tool]
fn go(to: Point) -> i64 {
    to.x
}

fn main() {}
