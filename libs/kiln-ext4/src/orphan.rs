//! Open files without names: the caller pins an inode while it is open; a
//! pinned inode whose last link goes is put on the superblock's orphan
//! list (`s_last_orphan`, chained through `i_dtime`) instead of being
//! freed, and freed when the last pin goes. After a crash the list is what
//! mount (or e2fsck) frees.

use crate::inode::{Inode, Timestamp};
use crate::{BlockDevice, Ext4, Result};
use alloc::collections::BTreeSet;
use linux_abi::errno::Errno;

impl<D: BlockDevice> Ext4<D> {
    /// Notes that `ino` is open: its last unlink keeps it (as an orphan).
    pub fn pin(&mut self, ino: u32) {
        *self.pins.entry(ino).or_insert(0) += 1;
    }

    /// Drops one pin; an unlinked inode whose last pin this was is freed.
    pub fn unpin(&mut self, ino: u32, now: Timestamp) -> Result<()> {
        let left = match self.pins.get_mut(&ino) {
            Some(n) => {
                *n -= 1;
                *n
            }
            None => return Err(Errno::EINVAL),
        };
        if left > 0 {
            return Ok(());
        }
        self.pins.remove(&ino);
        // An inode with no link is `stat`-able only while pinned: what
        // was read about it (`stat_memo`) no longer holds.
        if self.read_only {
            self.meta_gen += 1;
            return Ok(());
        }
        let i = self.load_inode(ino)?;
        if i.links() != 0 || i.mode() == 0 {
            return Ok(());
        }
        self.meta_gen += 1;
        self.atomic(|fs| {
            let i = fs.load_inode(ino)?;
            fs.orphan_remove(&i)?;
            let i = fs.load_inode(ino)?;
            fs.free_whole_inode(i, now)
        })
    }

    pub(crate) fn is_pinned(&self, ino: u32) -> bool {
        self.pins.contains_key(&ino)
    }

    /// An inode that just lost its last name: freed, or kept on the orphan
    /// list while open.
    pub(crate) fn release_unlinked(&mut self, mut i: Inode, now: Timestamp) -> Result<()> {
        if !self.is_pinned(i.ino) {
            return self.free_whole_inode(i, now);
        }
        i.set_links(0);
        i.set_dtime(self.sb.last_orphan());
        self.store_inode(&mut i)?;
        self.sb.set_last_orphan(i.ino);
        self.sb_dirty = true;
        Ok(())
    }

    /// Unchains `i` from the orphan list.
    fn orphan_remove(&mut self, i: &Inode) -> Result<()> {
        let next = i.dtime_raw();
        if self.sb.last_orphan() == i.ino {
            self.sb.set_last_orphan(next);
            self.sb_dirty = true;
            return Ok(());
        }
        let mut cur = self.sb.last_orphan();
        for _ in 0..self.sb.inodes_count() {
            if cur == 0 {
                break;
            }
            let mut c = self.load_inode(cur)?;
            if c.dtime_raw() == i.ino {
                c.set_dtime(next);
                return self.store_inode(&mut c);
            }
            cur = c.dtime_raw();
        }
        Err(Errno::EUCLEAN)
    }

    /// At mount: frees every inode on the orphan list (nothing is open
    /// after a crash), then empties the list.
    pub(crate) fn process_orphans(&mut self, now: Timestamp) -> Result<()> {
        let mut seen = BTreeSet::new();
        let mut cur = self.sb.last_orphan();
        while cur != 0 {
            if !seen.insert(cur) || cur > self.sb.inodes_count() || cur < self.sb.first_ino() {
                return Err(Errno::EUCLEAN);
            }
            let i = self.load_inode(cur)?;
            let next = i.dtime_raw();
            if i.links() == 0 && i.mode() != 0 {
                self.free_whole_inode(i, now)?;
            } else {
                // On the list for a truncation Kiln does not log: keep it.
                let mut i = i;
                i.set_dtime(0);
                self.store_inode(&mut i)?;
            }
            cur = next;
        }
        self.sb.set_last_orphan(0);
        self.sb_dirty = true;
        self.commit()
    }
}
