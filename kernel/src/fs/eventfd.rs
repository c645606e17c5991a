//! eventfd: a 64-bit counter as a file. A write adds to it (blocking
//! while the sum would reach 2^64 - 1), a read takes it all and resets it
//! to 0, or with EFD_SEMAPHORE takes 1 (blocking while it is 0). Both
//! move 8 bytes; a write of any other size is EINVAL. Readable while the
//! counter is not 0, writable while it is below 2^64 - 2, as Linux's
//! eventfd_poll says.

use alloc::sync::Arc;
use core::any::Any;

use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use super::file::FileOps;
use crate::event::{block_on, Events, PollTable, Pollee};

/// The largest value the counter holds (`ULLONG_MAX - 1`).
const MAX: u64 = u64::MAX - 1;

pub struct EventFd {
    count: SpinLock<u64>,
    semaphore: bool,
    pollee: Pollee,
}

impl EventFd {
    pub fn new(initial: u64, semaphore: bool) -> Result<Arc<EventFd>, Errno> {
        Arc::try_new(EventFd { count: SpinLock::new(initial), semaphore, pollee: Pollee::new() })
            .map_err(|_| Errno::ENOMEM)
    }

    fn try_read(&self) -> Result<u64, Errno> {
        let taken = {
            let mut count = self.count.lock();
            if *count == 0 {
                return Err(Errno::EAGAIN);
            }
            let taken = if self.semaphore { 1 } else { *count };
            *count -= taken;
            taken
        };
        self.pollee.notify(Events::OUT);
        Ok(taken)
    }

    fn try_write(&self, add: u64) -> Result<(), Errno> {
        {
            let mut count = self.count.lock();
            if u64::MAX - *count <= add {
                return Err(Errno::EAGAIN);
            }
            *count += add;
        }
        self.pollee.notify(Events::IN);
        Ok(())
    }
}

/// The read of a file that hands out one 8-byte count (eventfd, timerfd):
/// EINVAL for a buffer too small for it, otherwise `take` at once or,
/// unless `nonblock`, once `pollee` says it is readable.
pub(super) fn read_count(
    buf: &mut [u8],
    nonblock: bool,
    pollee: &Pollee,
    mut take: impl FnMut() -> Result<u64, Errno>,
) -> Result<usize, Errno> {
    let Some(out) = buf.get_mut(..8) else {
        return Err(Errno::EINVAL);
    };
    let value = if nonblock { take()? } else { block_on(pollee, Events::IN, &mut take)? };
    out.copy_from_slice(&value.to_ne_bytes());
    Ok(8)
}

impl FileOps for EventFd {
    fn read_at(&self, _offset: u64, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        read_count(buf, nonblock, &self.pollee, || self.try_read())
    }

    fn write_at(&self, _offset: u64, buf: &[u8], nonblock: bool) -> Result<usize, Errno> {
        // Exactly 8 bytes, as since Linux 6.9 (before, extra bytes were
        // ignored).
        let Ok(raw) = <[u8; 8]>::try_from(buf) else {
            return Err(Errno::EINVAL);
        };
        let add = u64::from_ne_bytes(raw);
        if add == u64::MAX {
            return Err(Errno::EINVAL);
        }
        if nonblock {
            self.try_write(add)?;
        } else {
            block_on(&self.pollee, Events::OUT, || self.try_write(add))?;
        }
        Ok(8)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn fixed_seek(&self) -> Option<u64> {
        Some(0)
    }

    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        if let Some(table) = table {
            table.register(&self.pollee);
        }
        let count = *self.count.lock();
        let mut events = Events::EMPTY;
        if count > 0 {
            events |= Events::IN;
        }
        if count == u64::MAX {
            events |= Events::ERR;
        }
        if count < MAX {
            events |= Events::OUT;
        }
        events
    }

    fn mode(&self) -> u32 {
        0o600
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn anon_name(&self) -> Option<&'static str> {
        Some("[eventfd]")
    }
}
