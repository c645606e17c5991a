//! The interface ioctls' structures: `struct ifreq` (a 16-byte name and
//! a 24-byte union: an address, flags, an index, an MTU...), the
//! `struct ifconf` of SIOCGIFCONF, the `SIOC*` numbers and the `IFF_*`
//! interface flags. Values are checked against the C headers by
//! `tests/layout.rs`.

/// `IFNAMSIZ`: an interface name with its NUL.
pub const IFNAMSIZ: usize = 16;

// Interface flags (`IFF_*`); the low 16 bits are what SIOCGIFFLAGS shows.
pub const IFF_UP: u32 = 0x1;
pub const IFF_BROADCAST: u32 = 0x2;
pub const IFF_DEBUG: u32 = 0x4;
pub const IFF_LOOPBACK: u32 = 0x8;
pub const IFF_POINTOPOINT: u32 = 0x10;
pub const IFF_NOTRAILERS: u32 = 0x20;
pub const IFF_RUNNING: u32 = 0x40;
pub const IFF_NOARP: u32 = 0x80;
pub const IFF_PROMISC: u32 = 0x100;
pub const IFF_ALLMULTI: u32 = 0x200;
pub const IFF_MASTER: u32 = 0x400;
pub const IFF_SLAVE: u32 = 0x800;
pub const IFF_MULTICAST: u32 = 0x1000;
pub const IFF_PORTSEL: u32 = 0x2000;
pub const IFF_AUTOMEDIA: u32 = 0x4000;
pub const IFF_DYNAMIC: u32 = 0x8000;
pub const IFF_LOWER_UP: u32 = 0x10000;
pub const IFF_DORMANT: u32 = 0x20000;
pub const IFF_ECHO: u32 = 0x40000;
/// The flags SIOCSIFFLAGS and RTM_SETLINK may change (`dev_change_flags`'s
/// mask: the rest are the device's own state).
pub const IFF_CHANGEABLE: u32 = IFF_UP
    | IFF_DEBUG
    | IFF_NOTRAILERS
    | IFF_NOARP
    | IFF_DYNAMIC
    | IFF_MULTICAST
    | IFF_PORTSEL
    | IFF_AUTOMEDIA
    | IFF_PROMISC
    | IFF_ALLMULTI;

// The socket ioctls on interfaces (`SIOC*`).
pub const SIOCADDRT: u32 = 0x890B;
pub const SIOCDELRT: u32 = 0x890C;
pub const SIOCGIFNAME: u32 = 0x8910;
pub const SIOCGIFCONF: u32 = 0x8912;
pub const SIOCGIFFLAGS: u32 = 0x8913;
pub const SIOCSIFFLAGS: u32 = 0x8914;
pub const SIOCGIFADDR: u32 = 0x8915;
pub const SIOCSIFADDR: u32 = 0x8916;
pub const SIOCGIFDSTADDR: u32 = 0x8917;
pub const SIOCGIFBRDADDR: u32 = 0x8919;
pub const SIOCSIFBRDADDR: u32 = 0x891a;
pub const SIOCGIFNETMASK: u32 = 0x891b;
pub const SIOCSIFNETMASK: u32 = 0x891c;
pub const SIOCGIFMETRIC: u32 = 0x891d;
pub const SIOCSIFMETRIC: u32 = 0x891e;
pub const SIOCGIFMTU: u32 = 0x8921;
pub const SIOCSIFMTU: u32 = 0x8922;
pub const SIOCSIFNAME: u32 = 0x8923;
pub const SIOCSIFHWADDR: u32 = 0x8924;
pub const SIOCGIFHWADDR: u32 = 0x8927;
pub const SIOCGIFINDEX: u32 = 0x8933;
pub const SIOCGIFTXQLEN: u32 = 0x8942;
pub const SIOCGIFMAP: u32 = 0x8970;

/// `sizeof(struct ifreq)`.
pub const IFREQ_SIZE: usize = 40;
/// `sizeof(struct ifconf)`: an int length, padding, a pointer.
pub const IFCONF_SIZE: usize = 16;
/// Where the union starts in `struct ifreq`.
pub const IFR_DATA: usize = IFNAMSIZ;
/// `sizeof(struct sockaddr)`.
pub const SOCKADDR_SIZE: usize = 16;
/// `sizeof(struct ifmap)`: mem_start, mem_end, base_addr, irq, dma, port.
pub const IFMAP_SIZE: usize = 24;

/// A `struct ifreq` as the caller passed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ifreq {
    pub bytes: [u8; IFREQ_SIZE],
}

impl Ifreq {
    pub fn from_bytes(b: [u8; IFREQ_SIZE]) -> Ifreq {
        Ifreq { bytes: b }
    }

    /// An ifreq naming `name` (cut to 15 bytes), the union zero.
    pub fn with_name(name: &[u8]) -> Ifreq {
        let mut bytes = [0u8; IFREQ_SIZE];
        let n = name.len().min(IFNAMSIZ - 1);
        bytes[..n].copy_from_slice(&name[..n]);
        Ifreq { bytes }
    }

    /// The name, as Linux reads it: the last byte forced to NUL, up to
    /// the first NUL.
    pub fn name(&self) -> &[u8] {
        let n = &self.bytes[..IFNAMSIZ - 1];
        match n.iter().position(|&c| c == 0) {
            Some(end) => &n[..end],
            None => n,
        }
    }

    pub fn set_name(&mut self, name: &[u8]) {
        self.bytes[..IFNAMSIZ].fill(0);
        let n = name.len().min(IFNAMSIZ - 1);
        self.bytes[..n].copy_from_slice(&name[..n]);
    }

    /// `ifr_flags` (a short).
    pub fn flags(&self) -> u16 {
        u16::from_le_bytes([self.bytes[IFR_DATA], self.bytes[IFR_DATA + 1]])
    }

    pub fn set_flags(&mut self, f: u16) {
        self.bytes[IFR_DATA..IFR_DATA + 2].copy_from_slice(&f.to_le_bytes());
    }

    /// `ifr_ifindex`, `ifr_mtu`, `ifr_metric`, `ifr_qlen` (an int).
    pub fn int(&self) -> i32 {
        let d = &self.bytes[IFR_DATA..IFR_DATA + 4];
        i32::from_le_bytes([d[0], d[1], d[2], d[3]])
    }

    pub fn set_int(&mut self, v: i32) {
        self.bytes[IFR_DATA..IFR_DATA + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// The `struct sockaddr` of the union: its family and the 14 bytes after.
    pub fn sockaddr_family(&self) -> u16 {
        u16::from_le_bytes([self.bytes[IFR_DATA], self.bytes[IFR_DATA + 1]])
    }

    /// The IPv4 address of a `sockaddr_in` in the union.
    pub fn in_addr(&self) -> [u8; 4] {
        let mut a = [0u8; 4];
        a.copy_from_slice(&self.bytes[IFR_DATA + 4..IFR_DATA + 8]);
        a
    }

    /// Stores a `sockaddr_in` (family AF_INET, port 0) with `addr`.
    pub fn set_in_addr(&mut self, addr: [u8; 4]) {
        self.bytes[IFR_DATA..IFR_DATA + SOCKADDR_SIZE].fill(0);
        self.bytes[IFR_DATA..IFR_DATA + 2].copy_from_slice(&2u16.to_le_bytes());
        self.bytes[IFR_DATA + 4..IFR_DATA + 8].copy_from_slice(&addr);
    }

    /// Stores a hardware address: `sa_family` is the ARPHRD type.
    pub fn set_hwaddr(&mut self, kind: u16, mac: &[u8]) {
        self.bytes[IFR_DATA..IFR_DATA + SOCKADDR_SIZE].fill(0);
        self.bytes[IFR_DATA..IFR_DATA + 2].copy_from_slice(&kind.to_le_bytes());
        let n = mac.len().min(14);
        self.bytes[IFR_DATA + 2..IFR_DATA + 2 + n].copy_from_slice(&mac[..n]);
    }

    /// Stores the union's bytes from `data` (at most 24).
    pub fn set_data(&mut self, data: &[u8]) {
        let n = data.len().min(IFREQ_SIZE - IFR_DATA);
        self.bytes[IFR_DATA..IFR_DATA + n].copy_from_slice(&data[..n]);
    }
}

/// An IPv4 netmask of `prefix` bits, in network order.
pub fn netmask(prefix: u8) -> [u8; 4] {
    let m = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix.min(32) as u32) };
    m.to_be_bytes()
}

/// The prefix length of a contiguous netmask (`inet_mask_len`), or None
/// for a mask with holes (`bad_mask`, which Linux refuses with EINVAL).
pub fn prefix_of(mask: [u8; 4]) -> Option<u8> {
    let m = u32::from_be_bytes(mask);
    let ones = m.leading_ones();
    (m.checked_shl(ones).unwrap_or(0) == 0).then_some(ones as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_at_nul_and_at_fifteen_bytes() {
        let r = Ifreq::with_name(b"lo");
        assert_eq!(r.name(), b"lo");
        let mut b = [b'x'; IFREQ_SIZE];
        b[20] = 0;
        assert_eq!(Ifreq::from_bytes(b).name(), &[b'x'; 15][..]);
        let long = Ifreq::with_name(b"averyveryverylongname");
        assert_eq!(long.name().len(), 15);
    }

    #[test]
    fn union_fields() {
        let mut r = Ifreq::with_name(b"lo");
        r.set_in_addr([127, 0, 0, 1]);
        assert_eq!(r.sockaddr_family(), 2);
        assert_eq!(r.in_addr(), [127, 0, 0, 1]);
        assert_eq!(&r.bytes[16..24], &[2, 0, 0, 0, 127, 0, 0, 1]);
        r.set_flags(0x49);
        assert_eq!(r.flags(), 0x49);
        r.set_int(65536);
        assert_eq!(r.int(), 65536);
        r.set_hwaddr(772, &[0; 6]);
        assert_eq!(&r.bytes[16..18], &772u16.to_le_bytes());
    }

    #[test]
    fn netmasks_and_prefixes() {
        assert_eq!(netmask(8), [255, 0, 0, 0]);
        assert_eq!(netmask(0), [0, 0, 0, 0]);
        assert_eq!(netmask(32), [255; 4]);
        assert_eq!(netmask(20), [255, 255, 240, 0]);
        assert_eq!(prefix_of([255, 255, 240, 0]), Some(20));
        assert_eq!(prefix_of([0; 4]), Some(0));
        assert_eq!(prefix_of([255; 4]), Some(32));
        assert_eq!(prefix_of([255, 0, 255, 0]), None);
    }
}
