//! The loader over arbitrary input: it must report problems, never panic.
//!
//! Run: `cd flow && RUSTC_BOOTSTRAP=1 cargo fuzz run load -- -max_total_time=180`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_flow::{Flow, LoadOptions, Registry};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let registry = Registry::new();
    match Flow::load(text, &registry, LoadOptions { max_steps: 3, ..LoadOptions::default() }) {
        Ok(flow) => {
            let _ = flow.mermaid();
            let _ = flow.recursion_limit();
        }
        Err(e) => {
            assert!(!e.diagnostics().is_empty());
            for d in e.diagnostics() {
                assert!(d.path().starts_with('$'), "{d}");
            }
        }
    }
});
