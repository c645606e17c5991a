//! The files of /proc/<pid> and /proc/<pid>/task/<tid>: stat, status,
//! statm, maps, smaps, smaps_rollup, pagemap, mem, cmdline, environ, comm,
//! and fdinfo/<n>.
//!
//! A process's stat and status describe its group leader's state and the
//! whole group's times; a thread's (under task/) its own. State letters
//! are Linux's: R running or runnable, S asleep where a signal wakes it,
//! D asleep where none does, T stopped, t in a ptrace stop, Z a zombie
//! (or an exited leader whose other threads run on). Memory figures come from the address
//! space (`mm::report`), which classifies pages as Linux does.

use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::Ordering;

use linux_abi::errno::Errno;

use super::super::file::FileOps;
use super::{seen, viewer_ns};
use crate::mm::report::{dev_major_minor, MapArea, PageTally};
use crate::proc::{Pid, Process, Task};

pub(super) fn comm(p: &Process) -> String {
    p.comm.lock().clone()
}

/// A thread's state letter.
fn task_state(p: &Process, t: &Task) -> char {
    let st = p.state.lock();
    if st.zombie {
        return 'Z';
    }
    drop(st);
    // A traced thread's stops (a group stop included) are ptrace stops.
    if t.ptrace.in_stop() {
        return 't';
    }
    if p.state.lock().stopped.is_some() {
        return 'T';
    }
    match t.kthread.get() {
        Some(k) if k.in_uninterruptible_sleep() => 'D',
        Some(k) if k.state() == crate::sched::State::Blocked => 'S',
        _ => 'R',
    }
}

/// The process's state letter: its leader's (Z once the leader is gone).
pub(super) fn state_char(p: &Process) -> char {
    let leader = p.tasks.lock().iter().find(|t| t.is_leader()).cloned();
    match leader {
        Some(t) => task_state(p, &t),
        None if p.state.lock().zombie || p.tasks.lock().is_empty() => 'Z',
        None => 'Z',
    }
}

fn state_name(c: char) -> &'static str {
    match c {
        'R' => "R (running)",
        'D' => "D (disk sleep)",
        'T' => "T (stopped)",
        't' => "t (tracing stop)",
        'Z' => "Z (zombie)",
        _ => "S (sleeping)",
    }
}

fn clock_ticks(ns: u64) -> u64 {
    ns / 10_000_000
}

/// /proc/<pid>/stat, or a thread's with `thread` given.
pub(super) fn stat(p: &Arc<Process>, thread: Option<&Task>) -> String {
    let vm = p.vm.lock().clone();
    let (vm_bytes, rss_pages) = vm.as_ref().map_or((0, 0), |vm| {
        let space = vm.lock();
        (space.mapped_bytes(), space.page_table().resident_pages())
    });
    let (pid, state, (utime, stime)) = match thread {
        Some(t) => (t.tid(), task_state(p, t), crate::proc::cputime::thread_times(t)),
        None => (p.pid, state_char(p), crate::proc::cputime::process_times(p)),
    };
    let (cutime, cstime) = crate::proc::cputime::children_times(p);
    // The controlling terminal's device and foreground group.
    let (tty_nr, tpgid) = p.ctty.lock().as_ref().map_or((0, -1), |t| (t.rdev(), t.foreground()));
    let sp = match thread {
        Some(t) => t.kthread.get().map_or(crate::sched::SchedParams::DEFAULT, |k| k.sched_params()),
        None => super::leader_sched_params(p),
    };
    // Linux's "priority" field: 20 + nice for the fair policies,
    // -1 - priority for the real-time ones.
    let prio = if sp.policy.is_realtime() { -1 - sp.rt_priority as i32 } else { 20 + sp.nice };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} ({}) {} {} {} {} {} {} 4194560 0 0 0 0 {} {} {} {} {} {} {} 0 {} {} {} 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 {} {} 0 0 0 0 0 0 0 0 0 0 0 0",
        seen(pid),
        comm(p),
        state,
        seen(p.parent_pid()),
        seen(p.pgid.load(Ordering::Relaxed)),
        seen(p.sid.load(Ordering::Relaxed)),
        tty_nr,
        if tpgid > 0 { seen(tpgid) } else { tpgid },
        clock_ticks(utime),
        clock_ticks(stime),
        clock_ticks(cutime),
        clock_ticks(cstime),
        prio,
        sp.nice,
        p.tasks.lock().len().max(1),
        p.start_ticks(),
        vm_bytes,
        rss_pages,
        if sp.policy.is_realtime() { sp.rt_priority } else { 0 },
        sp.policy.to_linux(),
    );
    s
}

/// status's NStgid, NSpid, NSpgid and NSsid lines: each id from the
/// reader's pid namespace down to the process's own (`pid`: the
/// process's id, or the thread's).
fn ns_ids(p: &Process, pid: Pid) -> String {
    let viewer = viewer_ns();
    let mut s = String::new();
    for (label, id) in [
        ("NStgid", p.pid),
        ("NSpid", pid),
        ("NSpgid", p.pgid.load(Ordering::Relaxed)),
        ("NSsid", p.sid.load(Ordering::Relaxed)),
    ] {
        s.push_str(label);
        s.push(':');
        for local in crate::proc::pidns::ids_from(&viewer, &p.pid_ns, id) {
            let _ = write!(s, "\t{local}");
        }
        s.push('\n');
    }
    s
}

/// The Vm* and Rss* lines of status, as Linux 6.1 prints them.
fn status_memory(p: &Process) -> String {
    let mut s = String::new();
    let Some(vm) = p.vm.lock().clone() else {
        return s; // a zombie has no memory lines
    };
    let (c, locked) = {
        let space = vm.lock();
        (space.status_counts(), space.locked_bytes() / 1024)
    };
    let rss = c.rss_anon + c.rss_file + c.rss_shmem;
    for (name, kb) in [
        ("VmPeak", c.peak),
        ("VmSize", c.size),
        ("VmLck", locked),
        ("VmPin", 0),
        ("VmHWM", c.hwm.max(rss)),
        ("VmRSS", rss),
    ] {
        let _ = writeln!(s, "{name}:\t{kb:8} kB");
    }
    for (name, kb) in [("RssAnon", c.rss_anon), ("RssFile", c.rss_file), ("RssShmem", c.rss_shmem)] {
        let _ = writeln!(s, "{name}:\t{kb:8} kB");
    }
    for (name, kb) in
        [("VmData", c.data), ("VmStk", c.stack), ("VmExe", c.exe), ("VmLib", c.lib), ("VmPTE", c.pte), ("VmSwap", 0)]
    {
        let _ = writeln!(s, "{name}:\t{kb:8} kB");
    }
    s
}

/// /proc/<pid>/status, or a thread's: a thread's shows its own
/// credentials, the process's its leader's.
pub(super) fn status(p: &Arc<Process>, thread: Option<&Task>) -> String {
    let (pid, state) = match thread {
        Some(t) => (t.tid(), task_state(p, t)),
        None => (p.pid, state_char(p)),
    };
    let mask = match thread {
        Some(t) => t.sigmask.lock().0,
        None => p.tasks.lock().first().map_or(0, |t| t.sigmask.lock().0),
    };
    let cred = match thread {
        Some(t) => t.cred(),
        None => p.cred().unwrap_or_else(|| Arc::new(crate::cred::ROOT.clone())),
    };
    // The tracing thread of this thread (of the leader for the process).
    let tracer_pid = match thread {
        Some(t) => t.ptrace.tracer_tid(),
        None => {
            let leader = p.tasks.lock().iter().find(|t| t.is_leader()).cloned();
            leader.map_or(0, |t| t.ptrace.tracer_tid())
        }
    };
    let (seccomp_mode, seccomp_filters) = {
        let state = match thread {
            Some(t) => t.seccomp.lock().clone(),
            None => {
                let leader = p.tasks.lock().iter().find(|t| t.is_leader()).cloned();
                leader.map(|t| t.seccomp.lock().clone()).unwrap_or_default()
            }
        };
        (state.mode(), state.filter_count())
    };
    let mut groups = String::new();
    for g in cred.groups.as_ref() {
        let _ = write!(groups, "{g} ");
    }
    let mut s = String::new();
    let _ = write!(
        s,
        "Name:\t{}\nUmask:\t{:04o}\nState:\t{}\nTgid:\t{}\nNgid:\t0\nPid:\t{}\nPPid:\t{}\nTracerPid:\t{}\n\
         Uid:\t{}\t{}\t{}\t{}\nGid:\t{}\t{}\t{}\t{}\nFDSize:\t64\nGroups:\t{}\n{}{}Threads:\t{}\n\
         SigBlk:\t{:016x}\nCapInh:\t{:016x}\nCapPrm:\t{:016x}\nCapEff:\t{:016x}\nCapBnd:\t{:016x}\n\
         CapAmb:\t{:016x}\nNoNewPrivs:\t{}\nSeccomp:\t{}\nSeccomp_filters:\t{}\nCpus_allowed:\t1\n",
        comm(p),
        p.umask.load(Ordering::Relaxed),
        state_name(state),
        seen(p.pid),
        seen(pid),
        seen(p.parent_pid()),
        if tracer_pid > 0 { seen(tracer_pid) } else { 0 },
        cred.uid,
        cred.euid,
        cred.suid,
        cred.fsuid,
        cred.gid,
        cred.egid,
        cred.sgid,
        cred.fsgid,
        // Linux ends the list with a space, even when it is empty.
        if groups.is_empty() { " " } else { groups.as_str() },
        ns_ids(p, pid),
        status_memory(p),
        p.tasks.lock().len().max(1),
        mask,
        cred.caps.inheritable,
        cred.caps.permitted,
        cred.caps.effective,
        cred.caps.bounding,
        cred.caps.ambient,
        u8::from(cred.no_new_privs),
        seccomp_mode,
        seccomp_filters,
    );
    s
}

pub(super) fn statm(p: &Process) -> String {
    let vm = p.vm.lock().clone();
    let (vm_pages, rss_pages) = vm.as_ref().map_or((0, 0), |vm| {
        let space = vm.lock();
        (space.mapped_bytes() / 4096, space.page_table().resident_pages())
    });
    alloc::format!("{vm_pages} {rss_pages} 0 0 0 {vm_pages} 0\n")
}

/// One maps line (Linux's show_map_vma): the name, if any, starts at
/// column 73, and a line without one ends in a space.
fn map_line(s: &mut String, a: &MapArea) {
    let start = s.len();
    let (major, minor) = dev_major_minor(a.dev);
    let _ = write!(
        s,
        "{:08x}-{:08x} {}{}{}{} {:08x} {:02x}:{:02x} {} ",
        a.start,
        a.end,
        if a.prot.read { 'r' } else { '-' },
        if a.prot.write { 'w' } else { '-' },
        if a.prot.exec { 'x' } else { '-' },
        if a.shared { 's' } else { 'p' },
        a.offset,
        major,
        minor,
        a.ino
    );
    if let Some(name) = &a.name {
        // seq_setwidth(25 + 6 * sizeof(void *) - 1), then seq_pad(' ').
        while s.len() - start < 72 {
            s.push(' ');
        }
        s.push(' ');
        s.push_str(name);
    }
    s.push('\n');
}

fn areas(p: &Process) -> Vec<MapArea> {
    // Bound first: the spin lock must be gone before the address space's
    // sleeping lock is taken.
    let vm = p.vm.lock().clone();
    match vm {
        Some(vm) => vm.lock().map_areas(),
        None => Vec::new(),
    }
}

pub(super) fn maps(p: &Process) -> String {
    let mut s = String::new();
    for a in areas(p) {
        map_line(&mut s, &a);
    }
    s
}

fn kb(bytes: u64) -> u64 {
    bytes / 1024
}

/// The accounting lines smaps and smaps_rollup share.
fn tally_lines(s: &mut String, t: &PageTally, rollup: bool) {
    let pss = |v: u64| v >> 22; // bytes << 12, shown in kB
    let mut put = |name: &str, v: u64| {
        let _ = writeln!(s, "{:<16}{:8} kB", alloc::format!("{name}:"), v);
    };
    put("Rss", kb(t.rss));
    put("Pss", pss(t.pss));
    put("Pss_Dirty", pss(t.pss_dirty));
    if rollup {
        put("Pss_Anon", pss(t.pss_anon));
        put("Pss_File", pss(t.pss_file));
        put("Pss_Shmem", pss(t.pss_shmem));
    }
    put("Shared_Clean", kb(t.shared_clean));
    put("Shared_Dirty", kb(t.shared_dirty));
    put("Private_Clean", kb(t.private_clean));
    put("Private_Dirty", kb(t.private_dirty));
    put("Referenced", kb(t.rss));
    put("Anonymous", kb(t.anonymous));
    for name in [
        "LazyFree",
        "AnonHugePages",
        "ShmemPmdMapped",
        "FilePmdMapped",
        "Shared_Hugetlb",
        "Private_Hugetlb",
        "Swap",
        "SwapPss",
    ] {
        put(name, 0);
    }
    put("Locked", pss(t.pss_locked));
}

pub(super) fn smaps(p: &Process) -> String {
    let mut s = String::new();
    let Some(vm) = p.vm.lock().clone() else {
        return s;
    };
    let space = vm.lock();
    for a in space.map_areas() {
        map_line(&mut s, &a);
        let t = space.tally(a.start, a.end);
        let _ = writeln!(s, "{:<16}{:8} kB", "Size:", kb(a.end - a.start));
        let _ = writeln!(s, "{:<16}{:8} kB", "KernelPageSize:", 4);
        let _ = writeln!(s, "{:<16}{:8} kB", "MMUPageSize:", 4);
        tally_lines(&mut s, &t, false);
        let _ = writeln!(s, "{:<16}{:8}", "THPeligible:", 0);
        let _ = writeln!(s, "VmFlags: {}", a.flags);
    }
    s
}

pub(super) fn smaps_rollup(p: &Process) -> String {
    let mut s = String::new();
    let Some(vm) = p.vm.lock().clone() else {
        return s;
    };
    let space = vm.lock();
    let all = space.map_areas();
    let (Some(first), Some(last)) = (all.first(), all.last()) else {
        return s;
    };
    let mut total = PageTally::default();
    for a in &all {
        total.add(&space.tally(a.start, a.end));
    }
    let header = MapArea {
        start: first.start,
        end: last.end,
        prot: crate::mm::vma::Prot::default(),
        shared: false,
        offset: 0,
        dev: 0,
        ino: 0,
        name: Some(String::from("[rollup]")),
        flags: String::new(),
    };
    map_line(&mut s, &header);
    tally_lines(&mut s, &total, true);
    s
}

/// /proc/<pid>/pagemap: one 64-bit entry per page of the address space,
/// read at offset `vpn * 8` (see `AddressSpace::pagemap_entry`). The
/// frame numbers read as 0 unless the opener had CAP_SYS_ADMIN (Linux
/// decides at open, as `pm->show_pfn`).
pub(super) struct PagemapFile {
    pub(super) process: Weak<Process>,
    pub(super) show_pfn: bool,
}

/// The frame-number bits of a pagemap entry.
const PM_PFN_MASK: u64 = (1 << 55) - 1;

const USER_PAGES: u64 = hal::paging::USER_END / 4096;

impl FileOps for PagemapFile {
    fn read_at(&self, offset: u64, buf: &mut [u8], _nonblock: bool) -> Result<usize, Errno> {
        if !offset.is_multiple_of(8) || !buf.len().is_multiple_of(8) {
            return Err(Errno::EINVAL);
        }
        let p = self.process.upgrade().ok_or(Errno::ESRCH)?;
        let Some(vm) = p.vm.lock().clone() else {
            return Ok(0);
        };
        let first = offset / 8;
        if first >= USER_PAGES {
            return Ok(0);
        }
        let count = ((buf.len() / 8) as u64).min(USER_PAGES - first);
        let space = vm.lock();
        for i in 0..count {
            let mut e = space.pagemap_entry((first + i) * 4096);
            if !self.show_pfn {
                e &= !PM_PFN_MASK;
            }
            buf[(i * 8) as usize..][..8].copy_from_slice(&e.to_le_bytes());
        }
        Ok((count * 8) as usize)
    }

    fn write_at(&self, _offset: u64, _buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        Err(Errno::EBADF)
    }

    fn mode(&self) -> u32 {
        super::super::inode::S_IFREG | 0o400
    }
}

/// /proc/<pid>/mem: the process's memory at file offset = address, read
/// and written the way a debugger's ptrace PEEK/POKE are (any mapped page;
/// text through a private copy). Opening it takes what attaching would
/// (Linux's mm_access with PTRACE_MODE_ATTACH_FSCREDS), unless the caller
/// opens its own; the file then keeps to the address space it was opened
/// on, and reads nothing once that is gone (exec or exit).
pub(super) struct MemFile {
    vm: Option<Weak<crate::sync::Mutex<crate::mm::aspace::AddressSpace>>>,
}

impl MemFile {
    pub(super) fn open(p: &Arc<Process>) -> Result<MemFile, Errno> {
        let Some(vm) = p.vm.lock().clone() else {
            // No memory left (a zombie): opens, and reads nothing.
            return Ok(MemFile { vm: None });
        };
        let caller = crate::proc::current_task().ok_or(Errno::ESRCH)?;
        crate::proc::ptrace::may_access_process(&caller, p, crate::cred::PtraceMode::ATTACH_FSCREDS)
            .map_err(|_| Errno::EACCES)?;
        Ok(MemFile { vm: Some(Arc::downgrade(&vm)) })
    }

    fn access(&self, offset: u64, buf: &mut [u8], write: bool) -> Result<usize, Errno> {
        let Some(vm) = self.vm.as_ref().and_then(Weak::upgrade) else {
            return Ok(0);
        };
        if buf.is_empty() {
            return Ok(0);
        }
        let done = vm.lock().access_forced(offset, buf, write);
        if done == 0 {
            return Err(Errno::EIO);
        }
        Ok(done)
    }
}

impl FileOps for MemFile {
    fn read_at(&self, offset: u64, buf: &mut [u8], _nonblock: bool) -> Result<usize, Errno> {
        self.access(offset, buf, false)
    }

    fn write_at(&self, offset: u64, buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        let mut copy = Vec::new();
        copy.try_reserve_exact(buf.len()).map_err(|_| Errno::ENOMEM)?;
        copy.extend_from_slice(buf);
        self.access(offset, &mut copy, true)
    }

    fn mode(&self) -> u32 {
        super::super::inode::S_IFREG | 0o600
    }
}

/// /proc/<pid>/fdinfo/<fd>: the position, status flags (with O_CLOEXEC
/// for a close-on-exec descriptor), mount and inode, then what the file's
/// kind adds. Only a caller that may read the process as ptrace would
/// (PTRACE_MODE_READ_FSCREDS) opens it.
pub(super) fn fdinfo(p: &Arc<Process>, fd: i32) -> Result<String, Errno> {
    let caller = crate::proc::current_task().ok_or(Errno::ESRCH)?;
    crate::proc::ptrace::may_access_process(&caller, p, crate::cred::PtraceMode::READ_FSCREDS)
        .map_err(|_| Errno::EACCES)?;
    let (f, cloexec) = {
        let table = p.files().lock();
        (table.get(fd).map_err(|_| Errno::ENOENT)?, table.is_cloexec(fd).unwrap_or(false))
    };
    let pos = if f.io.seekable { *f.offset.lock() } else { 0 };
    let flags = f.flags() | if cloexec { linux_abi::consts::O_CLOEXEC } else { 0 };
    let ino = f.ops.inode().map_or_else(|| f.ops.ino().unwrap_or(0), |i| i.metadata().ino);
    let mut s = crate::mm::TryString::new();
    let r = write!(s, "pos:\t{pos}\nflags:\t0{flags:o}\nmnt_id:\t0\nino:\t{ino}\n").and_then(|()| f.ops.fdinfo(&mut s));
    s.finish(r)
}
