use weir::prelude::*;

#[task(retry(max_attempts = 2), defer)]
fn shout(word: String) -> String {
    word.to_uppercase()
}

fn main() {}
