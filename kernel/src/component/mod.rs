//! Components (issue 15, docs/components.md): the component table, the
//! global layout, capabilities, and the loader of the component images
//! `make` builds from `components/` and this kernel embeds.
//!
//! Each component lives in its own protection domain, a user-mode page
//! table holding only its slot of the global layout: its image, its heap
//! window and one stack per thread that may be inside it at once. Slots
//! never overlap, so any set of components can share one page table
//! (`domain`: merge and split). A component reaches another only
//! through a capability: index `i` of its capability list names the
//! component whose interface it was given. The invocation path is in
//! `invoke`; a faulted component's micro-reboot in `reboot`.

mod control;
pub mod domain;
pub mod fault;
mod invoke;
mod reboot;
pub mod stats;
#[cfg(feature = "ktest")]
pub use reboot::RESTART_BUDGET;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use hal::frame::FreshFrame;
use hal::mm::PAGE_SIZE;
use hal::paging::{PageTable, PteFlags};
use hal::sync::Once;
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};
use object::LittleEndian as LE;

#[cfg(feature = "ktest")]
pub use invoke::invoke_from_kernel;
pub use invoke::syscall_invoke;

/// The Kiln-only system calls, chosen far above Linux's table (about 460
/// numbers) and below the x32 bit (0x4000_0000): Linux answers both with
/// ENOSYS, and no Linux number will reach them. `NR_INVOKE` is the one
/// path into another domain; `NR_RETURN` is only meaningful inside a
/// component, ending the invocation it serves.
pub const NR_INVOKE: u64 = 0x0100_0000;
pub const NR_RETURN: u64 = 0x0100_0001;
/// The operation a component is entered with to run its init (the
/// runtime's `OP_INIT`); callers cannot name it (ENOSYS).
pub const OP_INIT: u64 = 1 << 63;

/// The global layout: component `i` owns `SLOT_SIZE` bytes from
/// `LAYOUT_BASE + i * SLOT_SIZE` (64 GiB up, clear of where Linux puts a
/// program, its heap, mmaps and stack). In a slot: the image from the
/// start, below `HEAP_OFFSET`; the heap window; the stacks.
pub const LAYOUT_BASE: u64 = 0x10_0000_0000;
pub const SLOT_SIZE: u64 = 0x1_0000_0000;
const HEAP_OFFSET: u64 = 0x4000_0000;
const HEAP_SIZE: u64 = 256 * 1024;
const STACKS_OFFSET: u64 = 0x8000_0000;
/// Each stack sits above an unmapped guard page.
const STACK_SIZE: u64 = 16 * 1024;
const STACK_STRIDE: u64 = STACK_SIZE + PAGE_SIZE;
/// How many threads may be inside one component at once.
pub const STACK_SLOTS: u32 = 8;

/// One embedded image: its name, its ELF file, and the components whose
/// interfaces it is given (its capability list, in order). The index in
/// `IMAGES` is the slot in the global layout (xtask `COMPONENTS`).
struct Image {
    name: &'static str,
    elf: &'static [u8],
    grants: &'static [&'static str],
}

/// An embedded file, 8-byte aligned as the ELF parser needs its headers.
#[repr(C, align(8))]
struct Aligned<T: ?Sized>(T);

static CALC_ELF: &Aligned<[u8]> = &Aligned(*include_bytes!("../../../build/components/calc.elf"));
static CLIENT_ELF: &Aligned<[u8]> = &Aligned(*include_bytes!("../../../build/components/client.elf"));

static IMAGES: &[Image] = &[
    Image { name: "calc", elf: &CALC_ELF.0, grants: &[] },
    Image { name: "client", elf: &CLIENT_ELF.0, grants: &["calc"] },
];

/// The capabilities every Linux process holds, in order: for now one
/// boot-time list for all (capabilities per process come with the
/// command-line tool of part 1).
const PROCESS_GRANTS: &[&str] = &["calc", "client"];

pub struct Component {
    pub name: &'static str,
    pub slot: usize,
    domain: Arc<PageTable>,
    entry: u64,
    /// Capability index -> component index.
    caps: Vec<usize>,
    /// Bit `i` set: stack `i` is in use by a thread inside.
    stacks_busy: AtomicU32,
    /// Invocations served, and those that ended in a fault.
    pub invocations: AtomicU64,
    pub faults: AtomicU64,
    /// Its state, restart budget and pristine image (micro-reboot).
    pub life: reboot::Life,
}

impl Component {
    fn stack_top(&self, index: u32) -> u64 {
        slot_base(self.slot) + STACKS_OFFSET + u64::from(index) * STACK_STRIDE + PAGE_SIZE + STACK_SIZE
    }

    /// A free stack for a thread entering, if any.
    fn take_stack(&self) -> Option<u32> {
        let mut busy = self.stacks_busy.load(Ordering::Relaxed);
        loop {
            let free = !busy & ((1 << STACK_SLOTS) - 1);
            if free == 0 {
                return None;
            }
            let index = free.trailing_zeros();
            match self.stacks_busy.compare_exchange_weak(busy, busy | 1 << index, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return Some(index),
                Err(now) => busy = now,
            }
        }
    }

    fn release_stack(&self, index: u32) {
        self.stacks_busy.fetch_and(!(1 << index), Ordering::Release);
    }

    /// How many threads are inside now.
    #[cfg(feature = "ktest")]
    pub fn stacks_in_use(&self) -> u32 {
        self.stacks_busy.load(Ordering::Relaxed).count_ones()
    }

    /// Whether the component's domain maps the page at `va`.
    #[cfg(feature = "ktest")]
    pub fn maps(&self, va: u64) -> bool {
        self.domain.query(va & !(PAGE_SIZE - 1)).is_some()
    }

    /// The capability list: index -> component.
    #[cfg(feature = "ktest")]
    pub fn caps(&self) -> &[usize] {
        &self.caps
    }
}

fn slot_base(slot: usize) -> u64 {
    LAYOUT_BASE + slot as u64 * SLOT_SIZE
}

struct Table {
    components: Vec<Component>,
    process_caps: Vec<usize>,
}

static TABLE: Once<Table> = Once::new();

/// The loaded components (empty if loading failed at boot).
pub fn components() -> &'static [Component] {
    TABLE.get().map_or(&[], |t| &t.components)
}

fn process_caps() -> &'static [usize] {
    TABLE.get().map_or(&[], |t| &t.process_caps)
}

/// User frames the components' domains hold (the exit check's leak
/// count leaves them out, as it does the vDSO's).
pub fn frames() -> usize {
    components().iter().map(|c| c.domain.resident_pages() as usize).sum::<usize>() + domain::frames()
}

/// Page-table frames of the components' domains, roots included.
pub fn table_frames() -> u64 {
    components().iter().map(|c| c.domain.table_frames()).sum::<u64>() + domain::table_frames()
}

/// The index of the component called `name`.
pub fn find(name: &str) -> Option<usize> {
    IMAGES.iter().position(|i| i.name == name)
}

/// Loads every embedded image into a domain of its own. A component that
/// cannot be loaded leaves the table empty: nothing is half there.
pub fn init() {
    match load_all() {
        Ok(table) => {
            log::info!("components: {} loaded, each in a domain of its own", table.components.len());
            TABLE.set(table);
            crate::fs::procfs::register("kiln/components", stats::proc_text);
        }
        Err(e) => log::warn!("components: not loaded ({e})"),
    }
}

fn load_all() -> Result<Table, &'static str> {
    let mut components = Vec::new();
    components.try_reserve_exact(IMAGES.len()).map_err(|_| "out of memory")?;
    if IMAGES.len() > stats::MAX_COMPONENTS {
        return Err("more images than the edge table has room for");
    }
    for (slot, image) in IMAGES.iter().enumerate() {
        let mut caps = Vec::new();
        for grant in image.grants {
            caps.push(find(grant).ok_or("a grant names no component")?);
        }
        let (domain, entry) = load(slot, image.elf)?;
        domain::map_link_pages(&domain, slot)?;
        let life = reboot::Life::new(&domain, slot)?;
        components.push(Component {
            name: image.name,
            slot,
            domain: Arc::new(domain),
            entry,
            caps,
            stacks_busy: AtomicU32::new(0),
            invocations: AtomicU64::new(0),
            faults: AtomicU64::new(0),
            life,
        });
    }
    let mut process_caps = Vec::new();
    for grant in PROCESS_GRANTS {
        process_caps.push(find(grant).ok_or("a grant names no component")?);
    }
    Ok(Table { components, process_caps })
}

/// Builds the domain of the component in `slot` from its image: the
/// loadable segments at their link addresses, which must lie in the
/// image part of the slot, then the heap window and the stacks.
fn load(slot: usize, image: &[u8]) -> Result<(PageTable, u64), &'static str> {
    let header = elf::FileHeader64::<LE>::parse(image).map_err(|_| "bad ELF header")?;
    let endian = header.endian().map_err(|_| "bad ELF header")?;
    if header.e_machine(endian) != elf::EM_X86_64 || header.e_type(endian) != elf::ET_EXEC {
        return Err("not a static x86_64 executable");
    }
    let phdrs = header.program_headers(endian, image).map_err(|_| "bad program headers")?;
    let base = slot_base(slot);
    let image_end = base + HEAP_OFFSET;
    let entry = header.e_entry(endian);
    if !(base..image_end).contains(&entry) {
        return Err("entry point outside the component's slot");
    }
    let domain = PageTable::new().map_err(|_| "out of memory")?;
    // Pages first, in order, so segments sharing a page share its frame
    // (and the union of their permissions).
    let mut pages: Vec<(u64, FreshFrame, PteFlags)> = Vec::new();
    for ph in phdrs.iter().filter(|p| p.p_type(endian) == elf::PT_LOAD) {
        let (vaddr, memsz) = (ph.p_vaddr(endian), ph.p_memsz(endian));
        let (offset, filesz) = (ph.p_offset(endian), ph.p_filesz(endian));
        let end = vaddr.checked_add(memsz).ok_or("segment wraps")?;
        if vaddr < base || end > image_end || filesz > memsz {
            return Err("segment outside the component's slot");
        }
        let data = offset
            .checked_add(filesz)
            .and_then(|e| image.get(offset as usize..e as usize))
            .ok_or("segment past the end of the file")?;
        let flags = ph.p_flags(endian);
        let perm = PteFlags { accessible: true, writable: flags & elf::PF_W != 0, executable: flags & elf::PF_X != 0 };
        let mut page = vaddr & !(PAGE_SIZE - 1);
        while page < end {
            let index = match pages.iter().position(|(va, _, _)| *va == page) {
                Some(i) => i,
                None => {
                    let mut frame = FreshFrame::alloc().map_err(|_| "out of memory")?;
                    frame.bytes_mut().fill(0);
                    pages.try_reserve(1).map_err(|_| "out of memory")?;
                    pages.push((page, frame, PteFlags { accessible: true, writable: false, executable: false }));
                    pages.len() - 1
                }
            };
            let held = &mut pages[index];
            held.2.writable |= perm.writable;
            held.2.executable |= perm.executable;
            // The part of the segment's file bytes in this page.
            let from = page.max(vaddr);
            let to = (page + PAGE_SIZE).min(vaddr + filesz);
            if from < to {
                let src = &data[(from - vaddr) as usize..(to - vaddr) as usize];
                let at = (from - page) as usize;
                held.1.bytes_mut()[at..at + src.len()].copy_from_slice(src);
            }
            page += PAGE_SIZE;
        }
    }
    for (va, frame, perm) in pages {
        domain.map(va, frame.into_frame(), perm).map_err(|_| "out of memory")?;
    }
    let rw = PteFlags { accessible: true, writable: true, executable: false };
    let zeroed = || hal::frame::UserFrame::alloc_zeroed().map_err(|_| "out of memory");
    for page in (0..HEAP_SIZE).step_by(PAGE_SIZE as usize) {
        domain.map(base + HEAP_OFFSET + page, zeroed()?, rw).map_err(|_| "out of memory")?;
    }
    for index in 0..u64::from(STACK_SLOTS) {
        let bottom = base + STACKS_OFFSET + index * STACK_STRIDE + PAGE_SIZE;
        for page in (0..STACK_SIZE).step_by(PAGE_SIZE as usize) {
            domain.map(bottom + page, zeroed()?, rw).map_err(|_| "out of memory")?;
        }
    }
    Ok((domain, entry))
}
