//! The console as a file: writes go to the serial port, reads block for
//! input. (The line discipline arrives with the terminal work.)

use alloc::sync::Arc;

use linux_abi::errno::Errno;

use super::file::FileOps;
use super::ramfs::S_IFCHR;

pub struct Console;

impl FileOps for Console {
    fn read_at(&self, _offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        buf[0] = crate::console::read_byte();
        let mut n = 1;
        while n < buf.len() {
            match crate::console::try_read_byte() {
                Some(b) => {
                    buf[n] = b;
                    n += 1;
                }
                None => break,
            }
        }
        Ok(n)
    }

    fn write_at(&self, _offset: u64, buf: &[u8]) -> Result<usize, Errno> {
        hal::serial::write_bytes(buf);
        Ok(buf.len())
    }

    fn seekable(&self) -> bool {
        false
    }

    fn mode(&self) -> u32 {
        S_IFCHR | 0o620
    }
}

pub fn new() -> Arc<dyn FileOps> {
    Arc::new(Console)
}
