//! The virtio 1.x split virtqueue layout and its index arithmetic (virtio
//! spec 1.2, section 2.7), as pure logic. The driver keeps free-running
//! 16-bit indices; these functions turn them into ring slots, count what
//! the device has used, and give each area's size and field offsets.

/// Size of one descriptor: addr (8), len (4), flags (2), next (2).
pub const DESC_SIZE: usize = 16;
/// Descriptor flags.
pub const DESC_F_NEXT: u16 = 1;
pub const DESC_F_WRITE: u16 = 2;
/// Used ring flag (device): do not notify me.
pub const USED_F_NO_NOTIFY: u16 = 1;
/// Available ring flag (driver): do not interrupt me.
pub const AVAIL_F_NO_INTERRUPT: u16 = 1;

/// Sizes and offsets of a split queue of `size` entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub size: u16,
}

impl Layout {
    /// A queue of `size` entries: a power of two up to 32768.
    pub fn new(size: u16) -> Option<Layout> {
        (size.is_power_of_two() && size <= 32768).then_some(Layout { size })
    }

    pub fn desc_table_len(&self) -> usize {
        DESC_SIZE * usize::from(self.size)
    }

    /// flags, idx, ring[size], used_event: all u16.
    pub fn avail_len(&self) -> usize {
        2 * (3 + usize::from(self.size))
    }

    /// flags, idx (u16 each), ring[size] of (id u32, len u32), avail_event u16.
    pub fn used_len(&self) -> usize {
        4 + 8 * usize::from(self.size) + 2
    }

    /// Byte offset of available-ring slot `slot`'s descriptor head.
    pub fn avail_slot_offset(&self, slot: u16) -> usize {
        4 + 2 * usize::from(slot)
    }

    /// Byte offset of used-ring element `slot` (id, then len).
    pub fn used_elem_offset(&self, slot: u16) -> usize {
        4 + 8 * usize::from(slot)
    }

    /// Ring slot of a free-running index.
    pub fn slot(&self, index: u16) -> u16 {
        index & (self.size - 1)
    }
}

/// Offsets of the ring headers' fields.
pub const RING_FLAGS: usize = 0;
pub const RING_IDX: usize = 2;

/// How many used entries the device added since the driver last looked:
/// the indices run free and wrap at 2^16.
pub fn pending(used_idx: u16, last_seen: u16) -> u16 {
    used_idx.wrapping_sub(last_seen)
}

/// Whether the device asked (with VIRTIO_F_EVENT_IDX) to be notified
/// when the available index moves from `old` to `new`, given its
/// `avail_event`: the spec's vring_need_event.
pub fn need_event(event: u16, new: u16, old: u16) -> bool {
    new.wrapping_sub(event).wrapping_sub(1) < new.wrapping_sub(old)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_sizes() {
        let l = Layout::new(256).unwrap();
        assert_eq!(l.desc_table_len(), 4096);
        assert_eq!(l.avail_len(), 518);
        assert_eq!(l.used_len(), 2054);
        assert_eq!(l.avail_slot_offset(255), 514);
        assert_eq!(l.used_elem_offset(1), 12);
        assert_eq!(Layout::new(100), None);
        assert_eq!(Layout::new(0), None);
    }

    #[test]
    fn indices_wrap() {
        let l = Layout::new(8).unwrap();
        assert_eq!(l.slot(9), 1);
        assert_eq!(l.slot(u16::MAX), 7);
        assert_eq!(pending(3, 65534), 5);
        assert_eq!(pending(7, 7), 0);
    }

    #[test]
    fn event_index() {
        // The device wants an event once index 5 is published.
        assert!(need_event(5, 6, 5));
        assert!(!need_event(5, 5, 4));
        assert!(need_event(65535, 1, 65534));
    }
}
