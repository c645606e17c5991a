//! Signal-driven I/O on sockets: when a socket with O_ASYNC signals its
//! owner, and with which reason, as Linux's `sock_wake_async` decides.
//!
//! A socket's reasons are not simply its readiness: data or a connection
//! arriving signals POLL_IN unless a reader is asleep waiting for it
//! (`SOCKWQ_ASYNC_WAITDATA`); room to write signals POLL_OUT only when a
//! writer found none since the last such signal (`SOCKWQ_ASYNC_NOSPACE`);
//! a peer that goes signals POLL_HUP, one that stops writing POLL_IN, an
//! error POLL_ERR. The protocols call these hooks where Linux calls
//! `sk_wake_async`; the signal itself goes through the socket file's
//! [`AsyncSlot`], which F_SETFL arms.

use core::sync::atomic::{AtomicU8, Ordering};

use linux_abi::signal::{POLL_ERR, POLL_OUT};

use crate::fs::fasync::AsyncSlot;

/// A writer found the send buffer full.
const NOSPACE: u8 = 1;
/// A reader sleeps waiting for data.
const WAITDATA: u8 = 2;

/// The O_ASYNC state of one socket (Linux's `socket_wq` flags and
/// fasync list).
#[derive(Default)]
pub struct SockAsync {
    slot: AsyncSlot,
    flags: AtomicU8,
}

impl SockAsync {
    pub const fn new() -> SockAsync {
        SockAsync { slot: AsyncSlot::new(), flags: AtomicU8::new(0) }
    }

    pub fn slot(&self) -> &AsyncSlot {
        &self.slot
    }

    /// Data, a connection or a shutdown arrived (`SOCK_WAKE_WAITD`):
    /// `code` is POLL_IN or POLL_HUP.
    pub fn data_ready(&self, code: i32) {
        if self.flags.load(Ordering::Acquire) & WAITDATA == 0 {
            self.slot.signal(code);
        }
    }

    /// The socket is writable again (`SOCK_WAKE_SPACE`).
    pub fn space(&self) {
        if self.slot.armed() && self.flags.fetch_and(!NOSPACE, Ordering::AcqRel) & NOSPACE != 0 {
            self.slot.signal(POLL_OUT);
        }
    }

    /// An error was set (`sk_error_report`).
    pub fn error(&self) {
        self.slot.signal(POLL_ERR);
    }

    /// A writer found no room (only remembered while O_ASYNC is on, as
    /// Linux's `sk_set_bit`).
    pub fn no_space(&self) {
        if self.slot.armed() {
            self.flags.fetch_or(NOSPACE, Ordering::AcqRel);
        }
    }

    /// A reader goes to sleep for data (`on`), or wakes.
    pub fn waiting_for_data(&self, on: bool) {
        if on {
            if self.slot.armed() {
                self.flags.fetch_or(WAITDATA, Ordering::AcqRel);
            }
        } else {
            self.flags.fetch_and(!WAITDATA, Ordering::AcqRel);
        }
    }
}
