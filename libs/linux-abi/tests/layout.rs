//! Checks the crate against the Linux headers installed on the build host.
//!
//! `tests/layout.c` is compiled twice with the host C compiler (`$CC`, else
//! `cc`): once against the kernel UAPI headers and once against glibc's. Its
//! output — struct sizes, field offsets and constant values — is compared
//! with the Rust encoders (each field is given a distinct value, encoded, and
//! looked for at the C offset) and constants. The syscall and errno tables
//! are compared with `unistd_64.h` and `errno*.h` directly. Every check is
//! skipped, with a note on stderr, when the compiler or headers are missing.

use c_oracle::{c_probe, table, CValues};
use linux_abi::capability::*;
use linux_abi::consts::*;
use linux_abi::errno::Errno;
use linux_abi::layout::*;
use linux_abi::nr;
use linux_abi::signal::*;

/// Compiles and runs layout.c with `defines`; `None` (skip) when there is no
/// C compiler or no kernel headers.
fn run_layout_c(mode: &str, defines: &[&str]) -> Option<CValues> {
    c_probe!("layout.c", "linux/stat.h", &format!("layout-{mode}"), defines)
}

/// Asserts the table, which must cover every constant layout.c prints
/// (names starting with a capital or an underscore).
fn check_constants(c: &CValues, table: &[(&str, i128)]) {
    c.constants(table, |k| k.starts_with(|ch: char| ch.is_ascii_uppercase() || ch == '_'));
}

/// A counter giving every field a distinct, non-zero value.
struct Ctr(u64);
impl Ctr {
    fn n(&mut self) -> u64 {
        self.0 += 0x0101_0101_0101_0101 / 16;
        self.0 ^ 0x80
    }
}

#[test]
fn kernel_uapi_layouts() {
    let Some(c) = run_layout_c("uapi", &[]) else {
        return;
    };
    let mut k = Ctr(0);

    c.size("timespec", Timespec::SIZE);
    c.size("futex_waitv", FutexWaitv::SIZE);
    c.size("timex", Timex::SIZE);
    let tx = Timex {
        modes: 1,
        offset: 2,
        freq: 3,
        maxerror: 4,
        esterror: 5,
        status: 6,
        constant: 7,
        precision: 8,
        tolerance: 9,
        time: Timeval { tv_sec: 10, tv_usec: 11 },
        tick: 12,
        pps: [13, 14, 15, 16, 17, 18, 19, 20],
        tai: 21,
    };
    let mut tb = [0u8; Timex::SIZE];
    tx.write_to(&mut tb);
    assert_eq!(Timex::from_bytes(&tb), tx);
    for (k, v) in [
        ("timex.offset", 2u8),
        ("timex.freq", 3),
        ("timex.maxerror", 4),
        ("timex.esterror", 5),
        ("timex.status", 6),
        ("timex.constant", 7),
        ("timex.precision", 8),
        ("timex.tolerance", 9),
        ("timex.time", 10),
        ("timex.tick", 12),
        ("timex.ppsfreq", 13),
        ("timex.shift", 15),
        ("timex.stbcnt", 20),
        ("timex.tai", 21),
    ] {
        c.field(k, &tb, &[v]);
    }
    // Place each field where C says it is; the parser must find it there.
    let mut w = [0u8; FutexWaitv::SIZE];
    w[c.get("futex_waitv.uaddr") as usize] = 0x11;
    w[c.get("futex_waitv.flags") as usize] = 0x22;
    w[c.get("futex_waitv.__reserved") as usize] = 0x33;
    w[0] = 0x44;
    let parsed = FutexWaitv::from_bytes(&w);
    assert_eq!((parsed.val, parsed.uaddr, parsed.flags, parsed.reserved), (0x44, 0x11, 0x22, 0x33));
    c.size("timeval", Timeval::SIZE);
    c.size("itimerval", Itimerval::SIZE);
    c.size("rlimit", Rlimit::SIZE);

    let ru = Rusage {
        ru_stime: Timeval { tv_sec: k.n() as i64, tv_usec: 1 },
        ru_maxrss: k.n() as i64,
        ru_minflt: k.n() as i64,
        ru_nivcsw: k.n() as i64,
        ..Rusage::default()
    };
    let b = ru.to_bytes();
    c.size("rusage", Rusage::SIZE);
    c.field("rusage.ru_stime", &b, &ru.ru_stime.to_bytes());
    c.field("rusage.ru_maxrss", &b, &ru.ru_maxrss.to_le_bytes());
    c.field("rusage.ru_minflt", &b, &ru.ru_minflt.to_le_bytes());
    c.field("rusage.ru_nivcsw", &b, &ru.ru_nivcsw.to_le_bytes());

    let u = Utsname::new("a", "b", "rel", "d", "e", "dom");
    let b = u.to_bytes();
    c.size("utsname", Utsname::SIZE);
    c.field("utsname.release", &b, b"rel\0");
    c.field("utsname.domainname", &b, b"dom\0");

    let sa = KernelSigaction { handler: k.n(), flags: k.n(), restorer: k.n(), mask: SigSet(k.n()) };
    let b = sa.to_bytes();
    c.size("sigaction", KernelSigaction::SIZE);
    c.field("sigaction.handler", &b, &sa.handler.to_le_bytes());
    c.field("sigaction.flags", &b, &sa.flags.to_le_bytes());
    c.field("sigaction.restorer", &b, &sa.restorer.to_le_bytes());
    c.field("sigaction.mask", &b, &sa.mask.0.to_le_bytes());

    let st = Stack { ss_sp: k.n(), ss_flags: k.n() as i32, ss_size: k.n() };
    let b = st.to_bytes();
    c.size("stack", Stack::SIZE);
    c.field("stack.ss_sp", &b, &st.ss_sp.to_le_bytes());
    c.field("stack.ss_flags", &b, &st.ss_flags.to_le_bytes());
    c.field("stack.ss_size", &b, &st.ss_size.to_le_bytes());

    c.size("siginfo", Siginfo::SIZE);
    let mut si = Siginfo::child_with_times(CLD_KILLED, 0x1234, 0x5678, 9, 0x77, 0x88);
    si.si_errno = 0x42;
    let b = si.to_bytes();
    c.field("siginfo.si_signo", &b, &(SIGCHLD as i32).to_le_bytes());
    c.field("siginfo.si_errno", &b, &0x42i32.to_le_bytes());
    c.field("siginfo.si_code", &b, &CLD_KILLED.to_le_bytes());
    c.field("siginfo.si_pid", &b, &0x1234i32.to_le_bytes());
    c.field("siginfo.si_uid", &b, &0x5678u32.to_le_bytes());
    c.field("siginfo.si_status", &b, &9i32.to_le_bytes());
    c.field("siginfo.si_utime", &b, &0x77i64.to_le_bytes());
    c.field("siginfo.si_stime", &b, &0x88i64.to_le_bytes());
    let b = Siginfo::fault(SIGSEGV, SEGV_ACCERR, 0xdead_beef_f00d).to_bytes();
    c.field("siginfo.si_addr", &b, &0xdead_beef_f00du64.to_le_bytes());
    let b = Siginfo::timer(SIGALRM, 5, 6, 0x99).to_bytes();
    c.field("siginfo.si_tid", &b, &5i32.to_le_bytes());
    c.field("siginfo.si_overrun", &b, &6i32.to_le_bytes());
    c.field("siginfo.si_value", &b, &0x99u64.to_le_bytes());
    let b = Siginfo::poll(SIGIO, POLL_IN, 0x3344, 17).to_bytes();
    c.field("siginfo.si_band", &b, &0x3344i64.to_le_bytes());
    c.field("siginfo.si_fd", &b, &17i32.to_le_bytes());
    let b = Siginfo::sys(SYS_USER_DISPATCH, 0x4010_2030, 39, AUDIT_ARCH_X86_64).to_bytes();
    c.field("siginfo.si_call_addr", &b, &0x4010_2030u64.to_le_bytes());
    c.field("siginfo.si_syscall", &b, &39i32.to_le_bytes());
    c.field("siginfo.si_arch", &b, &AUDIT_ARCH_X86_64.to_le_bytes());

    let mut g = [0u64; NGREG];
    for r in g.iter_mut() {
        *r = k.n();
    }
    let mc = Mcontext::from_gregs(&g, k.n());
    let b = mc.to_bytes();
    c.size("sigcontext", Mcontext::SIZE);
    for (name, v) in [
        ("r8", mc.r8),
        ("r15", mc.r15),
        ("rdi", mc.rdi),
        ("rsi", mc.rsi),
        ("rbp", mc.rbp),
        ("rbx", mc.rbx),
        ("rdx", mc.rdx),
        ("rax", mc.rax),
        ("rcx", mc.rcx),
        ("rsp", mc.rsp),
        ("rip", mc.rip),
        ("eflags", mc.eflags),
        ("err", mc.err),
        ("trapno", mc.trapno),
        ("oldmask", mc.oldmask),
        ("cr2", mc.cr2),
        ("fpstate", mc.fpstate),
    ] {
        c.field(&format!("sigcontext.{name}"), &b, &v.to_le_bytes());
    }
    for (name, v) in [("cs", mc.cs), ("gs", mc.gs), ("fs", mc.fs), ("ss", mc.ss)] {
        c.field(&format!("sigcontext.{name}"), &b, &v.to_le_bytes());
    }
    c.size("fpstate", FPSTATE_SIZE);

    let uc = Ucontext { uc_flags: k.n(), uc_link: k.n(), uc_stack: st, uc_mcontext: mc, uc_sigmask: SigSet(k.n()) };
    let b = uc.to_bytes();
    c.size("ucontext", Ucontext::SIZE);
    c.field("ucontext.uc_flags", &b, &uc.uc_flags.to_le_bytes());
    c.field("ucontext.uc_link", &b, &uc.uc_link.to_le_bytes());
    c.field("ucontext.uc_stack", &b, &st.to_bytes());
    c.field("ucontext.uc_mcontext", &b, &mc.to_bytes());
    c.field("ucontext.uc_sigmask", &b, &uc.uc_sigmask.0.to_le_bytes());
    assert_eq!(c.get("ucontext.uc_mcontext") as usize, Ucontext::OFFSET_MCONTEXT);
    assert_eq!(c.get("ucontext.uc_sigmask") as usize, Ucontext::OFFSET_SIGMASK);
    assert_eq!(c.get("ucontext.uc_stack") as usize, Ucontext::OFFSET_STACK);

    let s = Stat {
        st_dev: k.n(),
        st_ino: k.n(),
        st_nlink: k.n(),
        st_mode: k.n() as u32,
        st_uid: k.n() as u32,
        st_gid: k.n() as u32,
        st_rdev: k.n(),
        st_size: k.n() as i64,
        st_blksize: k.n() as i64,
        st_blocks: k.n() as i64,
        st_atime: Timespec { tv_sec: k.n() as i64, tv_nsec: k.n() as i64 },
        st_mtime: Timespec { tv_sec: k.n() as i64, tv_nsec: k.n() as i64 },
        st_ctime: Timespec { tv_sec: k.n() as i64, tv_nsec: k.n() as i64 },
    };
    let b = s.to_bytes();
    c.size("stat", Stat::SIZE);
    c.field("stat.st_dev", &b, &s.st_dev.to_le_bytes());
    c.field("stat.st_ino", &b, &s.st_ino.to_le_bytes());
    c.field("stat.st_nlink", &b, &s.st_nlink.to_le_bytes());
    c.field("stat.st_mode", &b, &s.st_mode.to_le_bytes());
    c.field("stat.st_uid", &b, &s.st_uid.to_le_bytes());
    c.field("stat.st_gid", &b, &s.st_gid.to_le_bytes());
    c.field("stat.st_rdev", &b, &s.st_rdev.to_le_bytes());
    c.field("stat.st_size", &b, &s.st_size.to_le_bytes());
    c.field("stat.st_blksize", &b, &s.st_blksize.to_le_bytes());
    c.field("stat.st_blocks", &b, &s.st_blocks.to_le_bytes());
    c.field("stat.st_atime", &b, &s.st_atime.tv_sec.to_le_bytes());
    c.field("stat.st_atime_nsec", &b, &s.st_atime.tv_nsec.to_le_bytes());
    c.field("stat.st_mtime", &b, &s.st_mtime.tv_sec.to_le_bytes());
    c.field("stat.st_mtime_nsec", &b, &s.st_mtime.tv_nsec.to_le_bytes());
    c.field("stat.st_ctime", &b, &s.st_ctime.tv_sec.to_le_bytes());
    c.field("stat.st_ctime_nsec", &b, &s.st_ctime.tv_nsec.to_le_bytes());

    let ts = |k: &mut Ctr| StatxTimestamp { tv_sec: k.n() as i64, tv_nsec: k.n() as u32 };
    let x = Statx {
        stx_mask: k.n() as u32,
        stx_blksize: k.n() as u32,
        stx_attributes: k.n(),
        stx_nlink: k.n() as u32,
        stx_uid: k.n() as u32,
        stx_gid: k.n() as u32,
        stx_mode: k.n() as u16,
        stx_ino: k.n(),
        stx_size: k.n(),
        stx_blocks: k.n(),
        stx_attributes_mask: k.n(),
        stx_atime: ts(&mut k),
        stx_btime: ts(&mut k),
        stx_ctime: ts(&mut k),
        stx_mtime: ts(&mut k),
        stx_rdev_major: k.n() as u32,
        stx_rdev_minor: k.n() as u32,
        stx_dev_major: k.n() as u32,
        stx_dev_minor: k.n() as u32,
        stx_mnt_id: k.n(),
        stx_dio_mem_align: k.n() as u32,
        stx_dio_offset_align: k.n() as u32,
    };
    let b = x.to_bytes();
    c.size("statx", Statx::SIZE);
    c.field("statx.stx_mask", &b, &x.stx_mask.to_le_bytes());
    c.field("statx.stx_blksize", &b, &x.stx_blksize.to_le_bytes());
    c.field("statx.stx_attributes", &b, &x.stx_attributes.to_le_bytes());
    c.field("statx.stx_nlink", &b, &x.stx_nlink.to_le_bytes());
    c.field("statx.stx_uid", &b, &x.stx_uid.to_le_bytes());
    c.field("statx.stx_gid", &b, &x.stx_gid.to_le_bytes());
    c.field("statx.stx_mode", &b, &x.stx_mode.to_le_bytes());
    c.field("statx.stx_ino", &b, &x.stx_ino.to_le_bytes());
    c.field("statx.stx_size", &b, &x.stx_size.to_le_bytes());
    c.field("statx.stx_blocks", &b, &x.stx_blocks.to_le_bytes());
    c.field("statx.stx_attributes_mask", &b, &x.stx_attributes_mask.to_le_bytes());
    c.field("statx.stx_atime", &b, &x.stx_atime.tv_sec.to_le_bytes());
    c.field("statx.stx_atime.tv_nsec", &b, &x.stx_atime.tv_nsec.to_le_bytes());
    c.field("statx.stx_btime", &b, &x.stx_btime.tv_sec.to_le_bytes());
    c.field("statx.stx_ctime", &b, &x.stx_ctime.tv_sec.to_le_bytes());
    c.field("statx.stx_mtime", &b, &x.stx_mtime.tv_sec.to_le_bytes());
    c.field("statx.stx_rdev_major", &b, &x.stx_rdev_major.to_le_bytes());
    c.field("statx.stx_rdev_minor", &b, &x.stx_rdev_minor.to_le_bytes());
    c.field("statx.stx_dev_major", &b, &x.stx_dev_major.to_le_bytes());
    c.field("statx.stx_dev_minor", &b, &x.stx_dev_minor.to_le_bytes());
    c.field("statx.stx_mnt_id", &b, &x.stx_mnt_id.to_le_bytes());
    c.field("statx.stx_dio_mem_align", &b, &x.stx_dio_mem_align.to_le_bytes());
    c.field("statx.stx_dio_offset_align", &b, &x.stx_dio_offset_align.to_le_bytes());

    let f = Statfs {
        f_type: k.n() as i64,
        f_bsize: k.n() as i64,
        f_blocks: k.n(),
        f_bfree: k.n(),
        f_bavail: k.n(),
        f_files: k.n(),
        f_ffree: k.n(),
        f_fsid: [k.n() as i32, k.n() as i32],
        f_namelen: k.n() as i64,
        f_frsize: k.n() as i64,
        f_flags: k.n() as i64,
    };
    let b = f.to_bytes();
    c.size("statfs", Statfs::SIZE);
    c.field("statfs.f_type", &b, &f.f_type.to_le_bytes());
    c.field("statfs.f_bsize", &b, &f.f_bsize.to_le_bytes());
    c.field("statfs.f_blocks", &b, &f.f_blocks.to_le_bytes());
    c.field("statfs.f_bfree", &b, &f.f_bfree.to_le_bytes());
    c.field("statfs.f_bavail", &b, &f.f_bavail.to_le_bytes());
    c.field("statfs.f_files", &b, &f.f_files.to_le_bytes());
    c.field("statfs.f_ffree", &b, &f.f_ffree.to_le_bytes());
    c.field("statfs.f_fsid", &b, &f.f_fsid[0].to_le_bytes());
    c.field("statfs.f_namelen", &b, &f.f_namelen.to_le_bytes());
    c.field("statfs.f_frsize", &b, &f.f_frsize.to_le_bytes());
    c.field("statfs.f_flags", &b, &f.f_flags.to_le_bytes());

    let si = Sysinfo {
        uptime: k.n() as i64,
        loads: [k.n(), k.n(), k.n()],
        totalram: k.n(),
        freeram: k.n(),
        sharedram: k.n(),
        bufferram: k.n(),
        totalswap: k.n(),
        freeswap: k.n(),
        procs: k.n() as u16,
        totalhigh: k.n(),
        freehigh: k.n(),
        mem_unit: k.n() as u32,
    };
    let b = si.to_bytes();
    c.size("sysinfo", Sysinfo::SIZE);
    c.field("sysinfo.uptime", &b, &si.uptime.to_le_bytes());
    c.field("sysinfo.loads", &b, &si.loads[0].to_le_bytes());
    c.field("sysinfo.totalram", &b, &si.totalram.to_le_bytes());
    c.field("sysinfo.freeram", &b, &si.freeram.to_le_bytes());
    c.field("sysinfo.sharedram", &b, &si.sharedram.to_le_bytes());
    c.field("sysinfo.bufferram", &b, &si.bufferram.to_le_bytes());
    c.field("sysinfo.totalswap", &b, &si.totalswap.to_le_bytes());
    c.field("sysinfo.freeswap", &b, &si.freeswap.to_le_bytes());
    c.field("sysinfo.procs", &b, &si.procs.to_le_bytes());
    c.field("sysinfo.totalhigh", &b, &si.totalhigh.to_le_bytes());
    c.field("sysinfo.freehigh", &b, &si.freehigh.to_le_bytes());
    c.field("sysinfo.mem_unit", &b, &si.mem_unit.to_le_bytes());

    let iov = Iovec { iov_base: k.n(), iov_len: k.n() };
    c.size("iovec", Iovec::SIZE);
    c.field("iovec.iov_len", &iov.to_bytes(), &iov.iov_len.to_le_bytes());

    let mut t = Termios::linux_default();
    t.c_line = 0x5a;
    let b = t.to_bytes();
    c.size("termios", Termios::SIZE);
    c.field("termios.c_iflag", &b, &t.c_iflag.to_le_bytes());
    c.field("termios.c_oflag", &b, &t.c_oflag.to_le_bytes());
    c.field("termios.c_cflag", &b, &t.c_cflag.to_le_bytes());
    c.field("termios.c_lflag", &b, &t.c_lflag.to_le_bytes());
    c.field("termios.c_line", &b, &[0x5a]);
    c.field("termios.c_cc", &b, &t.c_cc);

    let fl = Flock {
        l_type: k.n() as i16,
        l_whence: k.n() as i16,
        l_start: k.n() as i64,
        l_len: k.n() as i64,
        l_pid: k.n() as i32,
    };
    let b = fl.to_bytes();
    c.size("flock", Flock::SIZE);
    c.field("flock.l_type", &b, &fl.l_type.to_le_bytes());
    c.field("flock.l_whence", &b, &fl.l_whence.to_le_bytes());
    c.field("flock.l_start", &b, &fl.l_start.to_le_bytes());
    c.field("flock.l_len", &b, &fl.l_len.to_le_bytes());
    c.field("flock.l_pid", &b, &fl.l_pid.to_le_bytes());

    let ev = EpollEvent { events: k.n() as u32, data: k.n() };
    c.size("epoll_event", EpollEvent::SIZE);
    c.field("epoll_event.data", &ev.to_bytes(), &ev.data.to_le_bytes());

    let si = SignalfdSiginfo {
        ssi_signo: k.n() as u32,
        ssi_errno: k.n() as i32,
        ssi_code: k.n() as i32,
        ssi_pid: k.n() as u32,
        ssi_uid: k.n() as u32,
        ssi_fd: k.n() as i32,
        ssi_tid: k.n() as u32,
        ssi_band: k.n() as u32,
        ssi_overrun: k.n() as u32,
        ssi_trapno: k.n() as u32,
        ssi_status: k.n() as i32,
        ssi_int: k.n() as i32,
        ssi_ptr: k.n(),
        ssi_utime: k.n(),
        ssi_stime: k.n(),
        ssi_addr: k.n(),
        ssi_addr_lsb: k.n() as u16,
        ssi_syscall: k.n() as i32,
        ssi_call_addr: k.n(),
        ssi_arch: k.n() as u32,
    };
    let b = si.to_bytes();
    assert_eq!(SignalfdSiginfo::from_bytes(&b), si);
    c.size("signalfd_siginfo", SignalfdSiginfo::SIZE);
    c.field("signalfd_siginfo.ssi_signo", &b, &si.ssi_signo.to_le_bytes());
    c.field("signalfd_siginfo.ssi_errno", &b, &si.ssi_errno.to_le_bytes());
    c.field("signalfd_siginfo.ssi_code", &b, &si.ssi_code.to_le_bytes());
    c.field("signalfd_siginfo.ssi_pid", &b, &si.ssi_pid.to_le_bytes());
    c.field("signalfd_siginfo.ssi_uid", &b, &si.ssi_uid.to_le_bytes());
    c.field("signalfd_siginfo.ssi_fd", &b, &si.ssi_fd.to_le_bytes());
    c.field("signalfd_siginfo.ssi_tid", &b, &si.ssi_tid.to_le_bytes());
    c.field("signalfd_siginfo.ssi_band", &b, &si.ssi_band.to_le_bytes());
    c.field("signalfd_siginfo.ssi_overrun", &b, &si.ssi_overrun.to_le_bytes());
    c.field("signalfd_siginfo.ssi_trapno", &b, &si.ssi_trapno.to_le_bytes());
    c.field("signalfd_siginfo.ssi_status", &b, &si.ssi_status.to_le_bytes());
    c.field("signalfd_siginfo.ssi_int", &b, &si.ssi_int.to_le_bytes());
    c.field("signalfd_siginfo.ssi_ptr", &b, &si.ssi_ptr.to_le_bytes());
    c.field("signalfd_siginfo.ssi_utime", &b, &si.ssi_utime.to_le_bytes());
    c.field("signalfd_siginfo.ssi_stime", &b, &si.ssi_stime.to_le_bytes());
    c.field("signalfd_siginfo.ssi_addr", &b, &si.ssi_addr.to_le_bytes());
    c.field("signalfd_siginfo.ssi_addr_lsb", &b, &si.ssi_addr_lsb.to_le_bytes());
    c.field("signalfd_siginfo.ssi_syscall", &b, &si.ssi_syscall.to_le_bytes());
    c.field("signalfd_siginfo.ssi_call_addr", &b, &si.ssi_call_addr.to_le_bytes());
    c.field("signalfd_siginfo.ssi_arch", &b, &si.ssi_arch.to_le_bytes());

    let ie = InotifyEvent { wd: k.n() as i32, mask: k.n() as u32, cookie: k.n() as u32, len: k.n() as u32 };
    let b = ie.to_bytes();
    assert_eq!(InotifyEvent::from_bytes(&b), ie);
    c.size("inotify_event", InotifyEvent::SIZE);
    assert_eq!(c.get("inotify_event.name") as usize, InotifyEvent::SIZE, "the name follows the header");
    c.field("inotify_event.wd", &b, &ie.wd.to_le_bytes());
    c.field("inotify_event.mask", &b, &ie.mask.to_le_bytes());
    c.field("inotify_event.cookie", &b, &ie.cookie.to_le_bytes());
    c.field("inotify_event.len", &b, &ie.len.to_le_bytes());

    let its = Itimerspec {
        it_interval: Timespec { tv_sec: k.n() as i64, tv_nsec: k.n() as i64 },
        it_value: Timespec { tv_sec: k.n() as i64, tv_nsec: k.n() as i64 },
    };
    let b = its.to_bytes();
    assert_eq!(Itimerspec::from_bytes(&b), its);
    c.size("itimerspec", Itimerspec::SIZE);
    c.field("itimerspec.it_value", &b, &its.it_value.to_bytes());

    let ca = CloneArgs { exit_signal: k.n(), tls: k.n(), set_tid: k.n(), cgroup: k.n(), ..CloneArgs::default() };
    let b = ca.to_bytes();
    c.size("clone_args", CloneArgs::SIZE);
    c.field("clone_args.exit_signal", &b, &ca.exit_signal.to_le_bytes());
    c.field("clone_args.tls", &b, &ca.tls.to_le_bytes());
    c.field("clone_args.set_tid", &b, &ca.set_tid.to_le_bytes());
    c.field("clone_args.cgroup", &b, &ca.cgroup.to_le_bytes());

    let sa = SchedAttr {
        sched_flags: k.n(),
        sched_nice: k.n() as i32,
        sched_priority: k.n() as u32,
        sched_period: k.n(),
        sched_util_max: k.n() as u32,
        ..SchedAttr::default()
    };
    let b = sa.to_bytes();
    c.size("sched_attr", SchedAttr::SIZE);
    c.field("sched_attr.sched_flags", &b, &sa.sched_flags.to_le_bytes());
    c.field("sched_attr.sched_nice", &b, &sa.sched_nice.to_le_bytes());
    c.field("sched_attr.sched_priority", &b, &sa.sched_priority.to_le_bytes());
    c.field("sched_attr.sched_period", &b, &sa.sched_period.to_le_bytes());
    c.field("sched_attr.sched_util_max", &b, &sa.sched_util_max.to_le_bytes());

    #[rustfmt::skip]
    let table = table![
        SA_NOCLDSTOP, SA_NOCLDWAIT, SA_SIGINFO, SA_ONSTACK, SA_RESTART, SA_NODEFER,
        SA_RESETHAND, SA_RESTORER, SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK, SS_ONSTACK,
        SS_DISABLE, MINSIGSTKSZ, SIGSTKSZ, SIGHUP, SIGSTKFLT, SIGCHLD, SIGSTOP, SIGTSTP,
        SIGSYS, SIGRTMIN, SI_USER, SI_KERNEL, SI_QUEUE, SI_TIMER, SI_TKILL, ILL_ILLOPN,
        FPE_INTDIV, SEGV_MAPERR, SEGV_ACCERR, BUS_ADRERR, TRAP_BRKPT, CLD_EXITED,
        CLD_KILLED, CLD_DUMPED, CLD_STOPPED, CLD_CONTINUED, POLL_IN,
        UC_FP_XSTATE, UC_SIGCONTEXT_SS, UC_STRICT_RESTORE_SS,
        PROT_READ, PROT_WRITE, PROT_EXEC, PROT_GROWSDOWN, MAP_SHARED, MAP_PRIVATE,
        MAP_FIXED, MAP_ANONYMOUS, MAP_NORESERVE, MAP_GROWSDOWN, MAP_STACK, MAP_POPULATE,
        MAP_FIXED_NOREPLACE, MAP_32BIT, MAP_LOCKED, MAP_HUGETLB, MADV_DONTNEED, MADV_FREE,
        MADV_HUGEPAGE, MADV_COLLAPSE, MREMAP_MAYMOVE, MREMAP_FIXED,
        CSIGNAL, CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND, CLONE_PIDFD, CLONE_PTRACE,
        CLONE_VFORK, CLONE_PARENT, CLONE_THREAD, CLONE_NEWNS, CLONE_SYSVSEM, CLONE_SETTLS,
        CLONE_PARENT_SETTID, CLONE_CHILD_CLEARTID, CLONE_DETACHED, CLONE_UNTRACED,
        CLONE_CHILD_SETTID, CLONE_NEWPID, CLONE_IO, CLONE_CLEAR_SIGHAND, CLONE_INTO_CGROUP,
        CLONE_NEWTIME,
        WNOHANG, WUNTRACED, WEXITED, WCONTINUED, WNOWAIT, __WALL, __WCLONE, __WNOTHREAD,
        P_ALL, P_PID, P_PGID, P_PIDFD,
        FUTEX_WAIT, FUTEX_WAKE, FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET, FUTEX_PRIVATE_FLAG,
        FUTEX_CLOCK_REALTIME, FUTEX_BITSET_MATCH_ANY, FUTEX_LOCK_PI2, FUTEX_WAITERS,
        FUTEX_TID_MASK, FUTEX_32, FUTEX_WAITV_MAX,
        ADJ_OFFSET, ADJ_FREQUENCY, ADJ_MAXERROR, ADJ_ESTERROR, ADJ_STATUS, ADJ_TIMECONST, ADJ_TAI,
        ADJ_SETOFFSET, ADJ_MICRO, ADJ_NANO, ADJ_TICK, ADJ_OFFSET_SINGLESHOT, ADJ_OFFSET_SS_READ,
        STA_PLL, STA_UNSYNC, STA_CLOCKERR, STA_NANO, STA_RONLY, TIME_OK, TIME_ERROR,
        CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_TAI, TIMER_ABSTIME,
        ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF,
        RLIMIT_CPU, RLIMIT_STACK, RLIMIT_NOFILE, RLIMIT_AS, RLIMIT_RTTIME, RLIM_NLIMITS,
        ARCH_SET_FS, ARCH_GET_FS, ARCH_SET_GS, ARCH_GET_GS,
        AT_NULL, AT_PHDR, AT_PHENT, AT_PHNUM, AT_PAGESZ, AT_BASE, AT_FLAGS, AT_ENTRY,
        AT_UID, AT_EUID, AT_GID, AT_EGID, AT_PLATFORM, AT_HWCAP, AT_CLKTCK, AT_SECURE,
        AT_RANDOM, AT_HWCAP2, AT_EXECFN, AT_SYSINFO_EHDR, AT_MINSIGSTKSZ,
        O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_NOCTTY, O_TRUNC, O_APPEND,
        O_NONBLOCK, O_DSYNC, O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC, O_PATH, O_TMPFILE, O_SYNC,
        O_LARGEFILE, O_DIRECT, O_NOATIME,
        AT_FDCWD, AT_SYMLINK_NOFOLLOW, AT_REMOVEDIR, AT_EMPTY_PATH, AT_SYMLINK_FOLLOW,
        AT_EACCESS, AT_NO_AUTOMOUNT, AT_RECURSIVE,
        F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_GETLK, F_SETLK, F_SETLKW,
        F_DUPFD_CLOEXEC, FD_CLOEXEC, F_OFD_GETLK, F_SETPIPE_SZ, F_GETPIPE_SZ, F_ADD_SEALS,
        F_GET_SEALS, F_RDLCK, F_WRLCK, F_UNLCK,
        SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA, SEEK_HOLE,
        TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGPGRP, TIOCSPGRP, TIOCGWINSZ, TIOCSWINSZ,
        FIONREAD, FIONBIO, TIOCSCTTY, TIOCNOTTY, TIOCGSID, TIOCGPTN, TIOCSPTLCK, FIOCLEX, TIOCGPTPEER, TIOCGPKT, TIOCGPTLCK, TIOCPKT, TIOCSIG,
        FIONCLEX, FIOASYNC, FIOQSIZE, TCFLSH, TCSBRK, TIOCOUTQ,
        BLKROGET, BLKGETSIZE, BLKFLSBUF, BLKSSZGET, BLKDISCARD, BLKPBSZGET, BLKGETSIZE64,
        NCCS, VINTR, VQUIT, VERASE, VKILL, VEOF, VTIME, VMIN, VSTART, VSTOP, VSUSP, VEOL,
        VREPRINT, VWERASE, VLNEXT, VEOL2,
        ICRNL, INLCR, IGNCR, IXON, IXOFF, IUTF8, BRKINT, ISTRIP, OPOST, ONLCR, OCRNL, TABDLY,
        CBAUD, B38400, B9600, B115200, CSIZE, CS8, CREAD, HUPCL, CLOCAL, PARENB, CRTSCTS,
        ISIG, ICANON, ECHO, ECHOE, ECHOK, ECHONL, NOFLSH, TOSTOP, ECHOCTL, ECHOKE, IEXTEN,
        TCSANOW, TCSADRAIN, TCSAFLUSH, TCIFLUSH, TCOFLUSH, TCIOFLUSH,
        POLLIN, POLLPRI, POLLOUT, POLLERR, POLLHUP, POLLNVAL, POLLRDNORM, POLLWRNORM,
        POLLRDHUP, GRND_NONBLOCK, GRND_RANDOM, GRND_INSECURE,
        EPOLL_CLOEXEC, EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD, EPOLLIN, EPOLLPRI,
        EPOLLOUT, EPOLLERR, EPOLLHUP, EPOLLNVAL, EPOLLRDNORM, EPOLLRDBAND, EPOLLWRNORM,
        EPOLLWRBAND, EPOLLMSG, EPOLLRDHUP, EPOLLEXCLUSIVE, EPOLLWAKEUP, EPOLLONESHOT, EPOLLET,
        TFD_TIMER_ABSTIME, TFD_TIMER_CANCEL_ON_SET, TFD_CLOEXEC, TFD_NONBLOCK, TFD_IOC_SET_TICKS,
        SFD_CLOEXEC, SFD_NONBLOCK,
        IN_CLOEXEC, IN_NONBLOCK, IN_ACCESS, IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE,
        IN_CLOSE_NOWRITE, IN_OPEN, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE,
        IN_DELETE_SELF, IN_MOVE_SELF, IN_ALL_EVENTS, IN_UNMOUNT, IN_Q_OVERFLOW, IN_IGNORED,
        IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK, IN_MASK_CREATE, IN_MASK_ADD, IN_ISDIR,
        IN_ONESHOT,
        PR_SET_NAME, PR_GET_NAME, PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER,
        PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_DUMPABLE,
        SCHED_NORMAL, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE, SCHED_RESET_ON_FORK,
        SCHED_FLAG_RESET_ON_FORK, SCHED_FLAG_KEEP_POLICY, SCHED_FLAG_KEEP_PARAMS, SCHED_FLAG_UTIL_CLAMP, SCHED_FLAG_ALL,
        MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC,
        MS_PRIVATE, MS_SHARED, MS_RELATIME, MS_LAZYTIME,
        RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT, CLOSE_RANGE_UNSHARE,
        CLOSE_RANGE_CLOEXEC, STATX_TYPE, STATX_MODE, STATX_INO, STATX_SIZE,
        STATX_BASIC_STATS, STATX_BTIME, STATX_MNT_ID, STATX_ATTR_IMMUTABLE,
        AT_STATX_SYNC_AS_STAT, AT_STATX_FORCE_SYNC, AT_STATX_DONT_SYNC,
        PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, PR_SYS_DISPATCH_ON,
        SYSCALL_DISPATCH_FILTER_ALLOW, SYSCALL_DISPATCH_FILTER_BLOCK, AUDIT_ARCH_X86_64,
        SYS_SECCOMP, SYS_USER_DISPATCH,
        CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_FSETID, CAP_KILL,
        CAP_SETGID, CAP_SETUID, CAP_SETPCAP, CAP_LINUX_IMMUTABLE, CAP_NET_BIND_SERVICE,
        CAP_NET_BROADCAST, CAP_NET_ADMIN, CAP_NET_RAW, CAP_IPC_LOCK, CAP_IPC_OWNER, CAP_SYS_MODULE,
        CAP_SYS_RAWIO, CAP_SYS_CHROOT, CAP_SYS_PTRACE, CAP_SYS_PACCT, CAP_SYS_ADMIN, CAP_SYS_BOOT,
        CAP_SYS_NICE, CAP_SYS_RESOURCE, CAP_SYS_TIME, CAP_SYS_TTY_CONFIG, CAP_MKNOD, CAP_LEASE,
        CAP_AUDIT_WRITE, CAP_AUDIT_CONTROL, CAP_SETFCAP, CAP_MAC_OVERRIDE, CAP_MAC_ADMIN,
        CAP_SYSLOG, CAP_WAKE_ALARM, CAP_BLOCK_SUSPEND, CAP_AUDIT_READ, CAP_PERFMON, CAP_BPF,
        CAP_CHECKPOINT_RESTORE, CAP_LAST_CAP, LINUX_CAPABILITY_VERSION_1,
        LINUX_CAPABILITY_VERSION_2, LINUX_CAPABILITY_VERSION_3, LINUX_CAPABILITY_U32S_1,
        LINUX_CAPABILITY_U32S_2, LINUX_CAPABILITY_U32S_3, PR_GET_DUMPABLE, PR_GET_KEEPCAPS,
        PR_SET_KEEPCAPS, PR_CAPBSET_READ, PR_CAPBSET_DROP, PR_GET_SECUREBITS, PR_SET_SECUREBITS,
        PR_GET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, PR_CAP_AMBIENT_RAISE,
        PR_CAP_AMBIENT_LOWER, PR_CAP_AMBIENT_CLEAR_ALL, SECURE_NOROOT, SECURE_NOROOT_LOCKED,
        SECURE_NO_SETUID_FIXUP, SECURE_NO_SETUID_FIXUP_LOCKED, SECURE_KEEP_CAPS,
        SECURE_KEEP_CAPS_LOCKED, SECURE_NO_CAP_AMBIENT_RAISE, SECURE_NO_CAP_AMBIENT_RAISE_LOCKED,
        SECURE_ALL_BITS, SECURE_ALL_LOCKS,
    ];
    check_constants(&c, &table);
    c.size("cap_header", CAP_HEADER_SIZE);
    assert_eq!(c.get("cap_header.pid"), 4);
    c.size("cap_data", CAP_DATA_SIZE);
    assert_eq!(c.get("cap_data.permitted"), 4);
    assert_eq!(c.get("cap_data.inheritable"), 8);
}

#[test]
fn socket_layouts() {
    use linux_abi::socket::*;
    // Its own executable: tests run in parallel, and writing a binary
    // another test is running fails (ETXTBSY).
    let Some(c) = run_layout_c("libc-socket", &["-DLIBC"]) else {
        return;
    };
    c.size("sockaddr_un", SockaddrUn::SIZE);
    assert_eq!(c.get("sockaddr_un.sun_path") as usize, SUN_PATH_OFFSET);
    c.size("sockaddr_storage", SOCKADDR_STORAGE_SIZE);
    let m = Msghdr {
        msg_name: 0x0102_0304_0506_0708,
        msg_namelen: 0x1112_1314,
        msg_iov: 0x2122_2324_2526_2728,
        msg_iovlen: 0x3132_3334_3536_3738,
        msg_control: 0x4142_4344_4546_4748,
        msg_controllen: 0x5152_5354_5556_5758,
        msg_flags: 0x6162_6364,
    };
    let b = m.to_bytes();
    c.size("msghdr", Msghdr::SIZE);
    c.field("msghdr.msg_namelen", &b, &m.msg_namelen.to_le_bytes());
    c.field("msghdr.msg_iov", &b, &m.msg_iov.to_le_bytes());
    c.field("msghdr.msg_iovlen", &b, &m.msg_iovlen.to_le_bytes());
    c.field("msghdr.msg_control", &b, &m.msg_control.to_le_bytes());
    c.field("msghdr.msg_controllen", &b, &m.msg_controllen.to_le_bytes());
    c.field("msghdr.msg_flags", &b, &m.msg_flags.to_le_bytes());
    assert_eq!(c.get("msghdr.msg_namelen") as usize, Msghdr::NAMELEN_OFFSET);
    assert_eq!(c.get("msghdr.msg_controllen") as usize, Msghdr::CONTROLLEN_OFFSET);
    assert_eq!(c.get("msghdr.msg_flags") as usize, Msghdr::FLAGS_OFFSET);
    c.size("mmsghdr", Mmsghdr::SIZE);
    assert_eq!(c.get("mmsghdr.msg_len") as usize, Mmsghdr::LEN_OFFSET);
    let h = Cmsghdr { cmsg_len: 0x0102_0304_0506_0708, cmsg_level: 0x1112_1314, cmsg_type: 0x2122_2324 };
    c.size("cmsghdr", Cmsghdr::SIZE);
    c.field("cmsghdr.cmsg_level", &h.to_bytes(), &h.cmsg_level.to_le_bytes());
    c.field("cmsghdr.cmsg_type", &h.to_bytes(), &h.cmsg_type.to_le_bytes());
    let u = Ucred { pid: 0x0102_0304, uid: 0x1112_1314, gid: 0x2122_2324 };
    c.size("ucred", Ucred::SIZE);
    c.field("ucred.uid", &u.to_bytes(), &u.uid.to_le_bytes());
    c.field("ucred.gid", &u.to_bytes(), &u.gid.to_le_bytes());
    let l = Linger { l_onoff: 1, l_linger: 0x0102_0304 };
    c.size("linger", Linger::SIZE);
    c.field("linger.l_linger", &l.to_bytes(), &l.l_linger.to_le_bytes());
    assert_eq!(c.get("cmsg_len_4") as usize, cmsg_len(4));
    assert_eq!(c.get("cmsg_space_4") as usize, cmsg_space(4));
    assert_eq!(c.get("cmsg_space_12") as usize, cmsg_space(12));

    let mut table = socket_table();
    table.extend(glibc_table());
    check_constants(&c, &table);
}

#[test]
fn glibc_layouts() {
    let Some(c) = run_layout_c("libc", &["-DLIBC"]) else {
        return;
    };
    // libc's ucontext_t agrees with the kernel frame where it matters.
    assert_eq!(c.get("ucontext_t.uc_stack") as usize, Ucontext::OFFSET_STACK);
    assert_eq!(c.get("ucontext_t.uc_mcontext") as usize, Ucontext::OFFSET_MCONTEXT);
    assert_eq!(c.get("ucontext_t.uc_sigmask") as usize, Ucontext::OFFSET_SIGMASK);
    assert_eq!(c.get("ucontext_t.fpregs") as usize, Ucontext::OFFSET_MCONTEXT + NGREG * 8);

    let s = Stat {
        st_mode: 0x1234_5678,
        st_rdev: 0x1122_3344_5566_7788,
        st_atime: Timespec { tv_sec: 0x0a0b_0c0d, tv_nsec: 1 },
        ..Stat::default()
    };
    let b = s.to_bytes();
    c.size("libc_stat", Stat::SIZE);
    c.field("libc_stat.st_mode", &b, &s.st_mode.to_le_bytes());
    c.field("libc_stat.st_rdev", &b, &s.st_rdev.to_le_bytes());
    c.field("libc_stat.st_atim", &b, &s.st_atime.to_bytes());

    let mut buf = [0u8; 64];
    let n = encode_dirent64(0x0102, 0x0304, DT_SOCK, b"name", &mut buf).unwrap();
    c.field("dirent64.d_off", &buf, &0x0304i64.to_le_bytes());
    c.field("dirent64.d_reclen", &buf, &(n as u16).to_le_bytes());
    c.field("dirent64.d_type", &buf, &[DT_SOCK]);
    c.field("dirent64.d_name", &buf, b"name\0");

    let t = Tms { tms_utime: 1, tms_stime: 2, tms_cutime: 3, tms_cstime: 4 };
    c.size("tms", Tms::SIZE);
    c.field("tms.tms_cutime", &t.to_bytes(), &3i64.to_le_bytes());
    let p = Pollfd { fd: 1, events: 0x0203, revents: 0x0405 };
    c.size("pollfd", Pollfd::SIZE);
    c.field("pollfd.events", &p.to_bytes(), &p.events.to_le_bytes());
    c.field("pollfd.revents", &p.to_bytes(), &p.revents.to_le_bytes());
    let w = Winsize { ws_row: 1, ws_col: 2, ws_xpixel: 3, ws_ypixel: 4 };
    c.size("winsize", Winsize::SIZE);
    c.field("winsize.ws_col", &w.to_bytes(), &2u16.to_le_bytes());
    c.field("winsize.ws_ypixel", &w.to_bytes(), &4u16.to_le_bytes());

    for (ma, mi) in [(259u32, 74565u32), (4095, 4096), (70000, 3)] {
        assert_eq!(c.get(&format!("makedev_{ma}_{mi}")), makedev(ma, mi) as i128);
    }

    let mut table = glibc_table();
    table.extend(socket_table());
    check_constants(&c, &table);
}

/// `(name, value)` for each `#define NAME <decimal>` in a header.
fn numeric_defines(path: &str) -> Option<Vec<(String, i64)>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut out = Vec::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        if w.next() != Some("#define") {
            continue;
        }
        if let (Some(name), Some(val)) = (w.next(), w.next()) {
            if let Ok(v) = val.parse::<i64>() {
                out.push((name.to_string(), v));
            }
        }
    }
    Some(out)
}

#[test]
fn syscall_table_matches_unistd_64() {
    let Some(defs) = numeric_defines("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
        .or_else(|| numeric_defines("/usr/include/asm/unistd_64.h"))
    else {
        eprintln!("skipping: no unistd_64.h");
        return;
    };
    let mut n = 0;
    for (name, v) in defs {
        if let Some(sys) = name.strip_prefix("__NR_") {
            // Headers newer than the crate may add calls; known numbers must agree.
            if let Some(rust) = nr::name(v as usize) {
                assert_eq!(rust, sys, "syscall {v}");
            } else {
                eprintln!("note: syscall {sys} ({v}) is newer than linux-abi's table");
            }
            n += 1;
        }
    }
    assert!(n > 300);
}

#[test]
fn errno_table_matches_headers() {
    let mut n = 0;
    for h in ["errno-base.h", "errno.h"] {
        let Some(defs) = numeric_defines(&format!("/usr/include/asm-generic/{h}")) else {
            eprintln!("skipping: no asm-generic/{h}");
            return;
        };
        for (name, v) in defs {
            match Errno::from_i32(v as i32) {
                Some(e) => assert_eq!(e.name(), name, "errno {v}"),
                None => eprintln!("note: {name} ({v}) is newer than linux-abi's table"),
            }
            n += 1;
        }
    }
    assert!(n > 100);
}

#[rustfmt::skip]
fn glibc_table() -> Vec<(&'static str, i128)> {
    table![
        NGREG, REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
        REG_RDI, REG_RSI, REG_RBP, REG_RBX, REG_RDX, REG_RAX, REG_RCX, REG_RSP, REG_RIP,
        REG_EFL, REG_CSGSFS, REG_ERR, REG_TRAPNO, REG_OLDMASK, REG_CR2,
        S_IFMT, S_IFSOCK, S_IFLNK, S_IFREG, S_IFBLK, S_IFDIR, S_IFCHR, S_IFIFO, S_ISUID,
        S_ISGID, S_ISVTX, MNT_DETACH, MNT_FORCE, MNT_EXPIRE, UMOUNT_NOFOLLOW,
        DT_UNKNOWN, DT_FIFO, DT_CHR, DT_DIR, DT_BLK, DT_REG, DT_LNK, DT_SOCK, DT_WHT,
        EFD_SEMAPHORE, EFD_CLOEXEC, EFD_NONBLOCK,
    ]
}

#[rustfmt::skip]
fn socket_table() -> Vec<(&'static str, i128)> {
    use linux_abi::socket::*;
    table![
        AF_UNSPEC, AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET,
        SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_RDM, SOCK_SEQPACKET, SOCK_DCCP, SOCK_PACKET,
        SOCK_NONBLOCK, SOCK_CLOEXEC, SOL_SOCKET, SO_DEBUG, SO_REUSEADDR, SO_TYPE, SO_ERROR,
        SO_DONTROUTE, SO_BROADCAST, SO_SNDBUF, SO_RCVBUF, SO_KEEPALIVE, SO_OOBINLINE, SO_NO_CHECK,
        SO_PRIORITY, SO_LINGER, SO_BSDCOMPAT, SO_REUSEPORT, SO_PASSCRED, SO_PEERCRED, SO_RCVLOWAT,
        SO_SNDLOWAT, SO_RCVTIMEO_OLD, SO_SNDTIMEO_OLD, SO_ACCEPTCONN, SO_SNDBUFFORCE,
        SO_RCVBUFFORCE, SO_PROTOCOL, SO_DOMAIN, SO_PEEK_OFF, SO_RCVTIMEO_NEW, SO_SNDTIMEO_NEW,
        SCM_RIGHTS, SCM_CREDENTIALS, MSG_OOB, MSG_PEEK, MSG_DONTROUTE, MSG_CTRUNC,
        MSG_TRUNC, MSG_DONTWAIT, MSG_EOR, MSG_WAITALL, MSG_CONFIRM, MSG_ERRQUEUE, MSG_NOSIGNAL,
        MSG_MORE, MSG_WAITFORONE, MSG_BATCH, MSG_ZEROCOPY, MSG_FASTOPEN, MSG_CMSG_CLOEXEC,
        SHUT_RD, SHUT_WR, SHUT_RDWR, SOMAXCONN, FIOSETOWN, SIOCSPGRP, FIOGETOWN, SIOCGPGRP,
    ]
}
