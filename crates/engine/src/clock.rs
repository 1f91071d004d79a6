//! The time the engine judges at: the system's, or a time the caller sets and moves
//! ([`ManualTime`]), so that what expires (grants, packets, waits) can be tested by advancing
//! time instead of sleeping.

use std::sync::{Arc, Mutex};
use time::OffsetDateTime;

/// Where "now" comes from: the system clock (the default), or a [`ManualTime`].
#[derive(Debug, Clone, Default)]
pub struct Clock(Option<ManualTime>);

impl Clock {
    /// The system clock.
    #[must_use]
    pub fn system() -> Self {
        Clock(None)
    }

    /// Now, UTC.
    #[must_use]
    pub fn now(&self) -> OffsetDateTime {
        match &self.0 {
            None => OffsetDateTime::now_utc(),
            Some(m) => m.get(),
        }
    }

    /// Now as Unix seconds (fractional).
    #[must_use]
    pub fn now_unix(&self) -> f64 {
        let now = self.now();
        now.unix_timestamp() as f64 + f64::from(now.nanosecond()) * 1e-9
    }
}

/// A time that stands still until it is moved ([`ManualTime::advance`]); its [`ManualTime::clock`]
/// reads it. Clones share one time.
#[derive(Debug, Clone)]
pub struct ManualTime(Arc<Mutex<OffsetDateTime>>);

impl ManualTime {
    /// A time standing at `at`.
    #[must_use]
    pub fn at(at: OffsetDateTime) -> Self {
        ManualTime(Arc::new(Mutex::new(at)))
    }

    /// The clock that reads this time.
    #[must_use]
    pub fn clock(&self) -> Clock {
        Clock(Some(self.clone()))
    }

    /// Moves the time on by `by`.
    pub fn advance(&self, by: std::time::Duration) {
        let mut t = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *t += by;
    }

    fn get(&self) -> OffsetDateTime {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_time_moves_only_when_advanced_and_its_clones_share_it() {
        let t = ManualTime::at(time::macros::datetime!(2026-11-27 12:00 UTC));
        let clock = t.clock();
        assert_eq!(clock.now(), time::macros::datetime!(2026-11-27 12:00 UTC));
        t.clone().advance(std::time::Duration::from_millis(1_500));
        assert_eq!(clock.now(), time::macros::datetime!(2026-11-27 12:00:01.5 UTC));
        assert!((clock.now_unix() - (clock.now().unix_timestamp() as f64 + 0.5)).abs() < 1e-6);
        let system = Clock::system().now_unix();
        assert!(system > 1.7e9, "the system clock reads the system's time: {system}");
    }
}
