//! A trivial Rust binary: the process-start baseline `examples/hook_latency.rs` compares the
//! hook with.

fn main() {}
