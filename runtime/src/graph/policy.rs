//! Per-node retry and timeout policies.

use crate::error::BoxError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

type RetryOn = Arc<dyn Fn(&BoxError) -> bool + Send + Sync>;

/// When and how often a failing node is run again (LangGraph's `RetryPolicy`).
///
/// Before attempt `n + 1` the run sleeps `min(max_interval, initial_interval * backoff_factor^(n-1))`,
/// plus a random fraction of a second when `jitter` is set. A panic or an interrupt is never retried.
///
/// ```
/// # use weir_runtime::RetryPolicy;
/// # use std::time::Duration;
/// let p = RetryPolicy::new(3).initial_interval(Duration::from_millis(10)).jitter(false);
/// assert_eq!(p.delay(1), Duration::from_millis(10));
/// assert_eq!(p.delay(2), Duration::from_millis(20));
/// ```
#[derive(Clone)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) initial_interval: Duration,
    pub(crate) backoff_factor: f64,
    pub(crate) max_interval: Duration,
    pub(crate) jitter: bool,
    pub(crate) retry_on: Option<RetryOn>,
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("initial_interval", &self.initial_interval)
            .field("backoff_factor", &self.backoff_factor)
            .field("max_interval", &self.max_interval)
            .field("jitter", &self.jitter)
            .field("retry_on", &self.retry_on.as_ref().map(|_| "<fn>"))
            .finish()
    }
}

impl Default for RetryPolicy {
    /// Three attempts, 0.5 s then 1 s apart (plus jitter), every error retried.
    fn default() -> Self {
        Self::new(3)
    }
}

impl RetryPolicy {
    /// At most `max_attempts` attempts in all, LangGraph's default intervals.
    pub fn new(max_attempts: u32) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(128),
            jitter: true,
            retry_on: None,
        }
    }
    /// The sleep before the second attempt.
    pub fn initial_interval(mut self, d: Duration) -> Self {
        self.initial_interval = d;
        self
    }
    /// How much each sleep grows.
    ///
    /// # Panics
    /// When `f` is not a finite number `>= 0` (a sleep cannot be negative).
    pub fn backoff_factor(mut self, f: f64) -> Self {
        assert!(
            f.is_finite() && f >= 0.0,
            "RetryPolicy::backoff_factor: expected a finite number >= 0, got {f}"
        );
        self.backoff_factor = f;
        self
    }
    /// The longest sleep.
    pub fn max_interval(mut self, d: Duration) -> Self {
        self.max_interval = d;
        self
    }
    /// Whether to add a random fraction of a second to each sleep.
    pub fn jitter(mut self, on: bool) -> Self {
        self.jitter = on;
        self
    }
    /// Retries only the errors `pred` accepts (by default every error a node returns).
    pub fn retry_on(mut self, pred: impl Fn(&BoxError) -> bool + Send + Sync + 'static) -> Self {
        self.retry_on = Some(Arc::new(pred));
        self
    }
    /// The most attempts.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
    /// The sleep after failed attempt `attempt` (1-based), without jitter: never more than
    /// `max_interval`, however far the factor's powers grow.
    ///
    /// ```
    /// # use weir_runtime::RetryPolicy;
    /// # use std::time::Duration;
    /// // 0.5 s * 2^98 is no `Duration`: the sleep is the longest one.
    /// assert_eq!(RetryPolicy::new(100).delay(99), Duration::from_secs(128));
    /// ```
    pub fn delay(&self, attempt: u32) -> Duration {
        let exp = self.backoff_factor.powi(attempt.saturating_sub(1) as i32);
        Duration::try_from_secs_f64(self.initial_interval.as_secs_f64() * exp)
            .map_or(self.max_interval, |d| d.min(self.max_interval))
    }
    pub(crate) fn should_retry(&self, attempt: u32, error: &BoxError) -> bool {
        attempt < self.max_attempts
            && self
                .retry_on
                .as_ref()
                .is_none_or(|p| p(crate::error::typed::inner(error)))
    }
    pub(crate) fn sleep_for(&self, attempt: u32) -> Duration {
        let base = self.delay(attempt);
        if self.jitter {
            base + Duration::from_nanos(jitter_nanos() % 1_000_000_000)
        } else {
            base
        }
    }
}

/// A cheap random number for jitter: no need for a cryptographic source.
fn jitter_nanos() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    h.finish()
}

/// What the loop applies around one node's runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodePolicy {
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) timeout: Option<Duration>,
}
