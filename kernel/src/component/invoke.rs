//! The invocation path: one system call (`NR_INVOKE`) that checks the
//! capability, moves the calling thread into the callee's domain (its page
//! table, a stack of its own there), enters the component at its entry
//! point with the arguments in registers, and comes back with the reply
//! when the component makes `NR_RETURN`.
//!
//! The thread migrates: the same kernel thread runs the callee's user
//! context, nested inside the caller's system call. A callee that invokes
//! further nests again, up to `MAX_DEPTH`. A callee that faults (a page
//! fault, `ud2` from a Rust panic, any exception) ends its invocation
//! there: the caller gets `EOWNERDEAD` (`ETIMEDOUT` when the watchdog
//! ended it), never a hang, and `reboot` micro-reboots the component.

use alloc::sync::Arc;

use hal::paging::PageTable;
use hal::user::{ReturnReason, UserContext};
use linux_abi::errno::Errno;

use super::fault::Cause;
use super::reboot::{Entry, Watchdog};
use super::stats::Caller;
use super::{components, process_caps, Component, NR_INVOKE, NR_RETURN, OP_INIT};
use crate::sched;

/// How many invocations may be nested on one thread (each holds a user
/// context and a few frames on the kernel stack).
const MAX_DEPTH: u32 = 8;

/// One invocation's request.
#[derive(Clone, Copy, Debug)]
struct Request {
    cap: u64,
    op: u64,
    args: [u64; 4],
}

/// `NR_INVOKE` from a Linux process: rdi = capability, rsi = operation,
/// rdx, r10, r8, r9 = arguments. On return rax = 0 and rdx = the reply,
/// or rax = -errno.
pub fn syscall_invoke(uctx: &mut UserContext) {
    let r = &uctx.regs;
    let req = Request { cap: r.rdi, op: r.rsi, args: [r.rdx, r.r10, r.r8, r.r9] };
    // The callee starts from a clean x87/SSE state and the caller's comes
    // back intact: its live registers are saved into its context now.
    uctx.save_fpu();
    let result = match req.cap {
        super::control::CONTROL_CAP => super::control::call(req.op, req.args),
        _ => invoke(Caller::Process, process_caps(), req, 0),
    };
    set_reply(uctx, result);
}

/// An invocation made by kernel code holding the capability list `caps`
/// (in-kernel tests; later, the kernel's side of split drivers).
#[cfg(feature = "ktest")]
pub fn invoke_from_kernel(caps: &[usize], cap: u64, op: u64, args: [u64; 4]) -> Result<u64, Errno> {
    invoke(Caller::Kernel, caps, Request { cap, op, args }, 0)
}

fn set_reply(uctx: &mut UserContext, result: Result<u64, Errno>) {
    match result {
        Ok(value) => {
            uctx.regs.rax = 0;
            uctx.regs.rdx = value;
        }
        Err(e) => uctx.regs.rax = e.as_neg_isize() as u64,
    }
}

/// Runs one invocation by a caller holding `caps`, `depth` invocations
/// deep.
fn invoke(caller: Caller, caps: &[usize], req: Request, depth: u32) -> Result<u64, Errno> {
    if depth >= MAX_DEPTH {
        return Err(Errno::ELOOP);
    }
    let target = usize::try_from(req.cap).ok().and_then(|c| caps.get(c)).ok_or(Errno::EBADF)?;
    let callee = components().get(*target).ok_or(Errno::EBADF)?;
    if req.op == OP_INIT {
        return Err(Errno::ENOSYS);
    }
    let entry = callee.life.enter(callee, depth)?;
    callee.invocations.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    super::stats::count(caller, *target);
    let result = run_in_domain(callee, entry, callee.entry, req, depth);
    callee.release_stack(entry.stack);
    result
}

/// Runs a (re)booted component's init on this thread (`reboot`).
pub(super) fn run_init(callee: &Component, entry: Entry, depth: u32) -> Result<u64, Errno> {
    run_in_domain(callee, entry, callee.entry, Request { cap: 0, op: OP_INIT, args: [0; 4] }, depth)
}

/// Runs `callee` from `rip` in its current domain (its own, or the merged
/// one it is part of).
fn run_in_domain(callee: &Component, entry: Entry, rip: u64, req: Request, depth: u32) -> Result<u64, Errno> {
    let thread = sched::current();
    let previous = thread.swap_vm_root(Some(super::domain::current(callee)));
    let result = run_callee(callee, entry, rip, req, depth);
    restore_domain(&thread, previous);
    result
}

/// Back to the caller's address space (a kernel caller has none of its
/// own and stays where it is: the kernel half is the same everywhere).
fn restore_domain(thread: &sched::Thread, previous: Option<Arc<PageTable>>) {
    drop(thread.swap_vm_root(previous));
}

/// Runs the callee's user context until it returns or faults.
fn run_callee(callee: &Component, entry: Entry, rip: u64, req: Request, depth: u32) -> Result<u64, Errno> {
    let mut ctx = UserContext::new();
    let mut watchdog = Watchdog::new();
    ctx.regs.rip = rip;
    ctx.regs.rsp = callee.stack_top(entry.stack);
    ctx.regs.rdi = req.op;
    ctx.regs.rsi = req.args[0];
    ctx.regs.rdx = req.args[1];
    ctx.regs.rcx = req.args[2];
    ctx.regs.r8 = req.args[3];
    loop {
        match ctx.run() {
            ReturnReason::Syscall => match ctx.regs.rax {
                NR_RETURN => return callee.life.returned(entry, reply(ctx.regs.rdi, ctx.regs.rsi)),
                NR_INVOKE => {
                    let r = &ctx.regs;
                    let nested = Request { cap: r.rdi, op: r.rsi, args: [r.rdx, r.r10, r.r8, r.r9] };
                    ctx.save_fpu();
                    // In a merged domain the caller is whichever member's
                    // code made the call, not the component entered.
                    let caller = super::domain::caller_at(callee, ctx.regs.rip);
                    let caps = &components()[caller].caps;
                    let result = watchdog.paused(|| invoke(Caller::Component(caller), caps, nested, depth + 1));
                    set_reply(&mut ctx, result);
                }
                // A component has no Linux system calls: its world is its
                // slot and its capabilities.
                _ => ctx.regs.rax = Errno::ENOSYS.as_neg_isize() as u64,
            },
            ReturnReason::Exception { vector, fault_addr, .. } => {
                log::debug!(
                    "component {}: exception {vector} at {:#x} (address {fault_addr:#x}): invocation aborted",
                    callee.name,
                    ctx.regs.rip
                );
                super::fault::faulted(callee, entry, Cause::Exception(vector));
                return Err(Errno::EOWNERDEAD);
            }
            ReturnReason::Interrupt => {
                if watchdog.expired() {
                    log::debug!("component {}: watchdog at {:#x}: invocation aborted", callee.name, ctx.regs.rip);
                    super::fault::faulted(callee, entry, Cause::Watchdog);
                    return Err(Errno::ETIMEDOUT);
                }
            }
        }
        // Failed under this thread (another thread's fault): unwind.
        if callee.life.generation() != entry.generation {
            return Err(Errno::EOWNERDEAD);
        }
        sched::preempt_point();
    }
}

/// The callee's reply: status 0 and a value, or a Linux errno it chose.
/// A status that is no errno becomes EPROTO: a component cannot make its
/// caller see a kernel-internal code.
fn reply(status: u64, value: u64) -> Result<u64, Errno> {
    if status == 0 {
        return Ok(value);
    }
    match i32::try_from(status).ok().and_then(Errno::from_i32) {
        Some(e) if (1..512).contains(&status) => Err(e),
        _ => Err(Errno::EPROTO),
    }
}

/// Enters `callee` in its current domain at `rip` instead of its entry
/// point, as an invocation from the kernel would (fault injection).
pub(super) fn enter_at(callee: &Component, rip: u64) -> Result<u64, Errno> {
    let entry = callee.life.enter(callee, 0)?;
    let result = run_in_domain(callee, entry, rip, Request { cap: 0, op: 0, args: [0; 4] }, 0);
    callee.release_stack(entry.stack);
    result
}
