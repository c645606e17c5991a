//! Writes gathered before they go to the device (Linux's plug): sorted by
//! sector, with adjacent ones merged into one request up to the driver's
//! transfer limit, so a journal commit or a writeback of neighbouring
//! blocks costs a few large requests instead of many small ones. The
//! plug borrows the callers' buffers; merging copies nothing until the
//! driver's fill.

use alloc::vec::Vec;

use blockdev::{Request, SECTOR};
use linux_abi::errno::Errno;

use super::queue::Op;

pub struct Plug<'a> {
    writes: Vec<(u64, &'a [u8])>,
}

impl<'a> Plug<'a> {
    pub fn new() -> Plug<'a> {
        Plug { writes: Vec::new() }
    }

    /// Adds a write of whole sectors.
    pub fn add(&mut self, sector: u64, data: &'a [u8]) -> Result<(), Errno> {
        if data.is_empty() || !data.len().is_multiple_of(SECTOR) {
            return Err(Errno::EINVAL);
        }
        self.writes.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        self.writes.push((sector, data));
        Ok(())
    }

    /// The plug's writes as requests of at most `max` sectors, adjacent
    /// ones merged. Returns the requests, how many writes were merged
    /// away, and whether some overlap: then nothing was sorted or merged
    /// and the requests must go one at a time, in order, so the later
    /// write wins on the media.
    pub(crate) fn take_ops(&mut self, max: u32, fua: bool) -> Result<(Vec<Op<'a>>, usize, bool), Errno> {
        let mut writes = core::mem::take(&mut self.writes);
        let overlapping = has_overlap(&writes)?;
        if !overlapping {
            writes.sort_by_key(|w| w.0);
        }
        let mut ops: Vec<Op<'a>> = Vec::new();
        let mut merged = 0;
        for (sector, data) in writes {
            let mut rest = data;
            let mut at = sector;
            while !rest.is_empty() {
                if let Some(Op { req: Request::Write { sector: s, sectors: n, .. }, write, .. }) = ops.last_mut() {
                    let room = max.saturating_sub(*n) as usize * SECTOR;
                    if !overlapping && *s + u64::from(*n) == at && room > 0 {
                        let take = rest.len().min(room);
                        write.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                        write.push(&rest[..take]);
                        *n += (take / SECTOR) as u32;
                        at += (take / SECTOR) as u64;
                        rest = &rest[take..];
                        merged += 1;
                        continue;
                    }
                }
                let take = rest.len().min(max as usize * SECTOR);
                let mut op = Op::new(Request::Write { sector: at, sectors: (take / SECTOR) as u32, fua });
                op.write.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                op.write.push(&rest[..take]);
                ops.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
                ops.push(op);
                at += (take / SECTOR) as u64;
                rest = &rest[take..];
            }
        }
        Ok((ops, merged, overlapping))
    }
}

/// Whether any two writes touch the same sector (then they keep their
/// order and are sent one after another, never merged or reordered).
fn has_overlap(writes: &[(u64, &[u8])]) -> Result<bool, Errno> {
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    ranges.try_reserve(writes.len()).map_err(|_| Errno::ENOMEM)?;
    ranges.extend(writes.iter().map(|(s, d)| (*s, *s + (d.len() / SECTOR) as u64)));
    ranges.sort_unstable();
    Ok(ranges.windows(2).any(|w| w[1].0 < w[0].1))
}
