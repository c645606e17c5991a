//! Mutable protection domains (issue 15 part 3, docs/components.md):
//! `merge` puts components in one page table, where their invocations of
//! each other become direct calls; `split` takes one out again.
//!
//! Every component keeps its own page table (`Component::domain`) for
//! life. A merge builds a *new* table mapping every member's slot (the
//! same frames, so the same memory: the global layout makes the slots
//! disjoint) and points the members at it; a split builds the table of
//! the members that stay (if two or more do) and points the one leaving
//! back at its own. Nothing is ever unmapped from a table a thread may
//! be running on: a thread inside a member keeps the table it entered
//! with (its `Arc`), which stays whole until the last such thread leaves.
//! So both are safe while threads are inside either component: they
//! finish on the domain they entered, and their next entry uses the new
//! one.
//!
//! **Direct calls.** Each component has a link page at `LINK_OFFSET` in
//! its slot, one word per capability, which the runtime's stub reads
//! before making the invocation system call: 0 means "invoke through the
//! kernel", anything else is the address of the callee's direct entry
//! (its dispatcher), which the stub calls like a function. The link page
//! belongs to the *table*, not the component: in a component's own table
//! it is all zeros; in a merged table a word is set exactly when the
//! callee is a member, mapped in that same table. A thread therefore
//! calls directly only where the callee is mapped, whatever merges and
//! splits happen meanwhile. The page after it counts the direct calls
//! per capability (the kernel cannot see them); it is the component's
//! own frame, shared by all its tables.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use hal::frame::UserFrame;
use hal::mm::PAGE_SIZE;
use hal::paging::{PageTable, PteFlags};
use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use super::{components, slot_base, Component, SLOT_SIZE};

/// The link page's offset in a slot (the runtime's `LINK_OFFSET`), and
/// the count page after it.
pub const LINK_OFFSET: u64 = 0xC000_0000;
const COUNT_OFFSET: u64 = LINK_OFFSET + PAGE_SIZE;
/// Capabilities a link page has words for.
const LINK_WORDS: usize = (PAGE_SIZE / 8) as usize;
/// The runtime's direct entry sits 16 bytes past `_start`, which opens
/// with a short jump over it (0xEB).
const DIRECT_ENTRY_OFFSET: u64 = 16;
const SHORT_JMP: u8 = 0xEB;

const READ_ONLY: PteFlags = PteFlags { accessible: true, writable: false, executable: false };
const READ_WRITE: PteFlags = PteFlags { accessible: true, writable: true, executable: false };

/// One merged domain: its members (component indices, ascending) and the
/// table that maps them all.
struct Merged {
    members: Vec<usize>,
    table: Arc<PageTable>,
}

/// Per component index, the merged domain it is in (None: its own).
static GROUPS: SpinLock<Vec<Option<Arc<Merged>>>> = SpinLock::new(Vec::new());
/// Whether any component is merged: invocations skip `GROUPS` otherwise.
static ANY_MERGED: AtomicBool = AtomicBool::new(false);
/// Every merged table built and its link frames, for the leak check's
/// accounting while a thread or a group still holds the table.
static BUILT: SpinLock<Vec<(Weak<PageTable>, usize)>> = SpinLock::new(Vec::new());
/// One merge or split at a time (they build tables; invocations never
/// wait on this).
static CHANGING: AtomicBool = AtomicBool::new(false);

/// Maps a component's link page (zeros: no direct calls in its own
/// table) and count page into its own domain, at load.
pub(super) fn map_link_pages(domain: &PageTable, slot: usize) -> Result<(), &'static str> {
    let base = slot_base(slot);
    let zeroed = || UserFrame::alloc_zeroed().map_err(|_| "out of memory");
    domain.map(base + LINK_OFFSET, zeroed()?, READ_ONLY).map_err(|_| "out of memory")?;
    domain.map(base + COUNT_OFFSET, zeroed()?, READ_WRITE).map_err(|_| "out of memory")
}

/// The table an invocation of `callee` enters: its merged domain's, or
/// its own.
pub(super) fn current(callee: &Component) -> Arc<PageTable> {
    if ANY_MERGED.load(Ordering::Acquire) {
        if let Some(Some(group)) = GROUPS.lock().get(callee.slot) {
            return group.table.clone();
        }
    }
    callee.domain.clone()
}

/// The component whose code made a system call at `rip`, on a thread
/// that entered `callee`: a member of `callee`'s domain called directly
/// makes its own invocations with its own capabilities. The address is
/// trustworthy: code runs only where its table maps it, and a table maps
/// only its members.
pub(super) fn caller_at(callee: &Component, rip: u64) -> usize {
    let slot = rip.checked_sub(super::LAYOUT_BASE).map(|o| (o / SLOT_SIZE) as usize);
    match slot {
        Some(s) if s < components().len() => s,
        _ => callee.slot,
    }
}

/// The domain component `index` is in: its own index when alone, else
/// the lowest member's index of its merged domain.
pub fn domain_of(index: usize) -> usize {
    match GROUPS.lock().get(index) {
        Some(Some(group)) => group.members[0],
        _ => index,
    }
}

/// Direct calls component `index` made through each of its capabilities.
pub fn direct_calls(index: usize) -> Vec<u64> {
    let Some(c) = components().get(index) else { return Vec::new() };
    let Some(counts) = c.domain.frame_at(slot_base(c.slot) + COUNT_OFFSET) else { return Vec::new() };
    c.caps.iter().enumerate().take(LINK_WORDS).map(|(i, _)| counts.atomic_u64(i * 8).load(Ordering::Relaxed)).collect()
}

/// Puts components `a` and `b` (and the domains they are in) in one
/// domain. EINVAL for a bad or equal index or an image without a direct
/// entry; ENOMEM if the table cannot be built (nothing changes then).
pub fn merge(a: usize, b: usize) -> Result<(), Errno> {
    let all = components();
    if a == b || a >= all.len() || b >= all.len() || !has_direct_entry(&all[a]) || !has_direct_entry(&all[b]) {
        return Err(Errno::EINVAL);
    }
    let _changing = Changing::take();
    let mut members = members_of(a);
    for m in members_of(b) {
        if !members.contains(&m) {
            members.push(m);
        }
    }
    members.sort_unstable();
    if members_of(a) == members {
        return Ok(()); // already one domain
    }
    let group = build(members)?;
    install(&group.members.clone(), Some(group));
    Ok(())
}

/// Takes component `index` out of its merged domain, back into its own;
/// the others stay together if two or more are left. Nothing to do for
/// a component alone.
pub fn split(index: usize) -> Result<(), Errno> {
    if index >= components().len() {
        return Err(Errno::EINVAL);
    }
    let _changing = Changing::take();
    let mut rest = members_of(index);
    if rest.len() < 2 {
        return Ok(());
    }
    rest.retain(|&m| m != index);
    let regroup = if rest.len() >= 2 { Some(build(rest.clone())?) } else { None };
    install(&rest, regroup);
    install(&[index], None);
    Ok(())
}

/// User frames the merged tables hold beyond the components' own (their
/// link pages), for the leak check.
pub fn frames() -> usize {
    let mut built = BUILT.lock();
    built.retain(|(t, _)| t.strong_count() > 0);
    built.iter().map(|(_, links)| links).sum()
}

/// Page-table frames of the merged tables still alive.
pub fn table_frames() -> u64 {
    let built = BUILT.lock();
    built.iter().filter_map(|(t, _)| t.upgrade()).map(|t| t.table_frames()).sum()
}

fn members_of(index: usize) -> Vec<usize> {
    match GROUPS.lock().get(index) {
        Some(Some(group)) => group.members.clone(),
        _ => alloc::vec![index],
    }
}

/// Points `members` at `group` (None: each at its own table).
fn install(members: &[usize], group: Option<Arc<Merged>>) {
    let mut groups = GROUPS.lock();
    if groups.len() < components().len() {
        groups.resize(components().len(), None);
    }
    for &m in members {
        groups[m] = group.clone();
    }
    ANY_MERGED.store(groups.iter().any(Option::is_some), Ordering::Release);
}

/// Whether `c`'s image opens with the runtime's jump over its direct
/// entry (an image from another runtime cannot be called directly).
fn has_direct_entry(c: &Component) -> bool {
    let Some(frame) = c.domain.frame_at(c.entry & !(PAGE_SIZE - 1)) else { return false };
    let mut byte = [0u8; 1];
    frame.read((c.entry & (PAGE_SIZE - 1)) as usize, &mut byte);
    byte[0] == SHORT_JMP && (c.entry & (PAGE_SIZE - 1)) + DIRECT_ENTRY_OFFSET < PAGE_SIZE
}

/// A table mapping every member's slot as its own table does, except
/// the link pages: a fresh one per member, whose words name the direct
/// entries of the capabilities that lead to members.
fn build(members: Vec<usize>) -> Result<Arc<Merged>, Errno> {
    let all = components();
    let table = PageTable::new().map_err(|_| Errno::ENOMEM)?;
    for &m in &members {
        let c = &all[m];
        let base = slot_base(c.slot);
        for (va, flags) in c.domain.mapped_pages(base, base + SLOT_SIZE) {
            if va == base + LINK_OFFSET {
                continue;
            }
            // The components' own tables never change after load, so
            // the page is still there.
            let frame = c.domain.frame_at(va).ok_or(Errno::ENOMEM)?;
            table.map(va, frame, flags).map_err(|_| Errno::ENOMEM)?;
        }
        let link = UserFrame::alloc_zeroed().map_err(|_| Errno::ENOMEM)?;
        for (cap, target) in c.caps.iter().enumerate().take(LINK_WORDS) {
            if members.contains(target) {
                link.atomic_u64(cap * 8).store(all[*target].entry + DIRECT_ENTRY_OFFSET, Ordering::Relaxed);
            }
        }
        table.map(base + LINK_OFFSET, link, READ_ONLY).map_err(|_| Errno::ENOMEM)?;
    }
    let table = Arc::new(table);
    let mut built = BUILT.lock();
    built.retain(|(t, _)| t.strong_count() > 0);
    built.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
    built.push((Arc::downgrade(&table), members.len()));
    drop(built);
    Ok(Arc::new(Merged { members, table }))
}

/// Holds `CHANGING` for one merge or split.
struct Changing;

impl Changing {
    fn take() -> Changing {
        while CHANGING.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            crate::sched::yield_now();
        }
        Changing
    }
}

impl Drop for Changing {
    fn drop(&mut self) {
        CHANGING.store(false, Ordering::Release);
    }
}
