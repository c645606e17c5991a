//! The runtime of a Kiln component (docs/components.md): what a
//! `#![forbid(unsafe_code)]` component needs from below and cannot write
//! itself. It is the part of `hal/` a component image links (all of
//! Kiln's `unsafe` lives under `hal/`): the one crate of an image that
//! holds `unsafe`, each block with its reason.
//!
//! - The entry point, `_start`. The kernel enters a component only to
//!   serve an invocation: rdi holds the operation, rsi, rdx, rcx, r8 its
//!   four argument words, rsp the top of the stack this thread has in the
//!   component. `_start` calls the dispatcher the component registered
//!   with [`component!`] and hands its reply back with the return system
//!   call; nothing runs in a component but invocations.
//! - The heap: a bump allocator over the heap window the kernel maps at a
//!   fixed offset in the component's slot of the global layout.
//! - The invocation stub ([`invoke`]) and the [`interface!`] macro, which
//!   turns an interface (a list of operations) into a trait, a client stub
//!   implementing it with invocations and a server dispatch function.
//! - A panic ends the invocation as a fault (`ud2`): the kernel unwinds to
//!   the invocation boundary, the caller gets `EOWNERDEAD`, and the kernel
//!   micro-reboots the component: data and bss restored from the image,
//!   heap and stacks cleared, its init (see [`component!`]) run again.
//! - The [`store`]: the words that survive a micro-reboot.

#![no_std]

use core::alloc::{GlobalAlloc, Layout};
use core::arch::{asm, global_asm};
use core::sync::atomic::{AtomicU64, Ordering};

/// The Kiln-only system call numbers (the kernel's `component` module has
/// the same): far above Linux's table (about 460 calls) and below the x32
/// bit (`0x4000_0000`), so Linux answers them with ENOSYS.
pub const NR_INVOKE: u64 = 0x0100_0000;
pub const NR_RETURN: u64 = 0x0100_0001;
/// The operation the kernel enters a component with to run its init,
/// before its first invocation and after every micro-reboot (the kernel's
/// `component::OP_INIT`): no caller can name it (the kernel answers
/// ENOSYS).
pub const OP_INIT: u64 = 1 << 63;

pub mod store;

/// The global layout (kernel `component::layout`): component `i` owns the
/// 4 GiB slot at `LAYOUT_BASE + i * SLOT_SIZE`, its image at the start.
pub const SLOT_SIZE: u64 = 0x1_0000_0000;
/// Where the heap window starts in a slot, and its size.
pub const HEAP_OFFSET: u64 = 0x4000_0000;
pub const HEAP_SIZE: u64 = 256 * 1024;
/// The link pages (kernel `component::domain`): at `LINK_OFFSET` in a
/// slot, one read-only word per capability, the address of the callee's
/// direct entry when the callee shares this page table (a merged
/// domain), else 0; the page after it, writable, counts this
/// component's direct calls per capability.
pub const LINK_OFFSET: u64 = 0xC000_0000;
const LINK_WORDS: u64 = 512;

/// An invocation failed: a Linux errno value (EBADF: no such capability;
/// EINVAL: a bad argument; ENOSYS: no such operation; EOWNERDEAD: the
/// callee faulted; ETIMEDOUT: the callee overran the kernel's watchdog;
/// ENOTRECOVERABLE: the callee spent its restart budget and stays failed;
/// EAGAIN: no stack free in the callee, or it is being rebooted; ELOOP:
/// the invocation chain is too deep).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvokeError(pub u64);

impl InvokeError {
    pub const EAGAIN: InvokeError = InvokeError(11);
    pub const EBADF: InvokeError = InvokeError(9);
    pub const EINVAL: InvokeError = InvokeError(22);
    pub const ENOSYS: InvokeError = InvokeError(38);
    pub const ELOOP: InvokeError = InvokeError(40);
    pub const ETIMEDOUT: InvokeError = InvokeError(110);
    pub const EOWNERDEAD: InvokeError = InvokeError(130);
    pub const ENOTRECOVERABLE: InvokeError = InvokeError(131);
}

/// What a dispatcher hands back to `_start`: returned in rax:rdx.
#[repr(C)]
pub struct Reply {
    pub status: u64,
    pub value: u64,
}

impl Reply {
    pub fn from_result(r: Result<u64, InvokeError>) -> Reply {
        match r {
            Ok(value) => Reply { status: 0, value },
            Err(e) => Reply { status: e.0, value: 0 },
        }
    }
}

/// Invokes operation `op` of the interface behind capability `cap` with
/// up to four argument words; the thread migrates into the callee and
/// comes back with its reply.
pub fn invoke(cap: u64, op: u64, args: [u64; 4]) -> Result<u64, InvokeError> {
    if cap < LINK_WORDS {
        let link = slot_base() + LINK_OFFSET + cap * 8;
        // The kernel maps this component's link page (read-only) and its
        // count page (read-write) at these fixed offsets of its slot in
        // every page table the component is in.
        // SAFETY: `cap` < the link page's word count, so the read stays in
        // that mapped page, and the word is naturally aligned.
        let entry = unsafe { core::ptr::read_volatile(link as *const u64) };
        if entry != 0 {
            // SAFETY: as above: the count word is in the writable count
            // page, aligned, and only ever accessed atomically.
            let count = unsafe { AtomicU64::from_ptr((link + 4096) as *mut u64) };
            count.fetch_add(1, Ordering::Relaxed);
            // The kernel writes a nonzero link word only while the callee
            // is mapped in this same page table; a table without the
            // callee has a link page of zeros.
            // SAFETY: a nonzero word is the callee's `kiln_component_direct`
            // (its dispatcher with the C calling convention), mapped here.
            let direct: extern "C" fn(u64, u64, u64, u64, u64) -> Reply = unsafe { core::mem::transmute(entry) };
            let reply = direct(op, args[0], args[1], args[2], args[3]);
            return if reply.status == 0 { Ok(reply.value) } else { Err(InvokeError(reply.status)) };
        }
    }
    let status: u64;
    let value: u64;
    // SAFETY: the invocation system call reads the registers named here
    // and writes only rax and rdx (the status and the value), besides rcx
    // and r11, which SYSCALL itself overwrites; it touches no memory of
    // this component.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") NR_INVOKE => status,
            in("rdi") cap,
            in("rsi") op,
            inlateout("rdx") args[0] => value,
            in("r10") args[1],
            in("r8") args[2],
            in("r9") args[3],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        )
    };
    if status == 0 {
        Ok(value)
    } else {
        Err(InvokeError(status.wrapping_neg()))
    }
}

/// Packs up to four argument words (the interface macro's client side).
pub fn pack(words: &[u64]) -> [u64; 4] {
    let mut out = [0; 4];
    for (slot, w) in out.iter_mut().zip(words) {
        *slot = *w;
    }
    out
}

// The entry point. The kernel enters with a 16-byte aligned rsp, as after
// a `call`'s push it would not be: the `call` below restores the ABI's
// alignment on the dispatcher's entry.
global_asm!(
    ".section .text._start, \"ax\"",
    ".global _start",
    "_start:",
    "    jmp 2f",
    // The direct entry, at `_start + 16` (the kernel finds it there): a
    // caller in the same merged domain calls the dispatcher directly.
    "    .balign 16",
    ".global kiln_component_direct",
    "kiln_component_direct:",
    "    jmp kiln_component_dispatch",
    "2:",
    "    and rsp, -16",
    "    call kiln_component_dispatch",
    "    mov rdi, rax",
    "    mov rsi, rdx",
    "    mov eax, {nr_return}",
    "    syscall",
    "    ud2",
    nr_return = const NR_RETURN,
);

/// Registers the component's dispatcher: `component!(dispatch_fn)` with
/// `fn(op: u64, args: [u64; 4]) -> Result<u64, InvokeError>`, and
/// optionally its init, `component!(dispatch_fn, init = init_fn)` with
/// `fn()`, which the kernel runs before the first invocation and after
/// every micro-reboot (a panic in it is a fault in init). It defines the
/// symbol `_start` calls; the component itself stays free of `unsafe`
/// and of `#[no_mangle]`.
#[macro_export]
macro_rules! component {
    ($dispatch:path) => {
        $crate::component!($dispatch, init = $crate::no_init);
    };
    ($dispatch:path, init = $init:path) => {
        #[no_mangle]
        extern "C" fn kiln_component_dispatch(op: u64, a0: u64, a1: u64, a2: u64, a3: u64) -> $crate::Reply {
            if op == $crate::OP_INIT {
                $init();
                return $crate::Reply { status: 0, value: 0 };
            }
            $crate::Reply::from_result($dispatch(op, [a0, a1, a2, a3]))
        }
    };
}

/// The init of a component that needs none.
pub fn no_init() {}

/// Declares an interface: a trait whose methods take and return words,
/// numbered operations, a client stub and a server dispatch.
///
/// ```ignore
/// rt::interface! {
///     pub trait Calc, client CalcClient, dispatch calc_dispatch {
///         0 => fn add(a, b);
///         1 => fn div(a, b);
///     }
/// }
/// ```
/// gives `trait Calc { fn add(&self, a: u64, b: u64) -> Result<u64,
/// InvokeError>; ... }`, `CalcClient::new(cap)` implementing it by
/// invocation, and `calc_dispatch(&server, op, args)`, which calls the
/// server's method for `op` (ENOSYS for an unknown one).
#[macro_export]
macro_rules! interface {
    (
        $(#[$meta:meta])*
        $vis:vis trait $name:ident, client $client:ident, dispatch $dispatch:ident {
            $( $(#[$opmeta:meta])* $op:literal => fn $method:ident ( $($arg:ident),* ); )*
        }
    ) => {
        $(#[$meta])*
        $vis trait $name {
            $( $(#[$opmeta])* fn $method(&self, $($arg: u64),*) -> Result<u64, $crate::InvokeError>; )*
        }

        /// The client stub: every method is one invocation.
        #[derive(Clone, Copy, Debug)]
        $vis struct $client {
            cap: u64,
        }

        impl $client {
            /// A stub for the capability the kernel granted at index `cap`.
            pub const fn new(cap: u64) -> Self {
                Self { cap }
            }
        }

        impl $name for $client {
            $(
                fn $method(&self, $($arg: u64),*) -> Result<u64, $crate::InvokeError> {
                    $crate::invoke(self.cap, $op, $crate::pack(&[$($arg),*]))
                }
            )*
        }

        /// The server dispatch: operation number and words to a method.
        $vis fn $dispatch<T: $name>(server: &T, op: u64, args: [u64; 4]) -> Result<u64, $crate::InvokeError> {
            #[allow(unused_variables, unused_mut)]
            let mut words = args.iter().copied();
            match op {
                $( $op => server.$method($({ let $arg = (); let _ = $arg; words.next().unwrap_or(0) }),*), )*
                _ => Err($crate::InvokeError::ENOSYS),
            }
        }
    };
}

/// The heap: a bump allocator over the window the kernel mapped. Memory
/// is not reused; a component's heap starts over when it is rebooted.
struct BumpHeap {
    used: AtomicU64,
}

/// The start of this component's slot of the global layout.
fn slot_base() -> u64 {
    // This function's own address lies in the component's image, at the
    // start of its slot.
    let here = slot_base as *const () as u64;
    here & !(SLOT_SIZE - 1)
}

fn heap_base() -> u64 {
    slot_base() + HEAP_OFFSET
}

// SAFETY: `alloc` hands out disjoint, suitably aligned ranges of the heap
// window (an atomic bump of `used`, never past HEAP_SIZE), which the
// kernel maps readable and writable for the life of the component, and
// returns null when the window is spent.
unsafe impl GlobalAlloc for BumpHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = heap_base();
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let start = (base + used).next_multiple_of(layout.align() as u64);
            let Some(end) = start.checked_add(layout.size() as u64) else { return core::ptr::null_mut() };
            if end > base + HEAP_SIZE {
                return core::ptr::null_mut();
            }
            match self.used.compare_exchange_weak(used, end - base, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return start as *mut u8,
                Err(now) => used = now,
            }
        }
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}

#[global_allocator]
static HEAP: BumpHeap = BumpHeap { used: AtomicU64::new(0) };

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {
        // SAFETY: `ud2` raises #UD, which the kernel takes as this
        // component's fault; it touches no memory.
        unsafe { asm!("ud2", options(nomem, nostack)) };
    }
}
