//! Which message of a System V queue `msgrcv` takes, from its `msgtyp`
//! and flags (Linux's search modes).

/// How `msgrcv` searches the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    /// `msgtyp == 0`: the first message.
    Any,
    /// `msgtyp > 0`: the first message of that type.
    Equal(i64),
    /// `msgtyp > 0` with MSG_EXCEPT: the first message of another type.
    NotEqual(i64),
    /// `msgtyp < 0`: the first message of the lowest type at most `|msgtyp|`.
    LessEqual(i64),
    /// MSG_COPY: the message at this position (counting from 0).
    Number(i64),
}

impl Search {
    pub fn new(msgtyp: i64, except: bool, copy: bool) -> Search {
        if copy {
            Search::Number(msgtyp)
        } else if msgtyp == 0 {
            Search::Any
        } else if msgtyp < 0 {
            // |i64::MIN| does not fit; Linux searches up to LONG_MAX.
            Search::LessEqual(msgtyp.checked_neg().unwrap_or(i64::MAX))
        } else if except {
            Search::NotEqual(msgtyp)
        } else {
            Search::Equal(msgtyp)
        }
    }

    /// The index of the message to take among `types` (queue order).
    pub fn find(self, types: impl Iterator<Item = i64>) -> Option<usize> {
        match self {
            Search::Any => types.enumerate().next().map(|(i, _)| i),
            Search::Equal(t) => types.enumerate().find(|(_, m)| *m == t).map(|(i, _)| i),
            Search::NotEqual(t) => types.enumerate().find(|(_, m)| *m != t).map(|(i, _)| i),
            Search::Number(n) => usize::try_from(n).ok().and_then(|n| types.enumerate().nth(n)).map(|(i, _)| i),
            Search::LessEqual(limit) => {
                let mut best: Option<(usize, i64)> = None;
                for (i, m) in types.enumerate() {
                    if m <= limit && best.is_none_or(|(_, b)| m < b) {
                        best = Some((i, m));
                        if m == 1 {
                            break;
                        }
                    }
                }
                best.map(|(i, _)| i)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        let q = [5i64, 3, 7, 3, 1, 2];
        let find = |s: Search| s.find(q.iter().copied());
        assert_eq!(find(Search::new(0, false, false)), Some(0));
        assert_eq!(find(Search::new(3, false, false)), Some(1));
        assert_eq!(find(Search::new(4, false, false)), None);
        assert_eq!(find(Search::new(5, true, false)), Some(1));
        assert_eq!(find(Search::new(-4, false, false)), Some(4));
        assert_eq!(find(Search::new(-3, false, false)), Some(4));
        assert_eq!(find(Search::new(i64::MIN, false, false)), Some(4));
        assert_eq!([5i64, 3, 7, 3].iter().copied().len(), 4);
        assert_eq!(Search::new(-4, false, false).find([5i64, 3, 7, 3].into_iter()), Some(1));
        assert_eq!(Search::new(-2, false, false).find([5i64, 3].into_iter()), None);
        assert_eq!(find(Search::new(2, false, true)), Some(2));
        assert_eq!(find(Search::new(6, false, true)), None);
        assert_eq!(find(Search::new(-1, false, true)), None);
        assert_eq!(Search::new(0, false, false).find(core::iter::empty()), None);
    }
}
