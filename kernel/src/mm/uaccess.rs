//! Reading and writing user memory from system calls.
//!
//! The hardware layer's checked copies stop at the first fault. A fault on
//! a page that a VMA allows (not yet touched, or shared copy-on-write) is
//! resolved here and the copy resumes; anything else is EFAULT.

use alloc::string::String;
use alloc::vec::Vec;

use hal::user::{copy_from_user, copy_to_user};
use linux_abi::errno::Errno;

use super::aspace::{FaultAccess, Vm};

/// The top of the range a user buffer may span: Linux's TASK_SIZE_MAX,
/// one page under the end of the user half.
pub const TASK_SIZE_MAX: u64 = hal::paging::USER_END - 4096;

/// Linux's `access_ok`: whether `len` bytes at `addr` lie in the user
/// range at all. Calls that never touch a buffer (a write to /dev/null)
/// still refuse one that fails this with EFAULT, as Linux does.
pub fn access_ok(addr: u64, len: usize) -> bool {
    addr.checked_add(len as u64).is_some_and(|end| end <= TASK_SIZE_MAX)
}

/// Copies `buf.len()` bytes from user address `addr`.
pub fn read_bytes(vm: &Vm, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
    read_bytes_with(|| Ok(vm.clone()), addr, buf)
}

/// Copies `data` to user address `addr`.
pub fn write_bytes(vm: &Vm, addr: u64, data: &[u8]) -> Result<(), Errno> {
    write_bytes_with(|| Ok(vm.clone()), addr, data)
}

/// `read_bytes` for callers that have not looked the address space up:
/// `vm` is called only if the copy faults, so the common case takes no
/// lock and no reference.
#[inline]
pub fn read_bytes_with(vm: impl FnOnce() -> Result<Vm, Errno>, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
    match copy_from_user(buf, addr) {
        Ok(()) => Ok(()),
        Err(fault) => read_resuming(LazyVm::new(vm), addr, buf, fault.addr),
    }
}

/// `write_bytes` with the address space looked up on the first fault only.
#[inline]
pub fn write_bytes_with(vm: impl FnOnce() -> Result<Vm, Errno>, addr: u64, data: &[u8]) -> Result<(), Errno> {
    write_until_stuck(vm, addr, data).map_err(|(_, e)| e)
}

/// `write_bytes_with` that reports how far it got: the bytes copied
/// before a fault the address space cannot resolve, for calls that
/// return a short count instead of EFAULT once some bytes landed.
pub fn write_prefix_with(vm: impl FnOnce() -> Result<Vm, Errno>, addr: u64, data: &[u8]) -> usize {
    match write_until_stuck(vm, addr, data) {
        Ok(()) => data.len(),
        Err((at, _)) => (at - addr) as usize,
    }
}

/// `read_bytes_with` that reports how far it got: the bytes copied
/// before a fault the address space cannot resolve.
pub fn read_prefix_with(vm: impl FnOnce() -> Result<Vm, Errno>, addr: u64, buf: &mut [u8]) -> usize {
    let fault = match copy_from_user(buf, addr) {
        Ok(()) => return buf.len(),
        Err(f) => f.addr,
    };
    let mut space = LazyVm::new(vm);
    let mut fault = fault;
    loop {
        let done = (fault - addr) as usize;
        if space.fault_in(fault, FaultAccess::Read).is_err() {
            return done;
        }
        match copy_from_user(&mut buf[done..], fault) {
            Ok(()) => return buf.len(),
            Err(f) => fault = f.addr,
        }
    }
}

/// The copy both of the above make: on failure, where it stopped.
#[inline]
fn write_until_stuck(vm: impl FnOnce() -> Result<Vm, Errno>, addr: u64, data: &[u8]) -> Result<(), (u64, Errno)> {
    match copy_to_user(addr, data) {
        Ok(()) => Ok(()),
        Err(fault) => write_resuming(LazyVm::new(vm), addr, data, fault.addr),
    }
}

/// Resolves the fault at `fault` and copies the rest, resolving faults
/// until it is done; bytes before `fault` were copied already.
#[inline(never)]
fn read_resuming(
    mut space: LazyVm<impl FnOnce() -> Result<Vm, Errno>>,
    addr: u64,
    buf: &mut [u8],
    mut fault: u64,
) -> Result<(), Errno> {
    loop {
        space.fault_in(fault, FaultAccess::Read)?;
        let done = (fault - addr) as usize;
        match copy_from_user(&mut buf[done..], fault) {
            Ok(()) => return Ok(()),
            Err(f) => fault = f.addr,
        }
    }
}

/// `read_resuming` for copies to user memory; a failure also says where
/// the copy stopped.
#[inline(never)]
fn write_resuming(
    mut space: LazyVm<impl FnOnce() -> Result<Vm, Errno>>,
    addr: u64,
    data: &[u8],
    mut fault: u64,
) -> Result<(), (u64, Errno)> {
    loop {
        space.fault_in(fault, FaultAccess::Write).map_err(|e| (fault, e))?;
        let done = (fault - addr) as usize;
        match copy_to_user(fault, &data[done..]) {
            Ok(()) => return Ok(()),
            Err(f) => fault = f.addr,
        }
    }
}

/// An address space fetched the first time a fault needs it.
struct LazyVm<F> {
    get: Option<F>,
    vm: Option<Vm>,
}

impl<F: FnOnce() -> Result<Vm, Errno>> LazyVm<F> {
    fn new(get: F) -> Self {
        LazyVm { get: Some(get), vm: None }
    }

    /// Resolves a demand or copy-on-write fault at `addr`; EFAULT if the
    /// address space does not allow the access.
    fn fault_in(&mut self, addr: u64, access: FaultAccess) -> Result<(), Errno> {
        if self.vm.is_none() {
            let get = self.get.take().ok_or(Errno::EFAULT)?;
            self.vm = Some(get()?);
        }
        let vm = self.vm.as_ref().ok_or(Errno::EFAULT)?;
        vm.lock().handle_fault(addr, access).map_err(|_| Errno::EFAULT)
    }
}

/// Copies from user memory without resolving a fault: for callers that
/// hold a spin lock (a pipe copying straight into its ring). On a fault,
/// returns the address it stopped at (bytes before it were copied); the
/// caller drops its lock, calls `fault_in` and tries again.
#[inline]
pub fn copy_in_nofault(dst: &mut [u8], addr: u64) -> Result<(), u64> {
    copy_from_user(dst, addr).map_err(|f| f.addr)
}

/// `copy_in_nofault` towards user memory.
#[inline]
pub fn copy_out_nofault(addr: u64, src: &[u8]) -> Result<(), u64> {
    copy_to_user(addr, src).map_err(|f| f.addr)
}

/// Resolves a demand or copy-on-write fault at `addr` for a read
/// (`write == false`) or a write of user memory; EFAULT if the address
/// space does not allow it. `vm` is called once.
pub fn fault_in(vm: impl FnOnce() -> Result<Vm, Errno>, addr: u64, write: bool) -> Result<(), Errno> {
    let access = if write { FaultAccess::Write } else { FaultAccess::Read };
    LazyVm::new(vm).fault_in(addr, access)
}

/// Atomically replaces the u32 at `addr` with `new` if it holds
/// `expected`; returns the value found. Faults in the page first if it
/// must (a write fault, so copy-on-write pages are broken).
pub fn cmpxchg_u32(vm: &Vm, addr: u64, expected: u32, new: u32) -> Result<u32, Errno> {
    if !addr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    // One fault to resolve is the normal worst case; a page that a racing
    // munmap keeps taking away ends in EFAULT rather than a loop.
    for _ in 0..4 {
        match hal::user::cmpxchg_u32(addr, expected, new) {
            Ok(found) => return Ok(found),
            Err(fault) => {
                vm.lock().handle_fault(fault.addr, FaultAccess::Write).map_err(|_| Errno::EFAULT)?;
            }
        }
    }
    Err(Errno::EFAULT)
}

pub fn read_u64(vm: &Vm, addr: u64) -> Result<u64, Errno> {
    let mut b = [0u8; 8];
    read_bytes(vm, addr, &mut b)?;
    Ok(u64::from_le_bytes(b))
}

pub fn read_u32(vm: &Vm, addr: u64) -> Result<u32, Errno> {
    let mut b = [0u8; 4];
    read_bytes(vm, addr, &mut b)?;
    Ok(u32::from_le_bytes(b))
}

pub fn write_u64(vm: &Vm, addr: u64, value: u64) -> Result<(), Errno> {
    write_bytes(vm, addr, &value.to_le_bytes())
}

pub fn write_u32(vm: &Vm, addr: u64, value: u32) -> Result<(), Errno> {
    write_bytes(vm, addr, &value.to_le_bytes())
}

/// Reads a NUL-terminated string of at most `max` bytes (ENAMETOOLONG
/// beyond), as Linux does for paths and exec arguments.
pub fn read_cstring(vm: &Vm, addr: u64, max: usize) -> Result<String, Errno> {
    let bytes = read_cstring_bytes(vm, addr, max)?;
    String::from_utf8(bytes).or_else(|e| {
        // Linux paths are bytes; keep them lossless as far as UTF-8 allows.
        Ok(String::from_utf8_lossy(e.as_bytes()).into_owned())
    })
}

/// The bytes `read_cstring_bytes` copies at a time.
const CSTRING_CHUNK: usize = 256;

/// Reads a NUL-terminated string of at most `max` bytes (ENAMETOOLONG past
/// that), as the bytes it is.
pub fn read_cstring_bytes(vm: &Vm, addr: u64, max: usize) -> Result<Vec<u8>, Errno> {
    let mut out: Vec<u8> = Vec::new();
    let mut cursor = addr;
    // Paths are short: a small buffer, read again for long strings, costs
    // less than clearing and filling a page-sized one for every path.
    let mut buf = [0u8; CSTRING_CHUNK];
    loop {
        // Never past the end of the page, so we never fault past the string.
        let chunk = ((4096 - (cursor % 4096)) as usize).min(CSTRING_CHUNK);
        read_bytes(vm, cursor, &mut buf[..chunk])?;
        if let Some(nul) = buf[..chunk].iter().position(|&b| b == 0) {
            out.try_reserve(nul).map_err(|_| Errno::ENOMEM)?;
            out.extend_from_slice(&buf[..nul]);
            break;
        }
        out.try_reserve(chunk).map_err(|_| Errno::ENOMEM)?;
        out.extend_from_slice(&buf[..chunk]);
        if out.len() > max {
            return Err(Errno::ENAMETOOLONG);
        }
        cursor += chunk as u64;
    }
    if out.len() > max {
        return Err(Errno::ENAMETOOLONG);
    }
    Ok(out)
}
