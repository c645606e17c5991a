//! What every Internet socket carries whatever its protocol: its
//! identity in the stack, family, SOL_SOCKET options, readiness (kept in
//! atomics so poll, select and epoll never take the stack lock), its
//! pending error, and the IP-level options.

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

use linux_abi::errno::Errno;
use linux_abi::socket as s;

use crate::event::{Events, Pollee};
use crate::net::options::{OptValue, SockOptions};
use crate::net::wait::Timeout;

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

    pub fn rcv_timeout(&self, nonblock: bool) -> Timeout {
        Timeout::from_jiffies(nonblock, self.opts.rcvtimeo.load(Ordering::Relaxed))
    }

    pub fn snd_timeout(&self, nonblock: bool) -> Timeout {
        Timeout::from_jiffies(nonblock, self.opts.sndtimeo.load(Ordering::Relaxed))
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
