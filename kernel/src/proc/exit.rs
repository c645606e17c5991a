//! Thread and process exit: clear-child-tid, zombies, reparenting, and
//! telling the parent.

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use super::task::Task;
use super::{ExitKind, Process};
use crate::mm::uaccess;

/// The pid of init, the reaper of orphans.
pub const INIT_PID: i32 = 1;

/// Work a subsystem above this one does when a process ends (System V
/// semaphores apply its SEM_UNDO adjustments), registered at boot.
static EXIT_HOOKS: [hal::sync::Once<fn(super::Pid)>; 2] = [hal::sync::Once::new(), hal::sync::Once::new()];

/// Registers `hook` to run as each process ends, before its files close.
pub fn on_process_exit(hook: fn(super::Pid)) {
    if let Some(slot) = EXIT_HOOKS.iter().find(|s| s.get().is_none()) {
        slot.set(hook);
    }
}

/// Ends the calling thread (the caller then returns from its run loop).
/// The last thread out ends the process with `how`.
pub fn exit_task(t: &Arc<Task>, how: ExitKind) {
    let p = &t.process;
    if !p.tracer.tracees.lock().is_empty() {
        super::ptrace::tracer_exited(t);
    }
    let status = p.state.lock().exiting.unwrap_or(how);
    super::ptrace::tracee_exited(t, status);
    if let Ok(vm) = p.vm() {
        // Robust mutexes it still holds become owner-dead, then the
        // clear-child-tid word is zeroed and woken (Linux's order).
        super::robust::release(t, &vm);
        let addr = t.clear_child_tid.swap(0, Ordering::AcqRel);
        if addr != 0 && uaccess::write_u32(&vm, addr, 0).is_ok() {
            super::futex::wake(&vm, addr, 1, u32::MAX);
        }
    }
    if t.is_leader() {
        *p.exited_leader_cred.lock() = Some(t.cred());
    }
    super::rseq::exit(t);
    let last = {
        let mut tasks = p.tasks.lock();
        tasks.retain(|x| !Arc::ptr_eq(x, t));
        tasks.is_empty()
    };
    p.thread_exited.wake_all();
    p.dead_tasks_cpu_ns.fetch_add(t.cpu_ns(), Ordering::Relaxed);
    if !t.is_leader() {
        super::unregister_task(t.tid());
    }
    if last {
        let how = p.state.lock().exiting.unwrap_or(how);
        exit_process(p, how);
    } else if let Some(kt) = crate::sched::current_opt() {
        // Let go of the page tables now, not when this kernel thread is
        // reaped: the last thread out then frees them before the process
        // is a zombie (the OOM killer waits for that).
        kt.set_vm_root(None);
    }
}

fn exit_process(p: &Arc<Process>, how: ExitKind) {
    // Release what the process holds right away; the zombie keeps only
    // its status for the parent.
    // Values are taken out of the spin locks before they drop: dropping
    // files or an address space may sleep.
    for hook in EXIT_HOOKS.iter().filter_map(|h| h.get()) {
        hook(p.pid);
    }
    // The accounting record, while the address space is still there.
    super::acct::process_exited(p, how);
    p.files.release();
    super::ctty::exiting(p);
    let vm = p.vm.lock().take();
    drop(vm);
    let exe_file = p.exe_file.lock().take();
    drop(exe_file);
    // The last thread still runs on these page tables: switch away and
    // release them now rather than when the kernel thread is reaped.
    if let Some(kt) = crate::sched::current_opt() {
        kt.set_vm_root(None);
    }
    super::timer::clear(p);
    super::unregister_task(p.pid);

    if p.pid == INIT_PID {
        init_exited(how);
    }
    if p.pid_ns.init_pid() == Some(p.pid) && !p.pid_ns.is_initial() {
        end_pid_namespace(p);
    }
    reparent_children(p);
    // Whether the parent reaps this child and whether it hears SIGCHLD are
    // decided once, from one look at its SIGCHLD action, and an
    // auto-reaped child leaves the parent's list before it is a zombie: a
    // parent waiting on another CPU must never find it there to reap, nor
    // get a SIGCHLD it has since stopped ignoring (Linux decides both in
    // do_notify_parent under the parent's signal lock).
    let parent = p.parent.lock().upgrade();
    let (auto_reap, signal_parent) = match &parent {
        Some(parent) if p.exit_signal == linux_abi::signal::SIGCHLD => {
            let a = parent.signals.action(linux_abi::signal::SIGCHLD);
            let ignored = a.handler == super::signal::SIG_IGN;
            (ignored || a.flags & linux_abi::signal::SA_NOCLDWAIT != 0, !ignored)
        }
        Some(_) => (false, true),
        None => (true, false),
    };
    if auto_reap {
        if let Some(parent) = &parent {
            let removed: alloc::vec::Vec<_> = {
                let mut children = parent.children.lock();
                let (gone, kept) = core::mem::take(&mut *children).into_iter().partition(|c| Arc::ptr_eq(c, p));
                *children = kept;
                gone
            };
            drop(removed);
        }
    }
    drop(parent);
    {
        let mut st = p.state.lock();
        st.exit = Some(how);
        st.zombie = true;
    }
    super::pidfd::notify_exit(p);
    if signal_parent {
        super::signal::notify_parent_exit(p, how);
    }
    if auto_reap {
        super::unregister_process(p.pid);
    }
    p.notify_parent_waiters();
    super::wait::complete_vfork(p);
}

/// The init of a pid namespace exits: every other process in it is
/// killed, nobody may enter any more, and init reaps its own children
/// before its parent hears of it (Linux's zap_pid_ns_processes), so when
/// the parent's wait returns the namespace is empty.
fn end_pid_namespace(p: &Arc<Process>) {
    let ns = p.pid_ns.clone();
    ns.mark_dead();
    let members = || {
        super::all_processes()
            .into_iter()
            .filter(|q| q.pid != p.pid && ns.contains(&q.pid_ns))
            .collect::<alloc::vec::Vec<_>>()
    };
    for q in members() {
        let info = linux_abi::layout::Siginfo::kill(linux_abi::signal::SIGKILL, linux_abi::signal::SI_KERNEL, 0, 0);
        super::signal::send_to_process(&q, info);
    }
    // Bounded: a process that cannot die within 5 s is left to the reaper.
    for _ in 0..500 {
        if members().iter().all(|q| q.state.lock().zombie) {
            break;
        }
        crate::sched::sleep_ns(10_000_000);
    }
    let zombies: alloc::vec::Vec<_> = {
        let mut children = p.children.lock();
        let (gone, kept) =
            core::mem::take(&mut *children).into_iter().partition(|c: &Arc<Process>| c.state.lock().zombie);
        *children = kept;
        gone
    };
    for z in &zombies {
        super::unregister_process(z.pid);
    }
    drop(zombies);
}

/// Who adopts the orphans of `p`: its pid namespace's init while that
/// lives, else the initial init.
fn reaper_for(p: &Arc<Process>) -> Option<Arc<Process>> {
    if let Some(init) = p.pid_ns.init_pid() {
        if init != p.pid && !p.pid_ns.is_dead() {
            if let Some(r) = super::find_process(init) {
                return Some(r);
            }
        }
    }
    super::find_process(INIT_PID)
}

fn reparent_children(p: &Arc<Process>) {
    let children = core::mem::take(&mut *p.children.lock());
    if children.is_empty() {
        return;
    }
    let Some(init) = reaper_for(p) else {
        return;
    };
    let mut any_zombie = false;
    for c in &children {
        c.set_parent(&init);
        any_zombie |= c.state.lock().zombie;
    }
    init.children.lock().extend(children);
    if any_zombie {
        init.child_event_seq.fetch_add(1, Ordering::Release);
        init.child_events.wake_all();
    }
}

/// The first process is gone: report how it ended and power off, so that
/// `make run CMD=...` exits with the program's status.
fn init_exited(how: ExitKind) -> ! {
    let code = match how {
        ExitKind::Exited(c) => {
            log::info!("init exited with status {c}");
            c
        }
        ExitKind::Signaled { sig, .. } => {
            log::info!("init killed by signal {sig} ({})", linux_abi::signal::name(sig));
            128 + sig as u8
        }
    };
    // Nothing should hold user memory now: the host tool checks these
    // figures for leaks. Orphans init never waited for, and threads being
    // killed on other CPUs, may still be on their way out: give them a
    // moment (bounded) before counting.
    let start = hal::time::monotonic_ns();
    // tmpfs file data and the vDSO are in user frames too and stay: only
    // frames beyond them belong to processes still on their way out.
    let process_frames = || {
        hal::frame::live_user_frames()
            .saturating_sub(crate::fs::pagestore::file_frames() as usize)
            .saturating_sub(crate::vdso::frames())
            .saturating_sub(crate::component::frames())
    };
    // The components' domains (docs/components.md) stay too.
    let process_tables = || hal::paging::live_user_table_frames().saturating_sub(crate::component::table_frames());
    while (process_frames() != 0 || process_tables() != 0) && hal::time::monotonic_ns() - start < 2_000_000_000 {
        if hal::cpu::interrupts_enabled() {
            crate::sched::sleep_ns(5_000_000);
        } else {
            hal::cpu::pause();
        }
    }
    let survivors = super::all_processes().iter().filter(|p| p.pid != 1).count();
    if survivors > 0 {
        hal::serial::write_bytes(alloc::format!("\nkiln: {survivors} processes outlived init\n").as_bytes());
    }
    hal::serial::write_bytes(
        alloc::format!(
            "\nkiln: file frames {}\nkiln: user frames in use {}, user page-table frames in use {}\n",
            crate::fs::pagestore::file_frames(),
            process_frames(),
            process_tables()
        )
        .as_bytes(),
    );
    // Frames freed while held (hal's owner tags and reference counts):
    // each was logged with a backtrace when found.
    let frame_errors = hal::mm::frame_errors();
    if frame_errors > 0 {
        hal::serial::write_bytes(alloc::format!("kiln: frame ownership errors {frame_errors}\n").as_bytes());
    }
    // The host tool reads this line for the exit status.
    hal::serial::write_bytes(alloc::format!("kiln: init exited with status {code}\n").as_bytes());
    hal::qemu::exit_success()
}
