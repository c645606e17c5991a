//! NUMA memory policies (set_mempolicy, get_mempolicy, mbind,
//! set_mempolicy_home_node, migrate_pages, move_pages), answered as a
//! Linux 6.1 machine with one memory node answers them (nr_node_ids 1,
//! MAX_NUMNODES 1024): the checks and errnos are Linux's, policies are
//! kept (a thread's, inherited by fork and clone and kept over execve;
//! an area's, inherited by fork) and reported back, and every page is on
//! node 0, so nothing ever moves.

use alloc::sync::Arc;

use linux_abi::capability::{CAP_SYS_NICE, CAP_SYS_PTRACE};
use linux_abi::errno::Errno;

use super::{SysResult, SyscallContext};
use crate::mm::vma::MemPolicy;
use crate::proc::{self, Task};

const MPOL_DEFAULT: u8 = 0;
const MPOL_PREFERRED: u8 = 1;
const MPOL_BIND: u8 = 2;
const MPOL_INTERLEAVE: u8 = 3;
const MPOL_LOCAL: u8 = 4;
const MPOL_PREFERRED_MANY: u8 = 5;
const MPOL_MAX: u32 = 6;
const MPOL_F_STATIC_NODES: u32 = 1 << 15;
const MPOL_F_RELATIVE_NODES: u32 = 1 << 14;
const MPOL_F_NUMA_BALANCING: u32 = 1 << 13;
const MPOL_MODE_FLAGS: u32 = MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES | MPOL_F_NUMA_BALANCING;
const MPOL_F_NODE: u64 = 1 << 0;
const MPOL_F_ADDR: u64 = 1 << 1;
const MPOL_F_MEMS_ALLOWED: u64 = 1 << 2;
const MPOL_MF_STRICT: u32 = 1 << 0;
const MPOL_MF_MOVE: u32 = 1 << 1;
const MPOL_MF_MOVE_ALL: u32 = 1 << 2;
const MAX_NUMNODES: u64 = 1024;
const PAGE_SIZE: u64 = 4096;

/// A node mask read from user memory: its first word (the only nodes
/// anyone can see back) and whether any node at all is set.
#[derive(Clone, Copy, Default)]
struct Nodes {
    first: u64,
    any: bool,
    /// A node other than 0 is set.
    others: bool,
}

impl Nodes {
    /// The allowed nodes ({0}) this mask leaves, as Linux's
    /// mpol_set_nodemask (relative masks fold onto the one node).
    fn effective(&self, flags: u32) -> u64 {
        if flags & MPOL_F_RELATIVE_NODES != 0 {
            u64::from(self.any)
        } else {
            self.first & 1
        }
    }
}

/// Linux's sanitize_mpol_flags: the mode and its flags.
fn split_mode(mode: u64) -> Result<(u8, u32), Errno> {
    let mode = mode as u32;
    let flags = mode & MPOL_MODE_FLAGS;
    let mode = mode & !MPOL_MODE_FLAGS;
    if mode >= MPOL_MAX {
        return Err(Errno::EINVAL);
    }
    if flags & MPOL_F_STATIC_NODES != 0 && flags & MPOL_F_RELATIVE_NODES != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & MPOL_F_NUMA_BALANCING != 0 && mode != u32::from(MPOL_BIND) {
        return Err(Errno::EINVAL);
    }
    Ok((mode as u8, flags))
}

fn read_word(ctx: &SyscallContext, addr: u64) -> Result<u64, Errno> {
    let mut w = [0u8; 8];
    ctx.copy_from_user(addr, &mut w)?;
    Ok(u64::from_le_bytes(w))
}

/// Linux's get_nodes: `maxnode - 1` bits at `nmask`; bits past
/// MAX_NUMNODES must be clear.
fn get_nodes(ctx: &SyscallContext, nmask: u64, maxnode: u64) -> Result<Nodes, Errno> {
    let mut maxnode = maxnode.wrapping_sub(1);
    if maxnode == 0 || nmask == 0 {
        return Ok(Nodes::default());
    }
    if maxnode > PAGE_SIZE * 8 {
        return Err(Errno::EINVAL);
    }
    while maxnode > MAX_NUMNODES {
        let bits = maxnode.min(64);
        let mut t = read_word(ctx, nmask + (maxnode - 1) / 64 * 8)?;
        if bits < 64 {
            t &= (1 << bits) - 1;
        }
        if maxnode - bits >= MAX_NUMNODES {
            maxnode -= bits;
        } else {
            maxnode = MAX_NUMNODES;
        }
        if t != 0 {
            return Err(Errno::EINVAL);
        }
    }
    let words = maxnode.div_ceil(64);
    let mut nodes = Nodes::default();
    for i in 0..words {
        let mut w = read_word(ctx, nmask + i * 8)?;
        if i == words - 1 && !maxnode.is_multiple_of(64) {
            w &= (1 << (maxnode % 64)) - 1;
        }
        if i == 0 {
            nodes.first = w;
        }
        nodes.any |= w != 0;
        nodes.others |= if i == 0 { w & !1 != 0 } else { w != 0 };
    }
    Ok(nodes)
}

/// Linux's mpol_new and mpol_set_nodemask: the policy a mode, its flags
/// and a mask make (None: the default policy).
fn new_policy(mode: u8, flags: u32, nodes: Nodes) -> Result<Option<MemPolicy>, Errno> {
    let user_mask = flags & (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES) != 0;
    let mut mode = mode;
    match mode {
        MPOL_DEFAULT => {
            return if nodes.any { Err(Errno::EINVAL) } else { Ok(None) };
        }
        MPOL_PREFERRED if !nodes.any => {
            if user_mask {
                return Err(Errno::EINVAL);
            }
            mode = MPOL_LOCAL;
        }
        MPOL_LOCAL => {
            if nodes.any || user_mask {
                return Err(Errno::EINVAL);
            }
        }
        _ if !nodes.any => return Err(Errno::EINVAL),
        _ => {}
    }
    let policy_flags = (flags & MPOL_MODE_FLAGS) as u16;
    if mode == MPOL_LOCAL {
        return Ok(Some(MemPolicy { mode, flags: policy_flags, nodes: 0 }));
    }
    let effective = nodes.effective(flags);
    if effective == 0 {
        return Err(Errno::EINVAL);
    }
    // Static and relative masks are reported as the caller gave them.
    let shown = if user_mask { nodes.first } else { effective };
    Ok(Some(MemPolicy { mode, flags: policy_flags, nodes: shown }))
}

pub fn sys_set_mempolicy(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (mode, flags) = split_mode(a[0])?;
    let nodes = get_nodes(ctx, a[1], a[2])?;
    let policy = new_policy(mode, flags, nodes)?;
    *ctx.task.mempolicy.lock() = policy;
    Ok(0)
}

/// Linux's copy_nodes_to_user with nr_node_ids 1: one word at most, the
/// rest of what the caller asked for cleared.
fn copy_nodes_to_user(ctx: &SyscallContext, mask: u64, maxnode: u64, nodes: u64) -> Result<(), Errno> {
    let copy = maxnode.wrapping_sub(1).wrapping_add(63) & !63;
    let copy = copy / 8;
    let nbytes = 8;
    if copy > nbytes {
        if copy > PAGE_SIZE {
            return Err(Errno::EINVAL);
        }
        let zeros = [0u8; 64];
        let mut at = nbytes;
        while at < copy {
            let n = (copy - at).min(64);
            ctx.copy_to_user(mask + at, &zeros[..n as usize])?;
            at += n;
        }
        return ctx.copy_to_user(mask, &nodes.to_le_bytes());
    }
    ctx.copy_to_user(mask, &nodes.to_le_bytes()[..copy as usize])
}

pub fn sys_get_mempolicy(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (policy_ptr, nmask, maxnode, addr, flags) = (a[0], a[1], a[2], a[3], a[4]);
    if nmask != 0 && maxnode < 1 {
        return Err(Errno::EINVAL);
    }
    if flags & !(MPOL_F_NODE | MPOL_F_ADDR | MPOL_F_MEMS_ALLOWED) != 0 {
        return Err(Errno::EINVAL);
    }
    let (value, nodes) = if flags & MPOL_F_MEMS_ALLOWED != 0 {
        if flags & (MPOL_F_NODE | MPOL_F_ADDR) != 0 {
            return Err(Errno::EINVAL);
        }
        (0u32, 1u64)
    } else {
        let task_policy = *ctx.task.mempolicy.lock();
        let policy = if flags & MPOL_F_ADDR != 0 {
            ctx.vm()?.lock().mempolicy_at(addr).ok_or(Errno::EFAULT)?
        } else if addr != 0 {
            return Err(Errno::EINVAL);
        } else {
            task_policy
        };
        let value = if flags & MPOL_F_NODE != 0 {
            if flags & MPOL_F_ADDR != 0 {
                // The node of the page there, faulted in for reading.
                let mut byte = [0u8; 1];
                crate::mm::uaccess::read_bytes(&ctx.vm()?, addr, &mut byte)?;
                0
            } else if policy.is_some_and(|p| p.mode == MPOL_INTERLEAVE) {
                0 // the next node of the interleave: the only one
            } else {
                return Err(Errno::EINVAL);
            }
        } else {
            policy.map_or(0, |p| u32::from(p.mode) | u32::from(p.flags))
        };
        (value, policy.map_or(0, |p| p.nodes))
    };
    if policy_ptr != 0 {
        ctx.copy_to_user(policy_ptr, &value.to_le_bytes())?;
    }
    if nmask != 0 {
        copy_nodes_to_user(ctx, nmask, maxnode, nodes)?;
    }
    Ok(0)
}

pub fn sys_mbind(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (start, len, mode, nmask, maxnode, flags) = (a[0], a[1], a[2], a[3], a[4], a[5] as u32);
    let (mode, mode_flags) = split_mode(mode)?;
    let nodes = get_nodes(ctx, nmask, maxnode)?;
    if flags & !(MPOL_MF_STRICT | MPOL_MF_MOVE | MPOL_MF_MOVE_ALL) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & MPOL_MF_MOVE_ALL != 0 && !ctx.cred().capable(CAP_SYS_NICE) {
        return Err(Errno::EPERM);
    }
    if !start.is_multiple_of(PAGE_SIZE) {
        return Err(Errno::EINVAL);
    }
    let len = len.checked_add(PAGE_SIZE - 1).map(|l| l & !(PAGE_SIZE - 1)).ok_or(Errno::EINVAL)?;
    let end = start.checked_add(len).ok_or(Errno::EINVAL)?;
    if end == start {
        return Ok(0);
    }
    let policy = new_policy(mode, mode_flags, nodes)?;
    let vm = ctx.vm()?;
    let mut space = vm.lock();
    let (areas, whole) = space.mempolicies_in(start, end);
    // A policy needs the whole range mapped; going back to the default
    // skips holes, but not a range with no area at all.
    if areas.is_empty() || (policy.is_some() && !whole) {
        return Err(Errno::EFAULT);
    }
    space.set_mempolicy_range(start, end, policy);
    Ok(0)
}

pub fn sys_set_mempolicy_home_node(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (start, len, home_node, flags) = (a[0], a[1], a[2], a[3]);
    if !start.is_multiple_of(PAGE_SIZE) || flags != 0 {
        return Err(Errno::EINVAL);
    }
    // Node 0 is the only one online.
    if home_node != 0 {
        return Err(Errno::EINVAL);
    }
    let len = len.checked_add(PAGE_SIZE - 1).map(|l| l & !(PAGE_SIZE - 1)).ok_or(Errno::EINVAL)?;
    let end = start.checked_add(len).ok_or(Errno::EINVAL)?;
    if end == start {
        return Ok(0);
    }
    // Only BIND and PREFERRED_MANY areas take a home node; on one node it
    // changes no allocation, so nothing needs keeping. Areas with no
    // policy are skipped, as in 6.1 (later kernels answer ENOENT).
    let (areas, _) = ctx.vm()?.lock().mempolicies_in(start, end);
    if areas.iter().flatten().any(|p| p.mode != MPOL_BIND && p.mode != MPOL_PREFERRED_MANY) {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(0)
}

/// Linux's ptrace_may_access(PTRACE_MODE_READ_REALCREDS): the caller's
/// own process, or a target whose ids all equal the caller's real ids
/// and which is dumpable, or CAP_SYS_PTRACE.
fn may_inspect(ctx: &SyscallContext, target: &Arc<Task>) -> bool {
    if Arc::ptr_eq(&target.process, ctx.process()) {
        return true;
    }
    let me = ctx.cred();
    if me.capable(CAP_SYS_PTRACE) {
        return true;
    }
    let t = target.cred();
    let same =
        [t.uid, t.euid, t.suid].iter().all(|&u| u == me.uid) && [t.gid, t.egid, t.sgid].iter().all(|&g| g == me.gid);
    same && target.process.dumpable.load(core::sync::atomic::Ordering::Relaxed) == 1
}

fn target_task(ctx: &SyscallContext, pid: i32) -> Result<Arc<Task>, Errno> {
    let t = if pid == 0 { ctx.task.clone() } else { proc::find_task(pid).ok_or(Errno::ESRCH)? };
    if !may_inspect(ctx, &t) {
        return Err(Errno::EPERM);
    }
    if t.process.vm().is_err() {
        return Err(Errno::EINVAL);
    }
    Ok(t)
}

pub fn sys_migrate_pages(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, maxnode, old_nodes, new_nodes) = (a[0] as i32, a[1], a[2], a[3]);
    let _old = get_nodes(ctx, old_nodes, maxnode)?;
    let new = get_nodes(ctx, new_nodes, maxnode)?;
    let t = if pid == 0 { ctx.task.clone() } else { proc::find_task(pid).ok_or(Errno::ESRCH)? };
    if !may_inspect(ctx, &t) {
        return Err(Errno::EPERM);
    }
    // Nodes outside the target's allowed set ({0}) need CAP_SYS_NICE.
    if new.others && !ctx.cred().capable(CAP_SYS_NICE) {
        return Err(Errno::EPERM);
    }
    if new.first & 1 == 0 {
        return Err(Errno::EINVAL);
    }
    if t.process.vm().is_err() {
        return Err(Errno::EINVAL);
    }
    // Every page is on node 0 already: none left behind.
    Ok(0)
}

pub fn sys_move_pages(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, count, pages, nodes, status, flags) = (a[0] as i32, a[1], a[2], a[3], a[4], a[5] as u32);
    if flags & !(MPOL_MF_MOVE | MPOL_MF_MOVE_ALL) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & MPOL_MF_MOVE_ALL != 0 && !ctx.cred().capable(CAP_SYS_NICE) {
        return Err(Errno::EPERM);
    }
    let t = target_task(ctx, pid)?;
    let vm = t.process.vm()?;
    for i in 0..count {
        let addr = read_word(ctx, pages.wrapping_add(8 * i))?;
        if nodes != 0 {
            let mut n = [0u8; 4];
            ctx.copy_from_user(nodes.wrapping_add(4 * i), &mut n)?;
            let node = i32::from_le_bytes(n);
            if node < 0 || node as u64 >= MAX_NUMNODES || node != 0 {
                return Err(Errno::ENODEV);
            }
        }
        // The page's node (0), or why there is none: no area (EFAULT), or
        // no page mapped there (ENOENT, as since Linux 6.12's folio walk;
        // 6.1 said EFAULT for an untouched anonymous page).
        let state: i32 = match vm.lock().page_presence(addr) {
            None => Errno::EFAULT.as_neg_isize() as i32,
            Some((true, _)) => 0,
            Some((false, _)) => Errno::ENOENT.as_neg_isize() as i32,
        };
        ctx.copy_to_user(status.wrapping_add(4 * i), &state.to_le_bytes())?;
    }
    Ok(0)
}
