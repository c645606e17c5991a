//! Host unit tests for [`super`]: round trips, hand-checked offsets and the
//! dirent encoders. Offsets are additionally compared with the C headers in
//! `tests/layout.rs`.

use super::*;
use crate::consts::*;
use crate::signal::*;

/// Deterministic filler so every field gets a distinct, non-zero value.
struct Seq(u64);
impl Seq {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 3
    }
}

#[test]
fn sizes() {
    assert_eq!(Timespec::SIZE, 16);
    assert_eq!(Timeval::SIZE, 16);
    assert_eq!(Itimerval::SIZE, 32);
    assert_eq!(KernelSigaction::SIZE, 32);
    assert_eq!(Stack::SIZE, 24);
    assert_eq!(Siginfo::SIZE, 128);
    assert_eq!(Mcontext::SIZE, 256);
    assert_eq!(Ucontext::SIZE, 304);
    assert_eq!(Rusage::SIZE, 144);
    assert_eq!(Utsname::SIZE, 390);
    assert_eq!(Rlimit::SIZE, 16);
    assert_eq!(Stat::SIZE, 144);
    assert_eq!(Statx::SIZE, 256);
    assert_eq!(Sysinfo::SIZE, 112);
    assert_eq!(Tms::SIZE, 32);
    assert_eq!(Pollfd::SIZE, 8);
    assert_eq!(Iovec::SIZE, 16);
    assert_eq!(Winsize::SIZE, 8);
    assert_eq!(Termios::SIZE, 36);
    assert_eq!(Statfs::SIZE, 120);
    assert_eq!(rt_sigframe::INFO, 312);
    assert_eq!(rt_sigframe::SIZE, 440);
}

#[test]
fn round_trips() {
    let mut s = Seq(7);
    let ts = Timespec { tv_sec: s.next() as i64, tv_nsec: -(s.next() as i64) };
    assert_eq!(Timespec::from_bytes(&ts.to_bytes()), ts);
    let tv = Timeval { tv_sec: 1, tv_usec: 2 };
    assert_eq!(Timeval::from_bytes(&tv.to_bytes()), tv);
    let itv = Itimerval { it_interval: tv, it_value: Timeval { tv_sec: 3, tv_usec: 4 } };
    assert_eq!(Itimerval::from_bytes(&itv.to_bytes()), itv);
    let its = Itimerspec { it_interval: ts, it_value: Timespec::from_nanos(5) };
    assert_eq!(Itimerspec::from_bytes(&its.to_bytes()), its);
    let sa = KernelSigaction {
        handler: s.next(),
        flags: SA_SIGINFO | SA_RESTORER,
        restorer: s.next(),
        mask: SigSet(s.next()),
    };
    assert_eq!(KernelSigaction::from_bytes(&sa.to_bytes()), sa);
    let st = Stack { ss_sp: s.next(), ss_flags: SS_DISABLE, ss_size: s.next() };
    assert_eq!(Stack::from_bytes(&st.to_bytes()), st);
    let mut g = [0u64; NGREG];
    for r in g.iter_mut() {
        *r = s.next();
    }
    let mc = Mcontext::from_gregs(&g, s.next());
    assert_eq!(mc.gregs(), g);
    assert_eq!(Mcontext::from_bytes(&mc.to_bytes()), mc);
    let uc = Ucontext {
        uc_flags: UC_FP_XSTATE | UC_SIGCONTEXT_SS,
        uc_link: 0,
        uc_stack: st,
        uc_mcontext: mc,
        uc_sigmask: SigSet(s.next()),
    };
    assert_eq!(Ucontext::from_bytes(&uc.to_bytes()), uc);
    let info = Siginfo::kill(10, 0, 42, 7);
    let frame = rt_sigframe::encode(0x1234, &uc, &info);
    assert_eq!(frame[..8], 0x1234u64.to_le_bytes());
    assert_eq!(frame[rt_sigframe::UC..rt_sigframe::INFO], uc.to_bytes());
    assert_eq!(frame[rt_sigframe::INFO..], info.to_bytes());
    let mut ru = Rusage { ru_utime: tv, ru_stime: itv.it_value, ..Rusage::default() };
    ru.ru_maxrss = 1;
    ru.ru_nivcsw = -2;
    assert_eq!(Rusage::from_bytes(&ru.to_bytes()), ru);
    let rl = Rlimit { rlim_cur: 1024, rlim_max: RLIM_INFINITY };
    assert_eq!(Rlimit::from_bytes(&rl.to_bytes()), rl);
    let u = Utsname::new("Linux", "kiln", "6.1.0-kiln", "#1", "x86_64", "(none)");
    assert_eq!(Utsname::from_bytes(&u.to_bytes()), u);
    let stat = Stat {
        st_dev: s.next(),
        st_ino: s.next(),
        st_nlink: 1,
        st_mode: S_IFREG | 0o644,
        st_uid: 1,
        st_gid: 2,
        st_rdev: makedev(4, 64),
        st_size: 12345,
        st_blksize: 4096,
        st_blocks: 32,
        st_atime: ts,
        st_mtime: Timespec::from_nanos(1),
        st_ctime: Timespec::from_nanos(2),
    };
    assert_eq!(Stat::from_bytes(&stat.to_bytes()), stat);
    let stx = Statx {
        stx_mask: STATX_BASIC_STATS,
        stx_mode: 0o100644,
        stx_ino: 9,
        stx_atime: ts.into(),
        stx_btime: StatxTimestamp { tv_sec: -1, tv_nsec: 3 },
        stx_dev_minor: 77,
        stx_dio_offset_align: 512,
        ..Statx::default()
    };
    assert_eq!(Statx::from_bytes(&stx.to_bytes()), stx);
    let si = Sysinfo { uptime: 5, loads: [1, 2, 3], procs: 7, mem_unit: 1, freehigh: 9, ..Sysinfo::default() };
    assert_eq!(Sysinfo::from_bytes(&si.to_bytes()), si);
    let tms = Tms { tms_utime: 1, tms_stime: 2, tms_cutime: 3, tms_cstime: 4 };
    assert_eq!(Tms::from_bytes(&tms.to_bytes()), tms);
    let pfd = Pollfd { fd: -1, events: POLLIN | POLLOUT, revents: POLLNVAL };
    assert_eq!(Pollfd::from_bytes(&pfd.to_bytes()), pfd);
    let iov = Iovec { iov_base: s.next(), iov_len: 3 };
    assert_eq!(Iovec::from_bytes(&iov.to_bytes()), iov);
    let ws = Winsize { ws_row: 24, ws_col: 80, ws_xpixel: 1, ws_ypixel: 2 };
    assert_eq!(Winsize::from_bytes(&ws.to_bytes()), ws);
    let t = Termios::linux_default();
    assert_eq!(Termios::from_bytes(&t.to_bytes()), t);
    let sf =
        Statfs { f_type: 0x858458f6, f_bsize: 4096, f_fsid: [1, -2], f_namelen: 255, f_flags: 3, ..Statfs::default() };
    assert_eq!(Statfs::from_bytes(&sf.to_bytes()), sf);
    let fl = Flock { l_type: F_WRLCK as i16, l_whence: SEEK_END as i16, l_start: -10, l_len: 20, l_pid: 42 };
    assert_eq!(Flock::from_bytes(&fl.to_bytes()), fl);
    let ev = EpollEvent { events: 5, data: s.next() };
    assert_eq!(EpollEvent::from_bytes(&ev.to_bytes()), ev);
    let ca = CloneArgs {
        flags: CLONE_VM | CLONE_THREAD,
        exit_signal: SIGCHLD as u64,
        stack: s.next(),
        cgroup: 3,
        ..CloneArgs::default()
    };
    assert_eq!(CloneArgs::from_bytes(&ca.to_bytes()), ca);
}

#[test]
fn from_slice_checks_length() {
    let b = [0u8; 15];
    assert_eq!(Timespec::from_slice(&b), None);
    let b = [1u8; 20];
    assert_eq!(
        Timespec::from_slice(&b),
        Some(Timespec { tv_sec: 0x0101_0101_0101_0101, tv_nsec: 0x0101_0101_0101_0101 })
    );
    assert_eq!(Stat::from_slice(&[0; 143]), None);
    assert!(Stat::from_slice(&[0; 144]).is_some());
}

#[test]
fn hand_checked_offsets() {
    let st = Stat {
        st_mode: 0xAABBCCDD,
        st_size: 0x1122,
        st_atime: Timespec { tv_sec: 0x33, tv_nsec: 0x44 },
        ..Stat::default()
    };
    let b = st.to_bytes();
    assert_eq!(&b[24..28], &[0xDD, 0xCC, 0xBB, 0xAA]);
    assert_eq!(b[48], 0x22);
    assert_eq!(b[72], 0x33);
    assert_eq!(b[80], 0x44);

    let mc = Mcontext { rip: 0x1234, cs: 0x33, ss: 0x2b, fpstate: 0x99, ..Mcontext::default() };
    let uc = Ucontext { uc_mcontext: mc, uc_sigmask: SigSet(0x55), ..Ucontext::default() };
    let b = uc.to_bytes();
    // REG_RIP is gregs[16]; gregs start at uc_mcontext (40).
    assert_eq!(b[40 + 16 * 8], 0x34);
    assert_eq!(b[40 + 18 * 8], 0x33); // cs, low u16 of CSGSFS
    assert_eq!(b[40 + 18 * 8 + 6], 0x2b); // ss, top u16
    assert_eq!(b[40 + 184], 0x99); // fpregs pointer
    assert_eq!(b[296], 0x55);

    let t = Termios::linux_default().to_bytes();
    assert_eq!(t[17 + VINTR], 3);
    assert_eq!(t[17 + VERASE], 0x7f);
    assert_eq!(t[17 + VMIN], 1);
}

#[test]
fn siginfo_constructors() {
    let k = Siginfo::kill(SIGTERM, SI_USER, 42, 1000);
    let b = k.to_bytes();
    assert_eq!(b[0], SIGTERM as u8);
    assert_eq!(&b[16..20], &42i32.to_le_bytes());
    assert_eq!(&b[20..24], &1000u32.to_le_bytes());
    assert_eq!((k.pid(), k.uid()), (42, 1000));

    let c = Siginfo::child_with_times(CLD_EXITED, 7, 0, 3, 11, 12);
    assert_eq!(c.si_signo, SIGCHLD as i32);
    assert_eq!(c.si_code, CLD_EXITED);
    assert_eq!((c.pid(), c.status(), c.utime(), c.stime()), (7, 3, 11, 12));
    let b = c.to_bytes();
    assert_eq!(&b[24..28], &3i32.to_le_bytes());
    assert_eq!(b[32], 11);
    assert_eq!(b[40], 12);

    let f = Siginfo::fault(SIGSEGV, SEGV_MAPERR, 0xdead_beef);
    assert_eq!(f.addr(), 0xdead_beef);
    assert_eq!(&f.to_bytes()[16..24], &0xdead_beefu64.to_le_bytes());
    assert_eq!(f.to_bytes()[8], SEGV_MAPERR as u8);

    let t = Siginfo::timer(SIGALRM, 3, 1, 0x77);
    assert_eq!(t.si_code, SI_TIMER);
    assert_eq!(t.value(), 0x77);
    let q = Siginfo::queue(SIGRTMIN, SI_QUEUE, 1, 2, 99);
    assert_eq!((q.pid(), q.uid(), q.value()), (1, 2, 99));
    let p = Siginfo::poll(SIGIO, POLL_IN, 1, 5);
    assert_eq!(&p.to_bytes()[24..28], &5i32.to_le_bytes());

    assert_eq!(Siginfo::from_bytes(&c.to_bytes()), c);
    assert_eq!(Siginfo::default().to_bytes(), [0u8; 128]);
}

#[test]
fn timespec_helpers() {
    assert!(Timespec::from_nanos(1_500_000_000).is_valid());
    assert_eq!(Timespec::from_nanos(1_500_000_000), Timespec { tv_sec: 1, tv_nsec: 500_000_000 });
    assert_eq!(Timespec::from_nanos(123).as_nanos(), Some(123));
    let bad = Timespec { tv_sec: 0, tv_nsec: 1_000_000_000 };
    assert!(!bad.is_valid());
    assert_eq!(bad.as_nanos(), None);
    let huge = Timespec { tv_sec: i64::MAX, tv_nsec: 0 };
    assert_eq!(huge.as_nanos(), None);
    assert_eq!(Timeval::from_micros(2_000_001).as_micros(), Some(2_000_001));
    assert_eq!(Timeval { tv_sec: -1, tv_usec: 0 }.as_micros(), None);
}

#[test]
fn utsname_truncates_and_terminates() {
    let long = "x".repeat(100);
    let u = Utsname::new(&long, "", "r", "v", "m", "d");
    assert_eq!(c_str_bytes(&u.sysname).len(), 64);
    assert_eq!(u.sysname[64], 0);
    assert_eq!(c_str_bytes(&u.nodename), b"");
    let b = u.to_bytes();
    assert_eq!(&b[130..132], b"r\0");
    assert_eq!(&b[325..327], b"d\0");
}

#[test]
fn device_numbers() {
    for (ma, mi) in [(0, 0), (4, 64), (8, 1), (259, 0x12345), (0xfff, 0xff), (0x1000, 0x100)] {
        let d = makedev(ma, mi);
        assert_eq!((dev_major(d), dev_minor(d)), (ma, mi));
    }
    assert_eq!(makedev(8, 1), 0x801);
}

#[test]
fn clone_args_versions() {
    let ca = CloneArgs { flags: CLONE_VFORK, tls: 5, set_tid: 6, cgroup: 7, ..CloneArgs::default() };
    let b = ca.to_bytes();
    let v0 = CloneArgs::from_user(&b[..64]).unwrap();
    assert_eq!(v0.tls, 5);
    assert_eq!((v0.set_tid, v0.cgroup), (0, 0));
    assert_eq!(CloneArgs::from_user(&b[..80]).unwrap().set_tid, 6);
    assert_eq!(CloneArgs::from_user(&b).unwrap(), ca);
    assert_eq!(CloneArgs::from_user(&b[..56]), None);
    assert_eq!(CloneArgs::from_user(&b[..70]), None);
    let mut big = [0u8; 128];
    big[..88].copy_from_slice(&b);
    assert_eq!(CloneArgs::from_user(&big), Some(ca));
    big[100] = 1;
    assert_eq!(CloneArgs::from_user(&big), None);
}

#[test]
fn dirent64_encoding() {
    assert_eq!(dirent64_reclen(1), 24);
    assert_eq!(dirent64_reclen(4), 24);
    assert_eq!(dirent64_reclen(5), 32);
    let mut buf = [0xffu8; 64];
    let n = encode_dirent64(7, 2, DT_DIR, b"..", &mut buf).unwrap();
    assert_eq!(n, 24);
    assert_eq!(&buf[0..8], &7u64.to_le_bytes());
    assert_eq!(&buf[8..16], &2i64.to_le_bytes());
    assert_eq!(&buf[16..18], &24u16.to_le_bytes());
    assert_eq!(buf[18], DT_DIR);
    assert_eq!(&buf[19..24], b"..\0\0\0");
    assert_eq!(buf[24], 0xff, "must not write past the record");
    let d = decode_dirent64(&buf).unwrap();
    assert_eq!((d.d_ino, d.d_off, d.d_reclen, d.d_type, d.d_name), (7, 2, 24, DT_DIR, &b".."[..]));

    // Too small, empty and NUL-containing names are refused.
    assert_eq!(encode_dirent64(1, 1, DT_REG, b"abcdef", &mut [0u8; 31]), None);
    assert_eq!(encode_dirent64(1, 1, DT_REG, b"", &mut buf), None);
    assert_eq!(encode_dirent64(1, 1, DT_REG, b"a\0b", &mut buf), None);

    // Several records back to back decode in order.
    let mut buf = [0u8; 256];
    let mut pos = 0;
    for (i, name) in ["a", "hello-world.txt", "x".repeat(40).as_str()].iter().enumerate() {
        pos += encode_dirent64(i as u64 + 1, i as i64 + 1, DT_REG, name.as_bytes(), &mut buf[pos..]).unwrap();
        assert_eq!(pos % 8, 0);
    }
    let mut at = 0;
    let mut names = 0;
    while at < pos {
        let d = decode_dirent64(&buf[at..]).unwrap();
        at += d.d_reclen as usize;
        names += 1;
    }
    assert_eq!((at, names), (pos, 3));
}

#[test]
fn old_dirent_encoding() {
    let mut buf = [0xffu8; 64];
    let n = encode_dirent(9, 1, DT_LNK, b"abcde", &mut buf).unwrap();
    assert_eq!(n, 32); // 18 + 5 + NUL + d_type = 25 -> 32
    assert_eq!(&buf[18..24], b"abcde\0");
    assert_eq!(buf[n - 1], DT_LNK);
    assert_eq!(buf[n], 0xff);
    assert_eq!(dirent_reclen(4), 24);
    assert_eq!(dirent_reclen(5), 32);
}

#[test]
fn dirent_name_nul_check_matches_a_byte_scan() {
    let mut seq = Seq(7);
    for len in 1..40usize {
        for trial in 0..200 {
            let mut name: Vec<u8> = (0..len).map(|_| (seq.next() % 256) as u8).collect();
            // Mostly non-zero bytes, including the ones that fool naive
            // word tricks (0x80, 0x01, 0xff), sometimes one zero.
            for b in name.iter_mut() {
                if *b == 0 {
                    *b = [0x80, 0x01, 0xff][trial % 3];
                }
            }
            if trial % 4 == 0 {
                name[(seq.next() as usize) % len] = 0;
            }
            let expect = !name.contains(&0);
            assert_eq!(dirent_name_ok(&name, dirent64_reclen(len)), expect, "{name:?}");
        }
    }
    assert!(!dirent_name_ok(b"", 24));
}

#[test]
fn siginfo_layouts_follow_linux() {
    assert_eq!(SiginfoLayout::of(SIGUSR1, SI_USER), SiginfoLayout::Kill);
    assert_eq!(SiginfoLayout::of(SIGUSR1, SI_KERNEL), SiginfoLayout::Kill);
    assert_eq!(SiginfoLayout::of(SIGUSR1, SI_TKILL), SiginfoLayout::Rt);
    assert_eq!(SiginfoLayout::of(SIGRTMIN, SI_QUEUE), SiginfoLayout::Rt);
    assert_eq!(SiginfoLayout::of(SIGALRM, SI_TIMER), SiginfoLayout::Timer);
    assert_eq!(SiginfoLayout::of(SIGIO, SI_SIGIO), SiginfoLayout::Poll);
    assert_eq!(SiginfoLayout::of(SIGSEGV, SEGV_MAPERR), SiginfoLayout::Fault);
    assert_eq!(SiginfoLayout::of(SIGBUS, BUS_ADRERR), SiginfoLayout::Fault);
    assert_eq!(SiginfoLayout::of(SIGCHLD, CLD_EXITED), SiginfoLayout::Child);
    assert_eq!(SiginfoLayout::of(SIGSYS, 1), SiginfoLayout::Sys);
    // A positive code past the signal's own ones, or for a signal without
    // any, is read as a poll code up to NSIGPOLL, else as kill.
    assert_eq!(SiginfoLayout::of(SIGUSR1, 3), SiginfoLayout::Poll);
    assert_eq!(SiginfoLayout::of(SIGUSR1, 7), SiginfoLayout::Kill);
    assert_eq!(SiginfoLayout::of(SIGCHLD, 7), SiginfoLayout::Kill);
}

#[test]
fn signalfd_siginfo_from_siginfo() {
    let s = SignalfdSiginfo::from_siginfo(&Siginfo::kill(SIGUSR1, SI_USER, 42, 1000));
    assert_eq!((s.ssi_signo, s.ssi_code, s.ssi_pid, s.ssi_uid, s.ssi_ptr), (SIGUSR1, SI_USER, 42, 1000, 0));
    let s = SignalfdSiginfo::from_siginfo(&Siginfo::queue(SIGRTMIN, SI_QUEUE, 7, 0, 0x1_2345_6789));
    assert_eq!((s.ssi_pid, s.ssi_ptr, s.ssi_int), (7, 0x1_2345_6789, 0x2345_6789));
    let s = SignalfdSiginfo::from_siginfo(&Siginfo::child_with_times(CLD_EXITED, 9, 0, 3, 11, 12));
    assert_eq!((s.ssi_pid, s.ssi_status, s.ssi_utime, s.ssi_stime), (9, 3, 11, 12));
    let s = SignalfdSiginfo::from_siginfo(&Siginfo::fault(SIGSEGV, SEGV_MAPERR, 0xdead_b000));
    assert_eq!((s.ssi_addr, s.ssi_pid), (0xdead_b000, 0));
    let s = SignalfdSiginfo::from_siginfo(&Siginfo::timer(SIGALRM, 3, 2, 99));
    assert_eq!((s.ssi_tid, s.ssi_overrun, s.ssi_int, s.ssi_pid), (3, 2, 99, 0));
    let s = SignalfdSiginfo::from_siginfo(&Siginfo::poll(SIGIO, 1, 0x41, 5));
    assert_eq!((s.ssi_band, s.ssi_fd), (0x41, 5));
}
