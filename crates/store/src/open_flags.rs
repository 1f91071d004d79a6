//! The `open(2)` flags and error numbers the store's careful opens use, from `rustix` (no `libc`):
//! for `std::os::unix::fs::OpenOptionsExt::custom_flags` and `io::Error::raw_os_error`.

/// `O_NONBLOCK`: opening a FIFO never waits for a writer.
pub const NONBLOCK: i32 = rustix::fs::OFlags::NONBLOCK.bits() as i32;

/// `O_NOFOLLOW`: a symbolic link as the last component is refused (`ELOOP`).
pub const NOFOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;

/// `ELOOP`: what an `O_NOFOLLOW` open of a symbolic link fails with.
pub const ELOOP: i32 = rustix::io::Errno::LOOP.raw_os_error();
