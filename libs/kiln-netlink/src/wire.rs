//! Netlink framing, shared by every netlink protocol: the message header
//! (`struct nlmsghdr`), the walk over the messages of one request buffer,
//! attributes (`struct rtattr`, the same layout as `struct nlattr`), the
//! 4-byte alignment of both, and [`MsgBuilder`] for the kernel's replies.
//!
//! The walk follows Linux's `netlink_rcv_skb`: a header shorter than 16
//! bytes or longer than what is left ends the buffer silently; the next
//! message starts at the aligned end of this one. Attributes follow
//! `nla_ok`: an attribute shorter than its header or longer than what is
//! left ends the list.

use alloc::vec::Vec;

/// Messages and attributes start on 4-byte boundaries.
pub const NLMSG_ALIGNTO: usize = 4;

/// `NLMSG_ALIGN`/`RTA_ALIGN`: `len` rounded up to the alignment (saturating,
/// so a hostile length cannot wrap).
pub const fn align(len: usize) -> usize {
    match len.checked_add(NLMSG_ALIGNTO - 1) {
        Some(n) => n & !(NLMSG_ALIGNTO - 1),
        None => usize::MAX & !(NLMSG_ALIGNTO - 1),
    }
}

/// `sizeof(struct nlmsghdr)` (`NLMSG_HDRLEN`).
pub const NLMSG_HDRLEN: usize = 16;
/// `sizeof(struct rtattr)` (`NLA_HDRLEN`).
pub const RTA_HDRLEN: usize = 4;
/// `sizeof(struct sockaddr_nl)`.
pub const SOCKADDR_NL_SIZE: usize = 12;
/// `sizeof(struct nlmsgerr)`: the error and the offending request's header.
pub const NLMSGERR_SIZE: usize = 4 + NLMSG_HDRLEN;

// Message types every netlink protocol shares.
pub const NLMSG_NOOP: u16 = 0x1;
pub const NLMSG_ERROR: u16 = 0x2;
pub const NLMSG_DONE: u16 = 0x3;
pub const NLMSG_OVERRUN: u16 = 0x4;
/// Types below this are control messages, which the kernel only acks.
pub const NLMSG_MIN_TYPE: u16 = 0x10;

// Header flags.
pub const NLM_F_REQUEST: u16 = 0x01;
pub const NLM_F_MULTI: u16 = 0x02;
pub const NLM_F_ACK: u16 = 0x04;
pub const NLM_F_ECHO: u16 = 0x08;
pub const NLM_F_DUMP_INTR: u16 = 0x10;
pub const NLM_F_DUMP_FILTERED: u16 = 0x20;
// For GET requests.
pub const NLM_F_ROOT: u16 = 0x100;
pub const NLM_F_MATCH: u16 = 0x200;
pub const NLM_F_ATOMIC: u16 = 0x400;
pub const NLM_F_DUMP: u16 = NLM_F_ROOT | NLM_F_MATCH;
// For NEW requests.
pub const NLM_F_REPLACE: u16 = 0x100;
pub const NLM_F_EXCL: u16 = 0x200;
pub const NLM_F_CREATE: u16 = 0x400;
pub const NLM_F_APPEND: u16 = 0x800;
// In acks.
pub const NLM_F_CAPPED: u16 = 0x100;
pub const NLM_F_ACK_TLVS: u16 = 0x200;

// Protocols (socket(AF_NETLINK, type, protocol)).
pub const NETLINK_ROUTE: i32 = 0;
pub const NETLINK_USERSOCK: i32 = 2;
pub const NETLINK_SOCK_DIAG: i32 = 4;
pub const NETLINK_AUDIT: i32 = 9;
pub const NETLINK_KOBJECT_UEVENT: i32 = 15;
pub const NETLINK_GENERIC: i32 = 16;
/// One past the last protocol number.
pub const MAX_LINKS: i32 = 32;

// Options at SOL_NETLINK.
pub const SOL_NETLINK: i32 = 270;
pub const NETLINK_ADD_MEMBERSHIP: i32 = 1;
pub const NETLINK_DROP_MEMBERSHIP: i32 = 2;
pub const NETLINK_PKTINFO: i32 = 3;
pub const NETLINK_BROADCAST_ERROR: i32 = 4;
pub const NETLINK_NO_ENOBUFS: i32 = 5;
pub const NETLINK_LISTEN_ALL_NSID: i32 = 8;
pub const NETLINK_LIST_MEMBERSHIPS: i32 = 9;
pub const NETLINK_CAP_ACK: i32 = 10;
pub const NETLINK_EXT_ACK: i32 = 11;
pub const NETLINK_GET_STRICT_CHK: i32 = 12;

/// Attribute type bits that are flags, not part of the number.
pub const NLA_F_NESTED: u16 = 1 << 15;
pub const NLA_F_NET_BYTEORDER: u16 = 1 << 14;
pub const NLA_TYPE_MASK: u16 = !(NLA_F_NESTED | NLA_F_NET_BYTEORDER);

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// `struct nlmsghdr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsgHeader {
    /// The whole message's length, header included.
    pub len: u32,
    pub kind: u16,
    pub flags: u16,
    pub seq: u32,
    /// The sender's port id (0 for the kernel).
    pub pid: u32,
}

impl MsgHeader {
    /// The header at the start of `b`, if there are 16 bytes.
    pub fn parse(b: &[u8]) -> Option<MsgHeader> {
        if b.len() < NLMSG_HDRLEN {
            return None;
        }
        Some(MsgHeader {
            len: u32_at(b, 0),
            kind: u16_at(b, 4),
            flags: u16_at(b, 6),
            seq: u32_at(b, 8),
            pid: u32_at(b, 12),
        })
    }

    pub fn to_bytes(&self) -> [u8; NLMSG_HDRLEN] {
        let mut b = [0u8; NLMSG_HDRLEN];
        b[0..4].copy_from_slice(&self.len.to_le_bytes());
        b[4..6].copy_from_slice(&self.kind.to_le_bytes());
        b[6..8].copy_from_slice(&self.flags.to_le_bytes());
        b[8..12].copy_from_slice(&self.seq.to_le_bytes());
        b[12..16].copy_from_slice(&self.pid.to_le_bytes());
        b
    }
}

/// One message of a request: its header, its payload (what follows the
/// header, up to `len`) and its whole bytes (for an error's echo).
#[derive(Clone, Copy, Debug)]
pub struct Msg<'a> {
    pub header: MsgHeader,
    pub payload: &'a [u8],
    pub bytes: &'a [u8],
}

/// The messages of one buffer a process sent, in order (`netlink_rcv_skb`).
pub struct Msgs<'a> {
    rest: &'a [u8],
}

impl<'a> Msgs<'a> {
    pub fn new(buf: &'a [u8]) -> Msgs<'a> {
        Msgs { rest: buf }
    }
}

impl<'a> Iterator for Msgs<'a> {
    type Item = Msg<'a>;

    fn next(&mut self) -> Option<Msg<'a>> {
        let header = MsgHeader::parse(self.rest)?;
        let len = header.len as usize;
        if len < NLMSG_HDRLEN || len > self.rest.len() {
            self.rest = &[];
            return None;
        }
        let bytes = &self.rest[..len];
        let step = align(len).min(self.rest.len());
        self.rest = &self.rest[step..];
        Some(Msg { header, payload: &bytes[NLMSG_HDRLEN..], bytes })
    }
}

/// `struct sockaddr_nl` without its family (checked by the caller).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SockaddrNl {
    pub pid: u32,
    pub groups: u32,
}

impl SockaddrNl {
    /// The family and address of a sockaddr_nl, if `b` holds one.
    pub fn parse(b: &[u8]) -> Option<(u16, SockaddrNl)> {
        if b.len() < SOCKADDR_NL_SIZE {
            return None;
        }
        Some((u16_at(b, 0), SockaddrNl { pid: u32_at(b, 4), groups: u32_at(b, 8) }))
    }

    pub fn to_bytes(&self, family: u16) -> [u8; SOCKADDR_NL_SIZE] {
        let mut b = [0u8; SOCKADDR_NL_SIZE];
        b[0..2].copy_from_slice(&family.to_le_bytes());
        b[4..8].copy_from_slice(&self.pid.to_le_bytes());
        b[8..12].copy_from_slice(&self.groups.to_le_bytes());
        b
    }
}

/// One attribute: its number (flags masked off) and payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr<'a> {
    pub kind: u16,
    pub data: &'a [u8],
}

impl<'a> Attr<'a> {
    /// The payload as a u32, if it has at least 4 bytes (Linux reads the
    /// first 4 of a longer one).
    pub fn u32(&self) -> Option<u32> {
        (self.data.len() >= 4).then(|| u32_at(self.data, 0))
    }

    /// The payload as a u8, if it has a byte.
    pub fn u8(&self) -> Option<u8> {
        self.data.first().copied()
    }

    /// The payload as a string: up to the first NUL, as `nla_strscpy` reads it.
    pub fn str_bytes(&self) -> &'a [u8] {
        match self.data.iter().position(|&c| c == 0) {
            Some(n) => &self.data[..n],
            None => self.data,
        }
    }
}

/// The attributes that follow a fixed header, in order (`nla_for_each_attr`).
#[derive(Clone)]
pub struct Attrs<'a> {
    rest: &'a [u8],
}

impl<'a> Attrs<'a> {
    pub fn new(buf: &'a [u8]) -> Attrs<'a> {
        Attrs { rest: buf }
    }

    /// The attributes of a message payload after its `fixed`-byte header
    /// (none if the payload is shorter).
    pub fn after(payload: &'a [u8], fixed: usize) -> Attrs<'a> {
        let start = align(fixed);
        Attrs { rest: payload.get(start..).unwrap_or(&[]) }
    }

    /// The last attribute of number `kind` (Linux's parse keeps the last).
    pub fn find(&self, kind: u16) -> Option<Attr<'a>> {
        self.clone().filter(|a| a.kind == kind).last()
    }
}

impl<'a> Iterator for Attrs<'a> {
    type Item = Attr<'a>;

    fn next(&mut self) -> Option<Attr<'a>> {
        if self.rest.len() < RTA_HDRLEN {
            return None;
        }
        let len = u16_at(self.rest, 0) as usize;
        let kind = u16_at(self.rest, 2) & NLA_TYPE_MASK;
        if len < RTA_HDRLEN || len > self.rest.len() {
            self.rest = &[];
            return None;
        }
        let data = &self.rest[RTA_HDRLEN..len];
        let step = align(len).min(self.rest.len());
        self.rest = &self.rest[step..];
        Some(Attr { kind, data })
    }
}

/// The heap was full while a reply was being built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoMemory;

/// Builds netlink messages into one buffer: [`MsgBuilder::begin`] opens a
/// message, fixed headers and attributes follow, [`MsgBuilder::end`]
/// stores its length. Every write reserves first, so a full heap is
/// [`NoMemory`], never an abort.
#[derive(Default)]
pub struct MsgBuilder {
    buf: Vec<u8>,
    start: usize,
}

impl MsgBuilder {
    pub fn new() -> MsgBuilder {
        MsgBuilder { buf: Vec::new(), start: 0 }
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// A builder that continues after `buf` (whole messages).
    pub fn from_bytes(buf: Vec<u8>) -> MsgBuilder {
        MsgBuilder { buf, start: 0 }
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// Drops everything from byte `len` on (a message that did not fit).
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
    }

    fn put(&mut self, data: &[u8]) -> Result<(), NoMemory> {
        self.buf.try_reserve(data.len() + NLMSG_ALIGNTO).map_err(|_| NoMemory)?;
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn pad(&mut self) -> Result<(), NoMemory> {
        let n = align(self.buf.len()) - self.buf.len();
        self.put(&[0u8; NLMSG_ALIGNTO][..n])
    }

    /// Opens a message with this type, flags, sequence number and port id.
    pub fn begin(&mut self, kind: u16, flags: u16, seq: u32, pid: u32) -> Result<(), NoMemory> {
        self.pad()?;
        self.start = self.buf.len();
        self.put(&MsgHeader { len: 0, kind, flags, seq, pid }.to_bytes())
    }

    /// Appends a fixed header (ifinfomsg, ifaddrmsg...) or raw bytes, padded.
    pub fn put_fixed(&mut self, data: &[u8]) -> Result<(), NoMemory> {
        self.put(data)?;
        self.pad()
    }

    /// Appends an attribute, padded to 4 bytes.
    pub fn attr(&mut self, kind: u16, data: &[u8]) -> Result<(), NoMemory> {
        let len = (RTA_HDRLEN + data.len()).min(u16::MAX as usize) as u16;
        self.put(&len.to_le_bytes())?;
        self.put(&kind.to_le_bytes())?;
        self.put(data)?;
        self.pad()
    }

    pub fn attr_u8(&mut self, kind: u16, v: u8) -> Result<(), NoMemory> {
        self.attr(kind, &[v])
    }

    pub fn attr_u32(&mut self, kind: u16, v: u32) -> Result<(), NoMemory> {
        self.attr(kind, &v.to_le_bytes())
    }

    /// A string attribute with its terminating NUL.
    pub fn attr_str(&mut self, kind: u16, s: &[u8]) -> Result<(), NoMemory> {
        let len = (RTA_HDRLEN + s.len() + 1).min(u16::MAX as usize) as u16;
        self.put(&len.to_le_bytes())?;
        self.put(&kind.to_le_bytes())?;
        self.put(s)?;
        self.put(&[0])?;
        self.pad()
    }

    /// Opens a nested attribute; [`MsgBuilder::end_nest`] closes it.
    pub fn begin_nest(&mut self, kind: u16) -> Result<usize, NoMemory> {
        let at = self.buf.len();
        self.put(&0u16.to_le_bytes())?;
        self.put(&kind.to_le_bytes())?;
        Ok(at)
    }

    pub fn end_nest(&mut self, at: usize) {
        let len = (self.buf.len() - at).min(u16::MAX as usize) as u16;
        self.buf[at..at + 2].copy_from_slice(&len.to_le_bytes());
    }

    /// Closes the open message: stores its length (unpadded, as Linux).
    pub fn end(&mut self) {
        let len = (self.buf.len() - self.start) as u32;
        self.buf[self.start..self.start + 4].copy_from_slice(&len.to_le_bytes());
    }

    /// Where the open message starts (to drop it again with `truncate`).
    pub fn message_start(&self) -> usize {
        self.start
    }

    /// NLMSG_DONE closing a dump: its payload is the dump's result (0).
    pub fn done(&mut self, seq: u32, pid: u32, flags: u16) -> Result<(), NoMemory> {
        self.begin(NLMSG_DONE, flags, seq, pid)?;
        self.put(&0i32.to_le_bytes())?;
        self.end();
        Ok(())
    }

    /// NLMSG_ERROR answering `request` with `errno` (0 for an ack): the
    /// negative errno and the request's header; for an error the whole
    /// request follows, unless `cap` (NETLINK_CAP_ACK) is set.
    pub fn error(&mut self, request: &Msg<'_>, errno: i32, pid: u32, cap: bool) -> Result<(), NoMemory> {
        let capped = errno == 0 || cap;
        self.begin(NLMSG_ERROR, if capped { NLM_F_CAPPED } else { 0 }, request.header.seq, pid)?;
        self.put(&(-errno).to_le_bytes())?;
        if capped {
            self.put(&request.header.to_bytes())?;
        } else {
            // The length covers the echo unpadded, as Linux's does.
            self.put(request.bytes)?;
        }
        self.end();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request as a C program lays it out: the length unpadded, the
    /// buffer padded.
    fn request(kind: u16, flags: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let len = (NLMSG_HDRLEN + payload.len()) as u32;
        let mut b = MsgHeader { len, kind, flags, seq, pid: 0 }.to_bytes().to_vec();
        b.extend_from_slice(payload);
        b.resize(align(b.len()), 0);
        b
    }

    #[test]
    fn align_rounds_up_to_four_and_saturates() {
        assert_eq!(align(0), 0);
        assert_eq!(align(1), 4);
        assert_eq!(align(4), 4);
        assert_eq!(align(17), 20);
        assert_eq!(align(usize::MAX), usize::MAX & !3);
    }

    #[test]
    fn header_round_trip() {
        let h = MsgHeader { len: 20, kind: 18, flags: 0x301, seq: 7, pid: 42 };
        assert_eq!(MsgHeader::parse(&h.to_bytes()), Some(h));
        assert_eq!(MsgHeader::parse(&[0u8; 15]), None);
    }

    #[test]
    fn messages_walk_like_netlink_rcv_skb() {
        // Two messages, the first with a 1-byte payload padded to 4.
        let mut buf = request(18, NLM_F_REQUEST | NLM_F_DUMP, 1, &[0]);
        // The length is unpadded (17); the next message starts at 20.
        assert_eq!(u32::from_le_bytes(buf[0..4].try_into().unwrap()), 17);
        buf.extend(request(22, NLM_F_REQUEST, 2, &[1, 2, 3, 4]));
        let msgs: Vec<_> = Msgs::new(&buf).collect();
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0].payload, &[0]);
        assert_eq!(msgs[1].header.seq, 2);
        assert_eq!(msgs[1].payload, &[1, 2, 3, 4]);
    }

    #[test]
    fn malformed_lengths_end_the_walk() {
        let mut buf = request(18, NLM_F_REQUEST, 1, &[0; 4]);
        // Length below the header: nothing.
        let mut bad = buf.clone();
        bad[0..4].copy_from_slice(&15u32.to_le_bytes());
        assert_eq!(Msgs::new(&bad).count(), 0);
        // Longer than the buffer: nothing.
        bad[0..4].copy_from_slice(&100u32.to_le_bytes());
        assert_eq!(Msgs::new(&bad).count(), 0);
        // u32::MAX: nothing, no overflow.
        bad[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(Msgs::new(&bad).count(), 0);
        // A good message then a truncated header: one.
        buf.extend_from_slice(&[1, 2, 3]);
        assert_eq!(Msgs::new(&buf).count(), 1);
        // Exactly the header with an unaligned tail: the tail is skipped.
        let short = request(3, 0, 0, &[]);
        assert_eq!(Msgs::new(&short).count(), 1);
    }

    #[test]
    fn attributes_parse_pad_and_stop_on_bad_lengths() {
        let mut b = MsgBuilder::new();
        b.attr_str(3, b"lo").unwrap();
        b.attr_u32(4, 65536).unwrap();
        b.attr(1 | NLA_F_NESTED, &[]).unwrap();
        let bytes = b.into_bytes();
        // "lo\0" is 7 bytes, padded to 8.
        assert_eq!(&bytes[0..8], &[7, 0, 3, 0, b'l', b'o', 0, 0]);
        let attrs: Vec<_> = Attrs::new(&bytes).collect();
        assert_eq!(attrs.len(), 3);
        assert_eq!(attrs[0].str_bytes(), b"lo");
        assert_eq!(attrs[1].u32(), Some(65536));
        assert_eq!(attrs[2].kind, 1);
        // A length of 2 (below the header) ends the list.
        let mut bad = bytes.clone();
        bad[8] = 2;
        assert_eq!(Attrs::new(&bad).count(), 1);
        // A length past the end ends the list.
        bad[8] = 200;
        assert_eq!(Attrs::new(&bad).count(), 1);
        // The last attribute of a number wins.
        let mut two = MsgBuilder::new();
        two.attr_u32(4, 1).unwrap();
        two.attr_u32(4, 2).unwrap();
        assert_eq!(Attrs::new(two.as_bytes()).find(4).and_then(|a| a.u32()), Some(2));
        // Too short for a u32.
        assert_eq!(Attr { kind: 1, data: &[1, 2] }.u32(), None);
    }

    #[test]
    fn attrs_after_a_fixed_header_tolerate_short_payloads() {
        assert_eq!(Attrs::after(&[1, 2, 3], 16).count(), 0);
        assert_eq!(Attrs::after(&[], 0).count(), 0);
    }

    #[test]
    fn errors_echo_the_request_and_acks_only_its_header() {
        let req = request(20, NLM_F_REQUEST | NLM_F_ACK, 9, &[0; 8]);
        let msg = Msgs::new(&req).next().unwrap();
        let mut b = MsgBuilder::new();
        b.error(&msg, 22, 77, false).unwrap();
        let reply = b.into_bytes();
        let h = MsgHeader::parse(&reply).unwrap();
        assert_eq!((h.kind, h.seq, h.pid, h.flags), (NLMSG_ERROR, 9, 77, 0));
        assert_eq!(h.len as usize, NLMSG_HDRLEN + 4 + req.len());
        assert_eq!(i32::from_le_bytes(reply[16..20].try_into().unwrap()), -22);
        assert_eq!(&reply[20..], &req[..]);
        // An unaligned request's echo leaves the reply's length unaligned.
        let odd = request(20, NLM_F_REQUEST, 1, &[0]);
        let mut b = MsgBuilder::new();
        b.error(&Msgs::new(&odd).next().unwrap(), 22, 0, false).unwrap();
        assert_eq!(MsgHeader::parse(b.as_bytes()).unwrap().len, 16 + 4 + 17);

        let mut b = MsgBuilder::new();
        b.error(&msg, 0, 77, false).unwrap();
        let ack = b.into_bytes();
        let h = MsgHeader::parse(&ack).unwrap();
        assert_eq!((h.len as usize, h.flags), (NLMSG_HDRLEN + NLMSGERR_SIZE, NLM_F_CAPPED));
        assert_eq!(&ack[20..36], &req[..16]);
    }

    #[test]
    fn done_carries_a_zero_result() {
        let mut b = MsgBuilder::new();
        b.done(5, 6, NLM_F_MULTI).unwrap();
        let d = b.into_bytes();
        assert_eq!(d.len(), 20);
        let h = MsgHeader::parse(&d).unwrap();
        assert_eq!((h.len, h.kind, h.flags, h.seq, h.pid), (20, NLMSG_DONE, NLM_F_MULTI, 5, 6));
    }

    #[test]
    fn sockaddr_nl_round_trip() {
        let a = SockaddrNl { pid: 1234, groups: 0x11 };
        let b = a.to_bytes(16);
        assert_eq!(SockaddrNl::parse(&b), Some((16, a)));
        assert_eq!(SockaddrNl::parse(&b[..11]), None);
    }
}
