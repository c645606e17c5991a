//! signalfd: reading the calling thread's pending signals as records.
//!
//! A signalfd holds a set of signals. A read dequeues pending signals of
//! that set from the reading thread (its own first, then its process's),
//! as many 128-byte `signalfd_siginfo` records as fit, blocking for the
//! first unless O_NONBLOCK. It is readable while such a signal is pending
//! for the thread that polls it. Signals must be blocked to reach it:
//! an unblocked one is delivered the usual way first. Every signal that
//! becomes pending notifies the process's `SignalState::pollee`.

use alloc::sync::Arc;
use core::any::Any;

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::layout::SignalfdSiginfo;
use linux_abi::signal::SigSet;

use super::signal;
use crate::event::{block_on, Events, PollTable};
use crate::fs::file::FileOps;

pub struct SignalFd {
    mask: SpinLock<SigSet>,
}

impl SignalFd {
    /// A signalfd for `mask` (SIGKILL and SIGSTOP are never in it).
    pub fn new(mask: SigSet) -> Result<Arc<SignalFd>, Errno> {
        Arc::try_new(SignalFd { mask: SpinLock::new(mask.without_unblockable()) }).map_err(|_| Errno::ENOMEM)
    }

    /// The signalfd behind `ops`, if it is one.
    pub fn of(ops: &Arc<dyn FileOps>) -> Option<&SignalFd> {
        ops.as_any().and_then(|a| a.downcast_ref::<SignalFd>())
    }

    /// signalfd4 on an existing signalfd: a new set, and a wakeup for
    /// whoever waits (the new set may already have a signal pending).
    pub fn set_mask(&self, mask: SigSet) {
        *self.mask.lock() = mask.without_unblockable();
        if let Some(t) = super::current_task() {
            t.process.signals.pollee.notify(Events::EMPTY);
        }
    }

    fn dequeue(&self) -> Result<SignalfdSiginfo, Errno> {
        let task = super::current_task().ok_or(Errno::EINVAL)?;
        let mask = *self.mask.lock();
        match signal::take_from_set(&task, mask) {
            Some(info) => Ok(SignalfdSiginfo::from_siginfo(&info)),
            None => Err(Errno::EAGAIN),
        }
    }
}

impl FileOps for SignalFd {
    fn read_at(&self, _offset: u64, buf: &mut [u8], nonblock: bool) -> Result<usize, Errno> {
        let records = buf.len() / SignalfdSiginfo::SIZE;
        if records == 0 {
            return Err(Errno::EINVAL);
        }
        let first = if nonblock {
            self.dequeue()?
        } else {
            let task = super::current_task().ok_or(Errno::EINVAL)?;
            block_on(&task.process.signals.pollee, Events::IN, || self.dequeue())?
        };
        buf[..SignalfdSiginfo::SIZE].copy_from_slice(&first.to_bytes());
        let mut done = 1;
        while done < records {
            let Ok(next) = self.dequeue() else {
                break;
            };
            buf[done * SignalfdSiginfo::SIZE..(done + 1) * SignalfdSiginfo::SIZE].copy_from_slice(&next.to_bytes());
            done += 1;
        }
        Ok(done * SignalfdSiginfo::SIZE)
    }

    fn write_at(&self, _offset: u64, _buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn fixed_seek(&self) -> Option<u64> {
        Some(0)
    }

    /// Readable while a signal of the set is pending for the polling
    /// thread (Linux looks at `current`, whoever that is).
    fn poll(&self, table: Option<&mut PollTable>) -> Events {
        let Some(task) = super::current_task() else {
            return Events::EMPTY;
        };
        if let Some(table) = table {
            table.register(&task.process.signals.pollee);
        }
        let mask = *self.mask.lock();
        if signal::pending_set(&task).intersection(mask).is_empty() {
            Events::EMPTY
        } else {
            Events::IN
        }
    }

    fn mode(&self) -> u32 {
        0o600
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }

    fn anon_name(&self) -> Option<&'static str> {
        Some("[signalfd]")
    }
}
