use weir::prelude::*;

#[task(cache(soon))]
fn shout(word: String) -> String {
    word.to_uppercase()
}

fn main() {}
