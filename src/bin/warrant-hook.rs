//! `warrant-hook`: the hooks' own binary, a small program the agent hosts start once a tool call
//! (`warrant::cli::hook_main`; `docs/integrations.md`, The hook's binary). It allocates with the
//! system's allocator: a hook lives a few milliseconds, and mimalloc's start and its huge pages cost
//! more than they save there (`docs/performance.md`, Hooks).

fn main() -> std::process::ExitCode {
    warrant::cli::hook_main()
}
