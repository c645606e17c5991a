//! The interfaces Kiln's components export. An interface is a trait of
//! word-sized operations; `rt::interface!` derives from it the client stub
//! a holder of the capability calls and the dispatch its server runs.
//! Operation numbers are part of the interface: the kernel's tests and
//! `kbench`'s `component_invoke` row use them too.

#![no_std]
#![forbid(unsafe_code)]

rt::interface! {
    /// Arithmetic and a table, served by the `calc` component.
    pub trait Calc, client CalcClient, dispatch calc_dispatch {
        0 => fn add(a, b);
        1 => fn mul(a, b);
        /// EINVAL when `b` is 0.
        2 => fn div(a, b);
        /// Entry `i` of an 8-entry table: a bad index panics the server
        /// (a Rust bounds check), the fault a caller must survive.
        3 => fn lookup(i);
        /// The sum 1 + 2 + ... + n, computed in a heap vector.
        4 => fn heap_sum(n);
        /// How many invocations this instance has served since it last
        /// (re)started: state that a micro-reboot resets.
        5 => fn served();
        /// How many invocations calc has served over all its lives: kept
        /// in its store, it survives micro-reboots.
        6 => fn lifetime();
        /// How many times calc's init has run (store).
        7 => fn boots();
        /// Never returns: the kernel's watchdog ends it (ETIMEDOUT).
        8 => fn spin();
        /// Recursion `depth` frames of 1 KiB deep: past its 16 KiB stack
        /// it touches the guard page below, a page fault.
        9 => fn overflow(depth);
        /// Makes the next `n` runs of calc's init panic (kept in the
        /// store, so a test can make init fault across reboots).
        10 => fn arm_init_faults(n);
        /// Stores `v` in a word of calc's data section (initially
        /// 0x6b696c6e, "kiln") and returns the old value: a reboot
        /// restores it.
        11 => fn swap_data(v);
    }
}

rt::interface! {
    /// Served by the `client` component, which reaches `Calc` through
    /// its capability 0: every call is two cross-domain invocations deep.
    pub trait Relay, client RelayClient, dispatch relay_dispatch {
        /// `Calc::add(a, b)` through capability 0.
        0 => fn add_via(a, b);
        /// `Calc::lookup(i)` through capability 0.
        1 => fn lookup_via(i);
        /// A raw invocation of operation `op` through capability `cap`
        /// with argument words `a` and `b`.
        2 => fn call(cap, op, a, b);
        /// `Calc::add(acc, 1)` through capability 0, `n` times: the sum
        /// (`n`), or the first error. kbench's merged-invocation row.
        3 => fn add_loop(n);
        /// The same loop calling a plain local function instead: the
        /// baseline of a direct call (kbench's `component_local_call`).
        4 => fn local_loop(n);
    }
}
