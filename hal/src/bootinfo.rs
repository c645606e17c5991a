//! What the boot loader told us, in one loader-independent structure.
//!
//! PVH (QEMU `-kernel`) and multiboot2 (GRUB) describe memory, the command
//! line and modules differently; the parsers in [`kiln_util`] read both and
//! this module copies the results into a [`BootInfo`] that outlives the
//! loader's memory.

use kiln_util::memmap::MemoryMap;
use kiln_util::{multiboot2, pvh};

use core::sync::atomic::{AtomicU32, Ordering};

use crate::mm::{PhysAddr, DIRECT_MAP_BASE, PAGE_SIZE};
use crate::sync::Once;

/// Linux's `COMMAND_LINE_SIZE` on x86: a longer line is cut there (and
/// the kernel says so at boot).
const CMDLINE_MAX: usize = 2048;
pub const MAX_MODULES: usize = 8;
const _: () = assert!(MAX_MODULES <= 32, "TAKEN has one bit per module");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootLoader {
    Pvh,
    Multiboot2,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct BootModule {
    pub start: PhysAddr,
    pub len: u64,
    /// Whether the firmware listed the module's memory as usable RAM,
    /// so its frames may go to the frame allocator once it is read.
    in_ram: bool,
}

/// Which modules have been taken (bit i for module i): each is handed
/// out once, so no one else can hold its bytes when its frames are freed.
static TAKEN: AtomicU32 = AtomicU32::new(0);

/// A boot module's contents, owned by whoever took it. Its bytes are read
/// front to back; [`TakenModule::consume`] gives the frames behind the
/// read position back to the frame allocator, and dropping it gives back
/// the rest, so an initramfs's memory is free again once it is unpacked
/// (and partly free while it is).
pub struct TakenModule {
    start: PhysAddr,
    len: u64,
    /// Bytes consumed from the front.
    pos: u64,
    /// End of the frames given back so far (physical), or `start` when
    /// the module's memory is not RAM the allocator may have.
    released: u64,
    in_ram: bool,
}

impl TakenModule {
    /// Total length of the module.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The bytes not consumed yet.
    pub fn rest(&self) -> &[u8] {
        let n = (self.len - self.pos) as usize;
        if n == 0 {
            return &[];
        }
        // The module's frames were reserved at boot and, from `pos` on, not
        // given back yet (`consume` frees only frames wholly before `pos`);
        // this value is the module's only owner (`take` hands each module
        // out once), and the slice borrows it. The direct map covers all RAM.
        // SAFETY: the frames behind the slice are live and unshared for as long as it borrows `self` (see above).
        unsafe { core::slice::from_raw_parts((self.start.0 + self.pos + DIRECT_MAP_BASE) as *const u8, n) }
    }

    /// Marks `n` more bytes consumed and gives back every frame that now
    /// lies wholly before the read position.
    pub fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n as u64).min(self.len);
        self.release_upto(self.start.0 + self.pos);
    }

    fn release_upto(&mut self, end: u64) {
        if !self.in_ram {
            return;
        }
        // Only frames wholly inside the module: an edge frame may hold
        // loader data beside it.
        let first = self.released.next_multiple_of(PAGE_SIZE);
        let last = end / PAGE_SIZE * PAGE_SIZE;
        if last > first {
            crate::mm::give_boot_frames(PhysAddr(first), (last - first) / PAGE_SIZE);
            self.released = last;
        }
    }
}

impl Drop for TakenModule {
    fn drop(&mut self) {
        self.pos = self.len;
        self.release_upto(self.start.0 + self.len);
    }
}

/// Everything the kernel learns about the machine at boot.
pub struct BootInfo {
    pub loader: BootLoader,
    pub memory_map: MemoryMap,
    cmdline: [u8; CMDLINE_MAX],
    cmdline_len: usize,
    /// The loader's line was longer than [`CMDLINE_MAX`].
    cmdline_cut: bool,
    modules: [BootModule; MAX_MODULES],
    module_count: usize,
    pub rsdp: Option<PhysAddr>,
    /// The CPUs and IO APIC the ACPI MADT lists.
    pub acpi: crate::acpi::AcpiFacts,
    pub cpu: crate::cpu::CpuInfo,
    pub tsc_hz: u64,
    pub apic_timer_hz: u32,
    pub x2apic: bool,
    /// TSC when the kernel first ran: the origin of the boot-time figures.
    pub boot_tsc: u64,
    /// Physical end of the kernel image.
    pub kernel_end: PhysAddr,
}

impl BootInfo {
    pub fn command_line(&self) -> &str {
        let bytes = &self.cmdline[..self.cmdline_len];
        // A cut can split a UTF-8 sequence: keep what decodes.
        match core::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
        }
    }

    /// Whether the loader's command line was longer than the kernel keeps
    /// (2048 bytes, as Linux on x86), so [`BootInfo::command_line`] is its start.
    pub fn command_line_cut(&self) -> bool {
        self.cmdline_cut
    }

    pub fn modules(&self) -> &[BootModule] {
        &self.modules[..self.module_count]
    }

    /// Takes module `index` (the first is the initramfs), once: a second
    /// call, or a bad index, gives `None`.
    pub fn take_module(&self, index: usize) -> Option<TakenModule> {
        let m = *self.modules().get(index)?;
        let bit = 1u32 << index;
        if TAKEN.fetch_or(bit, Ordering::AcqRel) & bit != 0 {
            return None;
        }
        Some(TakenModule { start: m.start, len: m.len, pos: 0, released: m.start.0, in_ram: m.in_ram })
    }
}

static INFO: Once<BootInfo> = Once::new();

extern "C" {
    static __kernel_end_phys: u8;
}

/// Reads `len` bytes of physical memory below 4 GiB through the boot
/// direct map.
fn phys_bytes(paddr: u64, len: usize) -> &'static [u8] {
    assert!(paddr.saturating_add(len as u64) <= 0x1_0000_0000, "boot data above 4 GiB");
    // SAFETY: the boot page tables map the first 4 GiB at the direct-map
    // base; the loader's structures there are not written by anyone while
    // the kernel reads them during boot, and they are reserved from the
    // frame allocator before anything could reuse them.
    unsafe { core::slice::from_raw_parts(PhysAddr(paddr).to_virt() as *const u8, len) }
}

/// Like [`phys_bytes`], but None instead of a panic for ranges that are
/// not below 4 GiB (addresses from firmware tables).
fn phys_bytes_checked(paddr: u64, len: usize) -> Option<&'static [u8]> {
    (paddr.checked_add(len as u64)? <= 0x1_0000_0000).then(|| phys_bytes(paddr, len))
}

fn c_string_at(paddr: u64) -> &'static [u8] {
    // One byte more than is kept, so a line that does not fit shows.
    let bytes = phys_bytes(paddr, (CMDLINE_MAX + 1).min((0x1_0000_0000 - paddr) as usize));
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

/// Parses the loader's information. Runs once on the boot CPU, before the
/// heap exists; the caller keeps the result on the boot stack until
/// [`finish`] publishes it.
pub(crate) fn collect(magic: u32, info_paddr: u64, boot_tsc: u64) -> BootInfo {
    let mut info = BootInfo {
        loader: BootLoader::Pvh,
        memory_map: MemoryMap::new(),
        cmdline: [0; CMDLINE_MAX],
        cmdline_len: 0,
        cmdline_cut: false,
        modules: [BootModule::default(); MAX_MODULES],
        module_count: 0,
        rsdp: None,
        acpi: crate::acpi::AcpiFacts::none(),
        cpu: crate::cpu::CpuInfo::read(),
        tsc_hz: 0,
        apic_timer_hz: 0,
        x2apic: false,
        boot_tsc,
        kernel_end: PhysAddr(core::ptr::addr_of!(__kernel_end_phys) as u64),
    };
    let mut set_cmdline = |bytes: &[u8]| {
        let n = bytes.len().min(CMDLINE_MAX);
        info.cmdline[..n].copy_from_slice(&bytes[..n]);
        info.cmdline_len = n;
        info.cmdline_cut = bytes.len() > CMDLINE_MAX;
    };

    if magic == crate::boot::MULTIBOOT2_BOOTLOADER_MAGIC {
        let header = phys_bytes(info_paddr, 8);
        let size = multiboot2::BootInfo::total_size(header).expect("multiboot2 info header") as usize;
        let mb = multiboot2::BootInfo::parse(phys_bytes(info_paddr, size)).expect("bad multiboot2 info");
        if let Some(cmd) = mb.command_line() {
            set_cmdline(cmd.as_bytes());
        }
        info.loader = BootLoader::Multiboot2;
        mb.memory_map(&mut info.memory_map).expect("multiboot2 memory map");
        for m in mb.modules().take(MAX_MODULES) {
            info.modules[info.module_count] = BootModule {
                start: PhysAddr(u64::from(m.start)),
                len: u64::from(m.end.saturating_sub(m.start)),
                in_ram: false,
            };
            info.module_count += 1;
        }
        info.acpi = crate::acpi::read_facts(
            mb.rsdp().map_or(crate::acpi::RsdpSource::Search, crate::acpi::RsdpSource::Bytes),
            phys_bytes_checked,
        );
        // The info structure itself must survive until we are done with it.
        let _ = info.memory_map.reserve(info_paddr, info_paddr + size as u64);
    } else {
        let start = pvh::StartInfo::parse(phys_bytes(info_paddr, pvh::StartInfo::SIZE))
            .expect("no PVH start info and no multiboot2 magic");
        if start.cmdline_paddr != 0 {
            set_cmdline(c_string_at(start.cmdline_paddr));
        }
        let entries = start.memmap_entries as usize;
        pvh::parse_memmap(phys_bytes(start.memmap_paddr, entries * pvh::MEMMAP_ENTRY_SIZE), &mut info.memory_map)
            .expect("PVH memory map");
        for i in 0..(start.nr_modules as usize).min(MAX_MODULES) {
            let raw = phys_bytes(start.modlist_paddr + (i * pvh::MODLIST_ENTRY_SIZE) as u64, pvh::MODLIST_ENTRY_SIZE);
            if let Some(m) = pvh::parse_module(raw) {
                info.modules[info.module_count] = BootModule { start: PhysAddr(m.paddr), len: m.size, in_ram: false };
                info.module_count += 1;
            }
        }
        if start.rsdp_paddr != 0 {
            info.rsdp = Some(PhysAddr(start.rsdp_paddr));
        }
        let source = match start.rsdp_paddr {
            0 => crate::acpi::RsdpSource::Search,
            addr => crate::acpi::RsdpSource::Phys(addr),
        };
        info.acpi = crate::acpi::read_facts(source, phys_bytes_checked);
    }

    info.memory_map.normalize();
    // The kernel image, from 1 MiB up: the loader put it in usable RAM.
    let _ = info.memory_map.reserve(0x10_0000, info.kernel_end.0);
    // Modules (the initramfs) stay where the loader put them until the
    // kernel has read them; only those in usable RAM may be freed then.
    for i in 0..info.module_count {
        let m = info.modules[i];
        let end = m.start.0.saturating_add(m.len);
        info.modules[i].in_ram = info.memory_map.usable_pages().any(|r| r.start <= m.start.0 && end <= r.end);
    }
    for m in &info.modules[..info.module_count] {
        let _ = info.memory_map.reserve(m.start.0, m.start.0 + m.len);
    }
    info
}

/// Marks the loader data the kernel keeps using as taken.
pub(crate) fn reserve_boot_ranges(info: &BootInfo) {
    crate::mm::reserve_range(0x10_0000, info.kernel_end.0);
    crate::mm::reserve_range(crate::smp::TRAMPOLINE_PHYS, crate::smp::TRAMPOLINE_PHYS + 4096);
    for m in info.modules() {
        crate::mm::reserve_range(m.start.0, m.start.0 + m.len);
    }
}

/// Adds the CPU and timer facts and publishes the structure.
pub(crate) fn finish(
    mut info: BootInfo,
    cpu: crate::cpu::CpuInfo,
    tsc_hz: u64,
    apic_timer_hz: u32,
    x2apic: bool,
) -> &'static BootInfo {
    info.cpu = cpu;
    info.tsc_hz = tsc_hz;
    info.apic_timer_hz = apic_timer_hz;
    info.x2apic = x2apic;
    INFO.set(info);
    get()
}

pub(crate) fn get() -> &'static BootInfo {
    INFO.get().expect("boot info not published")
}
