//! Fuzz target `theme`: see `warrant_fuzz::theme` (`tests/fuzz_harness/mod.rs`) for what it feeds
//! and which properties it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = warrant_fuzz::theme(data);
});
