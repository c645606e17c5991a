//! The 16550 UART on COM1: the kernel console.
//!
//! Output is polled (the log must work before interrupts do, and in panics).
//! Input is interrupt-driven: the receive interrupt drains the UART into a
//! ring buffer that the kernel reads with [`read_byte`].

use crate::port::Port;
use crate::sync::SpinLock;

const COM1: u16 = 0x3f8;
const DATA: Port = Port::new(COM1);
const INT_ENABLE: Port = Port::new(COM1 + 1);
const FIFO_CTRL: Port = Port::new(COM1 + 2);
const LINE_CTRL: Port = Port::new(COM1 + 3);
const MODEM_CTRL: Port = Port::new(COM1 + 4);
const LINE_STATUS: Port = Port::new(COM1 + 5);

/// The legacy ISA IRQ line of COM1.
pub const COM1_IRQ: u8 = 4;
/// The vector COM1's interrupt arrives on.
pub const IRQ_VECTOR: u8 = crate::trap::IRQ_BASE + COM1_IRQ;

const RX_CAPACITY: usize = 1024;

struct RxRing {
    buf: [u8; RX_CAPACITY],
    head: usize,
    len: usize,
}

static RX: SpinLock<RxRing> = SpinLock::new(RxRing { buf: [0; RX_CAPACITY], head: 0, len: 0 });
static TX: SpinLock<()> = SpinLock::new(());

pub(crate) fn init() {
    INT_ENABLE.write_u8(0x00);
    LINE_CTRL.write_u8(0x80); // divisor latch
    DATA.write_u8(0x01); // 115200 baud
    INT_ENABLE.write_u8(0x00);
    LINE_CTRL.write_u8(0x03); // 8N1
    FIFO_CTRL.write_u8(0xC7); // enable and clear FIFOs, 14-byte threshold
    MODEM_CTRL.write_u8(0x0B); // DTR, RTS, OUT2 (OUT2 gates the IRQ line)
}

/// Turns on the receive interrupt; called once the IDT and IO APIC route it.
pub(crate) fn enable_rx_interrupt() {
    INT_ENABLE.write_u8(0x01);
}

fn write_byte_raw(byte: u8) {
    while LINE_STATUS.read_u8() & 0x20 == 0 {
        core::hint::spin_loop();
    }
    DATA.write_u8(byte);
}

/// Writes bytes to the console, turning `\n` into `\r\n`.
pub fn write_bytes(bytes: &[u8]) {
    let _guard = TX.lock();
    for &b in bytes {
        if b == b'\n' {
            write_byte_raw(b'\r');
        }
        write_byte_raw(b);
    }
}

/// Writes without taking the console lock: for panics and fatal exception
/// reports, where the lock holder may be the thing that died.
pub fn write_bytes_unlocked(bytes: &[u8]) {
    for &b in bytes {
        if b == b'\n' {
            write_byte_raw(b'\r');
        }
        write_byte_raw(b);
    }
}

/// Receive interrupt: move every waiting byte into the ring.
pub fn handle_irq() {
    let mut rx = RX.lock();
    while LINE_STATUS.read_u8() & 0x01 != 0 {
        let byte = DATA.read_u8();
        if rx.len < RX_CAPACITY {
            let tail = (rx.head + rx.len) % RX_CAPACITY;
            rx.buf[tail] = byte;
            rx.len += 1;
        }
    }
}

/// Takes one received byte, if any arrived.
pub fn read_byte() -> Option<u8> {
    let mut rx = RX.lock();
    if rx.len == 0 {
        // Interrupts may be off (early boot, tests): poll the UART too.
        if LINE_STATUS.read_u8() & 0x01 != 0 {
            return Some(DATA.read_u8());
        }
        return None;
    }
    let byte = rx.buf[rx.head];
    rx.head = (rx.head + 1) % RX_CAPACITY;
    rx.len -= 1;
    Some(byte)
}

/// `core::fmt` adapter for the console.
pub struct Console;

impl core::fmt::Write for Console {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        write_bytes(s.as_bytes());
        Ok(())
    }
}

pub(crate) struct RawConsole;

impl core::fmt::Write for RawConsole {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        write_bytes_unlocked(s.as_bytes());
        Ok(())
    }
}

/// Whether received bytes are waiting.
pub fn input_pending() -> bool {
    RX.lock().len > 0 || LINE_STATUS.read_u8() & 0x01 != 0
}

/// Writes bytes exactly as given (a terminal with output processing off).
pub fn write_bytes_raw(bytes: &[u8]) {
    let _guard = TX.lock();
    for &b in bytes {
        write_byte_raw(b);
    }
}
