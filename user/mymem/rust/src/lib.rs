//! What the two programs share: the device's interface (as in
//! user/mymem/mymem.h) and the one call std has no wrapper for, ioctl.

use std::fs::File;
use std::os::fd::AsRawFd;

pub const SIZE: usize = 512 * 1024;
pub const PATH: &str = "/dev/mymem";

/// `_IOWR('m', 1, struct mymem_add)`: direction 3 << 30, size 24 << 16,
/// type 'm' << 8, number 1.
pub const MYMEM_IOC_ADD: u64 = 0xC018_6D01;

#[repr(C)]
#[derive(Default)]
pub struct MymemAdd {
    pub offset: u64,
    pub value: u64,
    pub result: u64,
}

extern "C" {
    fn ioctl(fd: i32, req: u64, ...) -> i32;
}

/// Atomically adds `value` to the counter at `offset`; returns the new
/// value. `&File` suffices because the kernel, not this process, makes the
/// read-modify-write atomic.
pub fn atomic_add(file: &File, offset: u64, value: u64) -> std::io::Result<u64> {
    let mut arg = MymemAdd { offset, value, result: 0 };
    // SAFETY: the descriptor is open for as long as `file` is borrowed, and
    // the request reads and writes exactly one `MymemAdd`, which `arg` is
    // (repr(C), the layout mymem.h declares), live across the call.
    let r = unsafe { ioctl(file.as_raw_fd(), MYMEM_IOC_ADD, &mut arg as *mut MymemAdd) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(arg.result)
}
