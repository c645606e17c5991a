//! Byte-exact encoders and decoders for the x86_64 Linux structs that system
//! calls exchange with user space.
//!
//! The kernel is written without `unsafe`, so it cannot reinterpret user
//! memory as a `#[repr(C)]` struct. Instead each struct here has plain public
//! fields plus a `SIZE` constant and `to_bytes`/`from_bytes` that lay the
//! fields out little-endian at exactly the offsets the x86_64 ABI uses
//! (including padding, which is always written as zero). The offsets are
//! checked against the system headers by `tests/layout.rs`, which compiles
//! `tests/layout.c` with the host C compiler.

use crate::signal::SigSet;

mod sched;
pub use sched::{SchedAttr, SchedParam};

#[inline]
pub(crate) fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}
#[inline]
pub(crate) fn put_i16(b: &mut [u8], off: usize, v: i16) {
    put_u16(b, off, v as u16)
}
#[inline]
pub(crate) fn put_i32(b: &mut [u8], off: usize, v: i32) {
    put_u32(b, off, v as u32)
}
#[inline]
pub(crate) fn put_i64(b: &mut [u8], off: usize, v: i64) {
    put_u64(b, off, v as u64)
}
#[inline]
pub(crate) fn get_u16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}
#[inline]
pub(crate) fn get_u32(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}
#[inline]
pub(crate) fn get_u64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}
#[inline]
pub(crate) fn get_i16(b: &[u8], off: usize) -> i16 {
    get_u16(b, off) as i16
}
#[inline]
pub(crate) fn get_i32(b: &[u8], off: usize) -> i32 {
    get_u32(b, off) as i32
}
#[inline]
pub(crate) fn get_i64(b: &[u8], off: usize) -> i64 {
    get_u64(b, off) as i64
}

/// Copies `src` into a NUL-terminated fixed field, truncating to `N - 1`
/// bytes so the terminator always fits.
fn c_string<const N: usize>(src: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let n = src.len().min(N.saturating_sub(1));
    out[..n].copy_from_slice(&src.as_bytes()[..n]);
    out
}

/// The bytes of a NUL-terminated fixed field up to (not including) the NUL.
pub fn c_str_bytes(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    &field[..end]
}

/// Implements `from_slice` (length-checked) on top of `from_bytes`.
macro_rules! from_slice {
    ($t:ty) => {
        impl $t {
            /// Decodes from the first `SIZE` bytes of `b`; `None` if `b` is
            /// shorter.
            pub fn from_slice(b: &[u8]) -> Option<Self> {
                let mut a = [0u8; Self::SIZE];
                a.copy_from_slice(b.get(..Self::SIZE)?);
                Some(Self::from_bytes(&a))
            }
        }
    };
}

// ---------------------------------------------------------------- time

/// `struct timespec` (also `__kernel_timespec`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Timespec {
    pub tv_sec: i64,
    pub tv_nsec: i64,
}

/// `struct futex_waitv`: one futex of a futex_waitv(2) vector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FutexWaitv {
    pub val: u64,
    pub uaddr: u64,
    pub flags: u32,
    pub reserved: u32,
}

impl FutexWaitv {
    pub const SIZE: usize = 24;
    pub fn from_bytes(b: &[u8; 24]) -> Self {
        FutexWaitv { val: get_u64(b, 0), uaddr: get_u64(b, 8), flags: get_u32(b, 16), reserved: get_u32(b, 20) }
    }
}

impl Timespec {
    pub const SIZE: usize = 16;
    /// Special `tv_nsec` values of `utimensat`.
    pub const UTIME_NOW: i64 = (1 << 30) - 1;
    pub const UTIME_OMIT: i64 = (1 << 30) - 2;

    pub fn to_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        put_i64(&mut b, 0, self.tv_sec);
        put_i64(&mut b, 8, self.tv_nsec);
        b
    }
    pub fn from_bytes(b: &[u8; 16]) -> Self {
        Timespec { tv_sec: get_i64(b, 0), tv_nsec: get_i64(b, 8) }
    }
    /// Whether `tv_nsec` is in `0..1e9` and `tv_sec` non-negative, as most
    /// system calls require (they fail with `EINVAL` otherwise).
    pub fn is_valid(&self) -> bool {
        self.tv_sec >= 0 && (0..1_000_000_000).contains(&self.tv_nsec)
    }
    /// Total nanoseconds, `None` if invalid or overflowing.
    pub fn as_nanos(&self) -> Option<u64> {
        if !self.is_valid() {
            return None;
        }
        (self.tv_sec as u64).checked_mul(1_000_000_000)?.checked_add(self.tv_nsec as u64)
    }
    pub fn from_nanos(ns: u64) -> Self {
        Timespec { tv_sec: (ns / 1_000_000_000) as i64, tv_nsec: (ns % 1_000_000_000) as i64 }
    }
}
from_slice!(Timespec);

/// `struct timex` (adjtimex(2), clock_adjtime(2)): the fields Linux reads
/// or writes, at their offsets in the 208-byte struct; holes and the
/// trailing padding are left as the caller had them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timex {
    pub modes: u32,
    pub offset: i64,
    pub freq: i64,
    pub maxerror: i64,
    pub esterror: i64,
    pub status: i32,
    pub constant: i64,
    pub precision: i64,
    pub tolerance: i64,
    pub time: Timeval,
    pub tick: i64,
    /// ppsfreq, jitter, shift, stabil, jitcnt, calcnt, errcnt, stbcnt:
    /// the PPS fields, all zero without a PPS source.
    pub pps: [i64; 8],
    pub tai: i32,
}

impl Timex {
    pub const SIZE: usize = 208;
    /// Offsets of the PPS fields (`shift` is an int).
    const PPS_OFFSETS: [usize; 8] = [96, 104, 112, 120, 128, 136, 144, 152];
    pub fn from_bytes(b: &[u8; 208]) -> Self {
        let mut pps = [0i64; 8];
        for (i, off) in Self::PPS_OFFSETS.iter().enumerate() {
            pps[i] = if *off == 112 { i64::from(get_u32(b, *off) as i32) } else { get_i64(b, *off) };
        }
        Timex {
            modes: get_u32(b, 0),
            offset: get_i64(b, 8),
            freq: get_i64(b, 16),
            maxerror: get_i64(b, 24),
            esterror: get_i64(b, 32),
            status: get_u32(b, 40) as i32,
            constant: get_i64(b, 48),
            precision: get_i64(b, 56),
            tolerance: get_i64(b, 64),
            time: Timeval { tv_sec: get_i64(b, 72), tv_usec: get_i64(b, 80) },
            tick: get_i64(b, 88),
            pps,
            tai: get_u32(b, 160) as i32,
        }
    }
    /// Writes the fields into `b`, leaving holes and padding alone.
    pub fn write_to(&self, b: &mut [u8; 208]) {
        put_u32(b, 0, self.modes);
        put_i64(b, 8, self.offset);
        put_i64(b, 16, self.freq);
        put_i64(b, 24, self.maxerror);
        put_i64(b, 32, self.esterror);
        put_i32(b, 40, self.status);
        put_i64(b, 48, self.constant);
        put_i64(b, 56, self.precision);
        put_i64(b, 64, self.tolerance);
        put_i64(b, 72, self.time.tv_sec);
        put_i64(b, 80, self.time.tv_usec);
        put_i64(b, 88, self.tick);
        for (i, off) in Self::PPS_OFFSETS.iter().enumerate() {
            if *off == 112 {
                put_i32(b, *off, self.pps[i] as i32);
            } else {
                put_i64(b, *off, self.pps[i]);
            }
        }
        put_i32(b, 160, self.tai);
    }
}

/// `struct timeval` (`__kernel_old_timeval`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Timeval {
    pub tv_sec: i64,
    pub tv_usec: i64,
}

impl Timeval {
    pub const SIZE: usize = 16;
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        put_i64(&mut b, 0, self.tv_sec);
        put_i64(&mut b, 8, self.tv_usec);
        b
    }
    pub fn from_bytes(b: &[u8; 16]) -> Self {
        Timeval { tv_sec: get_i64(b, 0), tv_usec: get_i64(b, 8) }
    }
    pub fn is_valid(&self) -> bool {
        self.tv_sec >= 0 && (0..1_000_000).contains(&self.tv_usec)
    }
    /// Total microseconds, `None` if invalid or overflowing.
    pub fn as_micros(&self) -> Option<u64> {
        if !self.is_valid() {
            return None;
        }
        (self.tv_sec as u64).checked_mul(1_000_000)?.checked_add(self.tv_usec as u64)
    }
    pub fn from_micros(us: u64) -> Self {
        Timeval { tv_sec: (us / 1_000_000) as i64, tv_usec: (us % 1_000_000) as i64 }
    }
}
from_slice!(Timeval);

/// `struct itimerval` (setitimer/getitimer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Itimerval {
    pub it_interval: Timeval,
    pub it_value: Timeval,
}

impl Itimerval {
    pub const SIZE: usize = 32;
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[..16].copy_from_slice(&self.it_interval.to_bytes());
        b[16..].copy_from_slice(&self.it_value.to_bytes());
        b
    }
    pub fn from_bytes(b: &[u8; 32]) -> Self {
        Itimerval {
            it_interval: Timeval::from_slice(&b[..16]).unwrap_or_default(),
            it_value: Timeval::from_slice(&b[16..]).unwrap_or_default(),
        }
    }
}
from_slice!(Itimerval);

/// `struct itimerspec` (timer_settime, timerfd_settime).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Itimerspec {
    pub it_interval: Timespec,
    pub it_value: Timespec,
}

impl Itimerspec {
    pub const SIZE: usize = 32;
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[..16].copy_from_slice(&self.it_interval.to_bytes());
        b[16..].copy_from_slice(&self.it_value.to_bytes());
        b
    }
    pub fn from_bytes(b: &[u8; 32]) -> Self {
        Itimerspec {
            it_interval: Timespec::from_slice(&b[..16]).unwrap_or_default(),
            it_value: Timespec::from_slice(&b[16..]).unwrap_or_default(),
        }
    }
}
from_slice!(Itimerspec);

/// `struct tms` (times).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tms {
    pub tms_utime: i64,
    pub tms_stime: i64,
    pub tms_cutime: i64,
    pub tms_cstime: i64,
}

impl Tms {
    pub const SIZE: usize = 32;
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        put_i64(&mut b, 0, self.tms_utime);
        put_i64(&mut b, 8, self.tms_stime);
        put_i64(&mut b, 16, self.tms_cutime);
        put_i64(&mut b, 24, self.tms_cstime);
        b
    }
    pub fn from_bytes(b: &[u8; 32]) -> Self {
        Tms {
            tms_utime: get_i64(b, 0),
            tms_stime: get_i64(b, 8),
            tms_cutime: get_i64(b, 16),
            tms_cstime: get_i64(b, 24),
        }
    }
}
from_slice!(Tms);

// ---------------------------------------------------------------- signals

/// The raw kernel `struct sigaction` of x86_64 `rt_sigaction` (not libc's
/// `struct sigaction`, which has a 128-byte mask and another field order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KernelSigaction {
    /// Handler address, or `SIG_DFL`/`SIG_IGN`.
    pub handler: u64,
    /// `SA_*` flags.
    pub flags: u64,
    /// Trampoline calling `rt_sigreturn`; used when `SA_RESTORER` is set.
    pub restorer: u64,
    pub mask: SigSet,
}

impl KernelSigaction {
    pub const SIZE: usize = 32;
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        put_u64(&mut b, 0, self.handler);
        put_u64(&mut b, 8, self.flags);
        put_u64(&mut b, 16, self.restorer);
        put_u64(&mut b, 24, self.mask.0);
        b
    }
    pub fn from_bytes(b: &[u8; 32]) -> Self {
        KernelSigaction {
            handler: get_u64(b, 0),
            flags: get_u64(b, 8),
            restorer: get_u64(b, 16),
            mask: SigSet(get_u64(b, 24)),
        }
    }
}
from_slice!(KernelSigaction);

/// `stack_t` (sigaltstack, and `uc_stack` of the signal frame).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stack {
    pub ss_sp: u64,
    pub ss_flags: i32,
    pub ss_size: u64,
}

impl Stack {
    pub const SIZE: usize = 24;
    pub fn to_bytes(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        self.encode_at(&mut b, 0);
        b
    }
    /// Writes the struct at `b[off..off + SIZE]`, padding included.
    fn encode_at(&self, b: &mut [u8], off: usize) {
        put_u64(b, off, self.ss_sp);
        put_u64(b, off + 8, self.ss_flags as u32 as u64);
        put_u64(b, off + 16, self.ss_size);
    }
    pub fn from_bytes(b: &[u8; 24]) -> Self {
        Self::decode_at(b, 0)
    }
    fn decode_at(b: &[u8], off: usize) -> Self {
        Stack { ss_sp: get_u64(b, off), ss_flags: get_i32(b, off + 8), ss_size: get_u64(b, off + 16) }
    }
}
from_slice!(Stack);

/// `siginfo_t`: three `int`s, then a 112-byte union at offset 16 whose
/// interpretation depends on the signal and `si_code`.
///
/// Union offsets (relative to the start of the struct): kill/tkill/queue:
/// `si_pid` 16, `si_uid` 20, `si_value` 24; POSIX timers: `si_timerid` 16,
/// `si_overrun` 20, `si_value` 24; SIGCHLD: `si_pid` 16, `si_uid` 20,
/// `si_status` 24, `si_utime` 32, `si_stime` 40; faults: `si_addr` 16;
/// SIGPOLL: `si_band` 16, `si_fd` 24; SIGSYS: `si_call_addr` 16,
/// `si_syscall` 24, `si_arch` 28.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Siginfo {
    pub si_signo: i32,
    pub si_errno: i32,
    pub si_code: i32,
    /// The union, i.e. bytes `16..128` of the struct.
    pub fields: [u8; 112],
}

impl Default for Siginfo {
    fn default() -> Self {
        Siginfo { si_signo: 0, si_errno: 0, si_code: 0, fields: [0; 112] }
    }
}

impl Siginfo {
    pub const SIZE: usize = 128;
    /// Offset of the union within the struct.
    pub const UNION_OFFSET: usize = 16;

    fn with(signo: u32, code: i32) -> Self {
        Siginfo { si_signo: signo as i32, si_code: code, ..Siginfo::default() }
    }
    fn set_u32(&mut self, off: usize, v: u32) {
        put_u32(&mut self.fields, off - Self::UNION_OFFSET, v);
    }
    fn set_u64(&mut self, off: usize, v: u64) {
        put_u64(&mut self.fields, off - Self::UNION_OFFSET, v);
    }
    fn u32_at(&self, off: usize) -> u32 {
        get_u32(&self.fields, off - Self::UNION_OFFSET)
    }
    fn u64_at(&self, off: usize) -> u64 {
        get_u64(&self.fields, off - Self::UNION_OFFSET)
    }

    /// A signal sent by `kill`/`tkill`/`tgkill` (`code` is `SI_USER`,
    /// `SI_TKILL`, ...) or by the kernel (`SI_KERNEL`).
    pub fn kill(sig: u32, code: i32, pid: i32, uid: u32) -> Self {
        let mut s = Siginfo::with(sig, code);
        s.set_u32(16, pid as u32);
        s.set_u32(20, uid);
        s
    }

    /// A signal queued with a value (`rt_sigqueueinfo`, `SI_QUEUE`, mq).
    pub fn queue(sig: u32, code: i32, pid: i32, uid: u32, value: u64) -> Self {
        let mut s = Siginfo::kill(sig, code, pid, uid);
        s.set_u64(24, value);
        s
    }

    /// `SIGCHLD` information (also what `waitid` reports): `code` is a
    /// `CLD_*` value; `status` is the exit code for `CLD_EXITED` and the
    /// signal number otherwise. Times are in clock ticks.
    pub fn child(code: i32, pid: i32, uid: u32, status: i32) -> Self {
        Siginfo::child_with_times(code, pid, uid, status, 0, 0)
    }

    pub fn child_with_times(code: i32, pid: i32, uid: u32, status: i32, utime: i64, stime: i64) -> Self {
        let mut s = Siginfo::kill(crate::signal::SIGCHLD, code, pid, uid);
        s.set_u32(24, status as u32);
        s.set_u64(32, utime as u64);
        s.set_u64(40, stime as u64);
        s
    }

    /// A hardware fault (`SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`, `SIGTRAP`)
    /// at `addr`.
    pub fn fault(sig: u32, code: i32, addr: u64) -> Self {
        let mut s = Siginfo::with(sig, code);
        s.set_u64(16, addr);
        s
    }

    /// A POSIX timer expiry (`SI_TIMER`).
    pub fn timer(sig: u32, timerid: i32, overrun: i32, value: u64) -> Self {
        let mut s = Siginfo::with(sig, crate::signal::SI_TIMER);
        s.set_u32(16, timerid as u32);
        s.set_u32(20, overrun as u32);
        s.set_u64(24, value);
        s
    }

    /// An I/O readiness signal (`SIGIO`/`SIGPOLL`, `code` is `POLL_*`).
    pub fn poll(sig: u32, code: i32, band: i64, fd: i32) -> Self {
        let mut s = Siginfo::with(sig, code);
        s.set_u64(16, band as u64);
        s.set_u32(24, fd as u32);
        s
    }

    /// A system call intercepted (SIGSYS): the address after the
    /// `syscall` instruction, its number and the audit architecture.
    pub fn sys(code: i32, call_addr: u64, syscall: i32, arch: u32) -> Self {
        let mut s = Siginfo::with(crate::signal::SIGSYS, code);
        s.set_u64(16, call_addr);
        s.set_u32(24, syscall as u32);
        s.set_u32(28, arch);
        s
    }

    pub fn pid(&self) -> i32 {
        self.u32_at(16) as i32
    }
    pub fn uid(&self) -> u32 {
        self.u32_at(20)
    }
    pub fn status(&self) -> i32 {
        self.u32_at(24) as i32
    }
    pub fn value(&self) -> u64 {
        self.u64_at(24)
    }
    pub fn utime(&self) -> i64 {
        self.u64_at(32) as i64
    }
    pub fn stime(&self) -> i64 {
        self.u64_at(40) as i64
    }
    pub fn addr(&self) -> u64 {
        self.u64_at(16)
    }

    pub fn to_bytes(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        self.encode_at(&mut b, 0);
        b
    }
    /// Writes the struct at `b[off..off + SIZE]`, padding included.
    fn encode_at(&self, b: &mut [u8], off: usize) {
        put_i32(b, off, self.si_signo);
        put_i32(b, off + 4, self.si_errno);
        put_u64(b, off + 8, self.si_code as u32 as u64);
        b[off + 16..off + Self::SIZE].copy_from_slice(&self.fields);
    }
    pub fn from_bytes(b: &[u8; 128]) -> Self {
        let mut fields = [0u8; 112];
        fields.copy_from_slice(&b[16..]);
        Siginfo { si_signo: get_i32(b, 0), si_errno: get_i32(b, 4), si_code: get_i32(b, 8), fields }
    }
}
from_slice!(Siginfo);

// `gregs` indices of glibc/musl `mcontext_t` (same order as `Mcontext`).
pub const REG_R8: usize = 0;
pub const REG_R9: usize = 1;
pub const REG_R10: usize = 2;
pub const REG_R11: usize = 3;
pub const REG_R12: usize = 4;
pub const REG_R13: usize = 5;
pub const REG_R14: usize = 6;
pub const REG_R15: usize = 7;
pub const REG_RDI: usize = 8;
pub const REG_RSI: usize = 9;
pub const REG_RBP: usize = 10;
pub const REG_RBX: usize = 11;
pub const REG_RDX: usize = 12;
pub const REG_RAX: usize = 13;
pub const REG_RCX: usize = 14;
pub const REG_RSP: usize = 15;
pub const REG_RIP: usize = 16;
pub const REG_EFL: usize = 17;
pub const REG_CSGSFS: usize = 18;
pub const REG_ERR: usize = 19;
pub const REG_TRAPNO: usize = 20;
pub const REG_OLDMASK: usize = 21;
pub const REG_CR2: usize = 22;
/// Number of `gregs`.
pub const NGREG: usize = 23;

/// Size of the legacy FXSAVE area (`struct _fpstate_64`) that `fpstate`
/// points to; an XSAVE frame extends it.
pub const FPSTATE_SIZE: usize = 512;

/// `uc_flags` bits.
pub const UC_FP_XSTATE: u64 = 0x1;
pub const UC_SIGCONTEXT_SS: u64 = 0x2;
pub const UC_STRICT_RESTORE_SS: u64 = 0x4;

/// The x86_64 kernel `struct sigcontext` (= libc `mcontext_t`): the user
/// registers saved in a signal frame and restored by `rt_sigreturn`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mcontext {
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rbp: u64,
    pub rbx: u64,
    pub rdx: u64,
    pub rax: u64,
    pub rcx: u64,
    pub rsp: u64,
    pub rip: u64,
    pub eflags: u64,
    pub cs: u16,
    pub gs: u16,
    pub fs: u16,
    pub ss: u16,
    pub err: u64,
    pub trapno: u64,
    pub oldmask: u64,
    pub cr2: u64,
    /// User address of the FPU/XSAVE state, 0 if none.
    pub fpstate: u64,
}

impl Mcontext {
    pub const SIZE: usize = 256;

    /// The 23 `gregs` in kernel/libc order (`cs`, `gs`, `fs`, `ss` packed
    /// little-endian into `REG_CSGSFS`).
    pub fn gregs(&self) -> [u64; NGREG] {
        [
            self.r8,
            self.r9,
            self.r10,
            self.r11,
            self.r12,
            self.r13,
            self.r14,
            self.r15,
            self.rdi,
            self.rsi,
            self.rbp,
            self.rbx,
            self.rdx,
            self.rax,
            self.rcx,
            self.rsp,
            self.rip,
            self.eflags,
            (self.cs as u64) | ((self.gs as u64) << 16) | ((self.fs as u64) << 32) | ((self.ss as u64) << 48),
            self.err,
            self.trapno,
            self.oldmask,
            self.cr2,
        ]
    }

    /// Inverse of [`Mcontext::gregs`]; `fpstate` is set separately.
    pub fn from_gregs(g: &[u64; NGREG], fpstate: u64) -> Self {
        let csgsfs = g[REG_CSGSFS];
        Mcontext {
            r8: g[REG_R8],
            r9: g[REG_R9],
            r10: g[REG_R10],
            r11: g[REG_R11],
            r12: g[REG_R12],
            r13: g[REG_R13],
            r14: g[REG_R14],
            r15: g[REG_R15],
            rdi: g[REG_RDI],
            rsi: g[REG_RSI],
            rbp: g[REG_RBP],
            rbx: g[REG_RBX],
            rdx: g[REG_RDX],
            rax: g[REG_RAX],
            rcx: g[REG_RCX],
            rsp: g[REG_RSP],
            rip: g[REG_RIP],
            eflags: g[REG_EFL],
            cs: csgsfs as u16,
            gs: (csgsfs >> 16) as u16,
            fs: (csgsfs >> 32) as u16,
            ss: (csgsfs >> 48) as u16,
            err: g[REG_ERR],
            trapno: g[REG_TRAPNO],
            oldmask: g[REG_OLDMASK],
            cr2: g[REG_CR2],
            fpstate,
        }
    }

    pub fn to_bytes(&self) -> [u8; 256] {
        let mut b = [0u8; 256];
        self.encode_at(&mut b, 0);
        b
    }
    /// Writes the struct at `b[off..off + SIZE]`, padding included.
    fn encode_at(&self, b: &mut [u8], off: usize) {
        let b = &mut b[off..off + Self::SIZE];
        for (i, r) in self.gregs().iter().enumerate() {
            put_u64(b, i * 8, *r);
        }
        put_u64(b, NGREG * 8, self.fpstate);
        b[(NGREG + 1) * 8..].fill(0); // reserved1[8]
    }

    pub fn from_bytes(b: &[u8; 256]) -> Self {
        Self::decode_at(b, 0)
    }
    fn decode_at(b: &[u8], off: usize) -> Self {
        let b = &b[off..off + Self::SIZE];
        let mut g = [0u64; NGREG];
        for (i, r) in g.iter_mut().enumerate() {
            *r = get_u64(b, i * 8);
        }
        Mcontext::from_gregs(&g, get_u64(b, NGREG * 8))
    }
}
from_slice!(Mcontext);

/// The kernel's x86_64 `struct ucontext` as placed in an `rt_sigframe`.
/// Its offsets match glibc's and musl's `ucontext_t` up to and including
/// the first 8 bytes of `uc_sigmask` (libc reserves 128 bytes for the mask
/// and appends more state after it; the kernel never reads that).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ucontext {
    pub uc_flags: u64,
    pub uc_link: u64,
    pub uc_stack: Stack,
    pub uc_mcontext: Mcontext,
    pub uc_sigmask: SigSet,
}

impl Ucontext {
    pub const SIZE: usize = 304;
    pub const OFFSET_STACK: usize = 16;
    pub const OFFSET_MCONTEXT: usize = 40;
    pub const OFFSET_SIGMASK: usize = 296;

    pub fn to_bytes(&self) -> [u8; 304] {
        let mut b = [0u8; 304];
        self.encode_at(&mut b, 0);
        b
    }
    /// Writes the struct at `b[off..off + SIZE]`, padding included.
    fn encode_at(&self, b: &mut [u8], off: usize) {
        put_u64(b, off, self.uc_flags);
        put_u64(b, off + 8, self.uc_link);
        self.uc_stack.encode_at(b, off + Self::OFFSET_STACK);
        self.uc_mcontext.encode_at(b, off + Self::OFFSET_MCONTEXT);
        put_u64(b, off + Self::OFFSET_SIGMASK, self.uc_sigmask.0);
    }
    pub fn from_bytes(b: &[u8; 304]) -> Self {
        Ucontext {
            uc_flags: get_u64(b, 0),
            uc_link: get_u64(b, 8),
            uc_stack: Stack::decode_at(b, Self::OFFSET_STACK),
            uc_mcontext: Mcontext::decode_at(b, Self::OFFSET_MCONTEXT),
            uc_sigmask: SigSet(get_u64(b, Self::OFFSET_SIGMASK)),
        }
    }
}
from_slice!(Ucontext);

/// Layout of the x86_64 `struct rt_sigframe` that the kernel pushes on the
/// user stack for a signal handler: the return address (`pretcode`, the
/// `SA_RESTORER` trampoline), then a [`Ucontext`], then a [`Siginfo`]. The
/// FPU state follows separately (64-byte aligned), pointed to by
/// `uc_mcontext.fpstate`. On entry to the handler `rsp` points at
/// `pretcode` and must be ≡ 8 (mod 16), as after a `call`.
pub mod rt_sigframe {
    use super::{put_u64, Siginfo, Ucontext};

    pub const PRETCODE: usize = 0;
    pub const UC: usize = 8;
    pub const INFO: usize = UC + Ucontext::SIZE;
    pub const SIZE: usize = INFO + Siginfo::SIZE;

    /// The whole frame, encoded in one buffer (signal delivery is hot:
    /// no per-struct temporaries).
    pub fn encode(pretcode: u64, uc: &Ucontext, info: &Siginfo) -> [u8; SIZE] {
        let mut b = [0u8; SIZE];
        put_u64(&mut b, PRETCODE, pretcode);
        uc.encode_at(&mut b, UC);
        info.encode_at(&mut b, INFO);
        b
    }
}

// ---------------------------------------------------------------- process

/// `struct rusage` (getrusage, wait4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Rusage {
    pub ru_utime: Timeval,
    pub ru_stime: Timeval,
    pub ru_maxrss: i64,
    pub ru_ixrss: i64,
    pub ru_idrss: i64,
    pub ru_isrss: i64,
    pub ru_minflt: i64,
    pub ru_majflt: i64,
    pub ru_nswap: i64,
    pub ru_inblock: i64,
    pub ru_oublock: i64,
    pub ru_msgsnd: i64,
    pub ru_msgrcv: i64,
    pub ru_nsignals: i64,
    pub ru_nvcsw: i64,
    pub ru_nivcsw: i64,
}

impl Rusage {
    pub const SIZE: usize = 144;
    fn longs(&self) -> [i64; 14] {
        [
            self.ru_maxrss,
            self.ru_ixrss,
            self.ru_idrss,
            self.ru_isrss,
            self.ru_minflt,
            self.ru_majflt,
            self.ru_nswap,
            self.ru_inblock,
            self.ru_oublock,
            self.ru_msgsnd,
            self.ru_msgrcv,
            self.ru_nsignals,
            self.ru_nvcsw,
            self.ru_nivcsw,
        ]
    }
    pub fn to_bytes(&self) -> [u8; 144] {
        let mut b = [0u8; 144];
        b[0..16].copy_from_slice(&self.ru_utime.to_bytes());
        b[16..32].copy_from_slice(&self.ru_stime.to_bytes());
        for (i, v) in self.longs().iter().enumerate() {
            put_i64(&mut b, 32 + i * 8, *v);
        }
        b
    }
    pub fn from_bytes(b: &[u8; 144]) -> Self {
        let l = |i: usize| get_i64(b, 32 + i * 8);
        Rusage {
            ru_utime: Timeval::from_slice(&b[0..16]).unwrap_or_default(),
            ru_stime: Timeval::from_slice(&b[16..32]).unwrap_or_default(),
            ru_maxrss: l(0),
            ru_ixrss: l(1),
            ru_idrss: l(2),
            ru_isrss: l(3),
            ru_minflt: l(4),
            ru_majflt: l(5),
            ru_nswap: l(6),
            ru_inblock: l(7),
            ru_oublock: l(8),
            ru_msgsnd: l(9),
            ru_msgrcv: l(10),
            ru_nsignals: l(11),
            ru_nvcsw: l(12),
            ru_nivcsw: l(13),
        }
    }
}
from_slice!(Rusage);

/// `struct rlimit` / `struct rlimit64` (identical on x86_64).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Rlimit {
    pub rlim_cur: u64,
    pub rlim_max: u64,
}

impl Rlimit {
    pub const SIZE: usize = 16;
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        put_u64(&mut b, 0, self.rlim_cur);
        put_u64(&mut b, 8, self.rlim_max);
        b
    }
    pub fn from_bytes(b: &[u8; 16]) -> Self {
        Rlimit { rlim_cur: get_u64(b, 0), rlim_max: get_u64(b, 8) }
    }
}
from_slice!(Rlimit);

/// Length of each `struct utsname` field, including the NUL.
pub const UTSNAME_FIELD_LEN: usize = 65;

/// `struct new_utsname` (uname): six NUL-terminated 65-byte fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Utsname {
    pub sysname: [u8; 65],
    pub nodename: [u8; 65],
    pub release: [u8; 65],
    pub version: [u8; 65],
    pub machine: [u8; 65],
    pub domainname: [u8; 65],
}

impl Utsname {
    pub const SIZE: usize = 6 * UTSNAME_FIELD_LEN;

    /// Builds the struct from strings, truncating each to 64 bytes.
    pub fn new(sysname: &str, nodename: &str, release: &str, version: &str, machine: &str, domainname: &str) -> Self {
        Utsname {
            sysname: c_string(sysname),
            nodename: c_string(nodename),
            release: c_string(release),
            version: c_string(version),
            machine: c_string(machine),
            domainname: c_string(domainname),
        }
    }
    fn fields(&self) -> [&[u8; 65]; 6] {
        [&self.sysname, &self.nodename, &self.release, &self.version, &self.machine, &self.domainname]
    }
    pub fn to_bytes(&self) -> [u8; 390] {
        let mut b = [0u8; 390];
        for (i, f) in self.fields().iter().enumerate() {
            b[i * 65..(i + 1) * 65].copy_from_slice(&f[..]);
        }
        b
    }
    pub fn from_bytes(b: &[u8; 390]) -> Self {
        let f = |i: usize| {
            let mut a = [0u8; 65];
            a.copy_from_slice(&b[i * 65..(i + 1) * 65]);
            a
        };
        Utsname { sysname: f(0), nodename: f(1), release: f(2), version: f(3), machine: f(4), domainname: f(5) }
    }
}
from_slice!(Utsname);

/// `struct sysinfo`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Sysinfo {
    pub uptime: i64,
    pub loads: [u64; 3],
    pub totalram: u64,
    pub freeram: u64,
    pub sharedram: u64,
    pub bufferram: u64,
    pub totalswap: u64,
    pub freeswap: u64,
    pub procs: u16,
    pub totalhigh: u64,
    pub freehigh: u64,
    pub mem_unit: u32,
}

impl Sysinfo {
    pub const SIZE: usize = 112;
    /// `loads` are fixed-point with this many fraction bits.
    pub const SI_LOAD_SHIFT: u32 = 16;

    pub fn to_bytes(&self) -> [u8; 112] {
        let mut b = [0u8; 112];
        put_i64(&mut b, 0, self.uptime);
        for (i, l) in self.loads.iter().enumerate() {
            put_u64(&mut b, 8 + i * 8, *l);
        }
        put_u64(&mut b, 32, self.totalram);
        put_u64(&mut b, 40, self.freeram);
        put_u64(&mut b, 48, self.sharedram);
        put_u64(&mut b, 56, self.bufferram);
        put_u64(&mut b, 64, self.totalswap);
        put_u64(&mut b, 72, self.freeswap);
        put_u16(&mut b, 80, self.procs);
        put_u64(&mut b, 88, self.totalhigh);
        put_u64(&mut b, 96, self.freehigh);
        put_u32(&mut b, 104, self.mem_unit);
        b
    }
    pub fn from_bytes(b: &[u8; 112]) -> Self {
        Sysinfo {
            uptime: get_i64(b, 0),
            loads: [get_u64(b, 8), get_u64(b, 16), get_u64(b, 24)],
            totalram: get_u64(b, 32),
            freeram: get_u64(b, 40),
            sharedram: get_u64(b, 48),
            bufferram: get_u64(b, 56),
            totalswap: get_u64(b, 64),
            freeswap: get_u64(b, 72),
            procs: get_u16(b, 80),
            totalhigh: get_u64(b, 88),
            freehigh: get_u64(b, 96),
            mem_unit: get_u32(b, 104),
        }
    }
}
from_slice!(Sysinfo);

/// `struct clone_args` of `clone3`. User space may pass any of the
/// versioned sizes (64, 80 or 88 bytes); missing trailing fields are zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CloneArgs {
    pub flags: u64,
    pub pidfd: u64,
    pub child_tid: u64,
    pub parent_tid: u64,
    pub exit_signal: u64,
    pub stack: u64,
    pub stack_size: u64,
    pub tls: u64,
    pub set_tid: u64,
    pub set_tid_size: u64,
    pub cgroup: u64,
}

impl CloneArgs {
    pub const SIZE: usize = 88;
    /// The smallest size `clone3` accepts (`CLONE_ARGS_SIZE_VER0`).
    pub const MIN_SIZE: usize = 64;

    fn words(&self) -> [u64; 11] {
        [
            self.flags,
            self.pidfd,
            self.child_tid,
            self.parent_tid,
            self.exit_signal,
            self.stack,
            self.stack_size,
            self.tls,
            self.set_tid,
            self.set_tid_size,
            self.cgroup,
        ]
    }
    pub fn to_bytes(&self) -> [u8; 88] {
        let mut b = [0u8; 88];
        for (i, w) in self.words().iter().enumerate() {
            put_u64(&mut b, i * 8, *w);
        }
        b
    }
    pub fn from_bytes(b: &[u8; 88]) -> Self {
        let w = |i: usize| get_u64(b, i * 8);
        CloneArgs {
            flags: w(0),
            pidfd: w(1),
            child_tid: w(2),
            parent_tid: w(3),
            exit_signal: w(4),
            stack: w(5),
            stack_size: w(6),
            tls: w(7),
            set_tid: w(8),
            set_tid_size: w(9),
            cgroup: w(10),
        }
    }
    /// Decodes a user-supplied `clone_args` of `b.len()` bytes (the `size`
    /// argument). `None` if shorter than 64 bytes, not a multiple of 8, or
    /// if bytes beyond the fields known here are non-zero (the kernel
    /// answers `E2BIG` for those).
    pub fn from_user(b: &[u8]) -> Option<Self> {
        if b.len() < Self::MIN_SIZE || !b.len().is_multiple_of(8) {
            return None;
        }
        let (known, extra) = b.split_at(b.len().min(Self::SIZE));
        if extra.iter().any(|&x| x != 0) {
            return None;
        }
        let mut a = [0u8; 88];
        a[..known.len()].copy_from_slice(known);
        Some(CloneArgs::from_bytes(&a))
    }
}

// ---------------------------------------------------------------- files

/// The x86_64 `struct stat` (stat, fstat, lstat, newfstatat).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stat {
    pub st_dev: u64,
    pub st_ino: u64,
    pub st_nlink: u64,
    pub st_mode: u32,
    pub st_uid: u32,
    pub st_gid: u32,
    pub st_rdev: u64,
    pub st_size: i64,
    pub st_blksize: i64,
    pub st_blocks: i64,
    pub st_atime: Timespec,
    pub st_mtime: Timespec,
    pub st_ctime: Timespec,
}

impl Stat {
    pub const SIZE: usize = 144;
    pub fn to_bytes(&self) -> [u8; 144] {
        let mut b = [0u8; 144];
        put_u64(&mut b, 0, self.st_dev);
        put_u64(&mut b, 8, self.st_ino);
        put_u64(&mut b, 16, self.st_nlink);
        put_u32(&mut b, 24, self.st_mode);
        put_u32(&mut b, 28, self.st_uid);
        put_u32(&mut b, 32, self.st_gid);
        put_u64(&mut b, 40, self.st_rdev);
        put_i64(&mut b, 48, self.st_size);
        put_i64(&mut b, 56, self.st_blksize);
        put_i64(&mut b, 64, self.st_blocks);
        b[72..88].copy_from_slice(&self.st_atime.to_bytes());
        b[88..104].copy_from_slice(&self.st_mtime.to_bytes());
        b[104..120].copy_from_slice(&self.st_ctime.to_bytes());
        b
    }
    pub fn from_bytes(b: &[u8; 144]) -> Self {
        Stat {
            st_dev: get_u64(b, 0),
            st_ino: get_u64(b, 8),
            st_nlink: get_u64(b, 16),
            st_mode: get_u32(b, 24),
            st_uid: get_u32(b, 28),
            st_gid: get_u32(b, 32),
            st_rdev: get_u64(b, 40),
            st_size: get_i64(b, 48),
            st_blksize: get_i64(b, 56),
            st_blocks: get_i64(b, 64),
            st_atime: Timespec::from_slice(&b[72..88]).unwrap_or_default(),
            st_mtime: Timespec::from_slice(&b[88..104]).unwrap_or_default(),
            st_ctime: Timespec::from_slice(&b[104..120]).unwrap_or_default(),
        }
    }
}
from_slice!(Stat);

/// Linux's encoding of a device number into a 64-bit `dev_t`
/// (glibc's `makedev`): 12 bits of major and 20 of minor in the low word,
/// the rest above.
pub fn makedev(major: u32, minor: u32) -> u64 {
    let (ma, mi) = (major as u64, minor as u64);
    ((ma & 0xffff_f000) << 32) | ((ma & 0xfff) << 8) | ((mi & 0xffff_ff00) << 12) | (mi & 0xff)
}

/// The major number of a `dev_t` made by [`makedev`].
pub fn dev_major(dev: u64) -> u32 {
    (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff)) as u32
}

/// The minor number of a `dev_t` made by [`makedev`].
pub fn dev_minor(dev: u64) -> u32 {
    (((dev >> 12) & 0xffff_ff00) | (dev & 0xff)) as u32
}

/// `struct statx_timestamp`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StatxTimestamp {
    pub tv_sec: i64,
    pub tv_nsec: u32,
}

impl StatxTimestamp {
    pub const SIZE: usize = 16;
    fn put(&self, b: &mut [u8], off: usize) {
        put_i64(b, off, self.tv_sec);
        put_u32(b, off + 8, self.tv_nsec);
    }
    fn get(b: &[u8], off: usize) -> Self {
        StatxTimestamp { tv_sec: get_i64(b, off), tv_nsec: get_u32(b, off + 8) }
    }
}

impl From<Timespec> for StatxTimestamp {
    fn from(t: Timespec) -> Self {
        StatxTimestamp { tv_sec: t.tv_sec, tv_nsec: t.tv_nsec as u32 }
    }
}

/// `struct statx`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Statx {
    pub stx_mask: u32,
    pub stx_blksize: u32,
    pub stx_attributes: u64,
    pub stx_nlink: u32,
    pub stx_uid: u32,
    pub stx_gid: u32,
    pub stx_mode: u16,
    pub stx_ino: u64,
    pub stx_size: u64,
    pub stx_blocks: u64,
    pub stx_attributes_mask: u64,
    pub stx_atime: StatxTimestamp,
    pub stx_btime: StatxTimestamp,
    pub stx_ctime: StatxTimestamp,
    pub stx_mtime: StatxTimestamp,
    pub stx_rdev_major: u32,
    pub stx_rdev_minor: u32,
    pub stx_dev_major: u32,
    pub stx_dev_minor: u32,
    pub stx_mnt_id: u64,
    pub stx_dio_mem_align: u32,
    pub stx_dio_offset_align: u32,
}

impl Statx {
    pub const SIZE: usize = 256;
    pub fn to_bytes(&self) -> [u8; 256] {
        let mut b = [0u8; 256];
        put_u32(&mut b, 0, self.stx_mask);
        put_u32(&mut b, 4, self.stx_blksize);
        put_u64(&mut b, 8, self.stx_attributes);
        put_u32(&mut b, 16, self.stx_nlink);
        put_u32(&mut b, 20, self.stx_uid);
        put_u32(&mut b, 24, self.stx_gid);
        put_u16(&mut b, 28, self.stx_mode);
        put_u64(&mut b, 32, self.stx_ino);
        put_u64(&mut b, 40, self.stx_size);
        put_u64(&mut b, 48, self.stx_blocks);
        put_u64(&mut b, 56, self.stx_attributes_mask);
        self.stx_atime.put(&mut b, 64);
        self.stx_btime.put(&mut b, 80);
        self.stx_ctime.put(&mut b, 96);
        self.stx_mtime.put(&mut b, 112);
        put_u32(&mut b, 128, self.stx_rdev_major);
        put_u32(&mut b, 132, self.stx_rdev_minor);
        put_u32(&mut b, 136, self.stx_dev_major);
        put_u32(&mut b, 140, self.stx_dev_minor);
        put_u64(&mut b, 144, self.stx_mnt_id);
        put_u32(&mut b, 152, self.stx_dio_mem_align);
        put_u32(&mut b, 156, self.stx_dio_offset_align);
        b
    }
    pub fn from_bytes(b: &[u8; 256]) -> Self {
        Statx {
            stx_mask: get_u32(b, 0),
            stx_blksize: get_u32(b, 4),
            stx_attributes: get_u64(b, 8),
            stx_nlink: get_u32(b, 16),
            stx_uid: get_u32(b, 20),
            stx_gid: get_u32(b, 24),
            stx_mode: get_u16(b, 28),
            stx_ino: get_u64(b, 32),
            stx_size: get_u64(b, 40),
            stx_blocks: get_u64(b, 48),
            stx_attributes_mask: get_u64(b, 56),
            stx_atime: StatxTimestamp::get(b, 64),
            stx_btime: StatxTimestamp::get(b, 80),
            stx_ctime: StatxTimestamp::get(b, 96),
            stx_mtime: StatxTimestamp::get(b, 112),
            stx_rdev_major: get_u32(b, 128),
            stx_rdev_minor: get_u32(b, 132),
            stx_dev_major: get_u32(b, 136),
            stx_dev_minor: get_u32(b, 140),
            stx_mnt_id: get_u64(b, 144),
            stx_dio_mem_align: get_u32(b, 152),
            stx_dio_offset_align: get_u32(b, 156),
        }
    }
}
from_slice!(Statx);

/// The x86_64 `struct statfs` (statfs, fstatfs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Statfs {
    pub f_type: i64,
    pub f_bsize: i64,
    pub f_blocks: u64,
    pub f_bfree: u64,
    pub f_bavail: u64,
    pub f_files: u64,
    pub f_ffree: u64,
    pub f_fsid: [i32; 2],
    pub f_namelen: i64,
    pub f_frsize: i64,
    pub f_flags: i64,
}

impl Statfs {
    pub const SIZE: usize = 120;
    pub fn to_bytes(&self) -> [u8; 120] {
        let mut b = [0u8; 120];
        put_i64(&mut b, 0, self.f_type);
        put_i64(&mut b, 8, self.f_bsize);
        put_u64(&mut b, 16, self.f_blocks);
        put_u64(&mut b, 24, self.f_bfree);
        put_u64(&mut b, 32, self.f_bavail);
        put_u64(&mut b, 40, self.f_files);
        put_u64(&mut b, 48, self.f_ffree);
        put_i32(&mut b, 56, self.f_fsid[0]);
        put_i32(&mut b, 60, self.f_fsid[1]);
        put_i64(&mut b, 64, self.f_namelen);
        put_i64(&mut b, 72, self.f_frsize);
        put_i64(&mut b, 80, self.f_flags);
        b
    }
    pub fn from_bytes(b: &[u8; 120]) -> Self {
        Statfs {
            f_type: get_i64(b, 0),
            f_bsize: get_i64(b, 8),
            f_blocks: get_u64(b, 16),
            f_bfree: get_u64(b, 24),
            f_bavail: get_u64(b, 32),
            f_files: get_u64(b, 40),
            f_ffree: get_u64(b, 48),
            f_fsid: [get_i32(b, 56), get_i32(b, 60)],
            f_namelen: get_i64(b, 64),
            f_frsize: get_i64(b, 72),
            f_flags: get_i64(b, 80),
        }
    }
}
from_slice!(Statfs);

/// `struct flock` (fcntl `F_GETLK`/`F_SETLK`/`F_SETLKW`/`F_OFD_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flock {
    pub l_type: i16,
    pub l_whence: i16,
    pub l_start: i64,
    pub l_len: i64,
    pub l_pid: i32,
}

impl Flock {
    pub const SIZE: usize = 32;
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        put_i16(&mut b, 0, self.l_type);
        put_i16(&mut b, 2, self.l_whence);
        put_i64(&mut b, 8, self.l_start);
        put_i64(&mut b, 16, self.l_len);
        put_i32(&mut b, 24, self.l_pid);
        b
    }
    pub fn from_bytes(b: &[u8; 32]) -> Self {
        Flock {
            l_type: get_i16(b, 0),
            l_whence: get_i16(b, 2),
            l_start: get_i64(b, 8),
            l_len: get_i64(b, 16),
            l_pid: get_i32(b, 24),
        }
    }
}
from_slice!(Flock);

/// `struct pollfd`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Pollfd {
    pub fd: i32,
    /// Requested `POLL*` bits.
    pub events: u16,
    /// Returned `POLL*` bits.
    pub revents: u16,
}

impl Pollfd {
    pub const SIZE: usize = 8;
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        put_i32(&mut b, 0, self.fd);
        put_u16(&mut b, 4, self.events);
        put_u16(&mut b, 6, self.revents);
        b
    }
    pub fn from_bytes(b: &[u8; 8]) -> Self {
        Pollfd { fd: get_i32(b, 0), events: get_u16(b, 4), revents: get_u16(b, 6) }
    }
}
from_slice!(Pollfd);

/// `struct epoll_event`. Packed on x86_64: 12 bytes, `data` at offset 4.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EpollEvent {
    pub events: u32,
    pub data: u64,
}

impl EpollEvent {
    pub const SIZE: usize = 12;
    #[inline]
    pub fn to_bytes(&self) -> [u8; 12] {
        let mut b = [0u8; 12];
        put_u32(&mut b, 0, self.events);
        put_u64(&mut b, 4, self.data);
        b
    }
    pub fn from_bytes(b: &[u8; 12]) -> Self {
        EpollEvent { events: get_u32(b, 0), data: get_u64(b, 4) }
    }
}
from_slice!(EpollEvent);

/// `struct signalfd_siginfo`: one signal read from a signalfd, 128 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SignalfdSiginfo {
    pub ssi_signo: u32,
    pub ssi_errno: i32,
    pub ssi_code: i32,
    pub ssi_pid: u32,
    pub ssi_uid: u32,
    pub ssi_fd: i32,
    pub ssi_tid: u32,
    pub ssi_band: u32,
    pub ssi_overrun: u32,
    pub ssi_trapno: u32,
    pub ssi_status: i32,
    pub ssi_int: i32,
    pub ssi_ptr: u64,
    pub ssi_utime: u64,
    pub ssi_stime: u64,
    pub ssi_addr: u64,
    pub ssi_addr_lsb: u16,
    pub ssi_syscall: i32,
    pub ssi_call_addr: u64,
    pub ssi_arch: u32,
}

impl SignalfdSiginfo {
    pub const SIZE: usize = 128;
    pub fn to_bytes(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        put_u32(&mut b, 0, self.ssi_signo);
        put_i32(&mut b, 4, self.ssi_errno);
        put_i32(&mut b, 8, self.ssi_code);
        put_u32(&mut b, 12, self.ssi_pid);
        put_u32(&mut b, 16, self.ssi_uid);
        put_i32(&mut b, 20, self.ssi_fd);
        put_u32(&mut b, 24, self.ssi_tid);
        put_u32(&mut b, 28, self.ssi_band);
        put_u32(&mut b, 32, self.ssi_overrun);
        put_u32(&mut b, 36, self.ssi_trapno);
        put_i32(&mut b, 40, self.ssi_status);
        put_i32(&mut b, 44, self.ssi_int);
        put_u64(&mut b, 48, self.ssi_ptr);
        put_u64(&mut b, 56, self.ssi_utime);
        put_u64(&mut b, 64, self.ssi_stime);
        put_u64(&mut b, 72, self.ssi_addr);
        put_u16(&mut b, 80, self.ssi_addr_lsb);
        put_i32(&mut b, 84, self.ssi_syscall);
        put_u64(&mut b, 88, self.ssi_call_addr);
        put_u32(&mut b, 96, self.ssi_arch);
        b
    }
    pub fn from_bytes(b: &[u8; 128]) -> Self {
        SignalfdSiginfo {
            ssi_signo: get_u32(b, 0),
            ssi_errno: get_i32(b, 4),
            ssi_code: get_i32(b, 8),
            ssi_pid: get_u32(b, 12),
            ssi_uid: get_u32(b, 16),
            ssi_fd: get_i32(b, 20),
            ssi_tid: get_u32(b, 24),
            ssi_band: get_u32(b, 28),
            ssi_overrun: get_u32(b, 32),
            ssi_trapno: get_u32(b, 36),
            ssi_status: get_i32(b, 40),
            ssi_int: get_i32(b, 44),
            ssi_ptr: get_u64(b, 48),
            ssi_utime: get_u64(b, 56),
            ssi_stime: get_u64(b, 64),
            ssi_addr: get_u64(b, 72),
            ssi_addr_lsb: get_u16(b, 80),
            ssi_syscall: get_i32(b, 84),
            ssi_call_addr: get_u64(b, 88),
            ssi_arch: get_u32(b, 96),
        }
    }
}
from_slice!(SignalfdSiginfo);

/// Which members of `siginfo_t`'s union a signal carries (Linux's
/// `siginfo_layout`), decided by the signal and its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiginfoLayout {
    Kill,
    Timer,
    Poll,
    Fault,
    Child,
    Rt,
    Sys,
}

impl SiginfoLayout {
    pub fn of(signo: u32, code: i32) -> SiginfoLayout {
        use crate::signal as sig;
        if code > sig::SI_USER && code < sig::SI_KERNEL {
            // Codes specific to the signal, up to each one's last code
            // (NSIGILL, NSIGFPE, NSIGSEGV, NSIGBUS, NSIGTRAP, NSIGCHLD,
            // NSIGPOLL, NSIGSYS).
            let specific = match signo {
                sig::SIGILL => Some((11, SiginfoLayout::Fault)),
                sig::SIGFPE => Some((15, SiginfoLayout::Fault)),
                sig::SIGSEGV => Some((10, SiginfoLayout::Fault)),
                sig::SIGBUS => Some((5, SiginfoLayout::Fault)),
                sig::SIGTRAP => Some((6, SiginfoLayout::Fault)),
                sig::SIGCHLD => Some((6, SiginfoLayout::Child)),
                sig::SIGPOLL => Some((6, SiginfoLayout::Poll)),
                sig::SIGSYS => Some((2, SiginfoLayout::Sys)),
                _ => None,
            };
            match specific {
                Some((limit, layout)) if code <= limit => layout,
                _ if code <= 6 => SiginfoLayout::Poll,
                _ => SiginfoLayout::Kill,
            }
        } else if code == sig::SI_TIMER {
            SiginfoLayout::Timer
        } else if code == sig::SI_SIGIO {
            SiginfoLayout::Poll
        } else if code < 0 {
            SiginfoLayout::Rt
        } else {
            SiginfoLayout::Kill
        }
    }
}

impl SignalfdSiginfo {
    /// What a signalfd read reports for a dequeued signal: the members
    /// its layout carries, the rest 0 (Linux's signalfd_copyinfo).
    pub fn from_siginfo(info: &Siginfo) -> SignalfdSiginfo {
        let mut s = SignalfdSiginfo {
            ssi_signo: info.si_signo as u32,
            ssi_errno: info.si_errno,
            ssi_code: info.si_code,
            ..SignalfdSiginfo::default()
        };
        match SiginfoLayout::of(info.si_signo as u32, info.si_code) {
            SiginfoLayout::Kill => {
                s.ssi_pid = info.u32_at(16);
                s.ssi_uid = info.u32_at(20);
            }
            SiginfoLayout::Timer => {
                s.ssi_tid = info.u32_at(16);
                s.ssi_overrun = info.u32_at(20);
                s.ssi_ptr = info.u64_at(24);
                s.ssi_int = info.u32_at(24) as i32;
            }
            SiginfoLayout::Poll => {
                s.ssi_band = info.u64_at(16) as u32;
                s.ssi_fd = info.u32_at(24) as i32;
            }
            SiginfoLayout::Fault => s.ssi_addr = info.u64_at(16),
            SiginfoLayout::Child => {
                s.ssi_pid = info.u32_at(16);
                s.ssi_uid = info.u32_at(20);
                s.ssi_status = info.u32_at(24) as i32;
                s.ssi_utime = info.u64_at(32);
                s.ssi_stime = info.u64_at(40);
            }
            SiginfoLayout::Rt => {
                s.ssi_pid = info.u32_at(16);
                s.ssi_uid = info.u32_at(20);
                s.ssi_ptr = info.u64_at(24);
                s.ssi_int = info.u32_at(24) as i32;
            }
            SiginfoLayout::Sys => {
                s.ssi_call_addr = info.u64_at(16);
                s.ssi_syscall = info.u32_at(24) as i32;
                s.ssi_arch = info.u32_at(28);
            }
        }
        s
    }
}

/// The fixed head of `struct inotify_event`; `len` bytes of name (NUL
/// padded) follow it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InotifyEvent {
    pub wd: i32,
    pub mask: u32,
    pub cookie: u32,
    pub len: u32,
}

impl InotifyEvent {
    pub const SIZE: usize = 16;
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        put_i32(&mut b, 0, self.wd);
        put_u32(&mut b, 4, self.mask);
        put_u32(&mut b, 8, self.cookie);
        put_u32(&mut b, 12, self.len);
        b
    }
    pub fn from_bytes(b: &[u8; 16]) -> Self {
        InotifyEvent { wd: get_i32(b, 0), mask: get_u32(b, 4), cookie: get_u32(b, 8), len: get_u32(b, 12) }
    }
}
from_slice!(InotifyEvent);

/// `struct iovec` (readv, writev, ...).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Iovec {
    pub iov_base: u64,
    pub iov_len: u64,
}

impl Iovec {
    pub const SIZE: usize = 16;
    /// Maximum number of iovecs per call (`UIO_MAXIOV`).
    pub const MAX: usize = 1024;
    pub fn to_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        put_u64(&mut b, 0, self.iov_base);
        put_u64(&mut b, 8, self.iov_len);
        b
    }
    pub fn from_bytes(b: &[u8; 16]) -> Self {
        Iovec { iov_base: get_u64(b, 0), iov_len: get_u64(b, 8) }
    }
}
from_slice!(Iovec);

/// `struct winsize` (`TIOCGWINSZ`/`TIOCSWINSZ`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Winsize {
    pub ws_row: u16,
    pub ws_col: u16,
    pub ws_xpixel: u16,
    pub ws_ypixel: u16,
}

impl Winsize {
    pub const SIZE: usize = 8;
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        put_u16(&mut b, 0, self.ws_row);
        put_u16(&mut b, 2, self.ws_col);
        put_u16(&mut b, 4, self.ws_xpixel);
        put_u16(&mut b, 6, self.ws_ypixel);
        b
    }
    pub fn from_bytes(b: &[u8; 8]) -> Self {
        Winsize { ws_row: get_u16(b, 0), ws_col: get_u16(b, 2), ws_xpixel: get_u16(b, 4), ws_ypixel: get_u16(b, 6) }
    }
}
from_slice!(Winsize);

/// The kernel `struct termios` of `TCGETS`/`TCSETS*` (not libc's, which
/// has 32 control characters and speed fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Termios {
    pub c_iflag: u32,
    pub c_oflag: u32,
    pub c_cflag: u32,
    pub c_lflag: u32,
    pub c_line: u8,
    pub c_cc: [u8; crate::consts::NCCS],
}

impl Termios {
    pub const SIZE: usize = 36;

    /// The settings Linux gives a freshly opened terminal
    /// (`tty_std_termios`): canonical mode with echo, signals, CR→NL on
    /// input and NL→CRNL on output, 38400 8N1, and the usual control
    /// characters (^C, ^\, DEL, ^U, ^D, ^Q, ^S, ^Z, ^R, ^O, ^W, ^V; VMIN 1).
    pub fn linux_default() -> Self {
        use crate::consts::*;
        let mut c_cc = [0u8; NCCS];
        c_cc[VINTR] = 0x03;
        c_cc[VQUIT] = 0x1c;
        c_cc[VERASE] = 0x7f;
        c_cc[VKILL] = 0x15;
        c_cc[VEOF] = 0x04;
        c_cc[VTIME] = 0;
        c_cc[VMIN] = 1;
        c_cc[VSWTC] = 0;
        c_cc[VSTART] = 0x11;
        c_cc[VSTOP] = 0x13;
        c_cc[VSUSP] = 0x1a;
        c_cc[VEOL] = 0;
        c_cc[VREPRINT] = 0x12;
        c_cc[VDISCARD] = 0x0f;
        c_cc[VWERASE] = 0x17;
        c_cc[VLNEXT] = 0x16;
        c_cc[VEOL2] = 0;
        Termios {
            c_iflag: ICRNL | IXON,
            c_oflag: OPOST | ONLCR,
            c_cflag: B38400 | CS8 | CREAD | HUPCL,
            c_lflag: ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN,
            c_line: 0,
            c_cc,
        }
    }

    pub fn to_bytes(&self) -> [u8; 36] {
        let mut b = [0u8; 36];
        put_u32(&mut b, 0, self.c_iflag);
        put_u32(&mut b, 4, self.c_oflag);
        put_u32(&mut b, 8, self.c_cflag);
        put_u32(&mut b, 12, self.c_lflag);
        b[16] = self.c_line;
        b[17..36].copy_from_slice(&self.c_cc);
        b
    }
    pub fn from_bytes(b: &[u8; 36]) -> Self {
        let mut c_cc = [0u8; crate::consts::NCCS];
        c_cc.copy_from_slice(&b[17..36]);
        Termios {
            c_iflag: get_u32(b, 0),
            c_oflag: get_u32(b, 4),
            c_cflag: get_u32(b, 8),
            c_lflag: get_u32(b, 12),
            c_line: b[16],
            c_cc,
        }
    }
}
from_slice!(Termios);

// ---------------------------------------------------------------- dirents

/// Offset of `d_name` in `struct linux_dirent64` (after `d_ino` u64,
/// `d_off` i64, `d_reclen` u16, `d_type` u8).
pub const DIRENT64_NAME_OFFSET: usize = 19;

/// Offset of `d_name` in the old `struct linux_dirent` of `getdents`
/// (after `d_ino` u64, `d_off` i64, `d_reclen` u16).
pub const DIRENT_NAME_OFFSET: usize = 18;

const fn align8(n: usize) -> usize {
    (n + 7) & !7
}

/// The `d_reclen` of a `getdents64` record for a name of `name_len` bytes:
/// header + name + NUL, rounded up to 8.
pub fn dirent64_reclen(name_len: usize) -> usize {
    align8(DIRENT64_NAME_OFFSET + name_len + 1)
}

/// The `d_reclen` of an old `getdents` record: header + name + NUL +
/// trailing `d_type` byte, rounded up to 8.
pub fn dirent_reclen(name_len: usize) -> usize {
    align8(DIRENT_NAME_OFFSET + name_len + 2)
}

/// Whether `name` can be a directory entry's name in a record of
/// `reclen` bytes: not empty, no NUL, and a length `d_reclen` can hold.
/// (Inlined: getdents asks it of every entry it returns.)
#[inline]
pub fn dirent_name_ok(name: &[u8], reclen: usize) -> bool {
    !name.is_empty() && !has_nul(name) && reclen <= u16::MAX as usize
}

/// Whether `bytes` holds a zero byte, eight bytes at a time (getdents
/// checks every name it returns; a byte loop was a fifth of its cost).
#[inline]
fn has_nul(bytes: &[u8]) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        // A byte of v is zero iff its high bit is set here (no false
        // positives: see "determine if a word has a zero byte").
        if v.wrapping_sub(LOW) & !v & HIGH != 0 {
            return true;
        }
    }
    words.remainder().contains(&0)
}

/// Writes one `struct linux_dirent64` record for `getdents64` at the start
/// of `out`: `d_ino`, `d_off` (the cookie of the *next* entry), `d_reclen`,
/// `d_type` (a `DT_*` value), the name, a NUL, and zero padding to an
/// 8-byte boundary. Returns the record length, or `None` (writing nothing)
/// if `out` is too small or the name is empty or contains a NUL.
pub fn encode_dirent64(ino: u64, off: i64, d_type: u8, name: &[u8], out: &mut [u8]) -> Option<usize> {
    let reclen = dirent64_reclen(name.len());
    if !dirent_name_ok(name, reclen) {
        return None;
    }
    let rec = out.get_mut(..reclen)?;
    rec.fill(0);
    rec[..DIRENT64_NAME_OFFSET].copy_from_slice(&dirent64_header(ino, off, d_type, reclen as u16));
    rec[DIRENT64_NAME_OFFSET..DIRENT64_NAME_OFFSET + name.len()].copy_from_slice(name);
    Some(reclen)
}

/// The fixed part of a `struct linux_dirent64` record (`d_ino`, `d_off`,
/// `d_reclen`, `d_type`), for callers that append the name and padding
/// themselves instead of encoding into a zeroed buffer.
pub fn dirent64_header(ino: u64, off: i64, d_type: u8, reclen: u16) -> [u8; DIRENT64_NAME_OFFSET] {
    // Spelled out: every byte is written once, with no zeroing first
    // (this runs once per entry getdents returns).
    let (i, o, r) = (ino.to_le_bytes(), off.to_le_bytes(), reclen.to_le_bytes());
    [i[0], i[1], i[2], i[3], i[4], i[5], i[6], i[7], o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], r[0], r[1], d_type]
}

/// Like [`encode_dirent64`] for the old `getdents` (`struct linux_dirent`),
/// whose `d_type` is the last byte of the record.
pub fn encode_dirent(ino: u64, off: i64, d_type: u8, name: &[u8], out: &mut [u8]) -> Option<usize> {
    let reclen = dirent_reclen(name.len());
    if !dirent_name_ok(name, reclen) {
        return None;
    }
    let rec = out.get_mut(..reclen)?;
    rec.fill(0);
    put_u64(rec, 0, ino);
    put_i64(rec, 8, off);
    put_u16(rec, 16, reclen as u16);
    rec[DIRENT_NAME_OFFSET..DIRENT_NAME_OFFSET + name.len()].copy_from_slice(name);
    rec[reclen - 1] = d_type;
    Some(reclen)
}

/// A decoded `linux_dirent64` record (for tests and debugging tools).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dirent64<'a> {
    pub d_ino: u64,
    pub d_off: i64,
    pub d_reclen: u16,
    pub d_type: u8,
    pub d_name: &'a [u8],
}

/// Decodes the record at the start of `b`; `None` if malformed.
pub fn decode_dirent64(b: &[u8]) -> Option<Dirent64<'_>> {
    if b.len() < DIRENT64_NAME_OFFSET + 1 {
        return None;
    }
    let reclen = get_u16(b, 16);
    let rec = b.get(..reclen as usize)?;
    let name_area = rec.get(DIRENT64_NAME_OFFSET..)?;
    let nul = name_area.iter().position(|&c| c == 0)?;
    Some(Dirent64 {
        d_ino: get_u64(b, 0),
        d_off: get_i64(b, 8),
        d_reclen: reclen,
        d_type: b[18],
        d_name: &name_area[..nul],
    })
}

#[cfg(test)]
mod tests;
