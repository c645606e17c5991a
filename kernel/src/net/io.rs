//! Where message data comes from and goes to: a sender's buffers are a
//! [`MsgSource`], a receiver's a [`MsgSink`]. The system-call layer
//! implements both over the caller's iovecs in user memory, so a message
//! is copied once on each side; [`KernelSource`] and [`KernelSink`] serve
//! the kernel's own callers (read(2) and write(2) through `FileOps`).

use linux_abi::errno::Errno;

/// The bytes of a message being sent, read in order.
pub trait MsgSource {
    /// Bytes not read yet.
    fn remaining(&self) -> usize;
    /// Fills `dst` with the next `dst.len()` bytes (at most `remaining`);
    /// EFAULT if the memory behind them is bad.
    fn read(&mut self, dst: &mut [u8]) -> Result<(), Errno>;
}

/// Where received bytes go, written in order.
pub trait MsgSink {
    /// Room left.
    fn remaining(&self) -> usize;
    /// Appends `src` (at most `remaining` bytes); EFAULT if the memory
    /// behind them is bad.
    fn write(&mut self, src: &[u8]) -> Result<(), Errno>;
}

/// A message in a kernel buffer.
pub struct KernelSource<'a> {
    data: &'a [u8],
}

impl<'a> KernelSource<'a> {
    pub fn new(data: &'a [u8]) -> KernelSource<'a> {
        KernelSource { data }
    }
}

impl MsgSource for KernelSource<'_> {
    fn remaining(&self) -> usize {
        self.data.len()
    }

    fn read(&mut self, dst: &mut [u8]) -> Result<(), Errno> {
        let (head, rest) = self.data.split_at(dst.len());
        dst.copy_from_slice(head);
        self.data = rest;
        Ok(())
    }
}

/// A kernel buffer to receive into.
pub struct KernelSink<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> KernelSink<'a> {
    pub fn new(buf: &'a mut [u8]) -> KernelSink<'a> {
        KernelSink { buf, len: 0 }
    }
}

impl MsgSink for KernelSink<'_> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.len
    }

    fn write(&mut self, src: &[u8]) -> Result<(), Errno> {
        self.buf[self.len..self.len + src.len()].copy_from_slice(src);
        self.len += src.len();
        Ok(())
    }
}
