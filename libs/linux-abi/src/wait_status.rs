//! Encoding and decoding of the `wait4` status word.
//!
//! The kernel reports a child's state change as one `int`: exit code in bits
//! 8..16 with the low 7 bits zero; a terminating signal in the low 7 bits
//! with bit 7 flagging a core dump; `0x7f` in the low byte with the stop
//! signal above it; or `0xffff` for "continued". These are the encodings the
//! libc `W*` macros decode. `waitid` uses `si_code`/`si_status` instead (see
//! [`crate::layout::Siginfo::child`]).

/// Status of a child that called `exit(code)`.
pub fn exited(code: u8) -> i32 {
    (code as i32) << 8
}

/// Status of a child killed by `sig`, `core` if it dumped core.
pub fn signaled(sig: u32, core: bool) -> i32 {
    (sig as i32 & 0x7f) | if core { 0x80 } else { 0 }
}

/// Status of a child stopped by `sig`.
pub fn stopped(sig: u32) -> i32 {
    0x7f | ((sig as i32 & 0xff) << 8)
}

/// Status of a stopped child that was resumed by `SIGCONT`.
pub fn continued() -> i32 {
    0xffff
}

/// `WIFEXITED`.
pub fn is_exited(status: i32) -> bool {
    status & 0x7f == 0
}

/// `WEXITSTATUS`.
pub fn exit_code(status: i32) -> Option<u8> {
    is_exited(status).then_some(((status >> 8) & 0xff) as u8)
}

/// `WIFSIGNALED`.
pub fn is_signaled(status: i32) -> bool {
    let low = status & 0x7f;
    low != 0 && low != 0x7f
}

/// `WTERMSIG`.
pub fn term_signal(status: i32) -> Option<u32> {
    is_signaled(status).then_some((status & 0x7f) as u32)
}

/// `WCOREDUMP`.
pub fn core_dumped(status: i32) -> bool {
    is_signaled(status) && status & 0x80 != 0
}

/// `WIFSTOPPED`.
pub fn is_stopped(status: i32) -> bool {
    status & 0xff == 0x7f
}

/// `WSTOPSIG`.
pub fn stop_signal(status: i32) -> Option<u32> {
    is_stopped(status).then_some(((status >> 8) & 0xff) as u32)
}

/// `WIFCONTINUED`.
pub fn is_continued(status: i32) -> bool {
    status == 0xffff
}

/// A decoded wait status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitStatus {
    Exited(u8),
    Signaled { sig: u32, core: bool },
    Stopped(u32),
    Continued,
}

impl WaitStatus {
    pub fn encode(self) -> i32 {
        match self {
            WaitStatus::Exited(c) => exited(c),
            WaitStatus::Signaled { sig, core } => signaled(sig, core),
            WaitStatus::Stopped(s) => stopped(s),
            WaitStatus::Continued => continued(),
        }
    }

    pub fn decode(status: i32) -> WaitStatus {
        if is_continued(status) {
            WaitStatus::Continued
        } else if let Some(s) = stop_signal(status) {
            WaitStatus::Stopped(s)
        } else if let Some(c) = exit_code(status) {
            WaitStatus::Exited(c)
        } else {
            WaitStatus::Signaled { sig: (status & 0x7f) as u32, core: status & 0x80 != 0 }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings() {
        assert_eq!(exited(0), 0);
        assert_eq!(exited(3), 0x300);
        assert_eq!(signaled(9, false), 9);
        assert_eq!(signaled(11, true), 0x8b);
        assert_eq!(stopped(19), 0x137f);
        assert_eq!(continued(), 0xffff);
    }

    #[test]
    fn decoders() {
        assert_eq!(exit_code(exited(42)), Some(42));
        assert_eq!(exit_code(signaled(9, false)), None);
        assert_eq!(term_signal(signaled(15, false)), Some(15));
        assert!(core_dumped(signaled(11, true)));
        assert!(!core_dumped(signaled(11, false)));
        assert_eq!(stop_signal(stopped(20)), Some(20));
        assert_eq!(term_signal(stopped(20)), None);
        assert!(is_continued(continued()));
        assert!(!is_exited(continued()) && !is_signaled(continued()));
    }

    #[test]
    fn round_trip() {
        for c in 0..=255u8 {
            let w = WaitStatus::Exited(c);
            assert_eq!(WaitStatus::decode(w.encode()), w);
        }
        for sig in 1..=64u32 {
            if sig < 0x7f {
                for core in [false, true] {
                    let w = WaitStatus::Signaled { sig, core };
                    assert_eq!(WaitStatus::decode(w.encode()), w);
                }
            }
            let w = WaitStatus::Stopped(sig);
            assert_eq!(WaitStatus::decode(w.encode()), w);
        }
        assert_eq!(WaitStatus::decode(0xffff), WaitStatus::Continued);
    }
}
