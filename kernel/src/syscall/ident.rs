//! Identity and resources: uname, umask, rlimits, getrandom, scheduling
//! affinity, usage and system info. (User ids are in `cred`.)

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use linux_abi::capability::{CAP_SYS_ADMIN, CAP_SYS_BOOT, CAP_SYS_RESOURCE};
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::layout::{Rlimit, Sysinfo, Utsname};

use super::{SysResult, SyscallContext};
use crate::mm::uaccess;
use crate::proc::{self, Process};

pub fn sys_umask(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    Ok(u64::from(ctx.process().umask.swap(a[0] as u32 & 0o777, Ordering::Relaxed)))
}

/// Ctrl-Alt-Del's meaning (LINUX_REBOOT_CMD_CAD_ON/OFF). Kiln has no
/// keyboard that could send it; the setting is kept all the same.
static CAD_REBOOTS: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(true);

/// reboot(2). Power-off and halt end the machine; restart asks for a
/// reset, which under `make run` (QEMU `-no-reboot`) also ends QEMU.
pub fn sys_reboot(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (magic1, magic2, cmd, arg) = (a[0] as u32, a[1] as u32, a[2] as u32, a[3]);
    if !ctx.cred().capable(CAP_SYS_BOOT) {
        return Err(Errno::EPERM);
    }
    if magic1 != c::LINUX_REBOOT_MAGIC1 || !c::LINUX_REBOOT_MAGIC2.contains(&magic2) {
        return Err(Errno::EINVAL);
    }
    match cmd {
        c::LINUX_REBOOT_CMD_CAD_ON | c::LINUX_REBOOT_CMD_CAD_OFF => {
            CAD_REBOOTS.store(cmd == c::LINUX_REBOOT_CMD_CAD_ON, core::sync::atomic::Ordering::Relaxed);
            Ok(0)
        }
        c::LINUX_REBOOT_CMD_POWER_OFF | c::LINUX_REBOOT_CMD_HALT => {
            log::info!(
                "reboot(2): {} by pid {}",
                if cmd == c::LINUX_REBOOT_CMD_HALT { "halt" } else { "power off" },
                ctx.process().pid
            );
            hal::serial::write_bytes(b"\nkiln: power off (reboot(2))\n");
            hal::qemu::exit_success()
        }
        c::LINUX_REBOOT_CMD_RESTART | c::LINUX_REBOOT_CMD_RESTART2 => {
            if cmd == c::LINUX_REBOOT_CMD_RESTART2 {
                // The command string must be readable, as on Linux.
                crate::mm::uaccess::read_cstring(&ctx.vm()?, arg, 256)?;
            }
            log::info!("reboot(2): restart by pid {}", ctx.process().pid);
            hal::serial::write_bytes(b"\nkiln: restart (reboot(2))\n");
            hal::qemu::reset()
        }
        // Linux without hibernation support.
        c::LINUX_REBOOT_CMD_SW_SUSPEND => Err(Errno::ENOSYS),
        // kexec_load is not implemented, so no image can be loaded:
        // Linux answers EINVAL then.
        c::LINUX_REBOOT_CMD_KEXEC => Err(Errno::EINVAL),
        _ => Err(Errno::EINVAL),
    }
}

pub fn sys_uname(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (host, domain) = (crate::uts::hostname(), crate::uts::domainname());
    let uts = Utsname::new(
        crate::uts::SYSNAME,
        &host,
        crate::uts::RELEASE,
        crate::uts::VERSION,
        crate::uts::MACHINE,
        &domain,
    );
    uaccess::write_bytes(&ctx.vm()?, a[0], &uts.to_bytes())?;
    Ok(0)
}

/// sethostname/setdomainname(name, len): EPERM without CAP_SYS_ADMIN
/// (checked first, as Linux does), EINVAL past 64 bytes, EFAULT for a
/// bad buffer.
fn set_uts_name(ctx: &SyscallContext, a: &[u64; 6], set: fn(&[u8]) -> Result<(), Errno>) -> SysResult {
    if !ctx.cred().capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    let len = a[1] as i64;
    if !(0..=crate::uts::NAME_MAX as i64).contains(&len) {
        return Err(Errno::EINVAL);
    }
    let mut buf = [0u8; crate::uts::NAME_MAX];
    ctx.copy_from_user(a[0], &mut buf[..len as usize])?;
    set(&buf[..len as usize])?;
    Ok(0)
}

pub fn sys_sethostname(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    set_uts_name(ctx, a, crate::uts::set_hostname)
}

pub fn sys_setdomainname(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    set_uts_name(ctx, a, crate::uts::set_domainname)
}

fn target_process(ctx: &SyscallContext, pid: i32) -> Result<Arc<Process>, Errno> {
    match pid {
        0 => Ok(ctx.process().clone()),
        p if p < 0 => Err(Errno::EINVAL),
        p => proc::find_process_seen_by(ctx.process(), p)
            .or_else(|| proc::find_task_seen_by(ctx.process(), p).map(|t| t.process.clone()))
            .ok_or(Errno::ESRCH),
    }
}

/// The thread `tid` names for the affinity calls (0: the caller).
fn target_thread(ctx: &SyscallContext, tid: i32) -> Result<Arc<crate::sched::Thread>, Errno> {
    let task = match tid {
        0 => ctx.task.clone(),
        t if t < 0 => return Err(Errno::ESRCH),
        t => proc::find_task_seen_by(ctx.process(), t).ok_or(Errno::ESRCH)?,
    };
    task.kthread.get().cloned().ok_or(Errno::ESRCH)
}

/// Bytes of a CPU mask: one `unsigned long` covers Kiln's CPUs.
const CPU_MASK_BYTES: u64 = 8;

pub fn sys_sched_getaffinity(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (tid, size, mask_ptr) = (a[0] as i32, a[1], a[2]);
    // Linux: the buffer must hold nr_cpu_ids bits and be whole longs.
    let cpus = crate::sched::online_cpus().count_ones().max(1) as u64;
    if size * 8 < cpus || size % 8 != 0 {
        return Err(Errno::EINVAL);
    }
    let thread = target_thread(ctx, tid)?;
    let mask = thread.affinity() & crate::sched::online_cpus();
    uaccess::write_u64(&ctx.vm()?, mask_ptr, mask)?;
    Ok(CPU_MASK_BYTES)
}

pub fn sys_sched_setaffinity(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (tid, size, mask_ptr) = (a[0] as i32, a[1], a[2]);
    let thread = target_thread(ctx, tid)?;
    let target_task = if tid == 0 { None } else { proc::find_task_seen_by(ctx.process(), tid) };
    if let Some(target_task) = target_task.filter(|t| !Arc::ptr_eq(t, ctx.task)) {
        let me = ctx.cred();
        let target = target_task.cred();
        if !me.may_renice(&target) {
            return Err(Errno::EPERM);
        }
    }
    // Linux reads at most a mask's worth and treats missing bytes as 0.
    let mut bytes = [0u8; 8];
    let len = size.min(CPU_MASK_BYTES) as usize;
    uaccess::read_bytes(&ctx.vm()?, mask_ptr, &mut bytes[..len])?;
    let mask = u64::from_le_bytes(bytes);
    crate::sched::set_affinity(&thread, mask).map_err(|_| Errno::EINVAL)?;
    Ok(0)
}

/// getcpu(2): the CPU the caller runs on (it may move right after), and
/// NUMA node 0, the only one.
pub fn sys_getcpu(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let cpu = hal::percpu::cpu_id() as u32;
    if a[0] != 0 {
        ctx.copy_to_user(a[0], &cpu.to_le_bytes())?;
    }
    if a[1] != 0 {
        ctx.copy_to_user(a[1], &0u32.to_le_bytes())?;
    }
    Ok(0)
}

fn rlimit_get(p: &Process, resource: u32) -> Result<Rlimit, Errno> {
    let (cur, max) = *p.rlimits.lock().get(resource as usize).ok_or(Errno::EINVAL)?;
    Ok(Rlimit { rlim_cur: cur, rlim_max: max })
}

/// Sets a limit of `p` for a caller with credentials `cred`: raising a
/// hard limit needs CAP_SYS_RESOURCE.
fn rlimit_set(cred: &crate::cred::Cred, p: &Process, resource: u32, new: Rlimit) -> Result<(), Errno> {
    if new.rlim_cur > new.rlim_max {
        return Err(Errno::EINVAL);
    }
    if resource == c::RLIMIT_NOFILE && new.rlim_max > crate::fs::fdtable::nr_open() as u64 {
        return Err(Errno::EPERM); // above fs.nr_open
    }
    {
        let mut limits = p.rlimits.lock();
        let slot = limits.get_mut(resource as usize).ok_or(Errno::EINVAL)?;
        if new.rlim_max > slot.1 && !cred.capable(CAP_SYS_RESOURCE) {
            return Err(Errno::EPERM);
        }
        *slot = (new.rlim_cur, new.rlim_max);
    }
    if resource == c::RLIMIT_STACK {
        // Stack areas grow as far as the limit says.
        if let Ok(vm) = p.vm() {
            vm.lock().set_stack_limit(new.rlim_cur);
        }
    }
    Ok(())
}

pub fn sys_getrlimit(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let r = rlimit_get(ctx.process(), a[0] as u32)?;
    uaccess::write_bytes(&ctx.vm()?, a[1], &r.to_bytes())?;
    Ok(0)
}

pub fn sys_setrlimit(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let mut b = [0u8; Rlimit::SIZE];
    uaccess::read_bytes(&ctx.vm()?, a[1], &mut b)?;
    rlimit_set(&ctx.cred(), ctx.process(), a[0] as u32, Rlimit::from_bytes(&b))?;
    Ok(0)
}

pub fn sys_prlimit64(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (pid, resource, new_ptr, old_ptr) = (a[0] as i32, a[1] as u32, a[2], a[3]);
    let p = target_process(ctx, pid)?;
    let cred = ctx.cred();
    if !Arc::ptr_eq(&p, ctx.process()) {
        let target = p.cred().ok_or(Errno::ESRCH)?;
        if !cred.may_prlimit(&target) {
            return Err(Errno::EPERM);
        }
    }
    let old = rlimit_get(&p, resource)?;
    let vm = ctx.vm()?;
    if new_ptr != 0 {
        let mut b = [0u8; Rlimit::SIZE];
        uaccess::read_bytes(&vm, new_ptr, &mut b)?;
        rlimit_set(&cred, &p, resource, Rlimit::from_bytes(&b))?;
    }
    if old_ptr != 0 {
        uaccess::write_bytes(&vm, old_ptr, &old.to_bytes())?;
    }
    Ok(0)
}

pub fn sys_getrandom(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let (buf, len, flags) = (a[0], a[1] as usize, a[2] as u32);
    if flags & !(c::GRND_NONBLOCK | c::GRND_RANDOM | c::GRND_INSECURE) != 0
        || flags & (c::GRND_RANDOM | c::GRND_INSECURE) == (c::GRND_RANDOM | c::GRND_INSECURE)
    {
        return Err(Errno::EINVAL);
    }
    let len = len.min(33_554_431);
    let vm = ctx.vm()?;
    let mut chunk = [0u8; 256];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(chunk.len());
        crate::random::fill(&mut chunk[..n]);
        uaccess::write_bytes(&vm, buf + done as u64, &chunk[..n])?;
        done += n;
    }
    Ok(len as u64)
}

pub fn sys_getrusage(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let who = a[0] as i32;
    let p = ctx.process();
    let times = match who {
        RUSAGE_SELF => crate::proc::cputime::process_times(p),
        RUSAGE_CHILDREN => crate::proc::cputime::children_times(p),
        RUSAGE_THREAD => crate::proc::cputime::thread_times(ctx.task),
        _ => return Err(Errno::EINVAL),
    };
    let usage = super::time::rusage_from_times(times);
    uaccess::write_bytes(&ctx.vm()?, a[1], &usage.to_bytes())?;
    Ok(0)
}

pub fn sys_sysinfo(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    let total = hal::mm::total_frame_count() * hal::mm::PAGE_SIZE;
    let free = hal::mm::free_frame_count() * hal::mm::PAGE_SIZE;
    let info = Sysinfo {
        uptime: (crate::clock::now_ns() / 1_000_000_000) as i64,
        totalram: total,
        freeram: free,
        procs: proc::all_processes().len() as u16,
        mem_unit: 1,
        ..Sysinfo::default()
    };
    uaccess::write_bytes(&ctx.vm()?, a[0], &info.to_bytes())?;
    Ok(0)
}

const RUSAGE_SELF: i32 = 0;
const RUSAGE_CHILDREN: i32 = -1;
const RUSAGE_THREAD: i32 = 1;
