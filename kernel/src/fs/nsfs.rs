//! nsfs: the files /proc/<pid>/ns/* links lead to. Each stands for one
//! namespace: its inode number is the namespace's (`uts:[4026531838]`),
//! and an open one is what setns(2) takes. The namespace itself is an
//! opaque object here; the process layer that made it recognises it.

use alloc::sync::Arc;
use core::any::Any;

use super::inode::{FsStats, Inode, Metadata, S_IFREG};

const NSFS_MAGIC: u64 = 0x6e73_6673;
/// nsfs's device (an anonymous one, as on Linux).
const NSFS_DEV: u64 = 0x4;

pub struct NsInode {
    /// "uts", "mnt", "pid"...
    pub kind: &'static str,
    pub inum: u64,
    /// The namespace, for setns to recognise.
    pub target: Arc<dyn Any + Send + Sync>,
}

impl Inode for NsInode {
    fn metadata(&self) -> Metadata {
        Metadata { dev: NSFS_DEV, ino: self.inum, mode: S_IFREG | 0o444, nlink: 1, ..Metadata::default() }
    }

    fn fs_stats(&self) -> FsStats {
        FsStats { magic: NSFS_MAGIC, block_size: 4096, name_max: 255, ..FsStats::default() }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
