//! [`Interval`]: ticks at a fixed period.

use super::sleep::{sleep_until, Sleep};
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// What [`Interval::tick`] does when ticks were missed (the task was busy for longer
/// than one period).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissedTickBehavior {
    /// Fire the missed ticks back to back until caught up, keeping the original
    /// schedule (`start + k * period`). The default.
    #[default]
    Burst,
    /// Fire once now, then schedule the next tick one period after now: the schedule
    /// shifts.
    Delay,
    /// Fire once now, then continue on the original schedule's next point after now,
    /// dropping the missed ticks.
    Skip,
}

/// Ticks every `period`, the first tick completing immediately.
///
/// # Panics
/// If `period` is zero.
pub fn interval(period: Duration) -> Interval {
    interval_at(Instant::now(), period)
}

/// Ticks every `period`, the first tick at `start`.
///
/// # Panics
/// If `period` is zero.
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    assert!(
        period > Duration::ZERO,
        "zerorx: interval period must be non-zero"
    );
    Interval {
        next: start,
        period,
        sleep: sleep_until(start),
        missed: MissedTickBehavior::default(),
    }
}

/// A periodic timer; see [`interval`].
#[derive(Debug)]
pub struct Interval {
    next: Instant,
    period: Duration,
    sleep: Sleep,
    missed: MissedTickBehavior,
}

impl Interval {
    /// Waits for the next tick and returns its scheduled instant.
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        if Pin::new(&mut self.sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        let tick = self.next;
        let now = Instant::now();
        self.next = match self.missed {
            MissedTickBehavior::Burst => tick + self.period,
            MissedTickBehavior::Delay => now + self.period,
            MissedTickBehavior::Skip => {
                let behind = now.saturating_duration_since(tick);
                let periods = behind.as_nanos() / self.period.as_nanos() + 1;
                tick + self.period * periods as u32
            }
        };
        self.sleep.reset(self.next);
        Poll::Ready(tick)
    }

    /// Sets the missed-tick behaviour.
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }
}
