//! Scheduling calls: sched_yield, the policy and priority calls
//! (sched_setscheduler/getscheduler/setparam/getparam/setattr/getattr,
//! sched_get_priority_min/max, sched_rr_get_interval) and nice values
//! (getpriority/setpriority; libc's nice(3) is built on them).
//!
//! Like Linux, these act on one thread: a `pid` argument is a thread id,
//! and PRIO_PROCESS names a thread too. What the scheduler does with the
//! values is in `sched::policy`.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{SchedAttr, SchedParam, Timespec};

use super::{SysResult, SyscallContext};
use crate::proc::{self, Task};
use crate::sched::{self, policy::RR_SLICE_NS, Policy, SchedParams};

// ---- permission checks --------------------------------------------------
//
// Linux asks for CAP_SYS_NICE to lower a nice value below what RLIMIT_NICE
// allows, to choose a real-time policy above RLIMIT_RTPRIO, and to change
// another user's threads (the rules are `kiln_util::cred`'s).

/// Whether the caller holds CAP_SYS_NICE.
fn has_cap_sys_nice(ctx: &SyscallContext) -> bool {
    ctx.cred().capable(linux_abi::capability::CAP_SYS_NICE)
}

/// Whether the caller may change `target`'s scheduling at all (Linux's
/// `set_one_prio_perm`/`check_same_owner`): the caller's effective uid is
/// the target's real or effective uid, or CAP_SYS_NICE.
fn owns(ctx: &SyscallContext, target: &Task) -> bool {
    ctx.cred().may_renice(&target.cred())
}

/// Linux's `can_nice`: may `target` get nice value `nice` (lower than its
/// current one)? RLIMIT_NICE allows down to 20 - rlim_cur; CAP_SYS_NICE
/// allows anything.
fn may_raise_priority(ctx: &SyscallContext, target: &Task, nice: i32) -> bool {
    let limit = target.process.rlimits.lock()[c::RLIMIT_NICE as usize].0;
    (20 - nice) as u64 <= limit || has_cap_sys_nice(ctx)
}

/// Whether the caller may move `target` to `new` from `old` (Linux's
/// checks in `__sched_setscheduler` for callers without CAP_SYS_NICE).
fn may_set_params(ctx: &SyscallContext, target: &Task, old: &SchedParams, new: &SchedParams) -> bool {
    if has_cap_sys_nice(ctx) {
        return true;
    }
    if !owns(ctx, target) {
        return false;
    }
    if new.policy.is_realtime() {
        let limit = target.process.rlimits.lock()[c::RLIMIT_RTPRIO as usize].0;
        // Without RLIMIT_RTPRIO no real-time policy at all; with it, no
        // higher than the limit and no higher than before unless allowed.
        if limit == 0 && !old.policy.is_realtime() {
            return false;
        }
        if u64::from(new.rt_priority) > limit.max(u64::from(old.rt_priority)) {
            return false;
        }
    } else if new.nice < old.nice && !may_raise_priority(ctx, target, new.nice) {
        return false;
    }
    // Leaving SCHED_IDLE needs RLIMIT_NICE's blessing, dropping
    // SCHED_RESET_ON_FORK needs the capability.
    if old.policy == Policy::Idle && new.policy != Policy::Idle && !may_raise_priority(ctx, target, old.nice) {
        return false;
    }
    !old.reset_on_fork || new.reset_on_fork
}

// ---- helpers --------------------------------------------------------------

/// The thread a scheduling call names: 0 is the caller.
fn target_task(ctx: &SyscallContext, pid: i32) -> Result<Arc<Task>, Errno> {
    match pid {
        0 => Ok(ctx.task.clone()),
        p if p < 0 => Err(Errno::EINVAL),
        p => proc::find_task_seen_by(ctx.process(), p).ok_or(Errno::ESRCH),
    }
}

fn kthread(task: &Task) -> Result<Arc<sched::Thread>, Errno> {
    task.kthread.get().cloned().ok_or(Errno::ESRCH)
}

fn params_of(task: &Task) -> SchedParams {
    task.kthread.get().map_or(SchedParams::DEFAULT, |k| k.sched_params())
}

fn apply(task: &Task, params: SchedParams) -> Result<(), Errno> {
    sched::set_sched_params(&kthread(task)?, params).map_err(|_| Errno::ENOMEM)
}

/// The real user id of a thread, which PRIO_USER matches (Linux's
/// task_uid).
fn real_uid(task: &Task) -> u32 {
    task.cred().uid
}

fn caller_uid(ctx: &SyscallContext) -> u32 {
    ctx.cred().uid
}

// ---- nice values ----------------------------------------------------------

/// The threads a (which, who) pair names; `Err(EINVAL)` for an unknown
/// `which`. An empty list means none matched (ESRCH).
fn prio_targets(ctx: &SyscallContext, which: u32, who: i32) -> Result<Vec<Arc<Task>>, Errno> {
    let mut out = Vec::new();
    match which {
        c::PRIO_PROCESS => {
            let t = if who == 0 { Some(ctx.task.clone()) } else { proc::find_task_seen_by(ctx.process(), who) };
            if let Some(t) = t {
                out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                out.push(t);
            }
        }
        c::PRIO_PGRP | c::PRIO_USER => {
            let pgrp = if who == 0 {
                ctx.process().pgid.load(Ordering::Relaxed)
            } else {
                ctx.process().pid_ns.global(who).unwrap_or(-1)
            };
            let uid = if who == 0 { caller_uid(ctx) } else { who as u32 };
            for p in proc::all_processes() {
                if which == c::PRIO_PGRP && p.pgid.load(Ordering::Relaxed) != pgrp {
                    continue;
                }
                for t in p.tasks.lock().iter() {
                    if which == c::PRIO_USER && real_uid(t) != uid {
                        continue;
                    }
                    out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                    out.push(t.clone());
                }
            }
        }
        _ => return Err(Errno::EINVAL),
    }
    Ok(out)
}

/// getpriority(which, who): the highest priority among the threads named,
/// as the raw system call returns it: 20 - nice (1..40), so that no
/// success looks like an error; libc turns it back into a nice value.
pub fn sys_getpriority(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let targets = prio_targets(ctx, a[0] as u32, a[1] as i32)?;
    let best = targets.iter().map(|t| 20 - params_of(t).nice).max().ok_or(Errno::ESRCH)?;
    Ok(best as u64)
}

/// setpriority(which, who, nice): nice clamped to -20..19, for each thread
/// named; EPERM for one the caller may not change, EACCES for a nice below
/// what the caller may give, ESRCH if none matched. As on Linux the
/// threads it may change are changed even when another fails.
pub fn sys_setpriority(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let nice = (a[2] as i32).clamp(-20, 19);
    let targets = prio_targets(ctx, a[0] as u32, a[1] as i32)?;
    let mut result = Err(Errno::ESRCH);
    for t in &targets {
        let old = params_of(t);
        if !owns(ctx, t) {
            result = Err(Errno::EPERM);
            continue;
        }
        if nice < old.nice && !may_raise_priority(ctx, t, nice) {
            result = Err(Errno::EACCES);
            continue;
        }
        apply(t, SchedParams { nice, ..old })?;
        if result == Err(Errno::ESRCH) {
            result = Ok(0);
        }
    }
    result
}

// ---- policies ---------------------------------------------------------------

pub fn sys_sched_yield(_ctx: &mut SyscallContext, _a: &[u64; 6]) -> SysResult {
    sched::yield_now();
    Ok(0)
}

/// The policy number sched_getscheduler reports.
fn policy_word(p: &SchedParams) -> u64 {
    u64::from(p.policy.to_linux() | if p.reset_on_fork { c::SCHED_RESET_ON_FORK } else { 0 })
}

pub fn sys_sched_getscheduler(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let t = target_task(ctx, a[0] as i32)?;
    Ok(policy_word(&params_of(&t)))
}

pub fn sys_sched_getparam(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, param) = (a[0] as i32, a[1]);
    if param == 0 || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let t = target_task(ctx, pid)?;
    let p = params_of(&t);
    let prio = if p.policy.is_realtime() { p.rt_priority as i32 } else { 0 };
    ctx.copy_to_user(param, &SchedParam { sched_priority: prio }.to_bytes())?;
    Ok(0)
}

/// What a policy-changing call asks for, before Linux's checks.
struct Request {
    /// None: keep the current policy (sched_setparam, KEEP_POLICY).
    policy: Option<u32>,
    flags: u64,
    priority: u32,
    /// None: keep the current nice value (sched_setscheduler).
    nice: Option<i32>,
    /// SCHED_FLAG_KEEP_PARAMS: after the checks, only reset-on-fork
    /// changes (Linux skips `__setscheduler_params`, policy included).
    keep_params: bool,
}

/// Linux's `__sched_setscheduler`: validates `req` against `task`'s
/// current parameters and applies it.
fn set_scheduler(ctx: &SyscallContext, task: &Task, req: Request) -> SysResult {
    let old = params_of(task);
    let (policy, reset_on_fork) = match req.policy {
        None => (old.policy, old.reset_on_fork),
        Some(n) => {
            if n == c::SCHED_DEADLINE {
                // Kiln has no deadline class (EDF with runtime budgets) to
                // run such a thread in. Linux refuses bad parameters with
                // EINVAL; Kiln refuses all, the same way, rather than
                // pretend to honour a deadline.
                return Err(Errno::EINVAL);
            }
            (Policy::from_linux(n).ok_or(Errno::EINVAL)?, req.flags & c::SCHED_FLAG_RESET_ON_FORK != 0)
        }
    };
    if req.flags & !(c::SCHED_FLAG_ALL | c::SCHED_FLAG_SUGOV) != 0 {
        return Err(Errno::EINVAL);
    }
    if req.priority > sched::policy::RT_PRIO_MAX || policy.is_realtime() != (req.priority != 0) {
        return Err(Errno::EINVAL);
    }
    let new = if req.keep_params {
        SchedParams { reset_on_fork, ..old }
    } else {
        SchedParams { policy, rt_priority: req.priority, nice: req.nice.unwrap_or(old.nice), reset_on_fork }
    };
    if !may_set_params(ctx, task, &old, &new) {
        return Err(Errno::EPERM);
    }
    if req.flags & c::SCHED_FLAG_UTIL_CLAMP != 0 {
        // Utilization clamping is a build option Linux may lack
        // (CONFIG_UCLAMP_TASK); Kiln has none, and answers as such a
        // Linux does.
        return Err(Errno::EOPNOTSUPP);
    }
    if new != old {
        apply(task, new)?;
    }
    Ok(0)
}

fn read_param(ctx: &SyscallContext, pid: i32, ptr: u64) -> Result<(Arc<Task>, u32), Errno> {
    if ptr == 0 || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; SchedParam::SIZE];
    ctx.copy_from_user(ptr, &mut b)?;
    let prio = SchedParam::from_bytes(&b).sched_priority;
    let task = target_task(ctx, pid)?;
    // A negative priority is out of range like one above 99.
    Ok((task, u32::try_from(prio).unwrap_or(u32::MAX)))
}

pub fn sys_sched_setscheduler(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, policy, ptr) = (a[0] as i32, a[1] as i32, a[2]);
    if policy < 0 {
        return Err(Errno::EINVAL);
    }
    let (task, priority) = read_param(ctx, pid, ptr)?;
    let policy = policy as u32;
    let flags = if policy & c::SCHED_RESET_ON_FORK != 0 { c::SCHED_FLAG_RESET_ON_FORK } else { 0 };
    let policy = policy & !c::SCHED_RESET_ON_FORK;
    let req = Request { policy: Some(policy), flags, priority, nice: None, keep_params: false };
    set_scheduler(ctx, &task, req)
}

pub fn sys_sched_setparam(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (task, priority) = read_param(ctx, a[0] as i32, a[1])?;
    let req = Request { policy: None, flags: 0, priority, nice: None, keep_params: false };
    set_scheduler(ctx, &task, req)
}

/// Reads a user `struct sched_attr` as Linux's `sched_copy_attr`: the size
/// field picks the version (0 means the first); a size out of range, or
/// non-zero bytes past what Kiln knows, write Kiln's size back and fail
/// with E2BIG.
fn read_attr(ctx: &SyscallContext, ptr: u64) -> Result<SchedAttr, Errno> {
    let mut size_bytes = [0u8; 4];
    ctx.copy_from_user(ptr, &mut size_bytes)?;
    let mut size = u32::from_le_bytes(size_bytes) as usize;
    if size == 0 {
        size = SchedAttr::SIZE_VER0;
    }
    let too_big = || -> Errno {
        match ctx.copy_to_user(ptr, &(SchedAttr::SIZE as u32).to_le_bytes()) {
            Ok(()) => Errno::E2BIG,
            Err(e) => e,
        }
    };
    if !(SchedAttr::SIZE_VER0..=crate::mm::PAGE_SIZE as usize).contains(&size) {
        return Err(too_big());
    }
    let mut buf = alloc::vec::Vec::new();
    buf.try_reserve_exact(size).map_err(|_| Errno::ENOMEM)?;
    buf.resize(size, 0);
    ctx.copy_from_user(ptr, &mut buf)?;
    let attr = SchedAttr::from_user(&buf).ok_or_else(too_big)?;
    if attr.sched_flags & c::SCHED_FLAG_UTIL_CLAMP != 0 && size < SchedAttr::SIZE_VER1 {
        return Err(Errno::EINVAL);
    }
    Ok(SchedAttr { sched_nice: attr.sched_nice.clamp(-20, 19), ..attr })
}

pub fn sys_sched_setattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, ptr, flags) = (a[0] as i32, a[1], a[2] as u32);
    if ptr == 0 || pid < 0 || flags != 0 {
        return Err(Errno::EINVAL);
    }
    let attr = read_attr(ctx, ptr)?;
    if (attr.sched_policy as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    let task = target_task(ctx, pid)?;
    let old = params_of(&task);
    let keep_params = attr.sched_flags & c::SCHED_FLAG_KEEP_PARAMS != 0;
    let policy = if attr.sched_flags & c::SCHED_FLAG_KEEP_POLICY != 0 { None } else { Some(attr.sched_policy) };
    let (priority, nice) = if keep_params {
        (if old.policy.is_realtime() { old.rt_priority } else { 0 }, old.nice)
    } else {
        (attr.sched_priority, attr.sched_nice)
    };
    // The nice value only changes for a fair policy (Linux's
    // __setscheduler_params); a real-time one keeps the old for later.
    let fair = policy.map_or(!old.policy.is_realtime(), |p| !matches!(p, c::SCHED_FIFO | c::SCHED_RR));
    let req = Request { policy, flags: attr.sched_flags, priority, nice: fair.then_some(nice), keep_params };
    set_scheduler(ctx, &task, req)
}

pub fn sys_sched_getattr(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, ptr, size, flags) = (a[0] as i32, a[1], a[2] as usize, a[3] as u32);
    if ptr == 0 || pid < 0 || size > crate::mm::PAGE_SIZE as usize || size < SchedAttr::SIZE_VER0 || flags != 0 {
        return Err(Errno::EINVAL);
    }
    let task = target_task(ctx, pid)?;
    let p = params_of(&task);
    // Linux's copy_struct_to_user: the struct, then zeros up to the
    // caller's size; `size` says how much of it is the struct.
    let copied = size.min(SchedAttr::SIZE);
    let mut attr = SchedAttr {
        size: copied as u32,
        sched_policy: p.policy.to_linux(),
        sched_flags: if p.reset_on_fork { c::SCHED_FLAG_RESET_ON_FORK } else { 0 },
        ..SchedAttr::default()
    };
    if p.policy.is_realtime() {
        attr.sched_priority = p.rt_priority;
    } else {
        attr.sched_nice = p.nice;
        // Linux 6.12 and later report a fair thread's slice here: the base
        // slice of 0.7 ms grown with the CPU count (1 + log2, at most 8).
        let cpus = sched::online_cpus().count_ones().clamp(1, 8);
        attr.sched_runtime = 700_000 * u64::from(1 + cpus.ilog2());
    }
    let mut out = [0u8; crate::mm::PAGE_SIZE as usize];
    out[..copied].copy_from_slice(&attr.to_bytes()[..copied]);
    ctx.copy_to_user(ptr, &out[..size])?;
    Ok(0)
}

pub fn sys_sched_get_priority_max(_ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    match a[0] as u32 {
        c::SCHED_FIFO | c::SCHED_RR => Ok(u64::from(sched::policy::RT_PRIO_MAX)),
        c::SCHED_OTHER | c::SCHED_BATCH | c::SCHED_IDLE | c::SCHED_DEADLINE => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

pub fn sys_sched_get_priority_min(_ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    match a[0] as u32 {
        c::SCHED_FIFO | c::SCHED_RR => Ok(1),
        c::SCHED_OTHER | c::SCHED_BATCH | c::SCHED_IDLE | c::SCHED_DEADLINE => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// sched_rr_get_interval: SCHED_RR's 100 ms slice, 0 for SCHED_FIFO (it
/// has none), and for the fair policies the period a thread waits at most
/// for its turn: one tick.
pub fn sys_sched_rr_get_interval(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, ptr) = (a[0] as i32, a[1]);
    let task = target_task(ctx, pid)?;
    let ns = match params_of(&task).policy {
        Policy::RoundRobin => RR_SLICE_NS,
        Policy::Fifo => 0,
        _ => 1_000_000_000 / u64::from(crate::clock::HZ),
    };
    let ts = Timespec { tv_sec: (ns / 1_000_000_000) as i64, tv_nsec: (ns % 1_000_000_000) as i64 };
    ctx.copy_to_user(ptr, &ts.to_bytes())?;
    Ok(0)
}

// ---- I/O priorities -------------------------------------------------------

const IOPRIO_WHO_PROCESS: u32 = 1;
const IOPRIO_WHO_PGRP: u32 = 2;
const IOPRIO_WHO_USER: u32 = 3;
const IOPRIO_CLASS_SHIFT: u32 = 13;
const IOPRIO_CLASS_NONE: u32 = 0;
const IOPRIO_CLASS_RT: u32 = 1;
const IOPRIO_CLASS_BE: u32 = 2;
const IOPRIO_CLASS_IDLE: u32 = 3;
const IOPRIO_NR_LEVELS: u32 = 8;

/// Linux's ioprio_check_cap (6.1): the class must exist, its level fit,
/// and the real-time class needs CAP_SYS_ADMIN or CAP_SYS_NICE.
fn ioprio_check(ctx: &SyscallContext, ioprio: u32) -> Result<(), Errno> {
    let (class, data) = ((ioprio >> IOPRIO_CLASS_SHIFT) & 7, ioprio & ((1 << IOPRIO_CLASS_SHIFT) - 1));
    match class {
        IOPRIO_CLASS_RT | IOPRIO_CLASS_BE => {
            if class == IOPRIO_CLASS_RT
                && !ctx.cred().capable(linux_abi::capability::CAP_SYS_ADMIN)
                && !has_cap_sys_nice(ctx)
            {
                return Err(Errno::EPERM);
            }
            if data >= IOPRIO_NR_LEVELS {
                return Err(Errno::EINVAL);
            }
        }
        IOPRIO_CLASS_IDLE => {}
        IOPRIO_CLASS_NONE if data == 0 => {}
        _ => return Err(Errno::EINVAL),
    }
    Ok(())
}

/// The threads an ioprio (which, who) names. For IOPRIO_WHO_USER with
/// `who` 0, setting matches uid 0 and getting the caller's real uid, as
/// Linux does (`uid` versus `current_user()->uid`).
fn ioprio_targets(ctx: &SyscallContext, which: u32, who: i32, setting: bool) -> Result<Vec<Arc<Task>>, Errno> {
    match which {
        IOPRIO_WHO_PROCESS => prio_targets(ctx, c::PRIO_PROCESS, who),
        IOPRIO_WHO_PGRP => prio_targets(ctx, c::PRIO_PGRP, who),
        IOPRIO_WHO_USER => {
            if who == -1 {
                return Ok(Vec::new()); // not a valid uid: ESRCH
            }
            let uid = if who == 0 && !setting { caller_uid(ctx) } else { who as u32 };
            let mut out = Vec::new();
            for p in proc::all_processes() {
                for t in p.tasks.lock().iter().filter(|t| real_uid(t) == uid) {
                    out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                    out.push(t.clone());
                }
            }
            Ok(out)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// ioprio_set(which, who, ioprio): stored per thread (inherited by fork
/// and clone); the caller's effective or real uid must be the target's
/// real uid, or it needs CAP_SYS_NICE. Kiln has no I/O scheduler, so the
/// value only comes back from ioprio_get and /proc.
pub fn sys_ioprio_set(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (which, who, ioprio) = (a[0] as u32, a[1] as i32, a[2] as u32);
    ioprio_check(ctx, ioprio)?;
    let targets = ioprio_targets(ctx, which, who, true)?;
    if targets.is_empty() {
        return Err(Errno::ESRCH);
    }
    let cred = ctx.cred();
    for t in &targets {
        let tuid = real_uid(t);
        if tuid != cred.euid && tuid != cred.uid && !has_cap_sys_nice(ctx) {
            return Err(Errno::EPERM);
        }
        t.ioprio.store(ioprio, Ordering::Relaxed);
    }
    Ok(0)
}

/// A thread's effective I/O priority: with none set, the class follows
/// the scheduling policy and the level the nice value (Linux's
/// task_nice_ioclass and task_nice_ioprio).
fn effective_ioprio(t: &Task) -> u32 {
    let set = t.ioprio.load(Ordering::Relaxed);
    if set >> IOPRIO_CLASS_SHIFT != IOPRIO_CLASS_NONE {
        return set;
    }
    let p = params_of(t);
    let class = match p.policy {
        sched::Policy::Idle => IOPRIO_CLASS_IDLE,
        sched::Policy::Fifo | sched::Policy::RoundRobin => IOPRIO_CLASS_RT,
        _ => IOPRIO_CLASS_BE,
    };
    (class << IOPRIO_CLASS_SHIFT) | ((p.nice + 20) / 5) as u32
}

/// ioprio_get(which, who): one thread's value as set (0 when never set);
/// for a group or a user, the best (lowest) effective value among them.
pub fn sys_ioprio_get(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (which, who) = (a[0] as u32, a[1] as i32);
    let targets = ioprio_targets(ctx, which, who, false)?;
    if which == IOPRIO_WHO_PROCESS {
        return targets.first().map(|t| u64::from(t.ioprio.load(Ordering::Relaxed))).ok_or(Errno::ESRCH);
    }
    targets.iter().map(|t| effective_ioprio(t)).min().map(u64::from).ok_or(Errno::ESRCH)
}
