//! A temporary spool and a principal's key pinned for it, for tests that call the library's
//! store directly (shared by several test files).

use warrant::protocol::keys::{PinnedKeys, Principal};
use warrant::store::spool::Spool;

/// A spool in a temporary directory (removed on drop), `alice`'s key made from a seed, and the
/// pins that trust it.
pub struct Fixture {
    /// The temporary directory holding `spool/`.
    pub dir: tempfile::TempDir,
    /// The spool, created.
    pub spool: Spool,
    /// `alice`.
    pub principal: Principal,
    /// `alice`'s key, pinned.
    pub pinned: PinnedKeys,
}

/// A fresh [`Fixture`] whose key is made from 32 bytes of `seed`.
pub fn fixture_with_seed(seed: u8) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = Spool::new(dir.path().join("spool"));
    spool.ensure().expect("spool");
    let principal = Principal::from_seed("alice", &[seed; 32]);
    let mut pinned = PinnedKeys::default();
    pinned.pin("alice", principal.verifying_key());
    Fixture { dir, spool, principal, pinned }
}
