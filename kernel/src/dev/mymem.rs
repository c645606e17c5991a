//! /dev/mymem: a character device backed by 512 KiB of kernel memory, from
//! the Rust-for-Linux labs.
//!
//! read, write and lseek (SEEK_SET, SEEK_CUR, SEEK_END) move within the
//! buffer; a seek or an access outside it fails with EINVAL, so a request
//! never changes data beyond what it names. The buffer sits behind a
//! sleeping mutex, so each read or write is atomic with respect to the
//! others, and the `MYMEM_IOC_ADD` ioctl adds to an 8-byte counter in one
//! step — the kernel-side fix for the labs' lost-update race, which a
//! read-then-write from user space cannot avoid.

use alloc::sync::Arc;
use alloc::vec::Vec;

use hal::sync::Once;
use linux_abi::errno::Errno;

use crate::fs::file::FileOps;
use crate::fs::inode::S_IFCHR;
use crate::mm::{uaccess, Vm};
use crate::sync::Mutex;

pub const SIZE: usize = 512 * 1024;
/// The device number: major 240 (reserved for local use), minor 0.
pub const RDEV: u64 = crate::fs::devfs::makedev(240, 0);
/// `_IOWR('m', 1, struct mymem_add)`: { u64 offset; u64 value; u64 result }.
pub const MYMEM_IOC_ADD: u32 = 0xC018_6D01;

static BUFFER: Once<Mutex<Vec<u8>>> = Once::new();

fn buffer() -> &'static Mutex<Vec<u8>> {
    if BUFFER.get().is_none() {
        BUFFER.set(Mutex::new(alloc::vec![0u8; SIZE]));
    }
    BUFFER.get().expect("mymem buffer")
}

fn check_range(offset: u64, len: usize) -> Result<usize, Errno> {
    let end = offset.checked_add(len as u64).ok_or(Errno::EINVAL)?;
    if end > SIZE as u64 {
        return Err(Errno::EINVAL);
    }
    Ok(offset as usize)
}

/// Copies `buf.len()` bytes from `offset` (kernel interface, for tests).
pub fn read(offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
    let start = check_range(offset, buf.len())?;
    buf.copy_from_slice(&buffer().lock()[start..start + buf.len()]);
    Ok(buf.len())
}

/// Copies `data` to `offset` (kernel interface, for tests).
pub fn write(offset: u64, data: &[u8]) -> Result<usize, Errno> {
    let start = check_range(offset, data.len())?;
    buffer().lock()[start..start + data.len()].copy_from_slice(data);
    Ok(data.len())
}

/// Atomically adds `value` to the little-endian u64 at `offset` (which
/// must be 8-byte aligned); returns the new value.
pub fn atomic_add(offset: u64, value: u64) -> Result<u64, Errno> {
    if !offset.is_multiple_of(8) {
        return Err(Errno::EINVAL);
    }
    let start = check_range(offset, 8)?;
    let mut b = buffer().lock();
    let cur = u64::from_le_bytes(b[start..start + 8].try_into().map_err(|_| Errno::EINVAL)?);
    let new = cur.wrapping_add(value);
    b[start..start + 8].copy_from_slice(&new.to_le_bytes());
    Ok(new)
}

pub struct MyMem;

impl FileOps for MyMem {
    fn read_at(&self, offset: u64, buf: &mut [u8], _nonblock: bool) -> Result<usize, Errno> {
        read(offset, buf)
    }

    fn write_at(&self, offset: u64, buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        write(offset, buf)
    }

    fn size(&self) -> Option<u64> {
        Some(SIZE as u64)
    }

    fn seek_limit(&self) -> Option<u64> {
        Some(SIZE as u64)
    }

    fn ioctl(&self, cmd: u32, arg: u64, vm: &Vm) -> Result<u64, Errno> {
        match cmd {
            MYMEM_IOC_ADD => {
                let mut req = [0u8; 24];
                uaccess::read_bytes(vm, arg, &mut req)?;
                let offset = u64::from_le_bytes(req[0..8].try_into().map_err(|_| Errno::EINVAL)?);
                let value = u64::from_le_bytes(req[8..16].try_into().map_err(|_| Errno::EINVAL)?);
                let result = atomic_add(offset, value)?;
                uaccess::write_u64(vm, arg + 16, result)?;
                Ok(0)
            }
            _ => Err(Errno::ENOTTY),
        }
    }

    fn mode(&self) -> u32 {
        S_IFCHR | 0o666
    }
}

pub fn open(_flags: u32) -> Result<Arc<dyn FileOps>, Errno> {
    Ok(Arc::new(MyMem))
}
