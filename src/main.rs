//! The `warrant` binary: everything lives in the library; see `warrant::cli`.

fn main() -> std::process::ExitCode {
    warrant::cli::main()
}
