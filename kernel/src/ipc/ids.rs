//! The identifier table of one System V IPC type (message queues,
//! semaphore sets or shared memory segments): keys to objects, and the
//! identifiers user space holds.
//!
//! As on Linux, an identifier is `seq << 15 | index`: the index is the
//! object's slot, handed out cyclically (the next free slot after the
//! last one given, below `max(in_use * 3 / 2, 64)` so a busy table does
//! not reuse slots at once), and the sequence number grows each time
//! the cycle wraps, so an identifier of a removed object does not name
//! its slot's next occupant (EINVAL). `MSG_STAT`-style commands address
//! slots by index instead.

use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::errno::Errno;

/// Bits of an identifier that hold the index (Linux's IPCMNI_SHIFT).
const INDEX_BITS: u32 = 15;
const INDEX_MASK: i32 = (1 << INDEX_BITS) - 1;
/// The most slots a table has (IPCMNI).
pub const IPCMNI: usize = 1 << INDEX_BITS;
/// The sequence wraps here (INT_MAX >> IPCMNI_SHIFT).
const SEQ_MAX: u32 = (i32::MAX >> INDEX_BITS) as u32;
/// The cycle's smallest span (ipc_min_cycle).
const MIN_CYCLE: usize = 64;

struct Slot<T> {
    key: i32,
    seq: u32,
    object: Arc<T>,
}

pub struct IpcIds<T> {
    slots: Vec<Option<Slot<T>>>,
    in_use: usize,
    seq: u32,
    last_index: Option<usize>,
}

impl<T> IpcIds<T> {
    pub const fn new() -> IpcIds<T> {
        IpcIds { slots: Vec::new(), in_use: 0, seq: 0, last_index: None }
    }

    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// The object with `key` (not IPC_PRIVATE: those are never found).
    pub fn find_key(&self, key: i32) -> Option<(i32, &Arc<T>)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i, s)))
            .find(|(_, s)| s.key == key && key != linux_abi::ipc::IPC_PRIVATE)
            .map(|(i, s)| (Self::id_of(i, s.seq), &s.object))
    }

    fn id_of(index: usize, seq: u32) -> i32 {
        ((seq << INDEX_BITS) as i32) | index as i32
    }

    /// The object `id` names: EINVAL for a free slot or a stale sequence.
    pub fn get(&self, id: i32) -> Result<&Arc<T>, Errno> {
        if id < 0 {
            return Err(Errno::EINVAL);
        }
        let slot = self.slots.get((id & INDEX_MASK) as usize).and_then(|s| s.as_ref()).ok_or(Errno::EINVAL)?;
        if (id >> INDEX_BITS) as u32 != slot.seq {
            return Err(Errno::EINVAL);
        }
        Ok(&slot.object)
    }

    /// The object in slot `index` (the low bits of `index` pick it, as
    /// Linux's MSG_STAT does), and its identifier.
    pub fn get_index(&self, index: i32) -> Result<(i32, &Arc<T>), Errno> {
        let i = (index & INDEX_MASK) as usize;
        let slot = self.slots.get(i).and_then(|s| s.as_ref()).ok_or(Errno::EINVAL)?;
        Ok((Self::id_of(i, slot.seq), &slot.object))
    }

    /// The object a *_STAT command names, with what the command returns:
    /// IPC_STAT names it by identifier and returns 0; the by-slot forms
    /// (MSG_STAT, SEM_STAT, SHM_STAT and their _ANY variants) name a slot
    /// and return its identifier.
    pub fn get_for_stat(&self, id: i32, by_slot: bool) -> Result<(i32, Arc<T>), Errno> {
        if by_slot {
            let (real, object) = self.get_index(id)?;
            Ok((real, object.clone()))
        } else {
            Ok((0, self.get(id)?.clone()))
        }
    }

    /// The highest slot in use, or -1 (what the *_INFO commands return,
    /// clamped to 0).
    pub fn max_index(&self) -> i32 {
        self.slots.iter().rposition(|s| s.is_some()).map_or(-1, |i| i as i32)
    }

    /// Adds the object `make` builds for its new identifier; ENOSPC when
    /// `limit` objects exist already, ENOMEM without memory.
    pub fn add(
        &mut self,
        key: i32,
        limit: usize,
        make: impl FnOnce(i32) -> Result<Arc<T>, Errno>,
    ) -> Result<i32, Errno> {
        let limit = limit.min(IPCMNI);
        if self.in_use >= limit {
            return Err(Errno::ENOSPC);
        }
        let span = (self.in_use * 3 / 2).max(MIN_CYCLE).min(limit);
        let start = self.last_index.map_or(0, |l| l + 1);
        let free = |i: usize| self.slots.get(i).is_none_or(|s| s.is_none());
        let index = (start..span).find(|&i| free(i)).or_else(|| (0..span.min(start)).find(|&i| free(i)));
        let index = index.ok_or(Errno::ENOSPC)?;
        let mut seq = self.seq;
        if self.last_index.is_some_and(|l| index <= l) {
            seq = if seq + 1 >= SEQ_MAX { 0 } else { seq + 1 };
        }
        let id = Self::id_of(index, seq);
        if index >= self.slots.len() {
            self.slots.try_reserve(index + 1 - self.slots.len()).map_err(|_| Errno::ENOMEM)?;
            while self.slots.len() <= index {
                self.slots.push(None);
            }
        }
        let object = make(id)?;
        self.seq = seq;
        self.last_index = Some(index);
        self.slots[index] = Some(Slot { key, seq, object });
        self.in_use += 1;
        Ok(id)
    }

    /// Takes the object `id` out of the table.
    pub fn remove(&mut self, id: i32) -> Option<Arc<T>> {
        self.get(id).ok()?;
        let slot = self.slots[(id & INDEX_MASK) as usize].take()?;
        self.in_use -= 1;
        while self.slots.last().is_some_and(|s| s.is_none()) {
            self.slots.pop();
        }
        Some(slot.object)
    }

    /// Makes `id` unfindable by key (a shared memory segment marked for
    /// removal keeps its identifier but its key becomes IPC_PRIVATE).
    pub fn forget_key(&mut self, id: i32) {
        if let Some(Some(slot)) = self.slots.get_mut((id & INDEX_MASK) as usize) {
            slot.key = linux_abi::ipc::IPC_PRIVATE;
        }
    }

    /// Every object with its identifier, in slot order (/proc/sysvipc).
    pub fn iter(&self) -> impl Iterator<Item = (i32, &Arc<T>)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|s| (Self::id_of(i, s.seq), &s.object)))
    }
}
