//! TCP_INFO and SO_LINGER's wait: what a TCP connection reports of
//! itself, and how long close(2) waits for its data to be acknowledged.
//!
//! smoltcp keeps a connection's round trip estimate, retransmission
//! timeout, congestion window and the peer's MSS to itself (0.14 has no
//! accessor for them), so `struct tcp_info` carries only what Kiln
//! knows: the state, the timestamp option, and the bytes acknowledged
//! and received, counted from what the socket moved and what smoltcp
//! and the loopback pipe (direct.rs) still hold. Every other field is 0.

use core::sync::atomic::{AtomicU64, Ordering};

use smoltcp::socket::tcp::State;

use super::stack::{SockRef, Stack};

/// getsockopt(IPPROTO_TCP, TCP_INFO).
pub const TCP_INFO: i32 = 11;

/// Linux's `struct tcp_info` through `tcpi_total_rto_time` (6.7's
/// layout; later kernels append fields after it, and getsockopt
/// returns the shorter of this and the caller's length, as Linux).
const LEN: usize = 248;

const TCPI_OPT_TIMESTAMPS: u8 = 1;

const OFF_STATE: usize = 0;
const OFF_OPTIONS: usize = 5;
const OFF_BYTES_ACKED: usize = 120;
const OFF_BYTES_RECEIVED: usize = 128;

/// What a socket counted itself: the bytes its callers wrote and read,
/// and whether it opened the connection (Linux counts the acknowledged
/// SYN of an active open in `tcpi_bytes_acked`, not a passive one's).
#[derive(Clone, Copy, Default)]
pub struct Counts {
    pub written: u64,
    pub read: u64,
    pub active_open: bool,
}

/// The bytes a socket's callers wrote and read. Every send and receive
/// holds the stack lock while it moves bytes, and they count under it
/// (the `&Stack` each method takes is that proof): a plain load and
/// store, where taking the socket's own lock once more per call cost
/// the 1-byte TCP round trip 0.2 µs.
#[derive(Default)]
pub struct Moved {
    written: AtomicU64,
    read: AtomicU64,
}

impl Moved {
    pub fn wrote(&self, _locked: &Stack, n: usize) {
        self.written.store(self.written.load(Ordering::Relaxed) + n as u64, Ordering::Relaxed);
    }

    pub fn read(&self, _locked: &Stack, n: usize) {
        self.read.store(self.read.load(Ordering::Relaxed) + n as u64, Ordering::Relaxed);
    }

    /// A new connection starts from 0.
    pub fn clear(&self, _locked: &Stack) {
        self.written.store(0, Ordering::Relaxed);
        self.read.store(0, Ordering::Relaxed);
    }

    pub fn counts(&self, _locked: &Stack, active_open: bool) -> Counts {
        Counts { written: self.written.load(Ordering::Relaxed), read: self.read.load(Ordering::Relaxed), active_open }
    }
}

/// The bytes a writer put in its loopback pipe beyond what its peer's
/// receive ring holds: the pipe stands for both the peer's receive
/// buffer and this end's send buffer (direct.rs sizes it so), and these
/// are the ones Linux would still have unacknowledged.
pub fn piped_unacked(st: &mut Stack, r: SockRef) -> usize {
    let Some(p) = st.direct.writing(r) else { return 0 };
    let (len, reader) = (p.ring.len(), p.reader);
    len.saturating_sub(st.tcp_peek(reader).recv_capacity())
}

/// The struct for a listener (`state` 10) or an unconnected socket (7).
pub fn unconnected(state: u8) -> alloc::vec::Vec<u8> {
    let mut v = alloc::vec![0u8; LEN];
    v[OFF_STATE] = state;
    v
}

/// The struct for connection `r`.
pub fn connection(st: &mut Stack, r: SockRef, counts: Counts) -> alloc::vec::Vec<u8> {
    let unacked_pipe = piped_unacked(st, r) as u64;
    let piped = st.direct.queued(r) as u64;
    let t = st.tcp_peek(r);
    let state = t.state();
    let mut v = unconnected(super::procnet::tcp_state(state));
    if t.timestamp_enabled() && !matches!(state, State::SynSent | State::SynReceived) {
        v[OFF_OPTIONS] |= TCPI_OPT_TIMESTAMPS;
    }
    let established = !matches!(state, State::SynSent | State::SynReceived | State::Listen);
    // The SYN and the FIN are a sequence number each: Linux counts them
    // once acknowledged (or received).
    let syn = (counts.active_open && established) as u64;
    let fin_acked = matches!(state, State::FinWait2 | State::TimeWait) as u64;
    let fin_received = matches!(state, State::CloseWait | State::LastAck | State::Closing | State::TimeWait) as u64;
    let acked = counts.written.saturating_sub(t.send_queue() as u64 + unacked_pipe) + syn + fin_acked;
    let received = counts.read + t.recv_queue() as u64 + piped + fin_received;
    v[OFF_BYTES_ACKED..OFF_BYTES_ACKED + 8].copy_from_slice(&acked.to_le_bytes());
    v[OFF_BYTES_RECEIVED..OFF_BYTES_RECEIVED + 8].copy_from_slice(&received.to_le_bytes());
    v
}

/// Whether close(2) with SO_LINGER set still waits for connection `r`:
/// Linux's `sk_stream_wait_close` waits while the FIN is unacknowledged
/// (FIN-WAIT-1, CLOSING, LAST-ACK); the loopback pipe's unacknowledged
/// bytes come before that FIN.
pub fn lingering(st: &mut Stack, r: SockRef) -> bool {
    piped_unacked(st, r) > 0 || matches!(st.tcp_peek(r).state(), State::FinWait1 | State::Closing | State::LastAck)
}
