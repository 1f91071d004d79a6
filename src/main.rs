//! The `warrant` binary: everything lives in the library; see `warrant::cli`.

/// mimalloc instead of glibc's malloc: the verifier and the console allocate on worker threads
/// and free on others, and glibc kept ~150 MB of freed memory in per-thread arenas while the
/// console verified a million records (peak 336 MB against a live heap of 190 MB); mimalloc
/// returns it, and `warrant verify` runs ~20% faster (`docs/performance.md`). The feature
/// `system-allocator` keeps glibc's, for heap profilers that hook `malloc` (heaptrack).
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    warrant::cli::main()
}
