//! Virtual memory areas: what a range of user addresses should contain,
//! independent of which pages are present right now.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;

use hal::frame::UserFrame;
use hal::sync::SpinLock;

/// Pages of a MAP_SHARED|MAP_ANONYMOUS mapping, shared by every process
/// that maps it (fork children included).
pub struct SharedPages {
    pages: SpinLock<BTreeMap<u64, UserFrame>>,
}

impl SharedPages {
    pub fn new() -> SharedPages {
        SharedPages { pages: SpinLock::new(BTreeMap::new()) }
    }

    /// The page at `index`, created zero-filled on first use.
    pub fn page(&self, index: u64) -> Option<UserFrame> {
        if let Some(f) = self.pages.lock().get(&index) {
            return Some(f.clone());
        }
        let fresh = UserFrame::alloc_zeroed().ok()?;
        let mut pages = self.pages.lock();
        Some(pages.entry(index).or_insert(fresh).clone())
    }

    /// Whether page `index` exists (mincore).
    pub fn has_page(&self, index: u64) -> bool {
        self.pages.lock().contains_key(&index)
    }

    /// Drops pages [index, index + count) (MADV_REMOVE); the frames go
    /// once no page table maps them.
    pub fn remove_range(&self, index: u64, count: u64) {
        let gone: alloc::vec::Vec<UserFrame> = {
            let mut pages = self.pages.lock();
            let keys: alloc::vec::Vec<u64> = pages.range(index..index.saturating_add(count)).map(|(k, _)| *k).collect();
            keys.iter().filter_map(|k| pages.remove(k)).collect()
        };
        drop(gone);
    }
}

impl Default for SharedPages {
    fn default() -> Self {
        Self::new()
    }
}

/// Pages the kernel gives every process (the vDSO and its data page): the
/// same frames in every address space, for the kernel's whole life. A
/// private mapping of them copies a page on the first write, which is
/// only possible where `may_write` lets mprotect add PROT_WRITE.
pub struct SpecialMapping {
    /// The name /proc/<pid>/maps shows (`[vdso]`, `[vvar]`).
    pub name: &'static str,
    /// One entry per page; touching a `None` page raises SIGBUS (the
    /// unused pages of `[vvar]`, as on Linux).
    pub frames: alloc::vec::Vec<Option<UserFrame>>,
    /// Whether mprotect may add PROT_WRITE (Linux's VM_MAYWRITE: a
    /// debugger's breakpoint in the vDSO) and PROT_EXEC.
    pub may_write: bool,
    pub may_exec: bool,
    /// Raw kernel pages (Linux's VM_PFNMAP, the vDSO's data page):
    /// madvise cannot drop them.
    pub pfn_map: bool,
}

impl SpecialMapping {
    pub fn len(&self) -> u64 {
        self.frames.len() as u64 * crate::mm::PAGE_SIZE
    }
}

/// Something that counts the areas mapping it: a System V shared memory
/// segment's `shm_nattch`. It hears of every area made over it, by
/// shmat, fork or the split of an area (Linux's vm_ops->open), and of
/// every one that goes (vm_ops->close).
pub trait MapCounter: Send + Sync {
    fn opened(&self);
    fn closed(&self);
}

/// One area's hold on a `MapCounter`: made with the area, copied with it,
/// dropped with it. (Areas are only cloned where Linux opens one: fork,
/// split, mremap.)
pub struct Attachment(Arc<dyn MapCounter>);

impl Attachment {
    pub fn new(counter: Arc<dyn MapCounter>) -> Attachment {
        counter.opened();
        Attachment(counter)
    }
}

impl Clone for Attachment {
    fn clone(&self) -> Attachment {
        Attachment::new(self.0.clone())
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        self.0.closed();
    }
}

#[derive(Clone)]
pub enum Backing {
    /// Private zero-filled memory.
    Anonymous,
    /// Shared zero-filled memory; `first_index` is the page index of the
    /// area's start within the shared object.
    SharedAnonymous { pages: Arc<SharedPages>, first_index: u64 },
    /// A private copy of file contents: `offset` is the file offset of the
    /// area's start. An ELF segment gives `segment_end` (a file offset):
    /// bytes past it read as zero, which is how .bss shares a page with
    /// .data. A mapping made by mmap(2) gives `None`: the file's size at
    /// fault time bounds it, and a page wholly past that is SIGBUS, as on
    /// Linux.
    File { source: Arc<dyn crate::fs::Inode>, offset: u64, segment_end: Option<u64> },
    /// MAP_SHARED of a file whose data lives in page frames (tmpfs): the
    /// file's own frames are mapped, so stores reach the file and every
    /// other mapper at once. `may_write`: the file was opened for writing,
    /// so mprotect may add PROT_WRITE later.
    /// `attach`: the area is a System V shared memory attachment (shmat),
    /// counted by its segment.
    SharedFile { source: Arc<dyn crate::fs::Inode>, offset: u64, may_write: bool, attach: Option<Attachment> },
    /// Kernel-provided pages (see `SpecialMapping`); `first_index` is the
    /// page of the mapping at the area's start.
    Special { mapping: &'static SpecialMapping, first_index: u64 },
}

impl Backing {
    /// A private mapping of `source` (see `Backing::File`); the file
    /// learns it is mapped, so truncating it looks for its pages.
    pub fn file(source: Arc<dyn crate::fs::Inode>, offset: u64, segment_end: Option<u64>) -> Backing {
        source.note_mapped();
        Backing::File { source, offset, segment_end }
    }

    /// A shared mapping of `source` (see `Backing::SharedFile`).
    pub fn shared_file(source: Arc<dyn crate::fs::Inode>, offset: u64, may_write: bool) -> Backing {
        source.note_mapped();
        Backing::SharedFile { source, offset, may_write, attach: None }
    }

    /// A System V shared memory attachment of the segment's file `source`.
    pub fn shm_attach(source: Arc<dyn crate::fs::Inode>, may_write: bool, counter: Arc<dyn MapCounter>) -> Backing {
        source.note_mapped();
        Backing::SharedFile { source, offset: 0, may_write, attach: Some(Attachment::new(counter)) }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Prot {
    pub read: bool,
    pub write: bool,
    pub exec: bool,
}

impl Prot {
    pub fn from_bits(bits: u64) -> Prot {
        use linux_abi::consts::{PROT_EXEC, PROT_READ, PROT_WRITE};
        Prot {
            read: bits & PROT_READ as u64 != 0,
            write: bits & PROT_WRITE as u64 != 0,
            exec: bits & PROT_EXEC as u64 != 0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmaKind {
    Normal,
    Heap,
    /// The main thread's stack ([stack]), which grows down.
    Stack,
    /// A MAP_GROWSDOWN mapping.
    GrowsDown,
}

/// What madvise, mlock and mlockall recorded about an area (Linux's
/// VM_* flags that survive in the VMA).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VmaFlags {
    /// VM_LOCKED: pages are faulted in and stay (mlock).
    pub locked: bool,
    /// VM_LOCKONFAULT: locked, but pages come in only when touched.
    pub lock_on_fault: bool,
    /// MADV_DONTFORK: a fork child does not get this area at all.
    pub dont_fork: bool,
    /// MADV_WIPEONFORK: a fork child gets the area empty (zero-filled).
    pub wipe_on_fork: bool,
    /// MADV_DONTDUMP: left out of core dumps.
    pub dont_dump: bool,
    /// MADV_MERGEABLE (KSM candidate; Kiln merges nothing).
    pub mergeable: bool,
    /// MADV_HUGEPAGE / MADV_NOHUGEPAGE (Kiln maps 4 KiB pages only).
    pub huge_page: bool,
    pub no_huge_page: bool,
    /// MADV_RANDOM / MADV_SEQUENTIAL read-ahead hints.
    pub random: bool,
    pub sequential: bool,
    /// mbind's policy for the area (None: the default policy).
    pub mempolicy: Option<MemPolicy>,
}

/// A NUMA memory policy (Linux's struct mempolicy, as much as a machine
/// with one node can observe): the mode, its MPOL_F_* mode flags, and the
/// first 64 bits of the node mask get_mempolicy reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemPolicy {
    pub mode: u8,
    pub flags: u16,
    pub nodes: u64,
}

/// An area of an address space. Cloning one is opening a second area
/// (fork, a split, mremap): a System V shared memory attachment counts
/// it. Code that only looks at an area borrows it or copies its fields.
#[derive(Clone)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    pub prot: Prot,
    pub backing: Backing,
    pub kind: VmaKind,
    /// The mapped file's path, for /proc/<pid>/maps.
    pub name: Option<alloc::string::String>,
    pub flags: VmaFlags,
}

impl Vma {
    pub fn is_shared(&self) -> bool {
        matches!(self.backing, Backing::SharedAnonymous { .. } | Backing::SharedFile { .. })
    }

    /// The part of this area from `at` on, adjusting the backing offset.
    pub fn split_off(&mut self, at: u64) -> Vma {
        debug_assert!(self.start < at && at < self.end);
        let mut tail = self.clone();
        tail.start = at;
        let delta = at - self.start;
        match &mut tail.backing {
            Backing::Anonymous => {}
            Backing::SharedAnonymous { first_index, .. } | Backing::Special { first_index, .. } => {
                *first_index += delta / crate::mm::PAGE_SIZE
            }
            Backing::File { offset, .. } | Backing::SharedFile { offset, .. } => *offset += delta,
        }
        self.end = at;
        tail
    }
}
