//! Interrupts, fault recovery, locks and symbolization.

use super::{KTest, TestResult};
use crate::ensure;

pub const TESTS: &[KTest] = &[
    KTest { name: "trap::fault_recovery_read_unmapped", run: fault_recovery_read_unmapped },
    KTest { name: "trap::fault_recovery_write_unmapped", run: fault_recovery_write_unmapped },
    KTest { name: "trap::fault_recovery_noncanonical", run: fault_recovery_noncanonical },
    KTest { name: "trap::fault_recovery_partial_copy", run: fault_recovery_partial_copy },
    KTest { name: "trap::timer_ticks_advance", run: timer_ticks_advance },
    KTest { name: "trap::monotonic_clock", run: monotonic_clock },
    KTest { name: "trap::spinlock_masks_interrupts", run: spinlock_masks_interrupts },
    KTest { name: "trap::backtrace_symbolizes", run: backtrace_symbolizes },
];

fn fault_recovery_read_unmapped() -> TestResult {
    let before = hal::trap::recovered_faults();
    let r = hal::extable::probe_read_u64(hal::extable::PROBE_WINDOW + 0x1000);
    ensure!(r.is_err(), "read of an unmapped address succeeded: {r:?}");
    ensure!(hal::trap::recovered_faults() == before + 1, "no page fault was taken");
    // A mapped address still reads fine afterwards.
    let probe_target = 0x5a5a_5a5a_u64;
    let addr = &probe_target as *const u64 as u64;
    ensure!(hal::extable::probe_read_u64(addr) == Ok(probe_target));
    Ok(())
}

fn fault_recovery_write_unmapped() -> TestResult {
    let before = hal::trap::recovered_faults();
    ensure!(hal::extable::probe_write_unmapped(0x2000, 7).is_err());
    ensure!(hal::trap::recovered_faults() == before + 1);
    Ok(())
}

fn fault_recovery_noncanonical() -> TestResult {
    // A non-canonical address raises #GP, not #PF: also recovered.
    let r = hal::extable::probe_copy(&mut [0u8; 8], 0xffff_0000_0000_0000);
    ensure!(r == Err(0), "non-canonical read: {r:?}");
    Ok(())
}

fn fault_recovery_partial_copy() -> TestResult {
    // A buffer whose second half is unmapped: exactly the first half copies.
    let stack = hal::context::KernelStack::new().map_err(|_| "no stack")?;
    let start = stack.bottom() - 100; // 100 bytes of guard, then mapped stack
    let mut buf = [0u8; 300];
    let r = hal::extable::probe_copy(&mut buf, start);
    ensure!(r == Err(0), "copy starting in the guard page: {r:?}");
    let r = hal::extable::probe_copy(&mut buf, stack.top() - 200);
    ensure!(r == Err(200), "copy running off the top of the stack: {r:?}");
    Ok(())
}

fn timer_ticks_advance() -> TestResult {
    let t0 = crate::clock::ticks();
    let start = crate::clock::now_ns();
    while crate::clock::ticks() < t0 + 5 {
        ensure!(crate::clock::now_ns() - start < 2_000_000_000, "timer stuck at {} ticks", crate::clock::ticks());
        hal::cpu::pause();
    }
    Ok(())
}

fn monotonic_clock() -> TestResult {
    let mut last = crate::clock::now_ns();
    for _ in 0..10_000 {
        let now = crate::clock::now_ns();
        ensure!(now >= last, "clock went back from {last} to {now}");
        last = now;
    }
    // Sleeping 20 ms moves the clock by at least that much.
    let t0 = crate::clock::now_ns();
    crate::sched::sleep_ns(20_000_000);
    let slept = crate::clock::now_ns() - t0;
    ensure!(slept >= 20_000_000, "slept only {slept} ns");
    Ok(())
}

fn spinlock_masks_interrupts() -> TestResult {
    static LOCK: hal::sync::SpinLock<u32> = hal::sync::SpinLock::new(0);
    ensure!(hal::cpu::interrupts_enabled(), "test started with interrupts off");
    {
        let mut g = LOCK.lock();
        *g += 1;
        ensure!(!hal::cpu::interrupts_enabled(), "interrupts on while a spin lock is held");
        ensure!(LOCK.try_lock().is_none(), "spin lock taken twice");
    }
    ensure!(hal::cpu::interrupts_enabled(), "interrupts not restored");
    Ok(())
}

fn backtrace_symbolizes() -> TestResult {
    let addr = backtrace_symbolizes as *const () as u64;
    let (name, offset) = hal::backtrace::symbolize(addr + 1).ok_or("no symbol table in the image")?;
    ensure!(name.contains("backtrace_symbolizes"), "symbolized as {name}");
    ensure!(offset == 1);
    Ok(())
}
