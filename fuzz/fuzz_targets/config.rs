//! Fuzz target `config`: see `warrant_fuzz::config` (`tests/fuzz_harness/mod.rs`) for what it feeds
//! and which properties it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = warrant_fuzz::config(data);
});
