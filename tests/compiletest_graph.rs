//! Compile-fail and pass cases of `graph!`: `tests/ui/graph-*.rs`, each compile-fail case with
//! its checked-in `.stderr`; cases named `graph-pass-*` must compile and run (the
//! convention of `tests/compiletest.rs`, into which this runner folds).

#[test]
fn graph_ui() {
    let t = trybuild::TestCases::new();
    let mut cases: Vec<_> = std::fs::read_dir("tests/ui")
        .expect("tests/ui exists")
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with("graph-") && name.ends_with(".rs")
        })
        .collect();
    cases.sort();
    for case in cases {
        let name = case.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with("graph-pass-") {
            t.pass(&case);
        } else {
            t.compile_fail(&case);
        }
    }
}
