//! Fuzz target `chain_export`: see `warrant_fuzz::chain_export` (`tests/fuzz_harness/mod.rs`) for what it feeds
//! and which properties it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = warrant_fuzz::chain_export(data);
});
