//! SOL_SOCKET options: the state every socket carries whatever its family
//! ([`SockOptions`]), and setsockopt/getsockopt at that level, decoded as
//! Linux's `sk_setsockopt`/`sk_getsockopt` do (lengths, clamping, the
//! doubled buffer sizes, timeouts kept in 250 Hz jiffies). What only the
//! protocol knows (its type, peer credentials, pending error, listening
//! state, peek offset) it answers through `Protocol`.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};

use linux_abi::errno::Errno;
use linux_abi::layout::Timeval;
use linux_abi::socket as s;

use super::socket::Protocol;

/// `net.core.wmem_default` / `rmem_default`: a new socket's buffer sizes.
pub const WMEM_DEFAULT: u32 = 212_992;
pub const RMEM_DEFAULT: u32 = 212_992;
/// `net.core.wmem_max` / `rmem_max`: the most SO_SNDBUF/SO_RCVBUF accept
/// (before doubling). Linux's defaults; hosts may raise them.
pub const WMEM_MAX: u32 = 212_992;
pub const RMEM_MAX: u32 = 212_992;
/// The least a buffer may be set to (`SOCK_MIN_SNDBUF`/`SOCK_MIN_RCVBUF`:
/// room for a couple of the smallest packets).
pub const MIN_SNDBUF: u32 = 4608;
pub const MIN_RCVBUF: u32 = 2304;

/// Timeouts are kept in jiffies, as Linux keeps them, so a value reads
/// back rounded as it does there (HZ = 250).
pub const HZ: u64 = 250;
pub const NS_PER_JIFFY: u64 = 1_000_000_000 / HZ;
/// `MAX_SCHEDULE_TIMEOUT`: no timeout.
pub const TIMEO_FOREVER: u64 = i64::MAX as u64;

/// The SOL_SOCKET state of one socket.
pub struct SockOptions {
    pub sndbuf: AtomicU32,
    pub rcvbuf: AtomicU32,
    /// Jiffies (`TIMEO_FOREVER` when unset, 0 for "do not wait").
    pub rcvtimeo: AtomicU64,
    pub sndtimeo: AtomicU64,
    pub rcvlowat: AtomicI32,
    pub passcred: AtomicBool,
    reuseaddr: AtomicBool,
    reuseport: AtomicBool,
    keepalive: AtomicBool,
    debug: AtomicBool,
    dontroute: AtomicBool,
    broadcast: AtomicBool,
    oobinline: AtomicBool,
    no_check: AtomicBool,
    priority: AtomicI32,
    /// SO_LINGER: on/off in bit 32, seconds below.
    linger: AtomicU64,
    /// O_ASYNC: when the socket signals its owner.
    pub async_io: super::sigio::SockAsync,
}

impl SockOptions {
    pub fn new() -> SockOptions {
        SockOptions {
            sndbuf: AtomicU32::new(WMEM_DEFAULT),
            rcvbuf: AtomicU32::new(RMEM_DEFAULT),
            rcvtimeo: AtomicU64::new(TIMEO_FOREVER),
            sndtimeo: AtomicU64::new(TIMEO_FOREVER),
            rcvlowat: AtomicI32::new(1),
            passcred: AtomicBool::new(false),
            reuseaddr: AtomicBool::new(false),
            reuseport: AtomicBool::new(false),
            keepalive: AtomicBool::new(false),
            debug: AtomicBool::new(false),
            dontroute: AtomicBool::new(false),
            broadcast: AtomicBool::new(false),
            oobinline: AtomicBool::new(false),
            no_check: AtomicBool::new(false),
            priority: AtomicI32::new(0),
            linger: AtomicU64::new(0),
            async_io: super::sigio::SockAsync::new(),
        }
    }

    pub fn sndbuf(&self) -> usize {
        self.sndbuf.load(Ordering::Relaxed) as usize
    }

    pub fn passcred(&self) -> bool {
        self.passcred.load(Ordering::Relaxed)
    }

    pub fn reuseaddr(&self) -> bool {
        self.reuseaddr.load(Ordering::Relaxed)
    }

    /// SO_REUSEADDR from the start (ping sockets, Linux's
    /// INET_PROTOSW_REUSE).
    pub fn set_reuseaddr(&self, on: bool) {
        self.reuseaddr.store(on, Ordering::Relaxed)
    }

    pub fn reuseport(&self) -> bool {
        self.reuseport.load(Ordering::Relaxed)
    }

    pub fn keepalive(&self) -> bool {
        self.keepalive.load(Ordering::Relaxed)
    }

    /// SO_LINGER: whether it is on, and its time in seconds.
    pub fn linger(&self) -> (bool, i32) {
        let l = self.linger.load(Ordering::Relaxed);
        (l >> 32 != 0, l as u32 as i32)
    }

    /// What a connection accept(2) returns inherits from its listener
    /// (the flags `sk_clone_lock` copies with the socket).
    pub fn copy_flags_from(&self, from: &SockOptions) {
        for (to, f) in [
            (&self.reuseaddr, &from.reuseaddr),
            (&self.reuseport, &from.reuseport),
            (&self.keepalive, &from.keepalive),
            (&self.debug, &from.debug),
            (&self.dontroute, &from.dontroute),
            (&self.broadcast, &from.broadcast),
            (&self.oobinline, &from.oobinline),
        ] {
            to.store(f.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        for (to, f) in
            [(&self.rcvtimeo, &from.rcvtimeo), (&self.sndtimeo, &from.sndtimeo), (&self.linger, &from.linger)]
        {
            to.store(f.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.priority.store(from.priority.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

impl Default for SockOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// A getsockopt answer before it is cut to the caller's length.
pub enum OptValue {
    Int(i32),
    Bytes(Vec<u8>),
}

impl OptValue {
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            OptValue::Int(v) => v.to_le_bytes().to_vec(),
            OptValue::Bytes(b) => b,
        }
    }
}

fn int_arg(val: &[u8]) -> Result<i32, Errno> {
    if val.len() < 4 {
        return Err(Errno::EINVAL);
    }
    Ok(i32::from_le_bytes([val[0], val[1], val[2], val[3]]))
}

/// `sock_set_timeout`: a timeval (the old and new option numbers share
/// the 16-byte layout on x86_64) turned into jiffies, rounded up.
fn set_timeout(slot: &AtomicU64, val: &[u8]) -> Result<(), Errno> {
    let tv = Timeval::from_slice(val).ok_or(Errno::EINVAL)?;
    if tv.tv_usec < 0 || tv.tv_usec >= 1_000_000 {
        return Err(Errno::EDOM);
    }
    let jiffies = if tv.tv_sec < 0 {
        0
    } else if (tv.tv_sec == 0 && tv.tv_usec == 0) || tv.tv_sec as u64 >= TIMEO_FOREVER / HZ - 1 {
        TIMEO_FOREVER
    } else {
        tv.tv_sec as u64 * HZ + (tv.tv_usec as u64).div_ceil(1_000_000 / HZ)
    };
    slot.store(jiffies, Ordering::Relaxed);
    Ok(())
}

fn get_timeout(slot: &AtomicU64) -> OptValue {
    let j = slot.load(Ordering::Relaxed);
    let tv = if j == TIMEO_FOREVER {
        Timeval { tv_sec: 0, tv_usec: 0 }
    } else {
        Timeval { tv_sec: (j / HZ) as i64, tv_usec: ((j % HZ) * 1_000_000 / HZ) as i64 }
    };
    OptValue::Bytes(tv.to_bytes().to_vec())
}

/// setsockopt(SOL_SOCKET, name, val).
pub fn set(proto: &dyn Protocol, name: i32, val: &[u8]) -> Result<(), Errno> {
    let o = proto.options();
    let flag = |f: &AtomicBool| -> Result<(), Errno> {
        f.store(int_arg(val)? != 0, Ordering::Relaxed);
        Ok(())
    };
    match name {
        s::SO_RCVTIMEO_OLD | s::SO_RCVTIMEO_NEW => set_timeout(&o.rcvtimeo, val),
        s::SO_SNDTIMEO_OLD | s::SO_SNDTIMEO_NEW => set_timeout(&o.sndtimeo, val),
        s::SO_LINGER => {
            if val.len() < s::Linger::SIZE {
                return Err(Errno::EINVAL);
            }
            let mut b = [0u8; 8];
            b.copy_from_slice(&val[..8]);
            let l = s::Linger::from_bytes(&b);
            let old = o.linger.load(Ordering::Relaxed);
            let new = if l.l_onoff == 0 { old & 0xffff_ffff } else { (1 << 32) | (l.l_linger.max(0) as u32 as u64) };
            o.linger.store(new, Ordering::Relaxed);
            Ok(())
        }
        s::SO_DEBUG => flag(&o.debug),
        s::SO_REUSEADDR => flag(&o.reuseaddr),
        s::SO_KEEPALIVE => flag(&o.keepalive),
        s::SO_DONTROUTE => flag(&o.dontroute),
        s::SO_BROADCAST => flag(&o.broadcast),
        s::SO_OOBINLINE => flag(&o.oobinline),
        s::SO_NO_CHECK => flag(&o.no_check),
        s::SO_PASSCRED => flag(&o.passcred),
        s::SO_REUSEPORT => {
            // Only Internet sockets can share a port.
            let on = int_arg(val)? != 0;
            if on && !proto.is_inet() {
                return Err(Errno::EOPNOTSUPP);
            }
            o.reuseport.store(on, Ordering::Relaxed);
            Ok(())
        }
        s::SO_PRIORITY => {
            o.priority.store(int_arg(val)?, Ordering::Relaxed);
            Ok(())
        }
        s::SO_SNDBUF | s::SO_SNDBUFFORCE => {
            let v = int_arg(val)?;
            let v = if name == s::SO_SNDBUF { (v as u32).min(WMEM_MAX) } else { v.max(0) as u32 };
            let v = v.min(i32::MAX as u32 / 2);
            o.sndbuf.store((v * 2).max(MIN_SNDBUF), Ordering::Relaxed);
            proto.buffer_changed();
            Ok(())
        }
        s::SO_RCVBUF | s::SO_RCVBUFFORCE => {
            let v = int_arg(val)?;
            let v = if name == s::SO_RCVBUF { (v as u32).min(RMEM_MAX) } else { v.max(0) as u32 };
            let v = v.min(i32::MAX as u32 / 2);
            o.rcvbuf.store((v * 2).max(MIN_RCVBUF), Ordering::Relaxed);
            Ok(())
        }
        s::SO_RCVLOWAT => {
            let v = int_arg(val)?;
            let v = if v < 0 { i32::MAX } else { v };
            o.rcvlowat.store(if v == 0 { 1 } else { v }, Ordering::Relaxed);
            Ok(())
        }
        s::SO_PEEK_OFF => proto.set_peek_off(int_arg(val)?),
        _ => Err(Errno::ENOPROTOOPT),
    }
}

/// getsockopt(SOL_SOCKET, name).
pub fn get(proto: &dyn Protocol, name: i32) -> Result<OptValue, Errno> {
    let o = proto.options();
    let flag = |f: &AtomicBool| OptValue::Int(f.load(Ordering::Relaxed) as i32);
    Ok(match name {
        s::SO_TYPE => OptValue::Int(proto.sock_type() as i32),
        s::SO_PROTOCOL => OptValue::Int(proto.protocol()),
        s::SO_DOMAIN => OptValue::Int(proto.family() as i32),
        s::SO_ERROR => OptValue::Int(proto.take_error()),
        s::SO_ACCEPTCONN => OptValue::Int(proto.is_listening() as i32),
        s::SO_PEERCRED => OptValue::Bytes(proto.peer_cred().to_bytes().to_vec()),
        s::SO_SNDBUF => OptValue::Int(o.sndbuf.load(Ordering::Relaxed) as i32),
        s::SO_RCVBUF => OptValue::Int(o.rcvbuf.load(Ordering::Relaxed) as i32),
        s::SO_RCVLOWAT => OptValue::Int(o.rcvlowat.load(Ordering::Relaxed)),
        s::SO_SNDLOWAT => OptValue::Int(1),
        s::SO_RCVTIMEO_OLD | s::SO_RCVTIMEO_NEW => get_timeout(&o.rcvtimeo),
        s::SO_SNDTIMEO_OLD | s::SO_SNDTIMEO_NEW => get_timeout(&o.sndtimeo),
        s::SO_LINGER => {
            let l = o.linger.load(Ordering::Relaxed);
            let v = s::Linger { l_onoff: (l >> 32) as i32, l_linger: l as u32 as i32 };
            OptValue::Bytes(v.to_bytes().to_vec())
        }
        s::SO_DEBUG => flag(&o.debug),
        s::SO_REUSEADDR => flag(&o.reuseaddr),
        s::SO_REUSEPORT => flag(&o.reuseport),
        s::SO_KEEPALIVE => flag(&o.keepalive),
        s::SO_DONTROUTE => flag(&o.dontroute),
        s::SO_BROADCAST => flag(&o.broadcast),
        s::SO_OOBINLINE => flag(&o.oobinline),
        s::SO_NO_CHECK => flag(&o.no_check),
        s::SO_PASSCRED => flag(&o.passcred),
        s::SO_PRIORITY => OptValue::Int(o.priority.load(Ordering::Relaxed)),
        s::SO_PEEK_OFF => OptValue::Int(proto.peek_off()?),
        _ => return Err(Errno::ENOPROTOOPT),
    })
}
