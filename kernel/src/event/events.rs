//! Readiness event masks: Linux's poll bits (`POLLIN`, `POLLOUT`, ...),
//! which epoll shares (`EPOLLIN` is `POLLIN`). poll(2) sees the low 16
//! bits; epoll sees all 32, its flag bits (`EPOLLET`, ...) excepted.

use core::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign, Not};

/// A set of readiness events.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Events(u32);

impl Events {
    pub const EMPTY: Events = Events(0);
    pub const IN: Events = Events(0x001);
    pub const PRI: Events = Events(0x002);
    pub const OUT: Events = Events(0x004);
    pub const ERR: Events = Events(0x008);
    pub const HUP: Events = Events(0x010);
    pub const NVAL: Events = Events(0x020);
    pub const RDNORM: Events = Events(0x040);
    pub const RDBAND: Events = Events(0x080);
    pub const WRNORM: Events = Events(0x100);
    pub const WRBAND: Events = Events(0x200);
    #[allow(dead_code)] // no file kind reports it yet
    pub const MSG: Events = Events(0x400);
    /// The peer closed its writing side (stream sockets).
    #[allow(dead_code)] // no file kind reports it yet
    pub const RDHUP: Events = Events(0x2000);

    /// What a file without a notification head reports: always ready
    /// (Linux's DEFAULT_POLLMASK).
    pub const ALWAYS: Events = Events(0x001 | 0x004 | 0x040 | 0x100);
    /// Data to read.
    pub const READABLE: Events = Events(0x001 | 0x040);
    /// Room to write.
    pub const WRITABLE: Events = Events(0x004 | 0x100);

    pub const fn from_bits(bits: u32) -> Events {
        Events(bits)
    }

    pub const fn bits(self) -> u32 {
        self.0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub const fn contains(self, other: Events) -> bool {
        self.0 & other.0 == other.0
    }

    pub const fn intersects(self, other: Events) -> bool {
        self.0 & other.0 != 0
    }
}

impl BitOr for Events {
    type Output = Events;
    fn bitor(self, rhs: Events) -> Events {
        Events(self.0 | rhs.0)
    }
}

impl BitOrAssign for Events {
    fn bitor_assign(&mut self, rhs: Events) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for Events {
    type Output = Events;
    fn bitand(self, rhs: Events) -> Events {
        Events(self.0 & rhs.0)
    }
}

impl BitAndAssign for Events {
    fn bitand_assign(&mut self, rhs: Events) {
        self.0 &= rhs.0;
    }
}

impl Not for Events {
    type Output = Events;
    fn not(self) -> Events {
        Events(!self.0)
    }
}
