//! execve and execveat: reading the caller's path and arguments, finding
//! the file as Linux's do_open_execat does, and the point of no return
//! where the loaded image (`proc::exec`) replaces the old one.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use hal::sync::SpinLock;
use hal::user::UserContext;
use linux_abi::consts as c;
use linux_abi::errno::Errno;
use linux_abi::signal as sig;

use super::{SysResult, SyscallContext};
use crate::fs::dentry::PATH_MAX;
use crate::mm::uaccess;
use crate::proc::exec::{self, Binprm};
use crate::proc::{self, task, ExitKind};
use crate::sync::Mutex;

pub fn sys_execve(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    exec_at(ctx, c::AT_FDCWD, a[0], a[1], a[2], 0)
}

pub fn sys_execveat(ctx: &mut SyscallContext, a: &[u64; 6]) -> SysResult {
    exec_at(ctx, a[0] as i32, a[1], a[2], a[3], a[4] as u32)
}

/// Reads a NULL-terminated array of string pointers (argv, envp); a NULL
/// array is empty. Strings longer than Linux's MAX_ARG_STRLEN are E2BIG,
/// and so is an array whose strings alone exceed `limit` (checked again,
/// pointers included, once everything is known).
fn read_args(ctx: &SyscallContext, addr: u64, limit: u64) -> Result<Vec<Vec<u8>>, Errno> {
    let vm = ctx.vm()?;
    let mut out = Vec::new();
    if addr == 0 {
        return Ok(out);
    }
    let mut total = 0u64;
    for i in 0u64.. {
        let ptr = uaccess::read_u64(&vm, addr.wrapping_add(i * 8))?;
        if ptr == 0 {
            break;
        }
        let s = match uaccess::read_cstring_bytes(&vm, ptr, exec::MAX_ARG_STRLEN - 1) {
            Err(Errno::ENAMETOOLONG) => return Err(Errno::E2BIG),
            other => other?,
        };
        total += s.len() as u64 + 1;
        if total > limit {
            return Err(Errno::E2BIG);
        }
        out.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        out.push(s);
    }
    Ok(out)
}

fn lossy(list: &[Vec<u8>]) -> Result<Vec<String>, Errno> {
    let mut out = Vec::new();
    out.try_reserve_exact(list.len()).map_err(|_| Errno::ENOMEM)?;
    out.extend(list.iter().map(|s| String::from_utf8_lossy(s).into_owned()));
    Ok(out)
}

fn exec_at(ctx: &mut SyscallContext, dirfd: i32, path_ptr: u64, argv: u64, envp: u64, flags: u32) -> SysResult {
    let path = uaccess::read_cstring(&ctx.vm()?, path_ptr, PATH_MAX - 1)?;
    if path.is_empty() && flags & c::AT_EMPTY_PATH == 0 {
        return Err(Errno::ENOENT);
    }
    if flags & !(c::AT_SYMLINK_NOFOLLOW | c::AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let cred = ctx.cred();
    let dentry = if path.is_empty() && dirfd != c::AT_FDCWD {
        // A descriptor with no name in the tree (a pipe, a socket) is no
        // regular file either.
        super::fs_io::file(ctx, dirfd)?.dentry.clone().ok_or(Errno::EACCES)?
    } else {
        super::fs_path::lookup_at(ctx, &cred, dirfd, &path, flags & c::AT_SYMLINK_NOFOLLOW == 0, true)?
    };
    exec::check_executable(&cred, &dentry)?;

    // The name the new program is told it was run by (AT_EXECFN), as
    // Linux builds it for a path relative to a descriptor.
    let fd_relative = dirfd != c::AT_FDCWD && !path.starts_with('/');
    let filename = match (fd_relative, path.is_empty()) {
        (false, _) => path,
        (true, true) => format!("/dev/fd/{dirfd}"),
        (true, false) => format!("/dev/fd/{dirfd}/{path}"),
    };
    let path_inaccessible = fd_relative && ctx.process().files().lock().is_cloexec(dirfd).unwrap_or(false);

    let p = ctx.process().clone();
    let arg_limit = exec::arg_space(p.rlimits.lock()[c::RLIMIT_STACK as usize].0);
    let mut argv = read_args(ctx, argv, arg_limit)?;
    let envp = read_args(ctx, envp, arg_limit)?;
    // Linux 6.1 gives a program run with no arguments an empty argv[0], so
    // code that starts at argv[1] never walks into the environment.
    if argv.is_empty() {
        argv.push(Vec::new());
    }
    let cwd = p.cwd.lock().clone();
    let stack_limit = p.rlimits.lock()[c::RLIMIT_STACK as usize].0;
    let bprm =
        Binprm { interp: filename.clone(), filename, argv, envp, path_inaccessible, arg_limit, stack_limit, cwd, cred };
    let (image, bprm) = exec::load(dentry, bprm)?;
    commit(ctx, image, bprm)
}

/// Ends every other thread of the process and waits until they are gone,
/// as Linux's de_thread does. They exit on the old image, so their
/// clear-child-tid words and robust lists are written there and not into
/// the new program. Of two threads calling execve at once, the second
/// backs off with EAGAIN and is ended by the first.
fn end_other_threads(ctx: &SyscallContext) -> Result<(), Errno> {
    let p = ctx.process();
    if p.tasks.lock().len() == 1 {
        return Ok(());
    }
    if p.exec_in_progress.swap(true, Ordering::AcqRel) {
        return Err(Errno::EAGAIN);
    }
    for other in p.tasks.lock().iter().filter(|t| !Arc::ptr_eq(t, ctx.task)) {
        *other.exit_request.lock() = Some(ExitKind::Exited(0));
        other.interrupt();
    }
    p.thread_exited.wait_until(|| p.tasks.lock().len() == 1);
    ctx.task.become_leader();
    p.exec_in_progress.store(false, Ordering::Release);
    Ok(())
}

/// The point of no return of execve: the old image goes.
fn commit(ctx: &mut SyscallContext, image: exec::Image, bprm: Binprm) -> SysResult {
    let p = ctx.process().clone();
    let cmdline = lossy(&bprm.argv)?;
    let environ = lossy(&bprm.envp)?;
    let new_vm = Arc::try_new(Mutex::new(image.vm)).map_err(|_| Errno::ENOMEM)?;
    // The thread id before a non-leader takes over the leader's
    // (PTRACE_EVENT_EXEC's message).
    let old_tid = ctx.task.tid();
    end_other_threads(ctx)?;
    ctx.task.install_cred(image.cred);
    p.dumpable.store(if image.dumpable { 1 } else { proc::suid_dumpable() }, Ordering::Relaxed);
    // This thread's robust list lives in the old image: walk it while that
    // is still the one mapped (the other threads walked theirs on exit).
    if let Ok(old) = ctx.vm() {
        crate::proc::robust::release(ctx.task, &old);
    }
    let root = new_vm.lock().page_table().clone();
    // The running thread is this task's: switch it for good.
    crate::sched::current().set_vm_root(Some(root.clone()));
    root.activate();
    let old_vm = p.vm.lock().replace(new_vm);
    drop(old_vm);
    // The old program may be written again; the new one may not.
    let old_exe = p.exe_file.lock().replace(image.deny);
    drop(old_exe);
    p.files().lock().close_on_exec();
    {
        // Handlers point into the old image: back to default, but
        // ignored signals stay ignored.
        let fresh = {
            let table = p.signals.actions.lock().clone();
            let old = *table.lock();
            let mut new = crate::proc::signal::default_actions();
            for (i, a) in old.iter().enumerate() {
                if a.handler == crate::proc::signal::SIG_IGN {
                    new[i].handler = crate::proc::signal::SIG_IGN;
                }
            }
            new
        };
        *p.signals.actions.lock() = Arc::try_new(SpinLock::new(fresh)).map_err(|_| Errno::ENOMEM)?;
    }
    *ctx.task.altstack.lock() = task::AltStack { sp: 0, size: 0, flags: sig::SS_DISABLE };
    crate::proc::user_dispatch::clear(ctx.task);
    crate::proc::rseq::exec(ctx.task);
    // The command name is the basename of the name execve was given
    // (a script's own name, not its interpreter's).
    p.set_comm_from_path(&bprm.filename);
    p.forked.store(false, core::sync::atomic::Ordering::Relaxed);
    *p.exe.lock() = image.exe;
    *p.cmdline.lock() = cmdline;
    *p.environ.lock() = environ;
    *p.auxv.lock() = image.auxv;
    crate::proc::timer::clear(&p);
    *ctx.uctx = UserContext::new();
    ctx.uctx.regs.rip = image.entry;
    ctx.uctx.regs.rsp = image.stack_pointer;
    proc::wait::complete_vfork(&p);
    proc::ptrace::exec_event(ctx.task, ctx.uctx, old_tid);
    Ok(0)
}
