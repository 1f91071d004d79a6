//! `warrant-hook`: the hooks' own binary, a small program the agent hosts start once a tool call
//! (`warrant::cli::hook_main`; `docs/integrations.md`, The hooks' binary). It keeps the system's
//! allocator: a hook lives a few milliseconds and allocates little, where mimalloc (`src/main.rs`)
//! reserves a 1 GiB arena with huge pages before `main`, for the long-lived commands.

fn main() -> std::process::ExitCode {
    warrant::cli::hook_main()
}
