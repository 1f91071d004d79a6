//! Running a kill switch's termination callback (`warrant_protocol::rings::kill`) on its own
//! thread, bounded by the switch's timeout: the I/O the protocol's kill switch leaves to its
//! caller.

use std::sync::mpsc;
use std::time::Duration;
use warrant_protocol::rings::kill::TerminationCallback;

/// Runs `callback` on a new thread and waits up to `timeout` for it. True iff it returned `Ok`
/// in time. A callback still running is left to finish on its own.
pub fn run_with_timeout(callback: TerminationCallback, timeout: Duration) -> bool {
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("kill-callback".into()).spawn(move || {
        // The receiver may be gone after a timeout; the result is then moot.
        let _ = tx.send(callback());
    });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "could not start the termination callback thread");
        return false;
    }
    match rx.recv_timeout(timeout) {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            tracing::error!(error = %e, "termination callback failed");
            false
        }
        // A panic drops the sender (Disconnected); a hang times out.
        Err(e) => {
            tracing::error!(error = %e, "termination callback did not complete");
            false
        }
    }
}
