//! Device interrupts: vectors, typed handlers, and the bottom half.
//!
//! A driver implements [`IrqHandler`]. Its `top_half` runs in interrupt
//! context with interrupts off: it acknowledges the device and says
//! whether more work is due ([`IrqReturn::WakeBottomHalf`]). The work then
//! runs in `bottom_half`, on the kernel's bottom-half thread: the hal
//! keeps the pending set and calls a kick function the kernel registers
//! ([`set_bottom_half_kick`]); the kernel's worker calls
//! [`run_bottom_halves`]. The hal cannot create threads, so this is the
//! callback that points the layers the right way.
//!
//! Each device vector is an [`IrqVector`]: MSI-X entries (one per queue,
//! each steerable to any CPU with [`IrqVector::set_affinity`]), a single
//! MSI vector, or a shared level-triggered IO APIC pin (INTx). An INTx pin
//! is masked when a handler asks for its bottom half and unmasked after
//! it ran, so a device that cannot be silenced in the top half does not
//! storm (Linux's oneshot threaded interrupts).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use super::mmio::{ReadWrite, Register};
use super::pci::Config;
use crate::percpu::{CacheAligned, PerCpu, MAX_CPUS};
use crate::sync::{Once, SpinLock};
use kiln_util::pci::{msi, msix, x86_msi_message};

/// What a top half found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqReturn {
    /// Not this device's interrupt (shared lines).
    NotMine,
    /// Handled completely in the top half.
    Handled,
    /// Handled; run the bottom half soon.
    WakeBottomHalf,
}

/// A device's interrupt handler.
pub trait IrqHandler: Send + Sync {
    /// Interrupt context, interrupts off: acknowledge the device, touch
    /// only atomics and spin locks that are never held with interrupts
    /// on, and return quickly.
    fn top_half(&self) -> IrqReturn;
    /// The bottom-half thread; may take longer and call wakers. Called at
    /// least once after each `WakeBottomHalf`, possibly more often.
    fn bottom_half(&self) {}
}

/// How a device's vectors reach the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqKind {
    MsiX,
    Msi,
    /// A level-triggered IO APIC pin, possibly shared.
    Intx,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqError {
    /// The device offers no usable interrupt mechanism.
    Unsupported,
    /// No free CPU vector.
    NoVector,
    NoMemory,
    /// No such CPU, or one whose APIC id MSI cannot address.
    BadCpu,
    Revoked,
}

/// FECTL's interrupt mask bit.
const REMAPPER_MASKED: u32 = 1 << 31;

const FIRST_VECTOR: u8 = 0x40;
const LAST_VECTOR: u8 = 0xDF;

type Owned = (usize, Arc<dyn IrqHandler>);

struct Slot {
    used: bool,
    handlers: Vec<Owned>,
    /// The INTx pin behind this vector, masked while a bottom half is due.
    pin: Option<u8>,
}

static SLOTS: [SpinLock<Slot>; 256] =
    [const { SpinLock::new(Slot { used: false, handlers: Vec::new(), pin: None }) }; 256];
static PENDING: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
static KICK: Once<fn()> = Once::new();
/// Interrupts dispatched to device handlers, per CPU, for tests and /proc.
static DISPATCHED: PerCpu<AtomicU64> = PerCpu::new([const { CacheAligned(AtomicU64::new(0)) }; MAX_CPUS]);

/// Registers the kernel's "bottom halves are pending" notifier (it wakes
/// the worker thread). Called once at boot.
pub fn set_bottom_half_kick(kick: fn()) {
    KICK.set(kick);
}

pub fn bottom_halves_pending() -> bool {
    PENDING.iter().any(|p| p.load(Ordering::Acquire) != 0)
}

/// Device interrupts dispatched so far, on every CPU.
pub fn dispatched_interrupts() -> u64 {
    DISPATCHED.iter().map(|c| c.load(Ordering::Relaxed)).sum()
}

/// Device interrupts dispatched so far on `cpu`.
pub fn dispatched_on(cpu: usize) -> u64 {
    DISPATCHED.get_for(cpu).load(Ordering::Relaxed)
}

/// Runs every pending bottom half once; returns how many vectors had one.
/// Called by the kernel's bottom-half thread.
pub fn run_bottom_halves() -> usize {
    let mut ran = 0;
    for (word, bits) in PENDING.iter().enumerate() {
        let mut pending = bits.swap(0, Ordering::AcqRel);
        while pending != 0 {
            let vector = word * 64 + pending.trailing_zeros() as usize;
            pending &= pending - 1;
            ran += 1;
            let (handlers, pin) = {
                let slot = SLOTS[vector].lock();
                let mut hs = Vec::new();
                if hs.try_reserve(slot.handlers.len()).is_ok() {
                    hs.extend(slot.handlers.iter().map(|(_, h)| h.clone()));
                }
                (hs, slot.pin)
            };
            for h in &handlers {
                h.bottom_half();
            }
            if let Some(pin) = pin {
                crate::apic::set_pin_masked(pin, false);
            }
        }
    }
    ran
}

fn dispatch(vector: u8) {
    DISPATCHED.get().fetch_add(1, Ordering::Relaxed);
    let slot = SLOTS[usize::from(vector)].lock();
    let mut wake = false;
    for (_, h) in &slot.handlers {
        wake |= h.top_half() == IrqReturn::WakeBottomHalf;
    }
    if wake {
        if let Some(pin) = slot.pin {
            crate::apic::set_pin_masked(pin, true);
        }
        drop(slot);
        PENDING[usize::from(vector / 64)].fetch_or(1 << (vector % 64), Ordering::AcqRel);
        if let Some(kick) = KICK.get() {
            kick();
        }
    }
}

/// A free vector with `handler` installed for `owner`.
fn alloc_vector(owner: usize, handler: Arc<dyn IrqHandler>) -> Result<u8, IrqError> {
    for v in FIRST_VECTOR..=LAST_VECTOR {
        let mut slot = SLOTS[usize::from(v)].lock();
        if !slot.used {
            slot.handlers.try_reserve(1).map_err(|_| IrqError::NoMemory)?;
            slot.used = true;
            slot.handlers.push((owner, handler));
            slot.pin = None;
            drop(slot);
            crate::trap::register_handler(v, dispatch);
            return Ok(v);
        }
    }
    Err(IrqError::NoVector)
}

/// INTx pins in use and their vectors.
static PIN_VECTORS: SpinLock<[u8; 24]> = SpinLock::new([0; 24]);

/// Adds `handler` to the vector of IO APIC `pin`, routing it on first use.
fn share_pin(owner: usize, pin: u8, handler: Arc<dyn IrqHandler>) -> Result<u8, IrqError> {
    if pin >= 24 || pin >= crate::apic::ioapic_pins() {
        return Err(IrqError::Unsupported);
    }
    let mut pins = PIN_VECTORS.lock();
    let vector = match pins[usize::from(pin)] {
        0 => {
            let v = alloc_vector(owner, handler)?;
            SLOTS[usize::from(v)].lock().pin = Some(pin);
            pins[usize::from(pin)] = v;
            crate::apic::route_level_irq(pin, v, crate::apic::local_apic_id(), false);
            return Ok(v);
        }
        v => v,
    };
    let mut slot = SLOTS[usize::from(vector)].lock();
    if !slot.used {
        // Freed by `release` a moment ago; it clears the pin next.
        return Err(IrqError::NoVector);
    }
    slot.handlers.try_reserve(1).map_err(|_| IrqError::NoMemory)?;
    slot.handlers.push((owner, handler));
    Ok(vector)
}

/// Removes `owner`'s handlers from `vector`, freeing it when none remain.
fn release(owner: usize, vector: u8) {
    let freed_pin = {
        let mut slot = SLOTS[usize::from(vector)].lock();
        slot.handlers.retain(|(o, _)| *o != owner);
        if slot.handlers.is_empty() && slot.used {
            slot.used = false;
            slot.pin.take()
        } else {
            None
        }
    };
    // PIN_VECTORS is taken before a slot elsewhere, so never under one.
    if let Some(pin) = freed_pin {
        crate::apic::set_pin_masked(pin, true);
        let mut pins = PIN_VECTORS.lock();
        if pins[usize::from(pin)] == vector {
            pins[usize::from(pin)] = 0;
        }
    }
}

/// Where a vector's messages are programmed.
pub(crate) enum Route {
    MsiX {
        entry: u16,
        addr_lo: Register<u32, ReadWrite>,
        addr_hi: Register<u32, ReadWrite>,
        data: Register<u32, ReadWrite>,
        control: Register<u32, ReadWrite>,
    },
    Msi {
        config: Config,
        cap: u16,
    },
    Intx {
        pin: u8,
    },
    /// A VT-d remapping unit's fault event registers (FECTL, FEDATA,
    /// FEADDR, FEUADDR): an MSI the unit itself sends.
    Remapper {
        control: Register<u32, ReadWrite>,
        data: Register<u32, ReadWrite>,
        addr: Register<u32, ReadWrite>,
        upper: Register<u32, ReadWrite>,
    },
}

/// A vector's number and route, shared by its owner's [`IrqVector`] and
/// the hal's device record (which steers it for the kernel).
pub(crate) struct VectorCore {
    owner: usize,
    vector: u8,
    route: Route,
}

impl VectorCore {
    pub(crate) fn set_affinity(&self, cpu: usize) -> Result<(), IrqError> {
        if cpu >= crate::smp::cpu_count() {
            return Err(IrqError::BadCpu);
        }
        self.program(crate::smp::apic_id_of(cpu))
    }

    fn program(&self, apic_id: u32) -> Result<(), IrqError> {
        let apic_id = u8::try_from(apic_id).map_err(|_| IrqError::BadCpu)?;
        let (addr, data) = x86_msi_message(apic_id, self.vector);
        match &self.route {
            Route::MsiX { addr_lo, addr_hi, data: d, control, .. } => {
                control.write(msix::ENTRY_MASKED);
                addr_lo.write(addr as u32);
                addr_hi.write((addr >> 32) as u32);
                d.write(data);
                control.write(0);
            }
            Route::Msi { config, cap } => {
                let ctl = config.read16(cap + msi::CONTROL);
                config.write32(cap + msi::ADDR_LO, addr as u32);
                if ctl & msi::CONTROL_64BIT != 0 {
                    config.write32(cap + msi::ADDR_LO + 4, (addr >> 32) as u32);
                }
                config.write16(cap + msi::data_offset(ctl), data as u16);
            }
            Route::Intx { pin } => crate::apic::route_level_irq(*pin, self.vector, u32::from(apic_id), false),
            Route::Remapper { control, data: d, addr: a, upper } => {
                control.write(REMAPPER_MASKED);
                d.write(data);
                a.write(addr as u32);
                upper.write((addr >> 32) as u32);
                control.write(0);
            }
        }
        Ok(())
    }
}

/// One interrupt vector a device owns. Dropping it masks and frees it.
pub struct IrqVector {
    core: Arc<VectorCore>,
}

impl IrqVector {
    fn install(owner: usize, vector: u8, route: Route, program: bool) -> Result<IrqVector, IrqError> {
        let core = Arc::try_new(VectorCore { owner, vector, route }).map_err(|_| {
            release(owner, vector);
            IrqError::NoMemory
        })?;
        let v = IrqVector { core };
        if program {
            v.core.program(crate::apic::local_apic_id())?;
        }
        Ok(v)
    }

    pub(crate) fn new_msix(owner: usize, handler: Arc<dyn IrqHandler>, route: Route) -> Result<IrqVector, IrqError> {
        let vector = alloc_vector(owner, handler)?;
        IrqVector::install(owner, vector, route, true)
    }

    pub(crate) fn new_msi(owner: usize, handlers: &[Arc<dyn IrqHandler>], route: Route) -> Result<IrqVector, IrqError> {
        let (first, rest) = handlers.split_first().ok_or(IrqError::Unsupported)?;
        let vector = alloc_vector(owner, first.clone())?;
        {
            let mut slot = SLOTS[usize::from(vector)].lock();
            if slot.handlers.try_reserve(rest.len()).is_err() {
                drop(slot);
                release(owner, vector);
                return Err(IrqError::NoMemory);
            }
            slot.handlers.extend(rest.iter().map(|h| (owner, h.clone())));
        }
        IrqVector::install(owner, vector, route, true)
    }

    /// The fault event vector of the hal's own IOMMU (owner 0: no PCI
    /// device has that owner number).
    pub(crate) fn new_remapper(handler: Arc<dyn IrqHandler>, route: Route) -> Result<IrqVector, IrqError> {
        let vector = alloc_vector(0, handler)?;
        IrqVector::install(0, vector, route, true)
    }

    pub(crate) fn new_intx(owner: usize, pin: u8, handlers: &[Arc<dyn IrqHandler>]) -> Result<IrqVector, IrqError> {
        let mut vector = 0;
        for h in handlers {
            vector = share_pin(owner, pin, h.clone())?;
        }
        IrqVector::install(owner, vector, Route::Intx { pin }, false)
    }

    pub(crate) fn core(&self) -> alloc::sync::Weak<VectorCore> {
        Arc::downgrade(&self.core)
    }

    pub fn kind(&self) -> IrqKind {
        match self.core.route {
            Route::MsiX { .. } => IrqKind::MsiX,
            Route::Msi { .. } | Route::Remapper { .. } => IrqKind::Msi,
            Route::Intx { .. } => IrqKind::Intx,
        }
    }

    /// The MSI-X table entry this vector uses (what virtio's
    /// `queue_msix_vector` names), if it is an MSI-X vector.
    pub fn msix_entry(&self) -> Option<u16> {
        match self.core.route {
            Route::MsiX { entry, .. } => Some(entry),
            _ => None,
        }
    }

    /// The CPU vector number, for logs.
    pub fn cpu_vector(&self) -> u8 {
        self.core.vector
    }

    /// Steers this vector to `cpu`. An INTx pin moves for every device
    /// sharing it.
    pub fn set_affinity(&self, cpu: usize) -> Result<(), IrqError> {
        self.core.set_affinity(cpu)
    }

    /// Stops delivery (MSI-X entry mask; INTx pin mask).
    pub fn mask(&self) {
        match &self.core.route {
            Route::MsiX { control, .. } => control.write(msix::ENTRY_MASKED),
            Route::Intx { pin } => crate::apic::set_pin_masked(*pin, true),
            Route::Remapper { control, .. } => control.write(REMAPPER_MASKED),
            Route::Msi { .. } => {}
        }
    }

    pub fn unmask(&self) {
        match &self.core.route {
            Route::MsiX { control, .. } | Route::Remapper { control, .. } => control.write(0),
            Route::Intx { pin } => crate::apic::set_pin_masked(*pin, false),
            Route::Msi { .. } => {}
        }
    }
}

impl Drop for IrqVector {
    fn drop(&mut self) {
        match &self.core.route {
            Route::MsiX { control, .. } => control.write(msix::ENTRY_MASKED),
            Route::Remapper { control, .. } => control.write(REMAPPER_MASKED),
            _ => {}
        }
        release(self.core.owner, self.core.vector);
    }
}

/// Frees every vector `owner` holds (device teardown).
pub(crate) fn release_all(owner: usize) {
    for v in FIRST_VECTOR..=LAST_VECTOR {
        let mine = SLOTS[usize::from(v)].lock().handlers.iter().any(|(o, _)| *o == owner);
        if mine {
            release(owner, v);
        }
    }
}
