//! Core dumps: what a core-dumping signal's default action writes, and
//! whether the wait status gets its core bit (WCOREDUMP).
//!
//! As on Linux, the bit is set once a core file was created for the dump,
//! even if writing it then stopped at RLIMIT_CORE (binfmt_elf's
//! `has_dumped` is set before the first byte is written). No dump is tried when RLIMIT_CORE is below a page or the pattern
//! (`/proc/sys/kernel/core_pattern`, "core" by default) is a pipe: Kiln
//! cannot start the user-mode helper a pipe names. Otherwise the pattern
//! is expanded (%p %P %i %I %e %s %t %h %%; `core_uses_pid` appends the
//! pid when the pattern has no %p), the file is created afresh (0600, an
//! existing one is unlinked first) relative to the dumping process's
//! working directory, and an ELF core (`kiln_util::elfcore`) is written:
//! the dumping thread's registers, FPU state and siginfo, process info,
//! and the memory areas Linux's default coredump_filter picks. A process
//! that is not dumpable (PR_SET_DUMPABLE, changed credentials) writes
//! none; the file is created with the thread's credentials. Writing
//! stops before a page that would pass RLIMIT_CORE. Other threads'
//! registers are not included.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::Ordering;

use hal::sync::SpinLock;
use hal::user::UserContext;
use kiln_util::elfcore::{self, PrPsInfo, PrStatus, Segment};
use linux_abi::errno::Errno;
use linux_abi::layout::Siginfo;

use super::task::Task;

/// Linux's CORENAME_MAX_SIZE.
pub const PATTERN_MAX: usize = 128;

/// The core_pattern sysctl: bytes and length.
static PATTERN: SpinLock<([u8; PATTERN_MAX], usize)> = SpinLock::new(initial_pattern());

const fn initial_pattern() -> ([u8; PATTERN_MAX], usize) {
    let mut b = [0u8; PATTERN_MAX];
    b[0] = b'c';
    b[1] = b'o';
    b[2] = b'r';
    b[3] = b'e';
    (b, 4)
}

pub fn pattern() -> Vec<u8> {
    let p = PATTERN.lock();
    p.0[..p.1].to_vec()
}

/// Sets core_pattern: up to a newline, at most 127 bytes (a longer one is
/// cut, as Linux's proc_dostring does).
pub fn set_pattern(bytes: &[u8]) -> Result<(), Errno> {
    let bytes = crate::uts::sysctl_string(bytes, PATTERN_MAX - 1);
    let mut p = PATTERN.lock();
    p.0 = [0; PATTERN_MAX];
    p.0[..bytes.len()].copy_from_slice(bytes);
    p.1 = bytes.len();
    Ok(())
}

/// The file name `pattern` gives for this dump.
fn core_name(t: &Task, signo: u32, pattern: &[u8]) -> String {
    let p = &t.process;
    let mut out = String::new();
    let mut has_pid = false;
    let mut chars = pattern.iter().copied();
    while let Some(c) = chars.next() {
        if c != b'%' {
            out.push(c as char);
            continue;
        }
        let _ = match chars.next() {
            Some(b'%') => write!(out, "%"),
            // %p and %i as the process's own pid namespace sees them,
            // %P and %I as the initial one does.
            Some(b'p') => {
                has_pid = true;
                write!(out, "{}", p.pid_ns.local_or_zero(p.pid))
            }
            Some(b'P') => {
                has_pid = true;
                write!(out, "{}", p.pid)
            }
            Some(b'i') => write!(out, "{}", p.pid_ns.local_or_zero(t.tid())),
            Some(b'I') => write!(out, "{}", t.tid()),
            Some(b'e') => write!(out, "{}", p.comm.lock().replace('/', "!")),
            Some(b's') => write!(out, "{signo}"),
            Some(b't') => write!(out, "{}", crate::clock::realtime_ns() / 1_000_000_000),
            Some(b'h') => write!(out, "{}", crate::uts::hostname()),
            _ => Ok(()),
        };
    }
    if crate::fs::procfs::sys::CORE_USES_PID.get() != 0 && !has_pid {
        let _ = write!(out, ".{}", p.pid_ns.local_or_zero(p.pid));
    }
    out
}

/// Writes a core file for `t` dying of `info`; true when one was created
/// (the wait status then has the core bit).
pub fn dump(t: &Arc<Task>, ctx: &mut UserContext, info: &Siginfo) -> bool {
    let limit = t.process.rlimits.lock()[linux_abi::consts::RLIMIT_CORE as usize].0;
    let pattern = pattern();
    if pattern.first() == Some(&b'|') || pattern.is_empty() || limit < elfcore::PAGE {
        return false;
    }
    // Not dumpable (PR_SET_DUMPABLE 0, or credentials changed under
    // suid_dumpable 0): no core, as Linux's __get_dumpable check.
    if t.process.dumpable.load(Ordering::Relaxed) == 0 {
        return false;
    }
    let Ok(file) = create_core_file(t, info, &pattern) else {
        return false;
    };
    // Out of space or memory part way: the dump still counts, as Linux's.
    let _ = write_core(t, ctx, info, &file, limit);
    true
}

/// Creates the core file afresh (an old one is unlinked first), with the
/// dumping thread's credentials, as Linux's do_coredump. A process that
/// is dumpable only as suid_dumpable 2 says dumps with a root fsuid, to
/// an absolute path only, and unlinks nothing (Linux's need_suid_safe).
fn create_core_file(t: &Task, info: &Siginfo, pattern: &[u8]) -> Result<Arc<dyn crate::fs::Inode>, Errno> {
    let p = &t.process;
    let name = core_name(t, info.si_signo as u32, pattern);
    let suid_safe = p.dumpable.load(Ordering::Relaxed) == 2;
    let mut cred = (*t.cred()).clone();
    if suid_safe {
        if !name.starts_with('/') {
            return Err(Errno::EPERM);
        }
        cred.fsuid = 0;
    }
    let start = if name.starts_with('/') { crate::fs::dentry::root() } else { p.cwd.lock().clone() };
    let (dir, leaf) = crate::fs::dentry::resolve_parent(&cred, &start, &name)?;
    crate::fs::dentry::check_writable(&dir)?;
    if !suid_safe {
        if let Ok(old) = dir.child(&leaf) {
            if crate::fs::perm::may_delete(&cred, &dir, &old, false).is_ok() && dir.inode().unlink(&leaf).is_ok() {
                dir.forget(&leaf);
            }
        }
    }
    crate::fs::perm::may_create(&cred, &dir)?;
    let umask = p.umask.load(Ordering::Relaxed);
    let (mode, owner) = crate::fs::perm::new_inode(&cred, &dir, linux_abi::consts::S_IFREG | (0o600 & !umask));
    dir.inode().create(&leaf, mode, 0, owner)
}

fn write_core(
    t: &Arc<Task>,
    ctx: &mut UserContext,
    info: &Siginfo,
    file: &Arc<dyn crate::fs::Inode>,
    limit: u64,
) -> Result<(), Errno> {
    let p = &t.process;
    let signo = info.si_signo as u32;

    let vm = p.vm()?;
    let space = vm.lock();
    let areas = space.core_areas();
    let mut segments = Vec::new();
    segments.try_reserve(areas.len()).map_err(|_| Errno::ENOMEM)?;
    for (start, end, prot, dump) in &areas {
        segments.push(Segment {
            vaddr: *start,
            memsz: end - start,
            filesz: *dump,
            read: prot.read,
            write: prot.write,
            exec: prot.exec,
        });
    }

    let r = &ctx.regs;
    let (utime, stime) = super::cputime::process_times(p);
    let (cutime, cstime) = super::cputime::children_times(p);
    let status = PrStatus {
        signo,
        code: info.si_code,
        pending: super::signal::pending_set(t).0,
        blocked: t.sigmask.lock().0,
        pid: p.pid,
        ppid: p.parent_pid(),
        pgrp: p.pgid.load(Ordering::Relaxed),
        sid: p.sid.load(Ordering::Relaxed),
        times_us: [utime / 1000, stime / 1000, cutime / 1000, cstime / 1000],
        regs: [
            r.r15,
            r.r14,
            r.r13,
            r.r12,
            r.rbp,
            r.rbx,
            r.r11,
            r.r10,
            r.r9,
            r.r8,
            r.rax,
            r.rcx,
            r.rdx,
            r.rsi,
            r.rdi,
            u64::MAX,
            r.rip,
            0x33,
            r.rflags,
            r.rsp,
            0x2b,
            r.fs_base,
            r.gs_base,
            0,
            0,
            0,
            0,
        ],
    };
    let comm = p.comm.lock().clone();
    let cred = t.cred();
    let mut args = String::new();
    for (i, a) in p.cmdline.lock().iter().enumerate() {
        if i > 0 {
            args.push(' ');
        }
        args.push_str(a);
        if args.len() >= 80 {
            break;
        }
    }
    let ps = PrPsInfo {
        state: 0,
        uid: cred.uid,
        gid: cred.gid,
        pid: p.pid,
        ppid: p.parent_pid(),
        pgrp: status.pgrp,
        sid: status.sid,
        fname: comm.as_bytes(),
        psargs: args.as_bytes(),
    };
    let siginfo = info.to_bytes();
    let mut header = Vec::new();
    let header_len = elfcore::header_size(segments.len());
    header.try_reserve_exact(header_len as usize).map_err(|_| Errno::ENOMEM)?;
    header.resize(header_len as usize, 0);
    let mut sig = [0u8; 128];
    sig.copy_from_slice(&siginfo[..128]);
    elfcore::write_header(&mut header, &segments, &status, &ps, &sig, ctx.save_fpu().as_bytes());

    // Linux counts what it writes against RLIMIT_CORE, not the holes.
    let mut written = header_len;
    if written > limit {
        return Ok(());
    }
    file.write_at(0, &header)?;
    let mut page = [0u8; elfcore::PAGE as usize];
    let mut end = header_len;
    for (seg, off) in segments.iter().zip(elfcore::segment_offsets(&segments)) {
        let mut at = 0;
        while at < seg.filesz {
            if space.read_page_for_dump(seg.vaddr + at, &mut page) {
                if written + elfcore::PAGE > limit {
                    return Ok(());
                }
                file.write_at(off + at, &page)?;
                written += elfcore::PAGE;
            }
            at += elfcore::PAGE;
        }
        end = off + seg.filesz;
    }
    // Holes at the end still count in the file's size.
    if file.metadata().size < end {
        file.truncate(end)?;
    }
    Ok(())
}
