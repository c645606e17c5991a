//! The socket ABI: address families, socket types, option and message
//! flag numbers, the structs of the socket calls (`sockaddr_un`,
//! `msghdr`, `mmsghdr`, `cmsghdr`, `ucred`, `linger`), and Linux's rules
//! for walking and filling the ancillary-data ("control") buffer of
//! sendmsg/recvmsg (`CMSG_*`, `__scm_send`'s validation, `put_cmsg` and
//! `scm_detach_fds` truncation). Values are checked against the C headers
//! by `tests/layout.rs`.

use crate::layout::{get_i32, get_u16, get_u32, get_u64, put_i32, put_u16, put_u32, put_u64};

// Address families (`AF_*`, equal to `PF_*`).
pub const AF_UNSPEC: u16 = 0;
pub const AF_UNIX: u16 = 1;
pub const AF_INET: u16 = 2;
pub const AF_INET6: u16 = 10;
pub const AF_NETLINK: u16 = 16;
pub const AF_PACKET: u16 = 17;
/// One past the last family number (`NPROTO`/`AF_MAX`).
pub const AF_MAX: u16 = 46;

// Socket types, and the flags socket(2) and socketpair(2) take in `type`.
pub const SOCK_STREAM: u32 = 1;
pub const SOCK_DGRAM: u32 = 2;
pub const SOCK_RAW: u32 = 3;
pub const SOCK_RDM: u32 = 4;
pub const SOCK_SEQPACKET: u32 = 5;
pub const SOCK_DCCP: u32 = 6;
pub const SOCK_PACKET: u32 = 10;
/// One past the last type number.
pub const SOCK_MAX: u32 = 11;
pub const SOCK_TYPE_MASK: u32 = 0xf;
pub const SOCK_NONBLOCK: u32 = 0o4000;
pub const SOCK_CLOEXEC: u32 = 0o2000000;

// Option levels and SOL_SOCKET options.
pub const SOL_SOCKET: i32 = 1;
pub const SO_DEBUG: i32 = 1;
pub const SO_REUSEADDR: i32 = 2;
pub const SO_TYPE: i32 = 3;
pub const SO_ERROR: i32 = 4;
pub const SO_DONTROUTE: i32 = 5;
pub const SO_BROADCAST: i32 = 6;
pub const SO_SNDBUF: i32 = 7;
pub const SO_RCVBUF: i32 = 8;
pub const SO_KEEPALIVE: i32 = 9;
pub const SO_OOBINLINE: i32 = 10;
pub const SO_NO_CHECK: i32 = 11;
pub const SO_PRIORITY: i32 = 12;
pub const SO_LINGER: i32 = 13;
pub const SO_BSDCOMPAT: i32 = 14;
pub const SO_REUSEPORT: i32 = 15;
pub const SO_PASSCRED: i32 = 16;
pub const SO_PEERCRED: i32 = 17;
pub const SO_RCVLOWAT: i32 = 18;
pub const SO_SNDLOWAT: i32 = 19;
pub const SO_RCVTIMEO_OLD: i32 = 20;
pub const SO_SNDTIMEO_OLD: i32 = 21;
pub const SO_ACCEPTCONN: i32 = 30;
pub const SO_SNDBUFFORCE: i32 = 32;
pub const SO_RCVBUFFORCE: i32 = 33;
pub const SO_PROTOCOL: i32 = 38;
pub const SO_DOMAIN: i32 = 39;
pub const SO_PEEK_OFF: i32 = 42;
pub const SO_RCVTIMEO_NEW: i32 = 66;
pub const SO_SNDTIMEO_NEW: i32 = 67;

// Control message types at SOL_SOCKET.
pub const SCM_RIGHTS: i32 = 1;
pub const SCM_CREDENTIALS: i32 = 2;
/// Most descriptors one SCM_RIGHTS message may carry.
pub const SCM_MAX_FD: usize = 253;

// Message flags (send, recv, and msg_flags on return).
pub const MSG_OOB: u32 = 0x1;
pub const MSG_PEEK: u32 = 0x2;
pub const MSG_DONTROUTE: u32 = 0x4;
pub const MSG_CTRUNC: u32 = 0x8;
pub const MSG_PROBE: u32 = 0x10;
pub const MSG_TRUNC: u32 = 0x20;
pub const MSG_DONTWAIT: u32 = 0x40;
pub const MSG_EOR: u32 = 0x80;
pub const MSG_WAITALL: u32 = 0x100;
pub const MSG_CONFIRM: u32 = 0x800;
pub const MSG_ERRQUEUE: u32 = 0x2000;
pub const MSG_NOSIGNAL: u32 = 0x4000;
pub const MSG_MORE: u32 = 0x8000;
pub const MSG_WAITFORONE: u32 = 0x10000;
pub const MSG_BATCH: u32 = 0x40000;
pub const MSG_ZEROCOPY: u32 = 0x4000000;
pub const MSG_FASTOPEN: u32 = 0x20000000;
pub const MSG_CMSG_CLOEXEC: u32 = 0x40000000;
pub const MSG_CMSG_COMPAT: u32 = 0x80000000;

// shutdown(2).
pub const SHUT_RD: i32 = 0;
pub const SHUT_WR: i32 = 1;
pub const SHUT_RDWR: i32 = 2;

// Socket ioctls for the file owner (<asm/sockios.h>): the same as
// F_SETOWN/F_GETOWN.
pub const FIOSETOWN: u32 = 0x8901;
pub const SIOCSPGRP: u32 = 0x8902;
pub const FIOGETOWN: u32 = 0x8903;
pub const SIOCGPGRP: u32 = 0x8904;

/// The largest backlog listen(2) keeps (`net.core.somaxconn`).
pub const SOMAXCONN: u32 = 4096;
/// Bytes of `sun_path`.
pub const UNIX_PATH_MAX: usize = 108;
/// `sizeof(sa_family_t)`: the `sun_path` offset.
pub const SUN_PATH_OFFSET: usize = 2;
/// `sizeof(struct sockaddr_storage)`: the most address bytes any call takes.
pub const SOCKADDR_STORAGE_SIZE: usize = 128;

/// `struct sockaddr_un`: a family and a path (or, after a leading NUL, an
/// abstract name).
pub struct SockaddrUn;

impl SockaddrUn {
    pub const SIZE: usize = SUN_PATH_OFFSET + UNIX_PATH_MAX;
}

/// What an AF_UNIX address given to bind, connect or sendto names, after
/// Linux's `unix_validate_addr` and `unix_mkname_bsd`.
#[derive(Debug, PartialEq, Eq)]
pub enum UnixName<'a> {
    /// bind with only the family: pick an abstract name (autobind).
    Auto,
    /// A file system path (the bytes before the first NUL, never empty).
    Path(&'a [u8]),
    /// An abstract name: the bytes after the leading NUL (may be empty).
    Abstract(&'a [u8]),
}

/// Parses the `len` bytes of an AF_UNIX address (`addr` holds them).
/// `None`: EINVAL. Only bind accepts the family alone (`Auto`); the
/// other calls treat it as EINVAL, which `allow_auto` says.
pub fn parse_unix_addr(addr: &[u8], allow_auto: bool) -> Option<UnixName<'_>> {
    if addr.len() < SUN_PATH_OFFSET || get_u16(addr, 0) != AF_UNIX {
        return None;
    }
    if addr.len() == SUN_PATH_OFFSET {
        return if allow_auto { Some(UnixName::Auto) } else { None };
    }
    if addr.len() > SockaddrUn::SIZE {
        return None;
    }
    let path = &addr[SUN_PATH_OFFSET..];
    if path[0] == 0 {
        return Some(UnixName::Abstract(&path[1..]));
    }
    let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
    Some(UnixName::Path(&path[..end]))
}

/// The bytes getsockname reports for a name: the family, then the path
/// and its NUL, or the NUL and the abstract name.
pub fn encode_unix_addr(name: &UnixName<'_>, out: &mut [u8; SockaddrUn::SIZE + 1]) -> usize {
    put_u16(out, 0, AF_UNIX);
    match name {
        UnixName::Auto => SUN_PATH_OFFSET,
        UnixName::Path(p) => {
            let n = p.len().min(UNIX_PATH_MAX);
            out[SUN_PATH_OFFSET..SUN_PATH_OFFSET + n].copy_from_slice(&p[..n]);
            out[SUN_PATH_OFFSET + n] = 0;
            SUN_PATH_OFFSET + n + 1
        }
        UnixName::Abstract(a) => {
            let n = a.len().min(UNIX_PATH_MAX - 1);
            out[SUN_PATH_OFFSET] = 0;
            out[SUN_PATH_OFFSET + 1..SUN_PATH_OFFSET + 1 + n].copy_from_slice(&a[..n]);
            SUN_PATH_OFFSET + 1 + n
        }
    }
}

/// `struct msghdr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Msghdr {
    pub msg_name: u64,
    pub msg_namelen: u32,
    pub msg_iov: u64,
    pub msg_iovlen: u64,
    pub msg_control: u64,
    pub msg_controllen: u64,
    pub msg_flags: u32,
}

impl Msghdr {
    pub const SIZE: usize = 56;
    /// Where the kernel writes back `msg_namelen`, `msg_controllen` and
    /// `msg_flags` after a receive.
    pub const NAMELEN_OFFSET: usize = 8;
    pub const CONTROLLEN_OFFSET: usize = 40;
    pub const FLAGS_OFFSET: usize = 48;

    pub fn to_bytes(&self) -> [u8; 56] {
        let mut b = [0u8; 56];
        put_u64(&mut b, 0, self.msg_name);
        put_u32(&mut b, 8, self.msg_namelen);
        put_u64(&mut b, 16, self.msg_iov);
        put_u64(&mut b, 24, self.msg_iovlen);
        put_u64(&mut b, 32, self.msg_control);
        put_u64(&mut b, 40, self.msg_controllen);
        put_u32(&mut b, 48, self.msg_flags);
        b
    }

    pub fn from_bytes(b: &[u8; 56]) -> Self {
        Msghdr {
            msg_name: get_u64(b, 0),
            msg_namelen: get_u32(b, 8),
            msg_iov: get_u64(b, 16),
            msg_iovlen: get_u64(b, 24),
            msg_control: get_u64(b, 32),
            msg_controllen: get_u64(b, 40),
            msg_flags: get_u32(b, 48),
        }
    }
}

/// `struct mmsghdr`: a `msghdr` and the byte count of its message.
pub struct Mmsghdr;

impl Mmsghdr {
    pub const SIZE: usize = 64;
    pub const LEN_OFFSET: usize = 56;
}

/// `struct cmsghdr`: the header of one control message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cmsghdr {
    pub cmsg_len: u64,
    pub cmsg_level: i32,
    pub cmsg_type: i32,
}

impl Cmsghdr {
    pub const SIZE: usize = 16;

    pub fn to_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        put_u64(&mut b, 0, self.cmsg_len);
        put_i32(&mut b, 8, self.cmsg_level);
        put_i32(&mut b, 12, self.cmsg_type);
        b
    }

    pub fn from_bytes(b: &[u8; 16]) -> Self {
        Cmsghdr { cmsg_len: get_u64(b, 0), cmsg_level: get_i32(b, 8), cmsg_type: get_i32(b, 12) }
    }
}

/// `CMSG_ALIGN`: control messages start on 8-byte boundaries.
pub const fn cmsg_align(len: usize) -> usize {
    (len + 7) & !7
}

/// `CMSG_LEN`: a message's `cmsg_len` for `data` bytes of payload.
pub const fn cmsg_len(data: usize) -> usize {
    Cmsghdr::SIZE + data
}

/// `CMSG_SPACE`: the bytes a message with `data` bytes takes in the buffer.
pub const fn cmsg_space(data: usize) -> usize {
    Cmsghdr::SIZE + cmsg_align(data)
}

/// `struct ucred`: SCM_CREDENTIALS and SO_PEERCRED.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ucred {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

impl Ucred {
    pub const SIZE: usize = 12;

    pub fn to_bytes(&self) -> [u8; 12] {
        let mut b = [0u8; 12];
        put_i32(&mut b, 0, self.pid);
        put_u32(&mut b, 4, self.uid);
        put_u32(&mut b, 8, self.gid);
        b
    }

    pub fn from_bytes(b: &[u8; 12]) -> Self {
        Ucred { pid: get_i32(b, 0), uid: get_u32(b, 4), gid: get_u32(b, 8) }
    }
}

/// `struct linger` (SO_LINGER).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Linger {
    pub l_onoff: i32,
    pub l_linger: i32,
}

impl Linger {
    pub const SIZE: usize = 8;

    pub fn to_bytes(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        put_i32(&mut b, 0, self.l_onoff);
        put_i32(&mut b, 4, self.l_linger);
        b
    }

    pub fn from_bytes(b: &[u8; 8]) -> Self {
        Linger { l_onoff: get_i32(b, 0), l_linger: get_i32(b, 4) }
    }
}

/// One control message of a sendmsg control buffer.
#[derive(Debug, PartialEq, Eq)]
pub struct Cmsg<'a> {
    pub level: i32,
    pub kind: i32,
    /// The payload: `cmsg_len - sizeof(cmsghdr)` bytes.
    pub data: &'a [u8],
}

/// Walks a sendmsg control buffer as Linux's `__scm_send` does
/// (`for_each_cmsghdr` with `CMSG_OK`): a header whose `cmsg_len` is
/// shorter than a header or runs past the buffer is an error (EINVAL);
/// the walk ends when no whole header fits after the last message.
pub struct CmsgIter<'a> {
    buf: &'a [u8],
    at: usize,
    failed: bool,
}

impl<'a> CmsgIter<'a> {
    pub fn new(buf: &'a [u8]) -> CmsgIter<'a> {
        CmsgIter { buf, at: 0, failed: false }
    }
}

impl<'a> Iterator for CmsgIter<'a> {
    /// `Err(())`: EINVAL.
    type Item = Result<Cmsg<'a>, ()>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.at.checked_add(Cmsghdr::SIZE).is_none_or(|end| end > self.buf.len()) {
            return None;
        }
        let mut h = [0u8; Cmsghdr::SIZE];
        h.copy_from_slice(&self.buf[self.at..self.at + Cmsghdr::SIZE]);
        let h = Cmsghdr::from_bytes(&h);
        let room = (self.buf.len() - self.at) as u64;
        if h.cmsg_len < Cmsghdr::SIZE as u64 || h.cmsg_len > room {
            self.failed = true;
            return Some(Err(()));
        }
        let len = h.cmsg_len as usize;
        let data = &self.buf[self.at + Cmsghdr::SIZE..self.at + len];
        self.at += cmsg_align(len);
        Some(Ok(Cmsg { level: h.cmsg_level, kind: h.cmsg_type, data }))
    }
}

/// Fills a recvmsg control buffer of `capacity` bytes the way Linux's
/// `put_cmsg` and `scm_detach_fds` do: each message takes `CMSG_SPACE`
/// bytes, a message that does not fit is cut to the room left (with
/// `cmsg_len` saying so) and sets MSG_CTRUNC, and `used()` is what the
/// kernel writes back to `msg_controllen`.
#[derive(Debug)]
pub struct CmsgWriter {
    capacity: usize,
    used: usize,
    /// MSG_CTRUNC: something did not fit.
    pub truncated: bool,
}

/// Where a `CmsgWriter` put one message: the header goes at `at`, and the
/// first `data_len` bytes of the payload right after it.
#[derive(Debug, PartialEq, Eq)]
pub struct CmsgPlacement {
    pub at: usize,
    pub header: Cmsghdr,
    pub data_len: usize,
}

impl CmsgWriter {
    pub fn new(capacity: usize) -> CmsgWriter {
        CmsgWriter { capacity, used: 0, truncated: false }
    }

    fn room(&self) -> usize {
        self.capacity - self.used
    }

    /// `put_cmsg`: places a message of `len` payload bytes, or nothing
    /// (only MSG_CTRUNC) when not even a header fits.
    pub fn put(&mut self, level: i32, kind: i32, len: usize) -> Option<CmsgPlacement> {
        if self.room() < Cmsghdr::SIZE {
            self.truncated = true;
            return None;
        }
        let mut cmlen = cmsg_len(len);
        if self.room() < cmlen {
            self.truncated = true;
            cmlen = self.room();
        }
        let at = self.used;
        self.used += cmsg_space(len).min(self.room());
        Some(CmsgPlacement {
            at,
            header: Cmsghdr { cmsg_len: cmlen as u64, cmsg_level: level, cmsg_type: kind },
            data_len: cmlen - Cmsghdr::SIZE,
        })
    }

    /// `scm_max_fds`: how many descriptors an SCM_RIGHTS message may
    /// carry in the room left.
    pub fn rights_room(&self) -> usize {
        if self.room() <= Cmsghdr::SIZE {
            0
        } else {
            (self.room() - Cmsghdr::SIZE) / 4
        }
    }

    /// `scm_detach_fds` after `installed` of `count` descriptors went in
    /// (at most `rights_room()`): places the SCM_RIGHTS message if any
    /// did, and sets MSG_CTRUNC if some did not.
    pub fn put_rights(&mut self, installed: usize, count: usize) -> Option<CmsgPlacement> {
        let placed = if installed > 0 {
            let at = self.used;
            let cmlen = cmsg_len(installed * 4);
            self.used += cmsg_space(installed * 4).min(self.room());
            Some(CmsgPlacement {
                at,
                header: Cmsghdr { cmsg_len: cmlen as u64, cmsg_level: SOL_SOCKET, cmsg_type: SCM_RIGHTS },
                data_len: installed * 4,
            })
        } else {
            None
        };
        if installed < count {
            self.truncated = true;
        }
        placed
    }

    /// The bytes used: the new `msg_controllen`.
    pub fn used(&self) -> usize {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmsg(level: i32, kind: i32, data: &[u8], len: Option<u64>) -> Vec<u8> {
        let mut v =
            Cmsghdr { cmsg_len: len.unwrap_or(cmsg_len(data.len()) as u64), cmsg_level: level, cmsg_type: kind }
                .to_bytes()
                .to_vec();
        v.extend_from_slice(data);
        v.resize(v.len().next_multiple_of(8), 0);
        v
    }

    #[test]
    fn cmsg_macros() {
        assert_eq!(cmsg_len(4), 20);
        assert_eq!(cmsg_space(4), 24);
        assert_eq!(cmsg_space(12), 32);
        assert_eq!(cmsg_space(0), 16);
        assert_eq!(cmsg_align(17), 24);
    }

    #[test]
    fn walks_messages() {
        let mut buf = cmsg(SOL_SOCKET, SCM_RIGHTS, &[1, 0, 0, 0, 2, 0, 0, 0], None);
        buf.extend(cmsg(SOL_SOCKET, SCM_CREDENTIALS, &[9; 12], None));
        let v: Vec<_> = CmsgIter::new(&buf).collect();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0], Ok(Cmsg { level: SOL_SOCKET, kind: SCM_RIGHTS, data: &[1, 0, 0, 0, 2, 0, 0, 0] }));
        assert_eq!(v[1].as_ref().unwrap().data.len(), 12);
        // Less than a header: nothing to walk.
        assert_eq!(CmsgIter::new(&buf[..15]).count(), 0);
        // A trailing partial header is ignored, as CMSG_NXTHDR does.
        let mut tail = buf.clone();
        tail.extend_from_slice(&[0; 8]);
        assert_eq!(CmsgIter::new(&tail).count(), 2);
    }

    #[test]
    fn rejects_bad_lengths() {
        let short = cmsg(SOL_SOCKET, SCM_RIGHTS, &[], Some(15));
        assert_eq!(CmsgIter::new(&short).next(), Some(Err(())));
        let long = cmsg(SOL_SOCKET, SCM_RIGHTS, &[0; 4], Some(100));
        assert_eq!(CmsgIter::new(&long).next(), Some(Err(())));
        // An error ends the walk.
        let mut it = CmsgIter::new(&long);
        it.next();
        assert_eq!(it.next(), None);
    }

    #[test]
    fn writer_places_and_truncates() {
        let mut w = CmsgWriter::new(64);
        let p = w.put(SOL_SOCKET, SCM_CREDENTIALS, 12).unwrap();
        assert_eq!((p.at, p.header.cmsg_len, p.data_len), (0, 28, 12));
        assert_eq!(w.used(), 32);
        assert!(!w.truncated);
        // 32 bytes left: 4 descriptors fit.
        assert_eq!(w.rights_room(), 4);
        let p = w.put_rights(4, 6).unwrap();
        assert_eq!((p.at, p.header.cmsg_len), (32, 32));
        assert_eq!(w.used(), 64);
        assert!(w.truncated);

        // A credential message cut short.
        let mut w = CmsgWriter::new(20);
        let p = w.put(SOL_SOCKET, SCM_CREDENTIALS, 12).unwrap();
        assert_eq!((p.header.cmsg_len, p.data_len), (20, 4));
        assert_eq!(w.used(), 20);
        assert!(w.truncated);

        // No room for a header at all.
        let mut w = CmsgWriter::new(8);
        assert_eq!(w.put(SOL_SOCKET, SCM_CREDENTIALS, 12), None);
        assert!(w.truncated);
        assert_eq!(w.rights_room(), 0);
        assert_eq!(w.put_rights(0, 1), None);
        assert_eq!(w.used(), 0);

        // One descriptor in a buffer of CMSG_LEN(4): cmsg_len 20, used 20.
        let mut w = CmsgWriter::new(20);
        assert_eq!(w.rights_room(), 1);
        let p = w.put_rights(1, 1).unwrap();
        assert_eq!(p.header.cmsg_len, 20);
        assert_eq!(w.used(), 20);
        assert!(!w.truncated);
    }

    #[test]
    fn unix_addresses() {
        let mut a = [0u8; 110];
        a[..2].copy_from_slice(&AF_UNIX.to_le_bytes());
        assert_eq!(parse_unix_addr(&a[..2], true), Some(UnixName::Auto));
        assert_eq!(parse_unix_addr(&a[..2], false), None);
        assert_eq!(parse_unix_addr(&a[..1], true), None);
        a[2..6].copy_from_slice(b"/tmp");
        assert_eq!(parse_unix_addr(&a[..6], false), Some(UnixName::Path(b"/tmp")));
        assert_eq!(parse_unix_addr(&a[..20], false), Some(UnixName::Path(b"/tmp")));
        // 108 bytes without a NUL are a path of 108 bytes.
        let mut full = [b'x'; 110];
        full[..2].copy_from_slice(&AF_UNIX.to_le_bytes());
        assert_eq!(parse_unix_addr(&full, false), Some(UnixName::Path(&[b'x'; 108])));
        let mut long = [b'x'; 111];
        long[..2].copy_from_slice(&AF_UNIX.to_le_bytes());
        assert_eq!(parse_unix_addr(&long, false), None);
        let mut ab = [0u8; 6];
        ab[..2].copy_from_slice(&AF_UNIX.to_le_bytes());
        ab[3..6].copy_from_slice(b"abc");
        assert_eq!(parse_unix_addr(&ab, false), Some(UnixName::Abstract(b"abc")));
        assert_eq!(parse_unix_addr(&ab[..3], false), Some(UnixName::Abstract(b"")));
        let mut bad = ab;
        bad[0] = 2;
        assert_eq!(parse_unix_addr(&bad, false), None);

        let mut out = [0u8; 111];
        assert_eq!(encode_unix_addr(&UnixName::Path(b"/a"), &mut out), 5);
        assert_eq!(&out[..5], &[1, 0, b'/', b'a', 0]);
        assert_eq!(encode_unix_addr(&UnixName::Abstract(b"xy"), &mut out), 5);
        assert_eq!(&out[..5], &[1, 0, 0, b'x', b'y']);
    }
}
