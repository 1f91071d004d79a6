//! Per-ring token-bucket rate limiting (agent-hypervisor.md §2.8; spec §9).

use super::{Ring, UnixSeconds};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Buckets kept before the oldest-inserted one is evicted.
pub const DEFAULT_MAX_BUCKETS: usize = 100_000;
/// The limits of a ring missing from a custom table: Ring 2's (20/s, burst 40). (Resources fall
/// back to Ring 3 instead, §5 item 7.)
pub const FALLBACK_LIMITS: RingLimits = RingLimits { rate: 20.0, burst: 40.0 };

/// A ring's limits: `rate` tokens per second, `burst` = bucket capacity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RingLimits {
    /// Refill, tokens per second.
    pub rate: f64,
    /// Capacity, tokens.
    pub burst: f64,
}

/// The default table (§2.8): Ring 0 100/s burst 200, Ring 1 50/100, Ring 2 20/40, Ring 3 5/10.
#[must_use]
pub fn default_limits(ring: Ring) -> RingLimits {
    let (rate, burst) = match ring {
        Ring::Root => (100.0, 200.0),
        Ring::Privileged => (50.0, 100.0),
        Ring::Standard => (20.0, 40.0),
        Ring::Sandbox => (5.0, 10.0),
    };
    RingLimits { rate, burst }
}

/// A token bucket (§2.8). Times are [`UnixSeconds`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenBucket {
    /// Most tokens held.
    pub capacity: f64,
    /// Tokens now (as of `last_refill`).
    pub tokens: f64,
    /// Tokens added per second.
    pub refill_rate: f64,
    /// When tokens were last refilled.
    pub last_refill: UnixSeconds,
}

impl TokenBucket {
    /// A full bucket with `limits`, last refilled at `now`.
    #[must_use]
    pub fn full(limits: RingLimits, now: UnixSeconds) -> Self {
        Self { capacity: limits.burst, tokens: limits.burst, refill_rate: limits.rate, last_refill: now }
    }

    /// `tokens = min(capacity, tokens + elapsed × rate)`, `last_refill = now`. Time that runs
    /// backwards (or is not finite) adds nothing and does not move `last_refill` back.
    pub fn refill(&mut self, now: UnixSeconds) {
        let elapsed = now - self.last_refill;
        if elapsed.is_finite() && elapsed > 0.0 {
            self.tokens = (self.tokens + elapsed * self.refill_rate).min(self.capacity);
            self.last_refill = now;
        } else {
            self.tokens = self.tokens.min(self.capacity);
        }
    }

    /// Refills, then takes `cost` tokens if at least that many are there. A cost of 0 always
    /// succeeds. A negative or non-finite cost fails (fail closed: the reference would mint tokens
    /// for a negative cost).
    pub fn consume(&mut self, cost: f64, now: UnixSeconds) -> bool {
        self.refill(now);
        if cost.is_finite() && cost >= 0.0 && self.tokens >= cost {
            self.tokens -= cost;
            true
        } else {
            false
        }
    }

    /// Refills and returns the tokens available.
    pub fn available(&mut self, now: UnixSeconds) -> f64 {
        self.refill(now);
        self.tokens
    }
}

/// Counters of one (agent, session) bucket (§2.8).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateStats {
    /// The agent.
    pub agent_did: String,
    /// The ring the bucket was created (or last updated) with.
    pub ring: Ring,
    /// Checks made.
    pub total_requests: u64,
    /// Checks refused.
    pub rejected_requests: u64,
    /// Tokens in the bucket, refreshed when read.
    pub tokens_available: f64,
    /// The bucket's capacity.
    pub capacity: f64,
}

/// A refused check (§2.8, §2.15): `"Agent {did} exceeded rate limit for ring {n} ({k}
/// rejections)"`, `n` being the ring given to the check and `k` the bucket's rejections so far.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Agent {agent_did} exceeded rate limit for ring {} ({rejections} rejections)", ring.value())]
pub struct RateLimitExceeded {
    /// The agent.
    pub agent_did: String,
    /// The session.
    pub session_id: String,
    /// The ring given to the check.
    pub ring: Ring,
    /// Rejections of this bucket so far, this one included.
    pub rejections: u64,
}

type Key = (String, String);

#[derive(Debug, Clone)]
struct Entry {
    bucket: TokenBucket,
    stats: RateStats,
}

/// The reference's `AgentRateLimiter` (§2.8): one bucket per **(agent_did, session_id)** pair
/// (never a joined string), created full at the ring given to the first check; later checks
/// reuse it whatever ring they give. At most `max_buckets` buckets: a new key arriving at the
/// cap evicts the oldest-*inserted* bucket and its stats (FIFO, not LRU).
#[derive(Debug, Clone)]
pub struct RateLimiter {
    limits: BTreeMap<Ring, RingLimits>,
    max_buckets: usize,
    /// Buckets by agent, then session: looked up by `&str` without allocating.
    entries: HashMap<String, HashMap<String, Entry>>,
    /// Number of buckets.
    count: usize,
    order: VecDeque<Key>,
}

impl Default for RateLimiter {
    fn default() -> Self {
        Self::new(Ring::ALL.into_iter().map(|r| (r, default_limits(r))).collect(), DEFAULT_MAX_BUCKETS)
    }
}

impl RateLimiter {
    /// A limiter with a custom table (a ring missing from it gets [`FALLBACK_LIMITS`]) and cap.
    #[must_use]
    pub fn new(limits: BTreeMap<Ring, RingLimits>, max_buckets: usize) -> Self {
        Self { limits, max_buckets, entries: HashMap::new(), count: 0, order: VecDeque::new() }
    }

    /// The limits used for `ring`.
    #[must_use]
    pub fn limits(&self, ring: Ring) -> RingLimits {
        self.limits.get(&ring).copied().unwrap_or(FALLBACK_LIMITS)
    }

    /// Takes `cost` tokens (1.0 is the reference default) from the (agent, session) bucket at
    /// `now`, creating it full at `ring`'s limits if new. Counts the request; a refusal is counted
    /// as a rejection.
    ///
    /// # Errors
    /// [`RateLimitExceeded`] when the bucket holds fewer than `cost` tokens (or the cost is
    /// negative or not finite).
    pub fn check(
        &mut self,
        agent_did: &str,
        session_id: &str,
        ring: Ring,
        cost: f64,
        now: UnixSeconds,
    ) -> Result<(), RateLimitExceeded> {
        if self.entry_mut(agent_did, session_id).is_none() {
            if self.count >= self.max_buckets
                && let Some((agent, session)) = self.order.pop_front()
                && let Some(sessions) = self.entries.get_mut(&agent)
                && sessions.remove(&session).is_some()
            {
                self.count -= 1;
                if sessions.is_empty() {
                    self.entries.remove(&agent);
                }
            }
            self.insert_full((agent_did.to_owned(), session_id.to_owned()), ring, now);
        }
        let Some(entry) = self.entry_mut(agent_did, session_id) else {
            // Unreachable: the entry exists or was inserted just above. Refuse rather than panic.
            return Err(RateLimitExceeded {
                agent_did: agent_did.into(),
                session_id: session_id.into(),
                ring,
                rejections: 0,
            });
        };
        entry.stats.total_requests += 1;
        if entry.bucket.consume(cost, now) {
            Ok(())
        } else {
            entry.stats.rejected_requests += 1;
            Err(RateLimitExceeded {
                agent_did: agent_did.to_owned(),
                session_id: session_id.to_owned(),
                ring,
                rejections: entry.stats.rejected_requests,
            })
        }
    }

    /// [`RateLimiter::check`] as a boolean.
    pub fn try_check(&mut self, agent_did: &str, session_id: &str, ring: Ring, cost: f64, now: UnixSeconds) -> bool {
        self.check(agent_did, session_id, ring, cost, now).is_ok()
    }

    /// Replaces the (agent, session) bucket with a **full** one at `new_ring`'s limits and
    /// records the ring in its stats. Does not apply the cap; an existing key keeps its place in
    /// the eviction order; a new key gets fresh stats and goes to the back.
    pub fn update_ring(&mut self, agent_did: &str, session_id: &str, new_ring: Ring, now: UnixSeconds) {
        let bucket = TokenBucket::full(self.limits(new_ring), now);
        match self.entry_mut(agent_did, session_id) {
            Some(entry) => {
                entry.bucket = bucket;
                entry.stats.ring = new_ring;
            }
            None => self.insert_full((agent_did.to_owned(), session_id.to_owned()), new_ring, now),
        }
    }

    /// Inserts a full bucket at `ring`'s limits with fresh stats, at the back of the eviction order.
    fn insert_full(&mut self, key: Key, ring: Ring, now: UnixSeconds) {
        let stats = RateStats {
            agent_did: key.0.clone(),
            ring,
            total_requests: 0,
            rejected_requests: 0,
            tokens_available: 0.0,
            capacity: 0.0,
        };
        self.order.push_back(key.clone());
        let bucket = TokenBucket::full(self.limits(ring), now);
        if self.entries.entry(key.0).or_default().insert(key.1, Entry { bucket, stats }).is_none() {
            self.count += 1;
        }
    }

    /// The bucket of (agent, session), if any.
    fn entry_mut(&mut self, agent_did: &str, session_id: &str) -> Option<&mut Entry> {
        self.entries.get_mut(agent_did)?.get_mut(session_id)
    }

    /// The ring of the (agent, session) bucket and its tokens available and capacity at `now`
    /// (what [`RateLimiter::stats`] gives, without copying the stats), or `None` if unknown.
    pub fn bucket(&mut self, agent_did: &str, session_id: &str, now: UnixSeconds) -> Option<(Ring, f64, f64)> {
        let entry = self.entry_mut(agent_did, session_id)?;
        Some((entry.stats.ring, entry.bucket.available(now), entry.bucket.capacity))
    }

    /// The stats of (agent, session) with tokens refreshed at `now`, or `None` if unknown.
    pub fn stats(&mut self, agent_did: &str, session_id: &str, now: UnixSeconds) -> Option<RateStats> {
        let entry = self.entry_mut(agent_did, session_id)?;
        entry.stats.tokens_available = entry.bucket.available(now);
        entry.stats.capacity = entry.bucket.capacity;
        Some(entry.stats.clone())
    }

    /// The number of buckets.
    #[must_use]
    pub fn tracked_agents(&self) -> usize {
        self.count
    }
}
