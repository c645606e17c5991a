//! Splitting a task's CPU time into user and system time, as Linux's
//! `cputime_adjust` does.
//!
//! The scheduler knows exactly how long a task ran (`rtime`), but not how
//! much of that was in user mode: that is sampled by the timer tick, which
//! counts whether it interrupted the task in user or kernel mode. The
//! samples are coarse (one per tick) and the runtime is exact, so the
//! reported times scale the exact runtime by the sampled ratio. A
//! [`PrevCputime`] remembers the last answer so that neither time ever
//! goes backwards, however the ratio moves.

/// The last reported (user, system) times of one task or process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrevCputime {
    pub utime: u64,
    pub stime: u64,
}

/// Splits `rtime` (exact runtime) by the sampled `utime`:`stime` ratio,
/// keeping both results monotonic across calls through `prev`. Returns
/// (user, system); their sum is `rtime` unless `rtime` went backwards.
pub fn adjust(rtime: u64, utime: u64, stime: u64, prev: &mut PrevCputime) -> (u64, u64) {
    if prev.stime.saturating_add(prev.utime) >= rtime {
        return (prev.utime, prev.stime);
    }
    // With no sample of one kind, the whole runtime is the other kind;
    // once both have samples the monotonic rule below converges on the
    // observed ratio.
    let mut st = if stime == 0 {
        0
    } else if utime == 0 {
        rtime
    } else {
        ((u128::from(stime) * u128::from(rtime)) / (u128::from(stime) + u128::from(utime))) as u64
    };
    if st < prev.stime {
        st = prev.stime;
    }
    let mut ut = rtime - st;
    if ut < prev.utime {
        ut = prev.utime;
        st = rtime - ut;
    }
    prev.utime = ut;
    prev.stime = st;
    (ut, st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_samples_is_all_user() {
        let mut p = PrevCputime::default();
        assert_eq!(adjust(1000, 0, 0, &mut p), (1000, 0));
    }

    #[test]
    fn only_system_samples_is_all_system() {
        let mut p = PrevCputime::default();
        assert_eq!(adjust(1000, 0, 3, &mut p), (0, 1000));
    }

    #[test]
    fn scales_by_the_ratio() {
        let mut p = PrevCputime::default();
        assert_eq!(adjust(1000, 3, 1, &mut p), (750, 250));
    }

    #[test]
    fn never_goes_backwards() {
        let mut p = PrevCputime::default();
        assert_eq!(adjust(1000, 1, 3, &mut p), (250, 750));
        // The ratio swings to all-user: system time may not shrink.
        let (u, s) = adjust(1200, 10, 0, &mut p);
        assert_eq!((u, s), (450, 750));
        // Runtime that did not grow returns the last answer.
        assert_eq!(adjust(1100, 1, 1, &mut p), (450, 750));
    }

    #[test]
    fn sums_to_runtime() {
        let mut p = PrevCputime::default();
        for (r, u, s) in [(10, 1, 1), (50, 1, 7), (60, 9, 7), (400, 30, 1)] {
            let (a, b) = adjust(r, u, s, &mut p);
            assert_eq!(a + b, r);
        }
    }

    #[test]
    fn huge_values_do_not_overflow() {
        let mut p = PrevCputime::default();
        let (u, s) = adjust(u64::MAX / 2, u64::MAX / 4, u64::MAX / 4, &mut p);
        assert_eq!(u + s, u64::MAX / 2);
    }
}
