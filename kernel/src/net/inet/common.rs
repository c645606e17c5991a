//! What every Internet socket carries whatever its protocol: its
//! identity in the stack, family, SOL_SOCKET options, readiness (kept in
//! atomics so poll, select and epoll never take the stack lock), its
//! pending error, and the IP-level options; and what every protocol does
//! alike with them: a blocking call ([`Common::blocking`]: non-blocking
//! flag, SO_RCVTIMEO/SO_SNDTIMEO, signals, the sleep on the socket's
//! pollee), poll ([`Common::poll`]), a datagram socket's readiness from
//! its queues ([`Common::publish_queued`]), FIONREAD's walk over the
//! smoltcp sockets ([`first_unread`]) and release from any context
//! ([`release_or_defer`]).

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

use linux_abi::errno::Errno;
use linux_abi::socket as s;

use alloc::sync::{Arc, Weak};

use super::stack::{SockRef, Stack, Watch};
use crate::event::{Events, PollTable, Pollee};
use crate::net::options::{OptValue, SockOptions};
use crate::net::wait::{block_on, Timeout};

/// setsockopt levels and options beyond SOL_SOCKET.
pub const SOL_IP: i32 = 0;
pub const SOL_TCP: i32 = 6;
pub const SOL_UDP: i32 = 17;
pub const SOL_IPV6: i32 = 41;
pub const IP_TOS: i32 = 1;
pub const IP_TTL: i32 = 2;
pub const IPV6_UNICAST_HOPS: i32 = 16;
pub const IPV6_V6ONLY: i32 = 26;

pub struct Common {
    pub id: u64,
    pub family: u16,
    pub opts: SockOptions,
    pub pollee: Pollee,
    /// Readiness as of the last refresh.
    pub events: AtomicU32,
    /// SO_ERROR.
    pub error: AtomicI32,
    pub ino: AtomicU64,
    /// The creator's effective uid (/proc/net's uid column).
    pub uid: u32,
    pub v6only: AtomicBool,
    pub tos: AtomicI32,
    /// IP_TTL / IPV6_UNICAST_HOPS (-1: the default, 64).
    pub ttl: AtomicI32,
}

impl Common {
    pub fn new(family: u16) -> Common {
        Common {
            id: super::stack::new_id(),
            family,
            opts: SockOptions::new(),
            pollee: Pollee::new(),
            events: AtomicU32::new(0),
            error: AtomicI32::new(0),
            ino: AtomicU64::new(0),
            uid: crate::net::caller().euid,
            v6only: AtomicBool::new(false),
            tos: AtomicI32::new(0),
            ttl: AtomicI32::new(-1),
        }
    }

    pub fn events(&self) -> Events {
        Events::from_bits(self.events.load(Ordering::Acquire))
    }

    /// Stores new readiness and tells the pollers what changed. `more`:
    /// data arrived or room appeared without the mask changing (an
    /// edge-triggered watcher hears of each, as on Linux).
    pub fn set_events(&self, ev: Events, more: Events) {
        let old = Events::from_bits(self.events.swap(ev.bits(), Ordering::AcqRel));
        let changed = Events::from_bits((old.bits() ^ ev.bits()) & ev.bits()) | more;
        if !changed.is_empty() || old != ev {
            self.pollee.notify(if changed.is_empty() { Events::EMPTY } else { changed });
        }
    }

    pub fn set_err(&self, e: Errno) {
        self.error.store(e.as_i32(), Ordering::Release);
    }

    pub fn take_err(&self) -> Option<Errno> {
        let e = self.error.swap(0, Ordering::AcqRel);
        if e == 0 {
            None
        } else {
            Errno::from_i32(e)
        }
    }

    pub fn has_err(&self) -> bool {
        self.error.load(Ordering::Acquire) != 0
    }

    /// How a receive (or accept) with these `flags` waits: the file's
    /// O_NONBLOCK or MSG_DONTWAIT, else SO_RCVTIMEO. The deadline is
    /// fixed here, so a call that waits several times (MSG_WAITALL)
    /// waits no longer in all.
    pub fn recv_wait(&self, nonblock: bool, flags: u32) -> Wait {
        let nonblock = nonblock || flags & s::MSG_DONTWAIT != 0;
        Wait {
            interest: Events::IN,
            timeout: Timeout::from_jiffies(nonblock, self.opts.rcvtimeo.load(Ordering::Relaxed)),
            marks_reader: false,
        }
    }

    /// How a send (or connect) with these `flags` waits: as
    /// [`Common::recv_wait`], with SO_SNDTIMEO, for room.
    pub fn send_wait(&self, nonblock: bool, flags: u32) -> Wait {
        let nonblock = nonblock || flags & s::MSG_DONTWAIT != 0;
        Wait {
            interest: Events::OUT,
            timeout: Timeout::from_jiffies(nonblock, self.opts.sndtimeo.load(Ordering::Relaxed)),
            marks_reader: false,
        }
    }

    /// Runs `attempt` until it stops failing with EAGAIN, as `wait`
    /// says: the one blocking loop of the Internet sockets. A reader
    /// that [`Wait::marking_reader`] is marked asleep for O_ASYNC
    /// meanwhile (no POLL_IN signal while it waits).
    pub fn blocking<T>(&self, wait: &Wait, attempt: impl FnMut() -> Result<T, Errno>) -> Result<T, Errno> {
        if !wait.marks_reader {
            return block_on(&self.pollee, wait.interest, wait.timeout, attempt);
        }
        self.opts.async_io.waiting_for_data(wait.timeout != Timeout::NonBlocking);
        let r = block_on(&self.pollee, wait.interest, wait.timeout, attempt);
        self.opts.async_io.waiting_for_data(false);
        r
    }

    /// poll(2), select and epoll: the readiness the last refresh stored
    /// (no stack lock), with a pending error.
    pub fn poll(&self, table: Option<&mut PollTable>) -> Events {
        if let Some(t) = table {
            t.register(&self.pollee);
        }
        let mut ev = self.events();
        if self.has_err() {
            ev |= Events::ERR;
        }
        ev
    }

    /// Publishes a datagram socket's readiness: `ev` and, with `queued`
    /// packets waiting (`rx_seen` before), readable; a packet more than
    /// last time is news to an edge-triggered watcher and to O_ASYNC.
    pub fn publish_queued(&self, mut ev: Events, queued: usize, rx_seen: &mut usize) {
        let mut more = Events::EMPTY;
        if queued > 0 {
            ev |= Events::IN | Events::RDNORM;
        }
        if queued > *rx_seen {
            more |= Events::IN;
            self.opts.async_io.data_ready(linux_abi::signal::POLL_IN);
        }
        *rx_seen = queued;
        self.set_events(ev, more);
    }

    /// The hop limit smoltcp should use (None: its default, 64 as
    /// Linux's).
    pub fn hop_limit(&self) -> Option<u8> {
        let t = self.ttl.load(Ordering::Relaxed);
        (t > 0).then_some(t as u8)
    }

    /// setsockopt at SOL_IP/SOL_IPV6 (what both transports share).
    /// `bound`: IPV6_V6ONLY may change only before bind.
    pub fn set_ip_option(&self, level: i32, name: i32, val: &[u8], bound: bool) -> Result<bool, Errno> {
        let int = || -> Result<i32, Errno> {
            if val.len() >= 4 {
                Ok(i32::from_le_bytes([val[0], val[1], val[2], val[3]]))
            } else if !val.is_empty() && level == SOL_IP {
                // Linux's IP options take a single byte too.
                Ok(val[0] as i32)
            } else {
                Err(Errno::EINVAL)
            }
        };
        match (level, name) {
            (SOL_IP, IP_TOS) => {
                self.tos.store(int()? & 0xff, Ordering::Relaxed);
                Ok(true)
            }
            (SOL_IP, IP_TTL) | (SOL_IPV6, IPV6_UNICAST_HOPS) => {
                let v = int()?;
                if v == -1 {
                    self.ttl.store(-1, Ordering::Relaxed);
                } else if (1..=255).contains(&v) {
                    self.ttl.store(v, Ordering::Relaxed);
                } else if level == SOL_IPV6 && v == 0 {
                    self.ttl.store(0, Ordering::Relaxed);
                } else {
                    return Err(Errno::EINVAL);
                }
                Ok(true)
            }
            (SOL_IPV6, IPV6_V6ONLY) => {
                if self.family != s::AF_INET6 {
                    return Err(Errno::ENOPROTOOPT);
                }
                if val.len() < 4 {
                    return Err(Errno::EINVAL);
                }
                if bound {
                    return Err(Errno::EINVAL);
                }
                self.v6only.store(int()? != 0, Ordering::Relaxed);
                Ok(true)
            }
            (SOL_IPV6, _) if self.family != s::AF_INET6 => Err(Errno::ENOPROTOOPT),
            (SOL_IP, _) | (SOL_IPV6, _) => Err(Errno::ENOPROTOOPT),
            _ => Ok(false),
        }
    }

    /// getsockopt at a level neither the transport nor the IP layer
    /// knows: `ip_getsockopt`'s EOPNOTSUPP, `ipv6_getsockopt`'s
    /// ENOPROTOOPT.
    pub fn unknown_level(&self) -> Errno {
        if self.family == s::AF_INET6 {
            Errno::ENOPROTOOPT
        } else {
            Errno::EOPNOTSUPP
        }
    }

    pub fn get_ip_option(&self, level: i32, name: i32) -> Result<Option<OptValue>, Errno> {
        Ok(Some(match (level, name) {
            (SOL_IP, IP_TOS) => OptValue::Int(self.tos.load(Ordering::Relaxed)),
            (SOL_IP, IP_TTL) => OptValue::Int(self.hop_limit().map_or(64, |h| h as i32)),
            (SOL_IPV6, IPV6_UNICAST_HOPS) if self.family == s::AF_INET6 => {
                OptValue::Int(self.hop_limit().map_or(64, |h| h as i32))
            }
            (SOL_IPV6, IPV6_V6ONLY) if self.family == s::AF_INET6 => {
                OptValue::Int(self.v6only.load(Ordering::Relaxed) as i32)
            }
            // An AF_INET socket has no IPv6 level (ip_getsockopt).
            (SOL_IPV6, _) if self.family != s::AF_INET6 => return Err(Errno::EOPNOTSUPP),
            (SOL_IP, _) | (SOL_IPV6, _) => return Err(Errno::ENOPROTOOPT),
            _ => return Ok(None),
        }))
    }
}

/// An int option value (at least 4 bytes, as Linux's
/// `copy_from_sockptr` of an int).
pub fn int_arg(val: &[u8]) -> Result<i32, Errno> {
    if val.len() < 4 {
        return Err(Errno::EINVAL);
    }
    Ok(i32::from_le_bytes([val[0], val[1], val[2], val[3]]))
}

/// How a blocking call waits: for what, and how long.
pub struct Wait {
    interest: Events,
    pub timeout: Timeout,
    marks_reader: bool,
}

impl Wait {
    /// A reader Linux marks asleep for O_ASYNC (`SOCKWQ_ASYNC_WAITDATA`):
    /// Kiln's TCP and UDP receives.
    pub fn marking_reader(mut self) -> Wait {
        self.marks_reader = true;
        self
    }

    pub fn nonblocking(&self) -> bool {
        self.timeout == Timeout::NonBlocking
    }
}

/// FIONREAD (SIOCINQ) of a socket with a smoltcp socket per interface:
/// the length `len_of` gives of the first of them that has something
/// queued, else 0.
pub fn first_unread(
    st: &mut Stack,
    socks: &[SockRef],
    mut len_of: impl FnMut(&mut Stack, SockRef) -> Option<usize>,
) -> usize {
    socks.iter().find_map(|r| len_of(st, *r)).unwrap_or(0)
}

/// A socket's last reference went: releases it now, or, with interrupts
/// off (a last reference dropped under a spin lock, where the stack's
/// sleeping lock may not be taken), hands it to the network thread.
pub fn release_or_defer<T: Watch + 'static>(me: &hal::sync::Once<Weak<T>>, release_now: impl FnOnce()) {
    if !hal::cpu::interrupts_enabled() {
        if let Some(me) = me.get().and_then(Weak::upgrade) {
            let me: Arc<dyn Watch> = me;
            if super::stack::defer_release(me) {
                return;
            }
        }
    }
    release_now();
}
