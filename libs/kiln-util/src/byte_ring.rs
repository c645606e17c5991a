//! The bookkeeping of a byte ring over caller-provided storage: where the
//! data starts and how long it is, and the (at most two) slices of the
//! storage that hold the data or the free room after it, in order.
//!
//! A pipe keeps its bytes this way so it can copy straight from a writer's
//! user memory into the free slices and from the data slices straight to
//! a reader's, with no staging buffer: the copy is the caller's (it may stop
//! short at a fault), and only the bytes it reports are committed or
//! consumed. The storage may be replaced by a larger one (`grow_into`).

/// Start and length of the data in a ring whose storage the caller owns.
/// Every method takes that storage; its length is the ring's size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByteRing {
    head: usize,
    len: usize,
}

impl ByteRing {
    pub const fn new() -> ByteRing {
        ByteRing { head: 0, len: 0 }
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The data, oldest first, as the slice up to the end of the storage
    /// and the wrapped-around rest.
    pub fn data<'a>(&self, storage: &'a [u8]) -> (&'a [u8], &'a [u8]) {
        let size = storage.len();
        if self.len == 0 || size == 0 {
            return (&[], &[]);
        }
        let end = self.head + self.len;
        if end <= size {
            (&storage[self.head..end], &[])
        } else {
            let (low, high) = storage.split_at(self.head);
            (high, &low[..end - size])
        }
    }

    /// The free room after the data, in the order it fills.
    pub fn room<'a>(&self, storage: &'a mut [u8]) -> (&'a mut [u8], &'a mut [u8]) {
        let size = storage.len();
        if self.len >= size {
            return (&mut [], &mut []);
        }
        let tail = (self.head + self.len) % size;
        if tail >= self.head {
            // Data sits in [head, tail): free is [tail, size) then [0, head).
            let (low, high) = storage.split_at_mut(tail);
            (high, &mut low[..self.head])
        } else {
            (&mut storage[tail..self.head], &mut [])
        }
    }

    /// Counts `n` bytes written into `room` as data.
    pub fn commit(&mut self, n: usize, size: usize) {
        debug_assert!(self.len + n <= size);
        self.len = (self.len + n).min(size);
    }

    /// Drops the `n` oldest bytes.
    pub fn consume(&mut self, n: usize, size: usize) {
        let n = n.min(self.len);
        self.len -= n;
        self.head = if self.len == 0 || size == 0 { 0 } else { (self.head + n) % size };
    }

    /// Makes room for `n` bytes in front of the data and returns the
    /// slices to fill (in data order) with what goes back in front; the
    /// caller checks there is room (`size - len >= n`).
    pub fn unconsume<'a>(&mut self, n: usize, storage: &'a mut [u8]) -> (&'a mut [u8], &'a mut [u8]) {
        let size = storage.len();
        let n = n.min(size - self.len);
        let start = (self.head + size - n) % size.max(1);
        self.head = start;
        self.len += n;
        if start + n <= size {
            (&mut storage[start..start + n], &mut [])
        } else {
            let (low, high) = storage.split_at_mut(start);
            (high, &mut low[..start + n - size])
        }
    }

    /// Copies the data to the start of `new` (at least `len` bytes long)
    /// and makes the ring use it: for growing the storage.
    pub fn grow_into(&mut self, old: &[u8], new: &mut [u8]) {
        let (a, b) = self.data(old);
        new[..a.len()].copy_from_slice(a);
        new[a.len()..a.len() + b.len()].copy_from_slice(b);
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(r: &mut ByteRing, s: &mut [u8], bytes: &[u8]) -> usize {
        let size = s.len();
        let (a, b) = r.room(s);
        let n = bytes.len().min(a.len() + b.len());
        let first = n.min(a.len());
        a[..first].copy_from_slice(&bytes[..first]);
        b[..n - first].copy_from_slice(&bytes[first..n]);
        r.commit(n, size);
        n
    }

    fn contents(r: &ByteRing, s: &[u8]) -> Vec<u8> {
        let (a, b) = r.data(s);
        [a, b].concat()
    }

    #[test]
    fn fills_wraps_and_drains_in_order() {
        let mut s = [0u8; 8];
        let mut r = ByteRing::new();
        assert_eq!(push(&mut r, &mut s, b"abcdef"), 6);
        r.consume(4, 8);
        assert_eq!(contents(&r, &s), b"ef");
        // Wraps: 6 free bytes, 2 at the end and 4 at the start.
        assert_eq!(push(&mut r, &mut s, b"ghijklmn"), 6);
        assert_eq!(contents(&r, &s), b"efghijkl");
        assert_eq!(r.room(&mut s).0.len() + r.room(&mut s).1.len(), 0);
        r.consume(3, 8);
        assert_eq!(contents(&r, &s), b"hijkl");
        r.consume(5, 8);
        assert!(r.is_empty());
        // Empty resets to the start, so the next write is one slice.
        assert_eq!(r.room(&mut s).0.len(), 8);
    }

    #[test]
    fn unconsume_puts_bytes_back_in_front() {
        let mut s = [0u8; 8];
        let mut r = ByteRing::new();
        push(&mut r, &mut s, b"abc");
        let (a, b) = r.unconsume(2, &mut s);
        assert_eq!(a.len() + b.len(), 2);
        let mut src = b"xy".iter();
        for byte in a.iter_mut().chain(b.iter_mut()) {
            *byte = *src.next().unwrap();
        }
        assert_eq!(contents(&r, &s), b"xyabc");
        r.consume(1, 8);
        push(&mut r, &mut s, b"1234");
        assert_eq!(contents(&r, &s), b"yabc1234");
    }

    #[test]
    fn grows_keeping_order() {
        let mut s = [0u8; 4];
        let mut r = ByteRing::new();
        push(&mut r, &mut s, b"abcd");
        r.consume(3, 4);
        push(&mut r, &mut s, b"efg");
        assert_eq!(contents(&r, &s), b"defg");
        let mut big = [0u8; 16];
        r.grow_into(&s, &mut big);
        assert_eq!(contents(&r, &big), b"defg");
        assert_eq!(push(&mut r, &mut big, b"hijklmnopqrstu"), 12);
        assert_eq!(contents(&r, &big), b"defghijklmnopqrs");
    }

    #[test]
    fn empty_storage_is_harmless() {
        let mut r = ByteRing::new();
        assert_eq!(r.data(&[]), (&[][..], &[][..]));
        assert_eq!(r.room(&mut []).0.len(), 0);
        r.consume(3, 0);
        assert!(r.is_empty());
    }
}
