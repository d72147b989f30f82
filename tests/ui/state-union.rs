use weir::prelude::*;

#[derive(State, Clone, Copy)]
union Research {
    calls: u32,
}

fn main() {}
