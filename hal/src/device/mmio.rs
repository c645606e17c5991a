//! Typed device registers over a BAR a driver owns.
//!
//! An [`MmioRegion`] is a claimed memory BAR (or a sub-range of one, such
//! as a virtio capability's structure). A driver turns offsets into
//! [`Register`]s once, at setup: [`MmioRegion::register`] checks the
//! offset, width and alignment against the region then, so every later
//! `read`/`write` is in bounds by construction. The access mode is a type
//! parameter ([`ReadOnly`], [`WriteOnly`], [`ReadWrite`]): writing a
//! read-only register does not compile. A [`PortRegion`] does the same
//! for I/O-port BARs.
//!
//! When the hal revokes a device ([`super::pci::Revoker`]), its regions
//! go dead: reads return all ones (what a vanished PCI device answers) and
//! writes are dropped. The mapping itself stays until the last register
//! is gone, so a driver racing the revocation never touches unmapped
//! memory.

use alloc::sync::Arc;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicBool, Ordering};

use super::dma::DeviceAddr;
use super::window::Window;

/// Access modes.
#[derive(Debug)]
pub enum ReadOnly {}
#[derive(Debug)]
pub enum WriteOnly {}
#[derive(Debug)]
pub enum ReadWrite {}

mod sealed {
    pub trait Sealed {}
}

/// Modes that allow reading.
pub trait Readable: sealed::Sealed {}
/// Modes that allow writing.
pub trait Writable: sealed::Sealed {}
impl sealed::Sealed for ReadOnly {}
impl sealed::Sealed for WriteOnly {}
impl sealed::Sealed for ReadWrite {}
impl Readable for ReadOnly {}
impl Readable for ReadWrite {}
impl Writable for WriteOnly {}
impl Writable for ReadWrite {}

/// A value a register holds: an unsigned integer of 8 to 64 bits, or a
/// [`DeviceAddr`] (so a driver hands a ring's address to the device
/// without ever seeing the number).
pub trait RegValue: Copy + private::Value {}
impl RegValue for u8 {}
impl RegValue for u16 {}
impl RegValue for u32 {}
impl RegValue for u64 {}
impl RegValue for DeviceAddr {}

mod private {
    use super::DeviceAddr;

    /// Width, and the conversion to and from the bits on the bus.
    pub trait Value: Copy {
        const SIZE: u64;
        fn to_bits(self) -> u64;
        fn from_bits(bits: u64) -> Self;
    }
    macro_rules! int_value {
        ($($t:ty),*) => {$(
            impl Value for $t {
                const SIZE: u64 = core::mem::size_of::<$t>() as u64;
                fn to_bits(self) -> u64 { self as u64 }
                fn from_bits(bits: u64) -> Self { bits as $t }
            }
        )*};
    }
    int_value!(u8, u16, u32, u64);
    impl Value for DeviceAddr {
        const SIZE: u64 = 8;
        fn to_bits(self) -> u64 {
            self.bits()
        }
        fn from_bits(bits: u64) -> Self {
            DeviceAddr::from_device(bits)
        }
    }
}

/// Why a register or sub-region was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmioError {
    OutOfBounds,
    Misaligned,
}

/// A mapped window and whether its device was revoked.
#[derive(Debug)]
pub(crate) struct RegionCore {
    window: Window,
    revoked: AtomicBool,
}

impl RegionCore {
    pub(crate) fn new(window: Window) -> Arc<RegionCore> {
        Arc::new(RegionCore { window, revoked: AtomicBool::new(false) })
    }

    pub(crate) fn revoke(&self) {
        self.revoked.store(true, Ordering::Release);
    }

    fn read<T: private::Value>(&self, offset: u64) -> T {
        if self.revoked.load(Ordering::Acquire) {
            return T::from_bits(u64::MAX);
        }
        let addr = self.window.addr(offset);
        // SAFETY: `offset..offset + T::SIZE` lies inside the window and is
        // aligned to T (checked when the register was made); the window is
        // an uncached mapping of device memory, not RAM, alive while
        // `self` is, and device registers are not Rust objects.
        let bits = unsafe {
            match T::SIZE {
                1 => u64::from(core::ptr::read_volatile(addr as *const u8)),
                2 => u64::from(core::ptr::read_volatile(addr as *const u16)),
                4 => u64::from(core::ptr::read_volatile(addr as *const u32)),
                _ => core::ptr::read_volatile(addr as *const u64),
            }
        };
        T::from_bits(bits)
    }

    fn write<T: private::Value>(&self, offset: u64, value: T) {
        if self.revoked.load(Ordering::Acquire) {
            return;
        }
        let addr = self.window.addr(offset);
        let bits = value.to_bits();
        // SAFETY: as in `read`.
        unsafe {
            match T::SIZE {
                1 => core::ptr::write_volatile(addr as *mut u8, bits as u8),
                2 => core::ptr::write_volatile(addr as *mut u16, bits as u16),
                4 => core::ptr::write_volatile(addr as *mut u32, bits as u32),
                _ => core::ptr::write_volatile(addr as *mut u64, bits),
            }
        }
    }
}

/// A claimed memory BAR, or a bounds-checked part of one.
#[derive(Clone, Debug)]
pub struct MmioRegion {
    core: Arc<RegionCore>,
    base: u64,
    len: u64,
}

impl MmioRegion {
    pub(crate) fn new(core: Arc<RegionCore>) -> MmioRegion {
        let len = core.window.len();
        MmioRegion { core, base: 0, len }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn core(&self) -> Arc<RegionCore> {
        self.core.clone()
    }

    /// The part `offset..offset + len` of this region.
    pub fn subregion(&self, offset: u64, len: u64) -> Result<MmioRegion, MmioError> {
        let end = offset.checked_add(len).ok_or(MmioError::OutOfBounds)?;
        if end > self.len {
            return Err(MmioError::OutOfBounds);
        }
        Ok(MmioRegion { core: self.core.clone(), base: self.base + offset, len })
    }

    /// The register of type `T` at `offset`, checked once here.
    pub fn register<T: RegValue, A>(&self, offset: u64) -> Result<Register<T, A>, MmioError> {
        let end = offset.checked_add(T::SIZE).ok_or(MmioError::OutOfBounds)?;
        if end > self.len {
            return Err(MmioError::OutOfBounds);
        }
        if !(self.base + offset).is_multiple_of(T::SIZE) {
            return Err(MmioError::Misaligned);
        }
        Ok(Register { core: self.core.clone(), offset: self.base + offset, _mode: PhantomData })
    }

    /// A one-off read, checked on this access (for setup code that walks
    /// a structure; hot paths keep [`Register`]s).
    pub fn read<T: RegValue>(&self, offset: u64) -> Result<T, MmioError> {
        Ok(self.register::<T, ReadOnly>(offset)?.read())
    }

    /// A one-off write, checked on this access.
    pub fn write<T: RegValue>(&self, offset: u64, value: T) -> Result<(), MmioError> {
        self.register::<T, WriteOnly>(offset)?.write(value);
        Ok(())
    }
}

/// One device register: width `T`, access mode `A`, in bounds by
/// construction.
#[derive(Debug)]
pub struct Register<T, A> {
    core: Arc<RegionCore>,
    offset: u64,
    _mode: PhantomData<fn() -> (T, A)>,
}

impl<T, A> Clone for Register<T, A> {
    fn clone(&self) -> Self {
        Register { core: self.core.clone(), offset: self.offset, _mode: PhantomData }
    }
}

impl<T: RegValue, A: Readable> Register<T, A> {
    pub fn read(&self) -> T {
        self.core.read(self.offset)
    }
}

impl<T: RegValue, A: Writable> Register<T, A> {
    pub fn write(&self, value: T) {
        self.core.write(self.offset, value)
    }
}

impl<A: Writable> Register<u32, A> {
    /// Writes the low half of a device address (for devices that take
    /// 64-bit addresses as two 32-bit registers).
    pub fn write_addr_low(&self, addr: DeviceAddr) {
        self.write(addr.bits() as u32)
    }

    pub fn write_addr_high(&self, addr: DeviceAddr) {
        self.write((addr.bits() >> 32) as u32)
    }
}

impl<A: Readable + Writable> Register<u32, A> {
    /// Sets the bits in `set` and clears those in `clear` (read, then write).
    pub fn modify(&self, set: u32, clear: u32) {
        self.write((self.read() & !clear) | set)
    }
}

/// A claimed I/O-port BAR.
#[derive(Clone, Debug)]
pub struct PortRegion {
    base: u16,
    len: u16,
    revoked: Arc<AtomicBool>,
}

impl PortRegion {
    pub(crate) fn new(base: u16, len: u16, revoked: Arc<AtomicBool>) -> PortRegion {
        PortRegion { base, len, revoked }
    }

    pub fn len(&self) -> u16 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn port(&self, offset: u16, size: u16) -> Result<crate::port::Port, MmioError> {
        if offset.checked_add(size).is_none_or(|end| end > self.len) {
            return Err(MmioError::OutOfBounds);
        }
        Ok(crate::port::Port::new(self.base + offset))
    }

    fn live(&self) -> bool {
        !self.revoked.load(Ordering::Acquire)
    }

    pub fn read_u8(&self, offset: u16) -> Result<u8, MmioError> {
        let p = self.port(offset, 1)?;
        Ok(if self.live() { p.read_u8() } else { u8::MAX })
    }

    pub fn read_u16(&self, offset: u16) -> Result<u16, MmioError> {
        let p = self.port(offset, 2)?;
        Ok(if self.live() { p.read_u16() } else { u16::MAX })
    }

    pub fn read_u32(&self, offset: u16) -> Result<u32, MmioError> {
        let p = self.port(offset, 4)?;
        Ok(if self.live() { p.read_u32() } else { u32::MAX })
    }

    pub fn write_u8(&self, offset: u16, value: u8) -> Result<(), MmioError> {
        let p = self.port(offset, 1)?;
        if self.live() {
            p.write_u8(value);
        }
        Ok(())
    }

    pub fn write_u16(&self, offset: u16, value: u16) -> Result<(), MmioError> {
        let p = self.port(offset, 2)?;
        if self.live() {
            p.write_u16(value);
        }
        Ok(())
    }

    pub fn write_u32(&self, offset: u16, value: u32) -> Result<(), MmioError> {
        let p = self.port(offset, 4)?;
        if self.live() {
            p.write_u32(value);
        }
        Ok(())
    }
}
