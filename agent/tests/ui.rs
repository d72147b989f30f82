//! Compile tests for `#[tool]`: `tests/ui/tool-<rule>.rs` must fail to compile with the
//! checked-in `.stderr`.
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test -p weir-agent --test ui`,
//! then read every diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/tool-*.rs");
}
