//! Uncached kernel mappings of device memory (BARs, MSI-X tables, ECAM).
//!
//! A [`Window`] maps a physical range that is *not* RAM into its own
//! region of the kernel half, page by page, uncached. The check that it is
//! not RAM is here and nowhere else: a window is refused if it touches any
//! range the firmware memory map lists as RAM (usable, ACPI, bad) or the
//! first MiB, so no device window can alias memory the kernel hands out.
//! Virtual space is never reused: a stale address faults instead of
//! reaching another device.

use core::sync::atomic::{AtomicU64, Ordering};

use kiln_util::memmap::RegionKind;

use crate::mm::{PhysAddr, PAGE_SIZE};

/// Where device windows are mapped: one PML4 slot (512 GiB) of its own.
const WINDOW_REGION: u64 = 0xffff_d000_0000_0000;
const WINDOW_REGION_END: u64 = WINDOW_REGION + (1 << 39);

static NEXT_VIRT: AtomicU64 = AtomicU64::new(WINDOW_REGION);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowError {
    /// Empty, overflowing, or past the 52-bit physical address space.
    BadRange,
    /// The range overlaps RAM.
    IsRam,
    /// No virtual space or no memory for page tables.
    NoSpace,
}

/// A mapped device range; unmapped on drop.
#[derive(Debug)]
pub(crate) struct Window {
    virt: u64,
    /// Offset of the requested start inside the first page.
    lead: u64,
    pages: u64,
    len: u64,
}

/// Whether `[start, end)` touches RAM or the first MiB.
pub(crate) fn overlaps_ram(start: u64, end: u64) -> bool {
    start < 0x10_0000
        || crate::mm::memory_map().regions().iter().any(|r| {
            matches!(r.kind, RegionKind::Usable | RegionKind::AcpiReclaimable | RegionKind::AcpiNvs | RegionKind::Bad)
                && r.start < end
                && start < r.end
        })
}

impl Window {
    pub(crate) fn map(phys: u64, len: u64) -> Result<Window, WindowError> {
        let end = phys.checked_add(len).filter(|&e| len > 0 && e <= 1 << 52).ok_or(WindowError::BadRange)?;
        if overlaps_ram(phys, end) {
            return Err(WindowError::IsRam);
        }
        let first = phys & !(PAGE_SIZE - 1);
        let pages = (end - first).div_ceil(PAGE_SIZE);
        let virt = NEXT_VIRT.fetch_add(pages * PAGE_SIZE + PAGE_SIZE, Ordering::Relaxed);
        if virt + pages * PAGE_SIZE > WINDOW_REGION_END {
            return Err(WindowError::NoSpace);
        }
        crate::paging::map_kernel_device(virt, PhysAddr(first), pages).map_err(|_| WindowError::NoSpace)?;
        Ok(Window { virt, lead: phys - first, pages, len })
    }

    /// The kernel address of byte `offset`, which the caller has checked
    /// against [`Window::len`].
    pub(crate) fn addr(&self, offset: u64) -> u64 {
        debug_assert!(offset < self.len);
        self.virt + self.lead + offset
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        crate::paging::unmap_kernel_device(self.virt, self.pages);
    }
}
