//! BSD process accounting (acct(2)): while an accounting file is set,
//! every process that ends appends a `struct acct_v3` record to it, as
//! Debian's kernel does (CONFIG_BSD_PROCESS_ACCT_V3): flags (AFORK for a
//! process that never exec'd, AXSIG and ACORE for one a signal ended),
//! the exit code as exit(2) and signals make it, real ids, pid and
//! parent pid, command name, start and elapsed time, user and system
//! CPU time (split as `cputime` splits it) and the address space size.
//! ASU (used super-user privileges) is never set: Kiln does not record
//! which capability checks succeeded.

use alloc::sync::Arc;

use hal::sync::SpinLock;
use linux_abi::fs::{self as x, AcctV3};

use super::{ExitKind, Process};
use crate::fs::OpenFile;

static FILE: SpinLock<Option<Arc<OpenFile>>> = SpinLock::new(None);

/// Starts (Some) or stops (None) accounting.
pub fn set(file: Option<Arc<OpenFile>>) {
    let old = core::mem::replace(&mut *FILE.lock(), file);
    drop(old);
}

fn ns_to_ahz(ns: u64) -> u64 {
    ns / (1_000_000_000 / x::AHZ)
}

/// Appends `p`'s record, if accounting is on (its last thread is leaving;
/// its address space is still there).
pub fn process_exited(p: &Process, how: ExitKind) {
    let Some(file) = FILE.lock().clone() else { return };
    let mut flag = 0;
    if p.forked.load(core::sync::atomic::Ordering::Relaxed) {
        flag |= x::AFORK;
    }
    let exitcode = match how {
        ExitKind::Exited(code) => u32::from(code) << 8,
        ExitKind::Signaled { sig, core } => {
            flag |= x::AXSIG;
            if core {
                flag |= x::ACORE;
            }
            sig | if core { 0x80 } else { 0 }
        }
    };
    let (uid, gid) = p.cred().map_or((0, 0), |c| (c.uid, c.gid));
    let ppid = p.parent.lock().upgrade().map_or(0, |pp| pp.pid);
    let elapsed_ns = crate::clock::now_ns().saturating_sub(p.start_ns);
    let elapsed = ns_to_ahz(elapsed_ns);
    let btime = (crate::clock::realtime_ns() / 1_000_000_000).saturating_sub(elapsed / x::AHZ);
    let (utime, stime) = super::cputime::process_times(p);
    // The address-space handle is copied out first: its lock sleeps, and
    // may not be taken under the spin lock that guards the handle.
    let vm = p.vm.lock().clone();
    let vsize = vm.map_or(0, |vm| vm.lock().mapped_bytes());
    let mut comm = [0u8; x::ACCT_COMM];
    let name = p.comm.lock().clone();
    let n = name.len().min(x::ACCT_COMM - 1);
    comm[..n].copy_from_slice(&name.as_bytes()[..n]);
    let record = AcctV3 {
        ac_flag: flag,
        ac_tty: 0,
        ac_exitcode: exitcode,
        ac_uid: uid,
        ac_gid: gid,
        ac_pid: p.pid as u32,
        ac_ppid: ppid as u32,
        ac_btime: btime.min(u64::from(u32::MAX)) as u32,
        ac_etime: x::encode_float(elapsed),
        ac_utime: x::encode_comp_t(ns_to_ahz(utime)),
        ac_stime: x::encode_comp_t(ns_to_ahz(stime)),
        ac_mem: x::encode_comp_t(vsize / 1024),
        ac_comm: comm,
        ..AcctV3::default()
    };
    // Opened O_APPEND: at the end, whatever RLIMIT_FSIZE says.
    let end = file.ops.size().unwrap_or(0);
    if file.ops.write_at(end, &record.to_bytes(), false).is_ok() {
        crate::fs::notify::modified(&file);
    }
}
