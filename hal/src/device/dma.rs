//! DMA memory a device may read and write, without the driver ever
//! holding a physical address.
//!
//! * [`DeviceAddr`] is the only form a bus address takes outside the hal:
//!   opaque, not constructible from a number, with no accessor for its
//!   value. Drivers put it where the device needs it, in a
//!   [`super::mmio::Register`] or a [`DmaRing`] entry field.
//! * [`DmaBuffer`] is physically contiguous, zeroed memory from the
//!   device's own [`DmaPool`]. A buffer the driver drops goes back to that
//!   pool, not to the kernel: the device may still hold its address. The
//!   pool returns memory to the frame allocator only once the device's bus
//!   mastering is off (the device handle dropped, revoked or reset), so a
//!   device can never write memory the kernel has reused. A stale address
//!   in a confused driver corrupts only that device's own buffers.
//! * [`DmaRing<T>`] is a typed array in a coherent buffer (descriptor
//!   tables); `T` is a plain-data layout declared with [`crate::dma_struct!`],
//!   read and written as whole entries with volatile accesses.
//!
//! x86 DMA is cache-coherent, so "coherent" and "streaming" buffers are
//! the same memory here; [`DmaBuffer::sync_for_device`] and
//! [`DmaBuffer::sync_for_cpu`] are the ordering points (fences) a
//! streaming handoff needs.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::marker::PhantomData;
use core::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};

use super::iommu::Domain;
use crate::mm::{PhysAddr, PAGE_SIZE};
use crate::sync::SpinLock;

/// An address a device uses to reach a [`DmaBuffer`]. Drivers can copy it
/// into device-visible places but cannot make one from a number or read
/// its value.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct DeviceAddr(u64);

impl DeviceAddr {
    pub(crate) fn bits(self) -> u64 {
        self.0
    }

    /// A value read back from the device (a register or ring entry): it
    /// can only be written back there, never dereferenced.
    pub(crate) fn from_device(bits: u64) -> DeviceAddr {
        DeviceAddr(bits)
    }
}

impl core::fmt::Debug for DeviceAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("DeviceAddr(..)")
    }
}

/// Proof that the hal is the caller: only the hal can make one, so only
/// the hal can turn bytes from DMA memory into a value (a driver could
/// otherwise decode a [`DeviceAddr`] from numbers of its choosing).
#[derive(Clone, Copy)]
pub struct HalOnly(());

/// Plain data a device may read and write: a fixed number of
/// little-endian bytes with no padding, every pattern a value. Implemented
/// for the unsigned integers, [`DeviceAddr`], and structs declared with
/// [`crate::dma_struct!`] (field after field, in order).
///
/// The trait is safe: values cross to and from DMA memory as bytes the
/// hal copies, so no implementation can make the hal read or write
/// outside the entry, and the [`HalOnly`] argument keeps decoding (the
/// one way to mint a `DeviceAddr`) inside the hal.
pub trait DmaPlain: Copy + 'static {
    /// Bytes the value takes in DMA memory.
    const SIZE: usize;
    /// Decodes `bytes` (exactly `SIZE` of them).
    fn decode(bytes: &[u8], token: HalOnly) -> Self;
    /// Encodes into `out` (exactly `SIZE` bytes).
    fn encode(&self, out: &mut [u8]);
}

macro_rules! plain_int {
    ($($t:ty),*) => {$(
        impl DmaPlain for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            fn decode(bytes: &[u8], _: HalOnly) -> Self {
                let mut b = [0u8; core::mem::size_of::<$t>()];
                let n = b.len().min(bytes.len());
                b[..n].copy_from_slice(&bytes[..n]);
                <$t>::from_le_bytes(b)
            }
            fn encode(&self, out: &mut [u8]) {
                let b = self.to_le_bytes();
                let n = b.len().min(out.len());
                out[..n].copy_from_slice(&b[..n]);
            }
        }
    )*};
}
plain_int!(u8, u16, u32, u64);

impl DmaPlain for DeviceAddr {
    const SIZE: usize = 8;
    fn decode(bytes: &[u8], token: HalOnly) -> Self {
        DeviceAddr(u64::decode(bytes, token))
    }
    fn encode(&self, out: &mut [u8]) {
        self.0.encode(out)
    }
}

/// Declares a descriptor layout that can live in a [`DmaRing`]: the
/// fields, each [`DmaPlain`], laid out one after another in the order
/// given, little-endian, with no padding (the struct is also `repr(C)`,
/// and a layout whose Rust size differs from the sum of its fields is a
/// compile-time error, so the two never disagree). The generated code is
/// safe.
///
/// ```ignore
/// hal::dma_struct! {
///     pub struct VirtqDesc { pub addr: DeviceAddr, pub len: u32, pub flags: u16, pub next: u16 }
/// }
/// ```
#[macro_export]
macro_rules! dma_struct {
    ($(#[$m:meta])* $vis:vis struct $name:ident { $($fvis:vis $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        $vis struct $name { $($fvis $field: $ty),* }
        const _: () = assert!(
            core::mem::size_of::<$name>()
                == 0 $(+ <$ty as $crate::device::dma::DmaPlain>::SIZE)*,
            "a dma_struct may not have padding"
        );
        impl $crate::device::dma::DmaPlain for $name {
            const SIZE: usize = 0 $(+ <$ty as $crate::device::dma::DmaPlain>::SIZE)*;
            fn decode(bytes: &[u8], token: $crate::device::dma::HalOnly) -> Self {
                let mut _at = 0usize;
                $(
                    let end = _at + <$ty as $crate::device::dma::DmaPlain>::SIZE;
                    let $field = <$ty as $crate::device::dma::DmaPlain>::decode(
                        bytes.get(_at..end).unwrap_or(&[]),
                        token,
                    );
                    _at = end;
                )*
                $name { $($field),* }
            }
            fn encode(&self, out: &mut [u8]) {
                let mut _at = 0usize;
                $(
                    let end = _at + <$ty as $crate::device::dma::DmaPlain>::SIZE;
                    if let Some(slot) = out.get_mut(_at..end) {
                        $crate::device::dma::DmaPlain::encode(&self.$field, slot);
                    }
                    _at = end;
                )*
            }
        }
    };
}

/// The largest entry a [`DmaRing`] or a typed access takes.
const MAX_PLAIN: usize = 64;

/// The widest volatile access that `addr` and `len` both allow, so a u16
/// ring index is read in one access and a 16-byte descriptor in two.
fn access_width(addr: usize, len: usize) -> usize {
    [8, 4, 2].into_iter().find(|w| addr.is_multiple_of(*w) && len.is_multiple_of(*w)).unwrap_or(1)
}

/// Copies `out.len()` bytes of DMA memory at `addr` into `out`, volatile.
/// `addr..addr + out.len()` must lie inside one live `DmaBuffer` (its
/// `checked` says so).
fn copy_in_volatile(addr: usize, out: &mut [u8]) {
    let width = access_width(addr, out.len());
    for (i, chunk) in out.chunks_exact_mut(width).enumerate() {
        let at = addr + i * width;
        // `at..at + width` is inside the checked range of a live DMA buffer
        // (direct-mapped, owned by its pool) and aligned to `width`; DMA
        // memory holds no Rust objects, so a volatile read of plain
        // integers aliases nothing.
        // SAFETY: in bounds, aligned, plain integers (above).
        unsafe {
            match width {
                8 => chunk.copy_from_slice(&core::ptr::read_volatile(at as *const u64).to_le_bytes()),
                4 => chunk.copy_from_slice(&core::ptr::read_volatile(at as *const u32).to_le_bytes()),
                2 => chunk.copy_from_slice(&core::ptr::read_volatile(at as *const u16).to_le_bytes()),
                _ => chunk[0] = core::ptr::read_volatile(at as *const u8),
            }
        }
    }
}

/// Copies `bytes` into DMA memory at `addr`, volatile (same rule as
/// [`copy_in_volatile`]).
fn copy_out_volatile(bytes: &[u8], addr: usize) {
    let width = access_width(addr, bytes.len());
    for (i, chunk) in bytes.chunks_exact(width).enumerate() {
        let at = addr + i * width;
        let mut b = [0u8; 8];
        b[..width].copy_from_slice(chunk);
        // Bounds and alignment as in `copy_in_volatile`. Callers hold the
        // buffer by `&mut` (`DmaBuffer::write`, `DmaRing::set`), so no CPU
        // slice of it is alive while these bytes change.
        // SAFETY: in bounds, aligned, no live CPU view (above).
        unsafe {
            match width {
                8 => core::ptr::write_volatile(at as *mut u64, u64::from_le_bytes(b)),
                4 => core::ptr::write_volatile(at as *mut u32, u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                2 => core::ptr::write_volatile(at as *mut u16, u16::from_le_bytes([b[0], b[1]])),
                _ => core::ptr::write_volatile(at as *mut u8, b[0]),
            }
        }
    }
}

/// Frames every device's pool holds (in use or idle), for /proc/meminfo's
/// accounting.
static POOL_FRAMES: AtomicU64 = AtomicU64::new(0);

pub fn pool_frames() -> u64 {
    POOL_FRAMES.load(Ordering::Relaxed)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaError {
    NoMemory,
    /// Zero length or too large.
    BadSize,
    /// The device was revoked.
    Revoked,
}

/// Every DMA allocation of one device. Frames return to the kernel only
/// from [`DmaPool::release_idle`] and the pool's drop, which the device
/// handle calls after turning bus mastering off.
#[derive(Debug)]
pub struct DmaPool {
    /// Allocations no buffer holds, kept for reuse by this device only.
    idle: SpinLock<Vec<(PhysAddr, u64)>>,
    /// Set once bus mastering is off for good: idle memory may go back.
    quiesced: AtomicBool,
    revoked: AtomicBool,
    /// The device's IOMMU domain, when remapping is on: the pool's frames
    /// are exactly what it maps.
    domain: Option<Arc<Domain>>,
}

impl DmaPool {
    pub(crate) fn new(domain: Option<Arc<Domain>>) -> Arc<DmaPool> {
        Arc::new(DmaPool {
            idle: SpinLock::new(Vec::new()),
            quiesced: AtomicBool::new(false),
            revoked: AtomicBool::new(false),
            domain,
        })
    }

    /// Frames back to the kernel: first out of the device's IOMMU domain,
    /// with an invalidation that completes before they are freed (if the
    /// unit does not confirm it, they are leaked instead).
    fn free_frames(&self, frame: PhysAddr, pages: u64) {
        if let Some(domain) = &self.domain {
            if !domain.unmap(frame, pages) {
                return;
            }
        }
        crate::mm::free_owned(frame, pages, crate::mm::FrameOwner::Dma);
        POOL_FRAMES.fetch_sub(pages, Ordering::Relaxed);
    }

    /// The device can no longer reach memory (bus mastering off): idle
    /// allocations go back to the frame allocator now, and buffers still
    /// held go back when they drop if `for_good`.
    pub(crate) fn release_idle(&self, for_good: bool) {
        if for_good {
            self.quiesced.store(true, Ordering::Release);
        }
        let idle = core::mem::take(&mut *self.idle.lock());
        for (frame, pages) in idle {
            self.free_frames(frame, pages);
        }
    }

    pub(crate) fn revoke(&self) {
        self.revoked.store(true, Ordering::Release);
    }

    fn take(&self, pages: u64) -> Option<PhysAddr> {
        let mut idle = self.idle.lock();
        let i = idle.iter().position(|&(_, p)| p == pages)?;
        let (frame, _) = idle.swap_remove(i);
        drop(idle);
        crate::mm::zero_frames(frame, pages);
        Some(frame)
    }

    fn give_back(&self, frame: PhysAddr, pages: u64) {
        if self.quiesced.load(Ordering::Acquire) {
            self.free_frames(frame, pages);
            return;
        }
        let mut idle = self.idle.lock();
        if idle.try_reserve(1).is_ok() {
            idle.push((frame, pages));
        } else {
            // Freeing is not allowed while the device may write it, and
            // keeping it needs memory we do not have: leak it.
            log::error!("dma: leaking {pages} page(s): no memory to track them");
        }
    }

    /// `len` bytes of zeroed, physically contiguous memory for this device.
    pub fn alloc(self: &Arc<Self>, len: usize) -> Result<DmaBuffer, DmaError> {
        if self.revoked.load(Ordering::Acquire) {
            return Err(DmaError::Revoked);
        }
        if len == 0 || len > 16 << 20 {
            return Err(DmaError::BadSize);
        }
        let pages = (len as u64).div_ceil(PAGE_SIZE);
        let frame = match self.take(pages) {
            Some(f) => f,
            None => {
                let f =
                    crate::mm::alloc_contiguous_for(pages, 1, crate::mm::FrameOwner::Dma).ok_or(DmaError::NoMemory)?;
                crate::mm::zero_frames(f, pages);
                if self.domain.as_ref().is_some_and(|d| !d.map(f, pages)) {
                    // Partly mapped at most: unmapping clears what was.
                    if self.domain.as_ref().is_some_and(|d| d.unmap(f, pages)) {
                        crate::mm::free_owned(f, pages, crate::mm::FrameOwner::Dma);
                    }
                    return Err(DmaError::NoMemory);
                }
                POOL_FRAMES.fetch_add(pages, Ordering::Relaxed);
                f
            }
        };
        Ok(DmaBuffer { frame, pages, len, pool: self.clone() })
    }

    /// A zeroed ring of `count` entries of `T`.
    pub fn alloc_ring<T: DmaPlain>(self: &Arc<Self>, count: usize) -> Result<DmaRing<T>, DmaError> {
        if T::SIZE == 0 || T::SIZE > MAX_PLAIN {
            return Err(DmaError::BadSize);
        }
        let bytes = count.checked_mul(T::SIZE).ok_or(DmaError::BadSize)?;
        Ok(DmaRing { buffer: self.alloc(bytes)?, count, _entry: PhantomData })
    }
}

impl Drop for DmaPool {
    fn drop(&mut self) {
        // Only reached after the device handle (which holds the pool)
        // dropped, and it turns bus mastering off first.
        self.release_idle(true);
    }
}

/// Zeroed, physically contiguous DMA memory owned by one device.
#[derive(Debug)]
pub struct DmaBuffer {
    frame: PhysAddr,
    pages: u64,
    len: usize,
    pool: Arc<DmaPool>,
}

impl DmaBuffer {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address the device uses for the buffer's first byte.
    pub fn device_addr(&self) -> DeviceAddr {
        DeviceAddr(self.frame.0)
    }

    /// The device address of byte `offset`, if inside the buffer.
    pub fn device_addr_at(&self, offset: usize) -> Option<DeviceAddr> {
        (offset < self.len).then(|| DeviceAddr(self.frame.0 + offset as u64))
    }

    fn ptr(&self) -> *mut u8 {
        self.frame.to_virt() as *mut u8
    }

    /// The bytes, for the CPU's side of a handoff. The driver gives a
    /// buffer (or part of one) to the device by putting its address in a
    /// ring, and looks at it only after the device gave it back.
    pub fn as_slice(&self) -> &[u8] {
        // The frames are this buffer's alone (taken from the frame allocator
        // or this pool's idle list, never handed out twice), are mapped by
        // the direct map, and live as long as `self`. The device writes
        // only parts it was given, and the driver reads them after it gave
        // them back (ordered by `sync_for_cpu`).
        // SAFETY: owned, mapped, live frames (above).
        unsafe { core::slice::from_raw_parts(self.ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes the CPU side unique.
        unsafe { core::slice::from_raw_parts_mut(self.ptr(), self.len) }
    }

    /// Orders the CPU's writes before the device's reads (before the
    /// driver publishes the buffer to the device).
    pub fn sync_for_device(&self) {
        fence(Ordering::Release);
    }

    /// Orders the device's writes before the CPU's reads (after the driver
    /// saw the device give the buffer back).
    pub fn sync_for_cpu(&self) {
        fence(Ordering::Acquire);
    }

    /// Volatile access to a `T` at `offset` (ring headers and indices the
    /// device updates while the driver watches).
    pub fn read<T: DmaPlain>(&self, offset: usize) -> Option<T> {
        let addr = self.checked::<T>(offset)?;
        let mut bytes = [0u8; MAX_PLAIN];
        let bytes = &mut bytes[..T::SIZE];
        copy_in_volatile(addr, bytes);
        Some(T::decode(bytes, HalOnly(())))
    }

    pub fn write<T: DmaPlain>(&mut self, offset: usize, value: T) -> Option<()> {
        let addr = self.checked::<T>(offset)?;
        let mut bytes = [0u8; MAX_PLAIN];
        let bytes = &mut bytes[..T::SIZE];
        value.encode(bytes);
        copy_out_volatile(bytes, addr);
        Some(())
    }

    /// The address of a `T` at `offset`: in bounds, aligned to the
    /// type's own alignment, and no bigger than a typed access takes.
    fn checked<T: DmaPlain>(&self, offset: usize) -> Option<usize> {
        let size = T::SIZE;
        if size == 0 || size > MAX_PLAIN {
            return None;
        }
        if offset.checked_add(size)? > self.len || !offset.is_multiple_of(core::mem::align_of::<T>()) {
            return None;
        }
        Some(self.ptr() as usize + offset)
    }
}

impl Drop for DmaBuffer {
    fn drop(&mut self) {
        self.pool.give_back(self.frame, self.pages);
    }
}

/// A typed array of `T` in DMA memory (a descriptor table or ring).
#[derive(Debug)]
pub struct DmaRing<T: DmaPlain> {
    buffer: DmaBuffer,
    count: usize,
    _entry: PhantomData<T>,
}

impl<T: DmaPlain> DmaRing<T> {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn device_addr(&self) -> DeviceAddr {
        self.buffer.device_addr()
    }

    /// Entry `index`, as the device last left it. Panics past the end (a
    /// driver bug, like a slice index).
    pub fn get(&self, index: usize) -> T {
        assert!(index < self.count, "DmaRing index {index} past {}", self.count);
        self.buffer.read(index * T::SIZE).unwrap_or_else(|| unreachable!())
    }

    pub fn set(&mut self, index: usize, value: T) {
        assert!(index < self.count, "DmaRing index {index} past {}", self.count);
        self.buffer.write(index * T::SIZE, value).unwrap_or_else(|| unreachable!())
    }
}
