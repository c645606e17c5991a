//! What an address space reports about itself: the areas of
//! /proc/<pid>/maps and smaps, the per-page accounting of smaps,
//! smaps_rollup and the Vm*/Rss* lines of status, and /proc/<pid>/pagemap.
//!
//! Pages are classified as Linux classifies them. A page of private
//! anonymous memory, or a private copy of a file page, is anonymous
//! (RssAnon, "Anonymous"); a file's own page is a file page, and since
//! Kiln's files all live in tmpfs, Linux counts those as shared memory
//! (RssShmem), as it does shared anonymous memory. A page mapped by one
//! address space is private, by several shared (Pss divides it among
//! them). Every page counts as dirty: anonymous ones are written, and
//! tmpfs keeps its pages dirty since nothing writes them back. (Linux
//! leaves an anonymous page that was only read on its shared zero page,
//! outside Rss; Kiln gives it a frame, which Rss counts.) The number of
//! mappers is the frame's reference count less the holders that are not
//! mappings (the file's page store, a shared-memory object).

use alloc::string::String;
use alloc::vec::Vec;

use super::aspace::AddressSpace;
use super::vma::{Backing, Prot, Vma, VmaKind};
use super::PAGE_SIZE;

/// One area as /proc/<pid>/maps shows it.
pub struct MapArea {
    pub start: u64,
    pub end: u64,
    pub prot: Prot,
    pub shared: bool,
    pub offset: u64,
    pub dev: u64,
    pub ino: u64,
    pub name: Option<String>,
    /// Linux's VmFlags mnemonics for smaps.
    pub flags: String,
}

/// Per-page totals of a range, in bytes (Pss fields in bytes << 12, as
/// Linux keeps them, so sharing divides without rounding each page).
#[derive(Default, Clone, Copy)]
pub struct PageTally {
    pub rss: u64,
    pub pss: u64,
    pub pss_dirty: u64,
    pub pss_anon: u64,
    pub pss_file: u64,
    pub pss_shmem: u64,
    pub shared_clean: u64,
    pub shared_dirty: u64,
    pub private_clean: u64,
    pub private_dirty: u64,
    pub anonymous: u64,
    /// Pss of pages in locked (mlock) areas.
    pub pss_locked: u64,
}

impl PageTally {
    pub fn add(&mut self, o: &PageTally) {
        self.rss += o.rss;
        self.pss += o.pss;
        self.pss_dirty += o.pss_dirty;
        self.pss_anon += o.pss_anon;
        self.pss_file += o.pss_file;
        self.pss_shmem += o.pss_shmem;
        self.shared_clean += o.shared_clean;
        self.shared_dirty += o.shared_dirty;
        self.private_clean += o.private_clean;
        self.private_dirty += o.private_dirty;
        self.anonymous += o.anonymous;
        self.pss_locked += o.pss_locked;
    }
}

/// The memory lines of /proc/<pid>/status, in kB.
#[derive(Default)]
pub struct StatusCounts {
    pub peak: u64,
    pub size: u64,
    pub hwm: u64,
    pub rss_anon: u64,
    pub rss_file: u64,
    pub rss_shmem: u64,
    pub data: u64,
    pub stack: u64,
    pub exe: u64,
    pub lib: u64,
    pub pte: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PageKind {
    Anon,
    /// A tmpfs (or shared anonymous) page. Pages of files kept elsewhere
    /// are copied into private frames, so there are no plain file pages.
    Shmem,
    /// A kernel-provided page of a special mapping (the vDSO's text):
    /// Linux counts it as a file page.
    File,
}

/// One resident page: its kind, frame address, how many address spaces
/// map it, and whether it is dirty.
struct PageInfo {
    kind: PageKind,
    paddr: u64,
    mappers: u64,
    dirty: bool,
}

const PSS_SHIFT: u32 = 12;

/// Linux's dev_t split (new_decode_dev).
pub fn dev_major_minor(dev: u64) -> (u64, u64) {
    (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff), (dev & 0xff) | ((dev >> 12) & !0xff))
}

fn vm_flags(v: &Vma) -> String {
    let mut s = String::new();
    let shared = v.is_shared();
    let may_write = match &v.backing {
        Backing::SharedFile { may_write, .. } => *may_write,
        _ => true,
    };
    let mut put = |on: bool, m: &str| {
        if on {
            s.push_str(m);
            s.push(' ');
        }
    };
    put(v.prot.read, "rd");
    put(v.prot.write, "wr");
    put(v.prot.exec, "ex");
    put(shared, "sh");
    put(true, "mr");
    put(may_write, "mw");
    put(true, "me");
    put(shared, "ms");
    put(v.kind == VmaKind::Stack || v.kind == VmaKind::GrowsDown, "gd");
    put(v.flags.locked, "lo");
    put(v.flags.sequential, "sr");
    put(v.flags.random, "rr");
    put(v.flags.dont_fork, "dc");
    put(!shared && v.prot.write, "ac");
    put(v.flags.wipe_on_fork, "wf");
    put(v.flags.dont_dump, "dd");
    put(v.flags.huge_page, "hg");
    put(v.flags.no_huge_page, "nh");
    put(v.flags.mergeable, "mg");
    s
}

impl AddressSpace {
    /// The areas in address order, as maps and smaps list them.
    pub fn map_areas(&self) -> Vec<MapArea> {
        let mut out = Vec::new();
        if out.try_reserve(self.vmas.len()).is_err() {
            return out;
        }
        for v in self.vmas.values() {
            let (offset, dev, ino) = match &v.backing {
                Backing::File { source, offset, .. } | Backing::SharedFile { source, offset, .. } => {
                    let m = source.metadata();
                    (*offset, m.dev, m.ino)
                }
                _ => (0, 0, 0),
            };
            let name = match (v.kind, &v.name, &v.backing) {
                (VmaKind::Heap, _, _) => Some(String::from("[heap]")),
                (VmaKind::Stack, _, _) => Some(String::from("[stack]")),
                (_, _, Backing::Special { mapping, .. }) => Some(String::from(mapping.name)),
                (_, Some(n), _) => Some(n.clone()),
                _ => None,
            };
            out.push(MapArea {
                start: v.start,
                end: v.end,
                prot: v.prot,
                shared: v.is_shared(),
                offset,
                dev,
                ino,
                name,
                flags: vm_flags(v),
            });
        }
        out
    }

    fn find_area(&self, addr: u64) -> Option<&Vma> {
        self.vmas.range(..=addr).next_back().map(|(_, v)| v).filter(|v| addr < v.end)
    }

    /// What is resident at `va` (inside `v`), if anything.
    fn page_info(&self, v: &Vma, va: u64) -> Option<PageInfo> {
        let frame = self.page_table.frame_at(va)?;
        let paddr = frame.paddr().0;
        // Our `frame` handle is one reference; the rest are mappings and
        // the holders named below.
        let refs = u64::from(frame.ref_count()).saturating_sub(1);
        drop(frame);
        let (kind, holders) = match &v.backing {
            Backing::Anonymous => (PageKind::Anon, 0),
            Backing::SharedAnonymous { .. } => (PageKind::Shmem, 1),
            Backing::SharedFile { .. } => (PageKind::Shmem, 1),
            // [vvar]'s raw kernel pages are no pages to Linux (VM_PFNMAP);
            // the vDSO's text is held by the mapping too.
            Backing::Special { mapping, .. } if mapping.pfn_map => return None,
            Backing::Special { .. } => (PageKind::File, 1),
            Backing::File { source, offset, .. } => {
                let index = (offset + (va - v.start)) / PAGE_SIZE;
                if source.cached_page(index) == Some(paddr) {
                    (PageKind::Shmem, 1)
                } else {
                    (PageKind::Anon, 0)
                }
            }
        };
        let mappers = refs.saturating_sub(holders).max(1);
        // Anonymous pages are dirty once written, and tmpfs keeps its
        // pages dirty (nothing writes them back), as Linux does.
        Some(PageInfo { kind, paddr, mappers, dirty: true })
    }

    /// smaps' per-page totals for [start, end).
    pub fn tally(&self, start: u64, end: u64) -> PageTally {
        let mut t = PageTally::default();
        let Some(v) = self.find_area(start) else {
            return t;
        };
        for (va, _) in self.page_table.mapped_pages(start, end.min(v.end)) {
            let Some(p) = self.page_info(v, va) else {
                continue;
            };
            let pss = (PAGE_SIZE << PSS_SHIFT) / p.mappers;
            t.rss += PAGE_SIZE;
            t.pss += pss;
            if v.flags.locked {
                t.pss_locked += pss;
            }
            if p.dirty {
                t.pss_dirty += pss;
            }
            match p.kind {
                PageKind::Anon => {
                    t.pss_anon += pss;
                    t.anonymous += PAGE_SIZE;
                }
                PageKind::Shmem => t.pss_shmem += pss,
                PageKind::File => t.pss_file += pss,
            }
            match (p.mappers > 1, p.dirty) {
                (true, true) => t.shared_dirty += PAGE_SIZE,
                (true, false) => t.shared_clean += PAGE_SIZE,
                (false, true) => t.private_dirty += PAGE_SIZE,
                (false, false) => t.private_clean += PAGE_SIZE,
            }
        }
        t
    }

    /// The Vm* and Rss* lines of /proc/<pid>/status.
    pub fn status_counts(&self) -> StatusCounts {
        let mut c = StatusCounts::default();
        let mut exec_vm = 0;
        for v in self.vmas.values() {
            let size = v.end - v.start;
            c.size += size;
            let stack = v.kind == VmaKind::Stack || v.kind == VmaKind::GrowsDown;
            if stack {
                c.stack += size;
            } else if v.prot.write && !v.is_shared() {
                c.data += size;
            } else if v.prot.exec && !v.prot.write {
                exec_vm += size;
                // The program's own text: its file mapping named like the
                // first area (the executable is mapped first).
                if v.name.is_some() && v.name == self.vmas.values().next().and_then(|f| f.name.clone()) {
                    c.exe += size;
                }
            }
            for (va, _) in self.page_table.mapped_pages(v.start, v.end) {
                match self.page_info(v, va).map(|p| p.kind) {
                    Some(PageKind::Anon) => c.rss_anon += PAGE_SIZE,
                    Some(PageKind::Shmem) => c.rss_shmem += PAGE_SIZE,
                    Some(PageKind::File) => c.rss_file += PAGE_SIZE,
                    None => {}
                }
            }
        }
        c.lib = exec_vm - c.exe;
        c.peak = self.hiwater_vm().max(c.size);
        let rss = self.page_table.resident_pages() * PAGE_SIZE;
        c.hwm = self.hiwater_rss().max(rss);
        // Linux counts the tables below the top level.
        c.pte = self.page_table.table_frames().saturating_sub(1) * PAGE_SIZE;
        for f in [
            &mut c.peak,
            &mut c.size,
            &mut c.hwm,
            &mut c.rss_anon,
            &mut c.rss_file,
            &mut c.rss_shmem,
            &mut c.data,
            &mut c.stack,
            &mut c.exe,
            &mut c.lib,
            &mut c.pte,
        ] {
            *f /= 1024;
        }
        c
    }

    /// /proc/<pid>/pagemap's entry for the page at `va`: bit 63 present,
    /// 61 a file or shared-memory page, 56 mapped only here, 0-54 the
    /// frame number (procfs clears it for openers without CAP_SYS_ADMIN). No
    /// swap, and no soft-dirty tracking (bit 55), as Linux built without
    /// CONFIG_MEM_SOFT_DIRTY.
    pub fn pagemap_entry(&self, va: u64) -> u64 {
        let Some(v) = self.find_area(va) else {
            return 0;
        };
        let Some(p) = self.page_info(v, va) else {
            return 0;
        };
        let mut e = 1u64 << 63;
        if p.kind != PageKind::Anon {
            e |= 1 << 61;
        }
        if p.mappers == 1 {
            e |= 1 << 56;
        }
        e | ((p.paddr / PAGE_SIZE) & ((1 << 55) - 1))
    }
}
