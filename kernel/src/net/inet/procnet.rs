//! The stack's socket listing: one entry per listening or connected
//! socket, with the states as Linux numbers them. `net::procnet` turns it
//! into /proc/net/tcp, tcp6, udp and udp6 (through the interface table).

use smoltcp::socket::tcp::State;

use super::addr::SockAddr;
use super::ports::Transport;
use super::stack::Stack;

/// One socket as the listings show it.
pub struct ProcEntry {
    pub transport: Transport,
    pub family: u16,
    pub local: SockAddr,
    pub remote: SockAddr,
    /// Linux's state number (TCP_ESTABLISHED = 1 ... TCP_CLOSING = 11).
    pub state: u8,
    pub tx_queue: usize,
    pub rx_queue: usize,
    pub uid: u32,
    pub inode: u64,
}

/// Linux's number for a TCP state.
pub fn tcp_state(s: State) -> u8 {
    match s {
        State::Established => 1,
        State::SynSent => 2,
        State::SynReceived => 3,
        State::FinWait1 => 4,
        State::FinWait2 => 5,
        State::TimeWait => 6,
        State::Closed => 7,
        State::CloseWait => 8,
        State::LastAck => 9,
        State::Listen => 10,
        State::Closing => 11,
    }
}

impl Stack {
    /// Every listed socket (open ones through their watchers, closing
    /// ones without a descriptor with inode 0).
    pub fn entries(&mut self) -> alloc::vec::Vec<ProcEntry> {
        let mut v = alloc::vec::Vec::new();
        let watchers = self.watchers_snapshot();
        for w in watchers {
            if let Some(e) = w.entry(self) {
                if v.try_reserve(1).is_err() {
                    break;
                }
                v.push(e);
            }
        }
        // Connections a listener holds (half-open or waiting for
        // accept): Linux lists them, with no inode.
        let mut children = alloc::vec::Vec::new();
        for q in self.listens.queues.iter() {
            for &(r, _) in q.embryos.iter().chain(q.ready.iter()) {
                if children.try_reserve(1).is_err() {
                    break;
                }
                children.push((r, q.family, q.uid));
            }
        }
        for (r, family, uid) in children {
            let t = self.tcp_peek(r);
            let (Some(local), Some(remote)) = (t.local_endpoint(), t.remote_endpoint()) else { continue };
            let e = ProcEntry {
                transport: Transport::Tcp,
                family,
                local: super::addr::from_endpoint(local),
                remote: super::addr::from_endpoint(remote),
                state: tcp_state(t.state()),
                tx_queue: t.send_queue(),
                rx_queue: t.recv_queue(),
                uid,
                inode: 0,
            };
            if v.try_reserve(1).is_err() {
                break;
            }
            v.push(e);
        }
        v
    }
}
