//! membarrier(2): memory barriers on the other CPUs that run a process's
//! threads (or every CPU), so user-space RCU and JIT code can make one
//! side of a fence cheap.
//!
//! Every variant sends an interrupt to the CPUs concerned and waits until
//! each has taken it (`hal::tlb::barrier_ipi`): taking an interrupt is a
//! full barrier, and the IRET back serializes the core (SYNC_CORE). The
//! expedited private commands need a registration first (EPERM without),
//! kept per address space as Linux keeps it per mm (a fork child keeps
//! them, exec drops them). The RSEQ variant also restarts the rseq
//! critical sections of the process's threads running now (on one CPU
//! with MEMBARRIER_CMD_FLAG_CPU): each is marked to abort before it runs
//! more user code, and the interrupt brings those in user mode back to
//! their run loop, where the abort happens (`proc::rseq`). Threads not
//! running were switched out, which aborts their sections anyway.

use linux_abi::errno::Errno;

use super::{SysResult, SyscallContext};

const QUERY: u32 = 0;
const GLOBAL: u32 = 1 << 0;
const GLOBAL_EXPEDITED: u32 = 1 << 1;
const REGISTER_GLOBAL_EXPEDITED: u32 = 1 << 2;
const PRIVATE_EXPEDITED: u32 = 1 << 3;
const REGISTER_PRIVATE_EXPEDITED: u32 = 1 << 4;
const PRIVATE_EXPEDITED_SYNC_CORE: u32 = 1 << 5;
const REGISTER_PRIVATE_EXPEDITED_SYNC_CORE: u32 = 1 << 6;
const PRIVATE_EXPEDITED_RSEQ: u32 = 1 << 7;
const REGISTER_PRIVATE_EXPEDITED_RSEQ: u32 = 1 << 8;
const GET_REGISTRATIONS: u32 = 1 << 9;
/// `flags` of PRIVATE_EXPEDITED_RSEQ: only `cpu_id`.
const FLAG_CPU: u32 = 1;

const SUPPORTED: u32 = GLOBAL
    | GLOBAL_EXPEDITED
    | REGISTER_GLOBAL_EXPEDITED
    | PRIVATE_EXPEDITED
    | REGISTER_PRIVATE_EXPEDITED
    | PRIVATE_EXPEDITED_SYNC_CORE
    | REGISTER_PRIVATE_EXPEDITED_SYNC_CORE
    | PRIVATE_EXPEDITED_RSEQ
    | REGISTER_PRIVATE_EXPEDITED_RSEQ
    | GET_REGISTRATIONS;

pub fn sys_membarrier(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (cmd, flags, cpu_id) = (a[0] as u32, a[1] as u32, a[2] as i32);
    let flags_ok = if cmd == PRIVATE_EXPEDITED_RSEQ { flags == 0 || flags == FLAG_CPU } else { flags == 0 };
    if !flags_ok {
        return Err(Errno::EINVAL);
    }
    match cmd {
        QUERY => Ok(u64::from(SUPPORTED)),
        GLOBAL | GLOBAL_EXPEDITED => {
            hal::tlb::barrier_ipi(None);
            Ok(0)
        }
        REGISTER_GLOBAL_EXPEDITED
        | REGISTER_PRIVATE_EXPEDITED
        | REGISTER_PRIVATE_EXPEDITED_SYNC_CORE
        | REGISTER_PRIVATE_EXPEDITED_RSEQ => {
            ctx.vm()?.lock().membarrier_registered |= cmd;
            Ok(0)
        }
        PRIVATE_EXPEDITED | PRIVATE_EXPEDITED_SYNC_CORE | PRIVATE_EXPEDITED_RSEQ => {
            // Each command's registration is the bit above it.
            let vm = ctx.vm()?;
            let (registered, root) = {
                let space = vm.lock();
                (space.membarrier_registered & (cmd << 1) != 0, space.page_table().root())
            };
            if !registered {
                return Err(Errno::EPERM);
            }
            // A CPU that is not there has nothing to restart (Linux returns
            // 0); a negative one means every CPU.
            let cpu = if flags & FLAG_CPU != 0 && cpu_id >= 0 {
                if cpu_id >= 64 || crate::sched::online_cpus() & (1 << cpu_id) == 0 {
                    return Ok(0);
                }
                Some(cpu_id as usize)
            } else {
                None
            };
            if cmd == PRIVATE_EXPEDITED_RSEQ {
                for p in crate::proc::all_processes() {
                    if p.vm().is_ok_and(|v| alloc::sync::Arc::ptr_eq(&v, &vm)) {
                        crate::proc::rseq::restart_running(&p, cpu);
                    }
                }
            }
            hal::tlb::barrier_ipi(Some(root));
            Ok(0)
        }
        GET_REGISTRATIONS => Ok(u64::from(ctx.vm()?.lock().membarrier_registered)),
        _ => Err(Errno::EINVAL),
    }
}
