//! The vDSO: a small ELF shared object (built from `user/vdso/` and
//! embedded here) that every process gets mapped, with the data page it
//! reads, so `clock_gettime`, `gettimeofday`, `time` and `getcpu` cost no
//! system call.
//!
//! Both live in frames allocated once at boot and shared read-only by all
//! processes (`Backing::Special`): `[vvar]`, four pages of which the first
//! holds `kiln_util::vdso::vvar`'s fields, then `[vdso]`, the image. fork
//! copies the mappings like any other, exec maps them afresh, and
//! munmap/mremap treat them as Linux treats its special mappings.
//!
//! The data page carries the TSC-to-nanoseconds conversion the kernel's
//! own clock uses (`hal::time`) and the wall-clock offset, under a
//! sequence count: a writer makes it odd, updates, makes it even, and the
//! vDSO retries a read that saw it odd or changed.

use core::sync::atomic::{fence, Ordering};

use kiln_util::vdso::{check_image, vvar};
use linux_abi::errno::Errno;

use hal::frame::UserFrame;
use hal::sync::{Once, SpinLock};

use crate::mm::aspace::AddressSpace;
use crate::mm::vma::{Backing, Prot, SpecialMapping, Vma, VmaKind};
use crate::mm::PAGE_SIZE;

/// The image `make -C user/vdso` built (xtask builds it before the kernel).
static IMAGE: &[u8] = include_bytes!("../../build/vdso/vdso.so");

struct Vdso {
    vvar: SpecialMapping,
    text: SpecialMapping,
}

static VDSO: Once<Vdso> = Once::new();
/// Serializes writers of the data page (clock_settime on two CPUs).
static WRITER: SpinLock<()> = SpinLock::new(());

/// Copies the image into frames and fills the data page. Without memory or
/// with a broken image processes simply get no vDSO, and their C library
/// makes system calls instead; `vdso=0` on the command line asks for
/// that, as on Linux.
pub fn init(cmdline: &str) {
    if cmdline.split_whitespace().any(|w| w == "vdso=0") {
        log::info!("vdso: disabled (vdso=0)");
        return;
    }
    match build() {
        Ok(v) => {
            VDSO.set(v);
        }
        Err(e) => log::warn!("vdso: not mapped into processes ({e})"),
    }
}

fn build() -> Result<Vdso, &'static str> {
    let info = check_image(IMAGE).map_err(|_| "the embedded image is not a valid vDSO")?;
    let mut text = alloc::vec::Vec::new();
    text.try_reserve_exact(info.pages).map_err(|_| "out of memory")?;
    for chunk in IMAGE.chunks(PAGE_SIZE as usize) {
        let frame = UserFrame::alloc_zeroed().map_err(|_| "out of memory")?;
        frame.write(0, chunk);
        text.push(Some(frame));
    }
    let data = UserFrame::alloc_zeroed().map_err(|_| "out of memory")?;
    let mode = match hal::time::user_cpu_id() {
        hal::time::UserCpuId::Rdpid => vvar::CPU_RDPID,
        hal::time::UserCpuId::Rdtscp => vvar::CPU_RDTSCP,
        hal::time::UserCpuId::Syscall => vvar::CPU_SYSCALL,
    };
    data.atomic_u32(vvar::CPU_MODE).store(mode, Ordering::Relaxed);
    data.atomic_u64(vvar::TSC_EPOCH).store(hal::time::tsc_epoch(), Ordering::Relaxed);
    data.atomic_u64(vvar::TSC_MULT).store(hal::time::tsc_mult(), Ordering::Relaxed);
    let coarse = 1_000_000_000 / u64::from(crate::clock::HZ);
    data.atomic_u64(vvar::COARSE_RES).store(coarse, Ordering::Relaxed);
    // Always the TSC here. A mode without a user-mode clock would also
    // have to leave the sequence count odd: the vDSO looks at the mode only
    // when it sees the count odd (vvar.h).
    data.atomic_u32(vvar::CLOCK_MODE).store(vvar::CLOCK_TSC, Ordering::Release);
    let mut vvar_frames = alloc::vec::Vec::new();
    vvar_frames.try_reserve_exact(vvar::PAGES as usize).map_err(|_| "out of memory")?;
    vvar_frames.push(Some(data));
    vvar_frames.resize_with(vvar::PAGES as usize, || None);
    Ok(Vdso {
        vvar: SpecialMapping { name: "[vvar]", frames: vvar_frames, may_write: false, may_exec: false, pfn_map: true },
        text: SpecialMapping { name: "[vdso]", frames: text, may_write: true, may_exec: true, pfn_map: false },
    })
}

/// Frames the vDSO holds for the kernel's whole life (the end-of-run leak
/// report leaves them out).
pub fn frames() -> usize {
    VDSO.get().map_or(0, |v| v.text.frames.len() + v.vvar.frames.iter().flatten().count())
}

/// Publishes a new wall-clock offset (CLOCK_REALTIME - CLOCK_MONOTONIC).
pub fn set_realtime_base(ns: u64) {
    let Some(v) = VDSO.get() else { return };
    let Some(Some(data)) = v.vvar.frames.first() else { return };
    let _writer = WRITER.lock();
    let seq = data.atomic_u32(vvar::SEQ);
    let start = seq.load(Ordering::Relaxed);
    seq.store(start.wrapping_add(1), Ordering::Relaxed);
    fence(Ordering::Release);
    data.atomic_u64(vvar::REALTIME_BASE).store(ns, Ordering::Relaxed);
    seq.store(start.wrapping_add(2), Ordering::Release);
}

/// Maps `[vvar]` and `[vdso]` where Linux would without address
/// randomization: the highest free range below the mmap base (right
/// under the ELF interpreter, when there is one). Returns the vDSO's
/// address for AT_SYSINFO_EHDR, or `None` when there is no vDSO.
pub fn map_into(vm: &mut AddressSpace) -> Result<Option<u64>, Errno> {
    let Some(v) = VDSO.get() else { return Ok(None) };
    let len = v.vvar.len() + v.text.len();
    let start = vm.find_free(len).ok_or(Errno::ENOMEM)?;
    let text_start = start + v.vvar.len();
    let area = |start: u64, mapping: &'static SpecialMapping, prot: Prot| Vma {
        start,
        end: start + mapping.len(),
        prot,
        backing: Backing::Special { mapping, first_index: 0 },
        kind: VmaKind::Normal,
        name: None,
        flags: Default::default(),
    };
    vm.insert(area(start, &v.vvar, Prot { read: true, write: false, exec: false }))?;
    vm.insert(area(text_start, &v.text, Prot { read: true, write: false, exec: true }))?;
    Ok(Some(text_start))
}
