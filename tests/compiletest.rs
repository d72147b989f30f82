//! Compile tests for the macros: `tests/ui/<macro>-<rule>.rs` must fail to compile with the
//! checked-in `.stderr`; `tests/ui/<macro>-pass-<what>.rs` must compile and run.
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test compiletest`, then
//! read every diff.

use std::path::PathBuf;

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    let mut cases: Vec<PathBuf> = std::fs::read_dir("tests/ui")
        .expect("tests/ui exists")
        .map(|entry| entry.expect("a readable entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    cases.sort();
    for case in &cases {
        let name = case.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        if name.contains("-pass-") {
            t.pass(case);
        } else {
            t.compile_fail(case);
        }
    }
}
