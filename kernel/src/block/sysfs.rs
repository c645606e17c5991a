//! /sys/block/<dev>: each registered disk's directory, as Linux lays it
//! out for the files tools read (`dev`, `size`, `ro`,
//! `queue/logical_block_size`, `queue/physical_block_size`,
//! `queue/hw_sector_size`, `queue/max_hw_sectors_kb`, `stat`) and the one a
//! root user tunes here, `queue/io_timeout`: the request timeout in
//! milliseconds that both drivers' recovery starts from (Linux's
//! `queue_io_timeout_show`/`_store`).

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;

use linux_abi::errno::Errno;

use super::BlockQueue;
use crate::fs::inode::{Inode, Owner, S_IFDIR};
use crate::fs::tmpfs::{Attribute, TmpInode};

/// Debian's kernels run at HZ=250: a timeout is kept in 4 ms jiffies,
/// so what io_timeout shows is the value written rounded up to one.
const JIFFY_MS: u64 = 4;

/// Adds a directory per registered disk under `block` (sysfs's
/// /sys/block, a tmpfs directory).
pub fn populate(block: &Arc<dyn Inode>) -> Result<(), Errno> {
    let Some(block) = block.as_any().downcast_ref::<TmpInode>() else { return Ok(()) };
    for q in super::all() {
        let dir = block.create(&q.name, S_IFDIR | 0o755, 0, Owner::ROOT)?;
        let dir = dir.as_any().downcast_ref::<TmpInode>().ok_or(Errno::EINVAL)?;
        let queue = dir.create("queue", S_IFDIR | 0o755, 0, Owner::ROOT)?;
        let queue = queue.as_any().downcast_ref::<TmpInode>().ok_or(Errno::EINVAL)?;
        for (name, what) in [("dev", What::Dev), ("size", What::Size), ("ro", What::ReadOnly), ("stat", What::Stat)] {
            dir.create_attribute(name, 0o444, attr(&q, what)?)?;
        }
        for (name, what) in [
            ("logical_block_size", What::LogicalBlockSize),
            ("physical_block_size", What::LogicalBlockSize),
            ("hw_sector_size", What::LogicalBlockSize),
            ("max_hw_sectors_kb", What::MaxHwSectorsKb),
        ] {
            queue.create_attribute(name, 0o444, attr(&q, what)?)?;
        }
        queue.create_attribute("io_timeout", 0o644, attr(&q, What::IoTimeout)?)?;
    }
    Ok(())
}

fn attr(q: &Arc<BlockQueue>, what: What) -> Result<Arc<dyn Attribute>, Errno> {
    Ok(Arc::try_new(QueueAttr { queue: q.clone(), what }).map_err(|_| Errno::ENOMEM)?)
}

#[derive(Clone, Copy)]
enum What {
    Dev,
    Size,
    ReadOnly,
    LogicalBlockSize,
    MaxHwSectorsKb,
    IoTimeout,
    Stat,
}

struct QueueAttr {
    queue: Arc<BlockQueue>,
    what: What,
}

impl Attribute for QueueAttr {
    fn show(&self) -> Result<String, Errno> {
        let q = &self.queue;
        let text = match self.what {
            What::Dev => format!("{}:{}\n", crate::fs::devfs::major(q.rdev), crate::fs::devfs::minor(q.rdev)),
            What::Size => format!("{}\n", q.info.sectors),
            What::ReadOnly => format!("{}\n", u8::from(q.info.read_only)),
            What::LogicalBlockSize => format!("{}\n", q.info.logical_block_size),
            What::MaxHwSectorsKb => format!("{}\n", u64::from(q.info.max_sectors) / 2),
            What::IoTimeout => format!("{}\n", q.timeout_ns() / 1_000_000),
            What::Stat => stat_line(&q.stats),
        };
        Ok(text)
    }

    fn store(&self, value: &[u8]) -> Result<(), Errno> {
        let What::IoTimeout = self.what else { return Err(Errno::EACCES) };
        let ms = parse_u32(value).filter(|&ms| ms != 0).ok_or(Errno::EINVAL)?;
        let ms = u64::from(ms).div_ceil(JIFFY_MS) * JIFFY_MS;
        self.queue.set_timeout_ns(ms * 1_000_000);
        Ok(())
    }
}

/// Linux's /sys/block/<dev>/stat (Documentation/block/stat.rst): 17
/// fields, each `%8u`, separated by a space; reads, writes, discards and
/// flushes with the counts Kiln keeps (times and in-flight are 0; merges
/// are writes the plug joined to an adjacent one).
fn stat_line(s: &super::queue::Stats) -> String {
    let get = |c: &core::sync::atomic::AtomicU64| c.load(core::sync::atomic::Ordering::Relaxed);
    let fields = [
        get(&s.read_requests),
        0,
        get(&s.sectors_read),
        0,
        get(&s.write_requests),
        get(&s.merged),
        get(&s.sectors_written),
        0,
        0,
        0,
        0,
        get(&s.discards),
        0,
        0,
        0,
        get(&s.flush_requests),
        0,
    ];
    let mut line = String::new();
    for (i, f) in fields.into_iter().enumerate() {
        let sep = if i == 0 { "" } else { " " };
        line.push_str(&format!("{sep}{f:>8}"));
    }
    line.push('\n');
    line
}

/// Linux's kstrtou32(.., 10, ..): an optional `+`, decimal digits, one
/// optional trailing newline, nothing else, within u32.
fn parse_u32(value: &[u8]) -> Option<u32> {
    let value = value.strip_suffix(b"\n").unwrap_or(value);
    let value = value.strip_prefix(b"+").unwrap_or(value);
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(value).ok()?.parse().ok()
}
