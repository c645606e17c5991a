//! A pipe's bytes: a ring (`kiln_util::byte_ring`) over heap storage that
//! grows on demand, from one page up to what the data needs, so an idle
//! or lightly used pipe holds little memory.
//!
//! Reads and writes copy with a callback that gets the ring's slices in
//! order and says how much it moved: the pipe passes a copy straight
//! from or to user memory that may stop at a fault (it runs under the
//! pipe's spin lock and so cannot resolve one), and only the bytes it
//! moved are committed or consumed.

use alloc::vec::Vec;

use kiln_util::byte_ring::ByteRing;
use linux_abi::errno::Errno;

/// The smallest storage a pipe allocates on its first write.
const FIRST_STORAGE: usize = 4096;

#[derive(Default)]
pub struct PipeBuf {
    ring: ByteRing,
    storage: Vec<u8>,
}

impl PipeBuf {
    pub const fn new() -> PipeBuf {
        PipeBuf { ring: ByteRing::new(), storage: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.ring.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Makes room for `n` more bytes in the storage (the pipe's capacity
    /// is the caller's business): ENOMEM if the allocation fails.
    pub fn reserve(&mut self, n: usize) -> Result<(), Errno> {
        let need = self.len().checked_add(n).ok_or(Errno::ENOMEM)?;
        if need <= self.storage.len() {
            return Ok(());
        }
        let size = need.next_power_of_two().max(FIRST_STORAGE);
        let mut new = Vec::new();
        new.try_reserve_exact(size).map_err(|_| Errno::ENOMEM)?;
        new.resize(size, 0);
        self.ring.grow_into(&self.storage, &mut new);
        self.storage = new;
        Ok(())
    }

    /// Appends up to `n` bytes (reserved already) that `fill` writes into
    /// the slices it is given, with each slice's offset from the start of
    /// the append; `fill` returns how many it wrote and a short count
    /// ends the append. With `whole`, a short append adds nothing (an
    /// atomic pipe write). Returns the bytes added.
    pub fn append(&mut self, n: usize, whole: bool, mut fill: impl FnMut(&mut [u8], usize) -> usize) -> usize {
        let size = self.storage.len();
        let (a, b) = self.ring.room(&mut self.storage);
        let mut done = 0;
        for slice in [a, b] {
            let want = slice.len().min(n - done);
            if want == 0 {
                break;
            }
            let got = fill(&mut slice[..want], done).min(want);
            done += got;
            if got < want {
                break;
            }
        }
        if whole && done < n {
            return 0;
        }
        self.ring.commit(done, size);
        done
    }

    /// Appends `data` whole (after `reserve`).
    pub fn push(&mut self, data: &[u8]) -> usize {
        self.append(data.len(), true, |dst, at| {
            dst.copy_from_slice(&data[at..at + dst.len()]);
            dst.len()
        })
    }

    /// Hands up to `n` of the oldest bytes to `drain` (with each slice's
    /// offset from the start of the read), which returns how many it
    /// took; a short count ends the read. Takes only what `drain` took and
    /// returns that count.
    pub fn take(&mut self, n: usize, mut drain: impl FnMut(&[u8], usize) -> usize) -> usize {
        let done = self.peek_with(n, &mut drain);
        self.ring.consume(done, self.storage.len());
        done
    }

    /// `take` without taking: the bytes stay (tee).
    pub fn peek_with(&self, n: usize, mut drain: impl FnMut(&[u8], usize) -> usize) -> usize {
        let (a, b) = self.ring.data(&self.storage);
        let mut done = 0;
        for slice in [a, b] {
            let want = slice.len().min(n - done);
            if want == 0 {
                break;
            }
            let got = drain(&slice[..want], done).min(want);
            done += got;
            if got < want {
                break;
            }
        }
        done
    }

    /// Puts `data` back in front of the bytes held (a short splice gives
    /// back what it could not pass on); ENOMEM if there is no memory.
    pub fn push_front(&mut self, data: &[u8]) -> Result<(), Errno> {
        self.reserve(data.len())?;
        let (a, b) = self.ring.unconsume(data.len(), &mut self.storage);
        let (first, rest) = data.split_at(a.len());
        a.copy_from_slice(first);
        b.copy_from_slice(rest);
        Ok(())
    }
}
