//! The open loop's schedule: a Poisson arrival process shared by every open-loop
//! connection.

use std::time::{Duration, Instant};

/// A Poisson arrival process: exponential gaps with mean `1 / rate`.
pub(super) struct Arrivals {
    pub(super) next: Instant,
    mean_gap_ns: f64,
    state: u64,
}

impl Arrivals {
    pub(super) fn new(rate: f64, start: Instant) -> Arrivals {
        let mean_gap_ns = if rate > 0.0 {
            1e9 / rate
        } else {
            f64::INFINITY
        };
        let mut a = Arrivals {
            next: start,
            mean_gap_ns,
            state: 0x9E37_79B9_7F4A_7C15,
        };
        a.advance();
        a
    }

    pub(super) fn advance(&mut self) {
        // xorshift64*: a fixed seed, so every server gets the same arrival pattern.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let r = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let u = ((r >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let gap = -u.ln() * self.mean_gap_ns;
        self.next += if gap.is_finite() {
            Duration::from_nanos(gap as u64)
        } else {
            Duration::from_secs(3600)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_have_the_requested_rate() {
        let start = Instant::now();
        let mut a = Arrivals::new(10_000.0, start);
        for _ in 0..100_000 {
            a.advance();
        }
        let secs = a.next.duration_since(start).as_secs_f64();
        // 100k arrivals at 10k/s take ~10 s; the sample mean is within a few percent.
        assert!((9.5..10.5).contains(&secs), "{secs}");
    }

    #[test]
    fn no_rate_means_no_arrivals() {
        let start = Instant::now();
        let a = Arrivals::new(0.0, start);
        assert!(a.next >= start + Duration::from_secs(3600));
    }
}
