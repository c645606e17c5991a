//! One System V semaphore operation set, applied atomically: every
//! operation succeeds or none does.
//!
//! The operations run in order on the values (so one set may touch a
//! semaphore twice); the first that cannot proceed (a decrement below
//! zero, or a wait-for-zero on a non-zero value) makes the whole set
//! block, or fail with EAGAIN when it carries IPC_NOWAIT, and a result
//! past SEMVMX, or an undo adjustment past SEMAEM, fails it with ERANGE.
//! Either way the values and adjustments are left as they were.

/// `IPC_NOWAIT` in `sem_flg`.
pub const IPC_NOWAIT: i16 = 0o4000;
/// `SEM_UNDO` in `sem_flg`.
pub const SEM_UNDO: i16 = 0x1000;
pub const SEMVMX: i32 = 32767;
pub const SEMAEM: i32 = SEMVMX;

/// `struct sembuf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemOp {
    pub num: u16,
    pub op: i16,
    pub flg: i16,
}

impl SemOp {
    /// Whether the operation changes the value (waits for zero do not).
    pub fn alters(&self) -> bool {
        self.op != 0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SemopError {
    /// Operation `op` cannot proceed yet: sleep until the values change.
    WouldBlock { op: usize },
    /// Operation `op` cannot proceed and asked not to wait (EAGAIN).
    Again { op: usize },
    /// A value or an undo adjustment would leave its range (ERANGE).
    Range,
}

/// Applies `ops` to `values` (one per semaphore, 0..=SEMVMX), keeping
/// `adjust` (one per semaphore; the caller's SEM_UNDO adjustments, absent
/// when it has none) in step for SEM_UNDO operations. The caller has
/// checked every `num` against the set's size.
pub fn perform(values: &mut [u16], mut adjust: Option<&mut [i32]>, ops: &[SemOp]) -> Result<(), SemopError> {
    for (i, sop) in ops.iter().enumerate() {
        let n = usize::from(sop.num);
        let value = i32::from(values[n]);
        let result = value + i32::from(sop.op);
        let blocked = (sop.op == 0 && value != 0) || result < 0;
        let failure = if blocked {
            Some(if sop.flg & IPC_NOWAIT != 0 { SemopError::Again { op: i } } else { SemopError::WouldBlock { op: i } })
        } else if result > SEMVMX {
            Some(SemopError::Range)
        } else {
            None
        };
        let undo = match (&mut adjust, sop.flg & SEM_UNDO != 0, failure) {
            (Some(adj), true, None) => {
                let u = adj[n] - i32::from(sop.op);
                if !(-SEMAEM - 1..=SEMAEM).contains(&u) {
                    Some(SemopError::Range)
                } else {
                    adj[n] = u;
                    None
                }
            }
            _ => failure,
        };
        if let Some(e) = undo {
            roll_back(values, adjust, &ops[..i]);
            return Err(e);
        }
        values[n] = result as u16;
    }
    Ok(())
}

fn roll_back(values: &mut [u16], mut adjust: Option<&mut [i32]>, done: &[SemOp]) {
    for sop in done.iter().rev() {
        let n = usize::from(sop.num);
        values[n] = (i32::from(values[n]) - i32::from(sop.op)) as u16;
        if let Some(adj) = &mut adjust {
            if sop.flg & SEM_UNDO != 0 {
                adj[n] += i32::from(sop.op);
            }
        }
    }
}

/// The value an exiting process's SEM_UNDO adjustment leaves: the sum,
/// clamped to 0..=SEMVMX as Linux's exit_sem does.
pub fn undo_value(value: u16, adjust: i32) -> u16 {
    (i32::from(value) + adjust).clamp(0, SEMVMX) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(num: u16, op: i16, flg: i16) -> SemOp {
        SemOp { num, op, flg }
    }

    #[test]
    fn all_or_nothing() {
        let mut v = [1u16, 0];
        assert_eq!(perform(&mut v, None, &[op(0, -1, 0), op(1, -1, 0)]), Err(SemopError::WouldBlock { op: 1 }));
        assert_eq!(v, [1, 0]);
        assert_eq!(perform(&mut v, None, &[op(1, 2, 0), op(0, -1, 0), op(1, -2, 0)]), Ok(()));
        assert_eq!(v, [0, 0]);
        assert_eq!(perform(&mut v, None, &[op(0, 0, 0), op(1, 0, 0)]), Ok(()));
        assert_eq!(perform(&mut v, None, &[op(0, 1, 0), op(0, 0, IPC_NOWAIT)]), Err(SemopError::Again { op: 1 }));
        assert_eq!(v, [0, 0]);
    }

    #[test]
    fn the_same_semaphore_twice_sees_the_first_change() {
        let mut v = [1u16];
        assert_eq!(perform(&mut v, None, &[op(0, -1, 0), op(0, -1, 0)]), Err(SemopError::WouldBlock { op: 1 }));
        assert_eq!(v, [1]);
        assert_eq!(perform(&mut v, None, &[op(0, 1, 0), op(0, -2, 0)]), Ok(()));
        assert_eq!(v, [0]);
    }

    #[test]
    fn range_limits() {
        let mut v = [32767u16];
        assert_eq!(perform(&mut v, None, &[op(0, 1, 0)]), Err(SemopError::Range));
        let mut v = [0u16];
        let mut adj = [0i32];
        assert_eq!(perform(&mut v, Some(&mut adj), &[op(0, 32767, SEM_UNDO)]), Ok(()));
        assert_eq!(adj, [-32767]);
        assert_eq!(perform(&mut v, Some(&mut adj), &[op(0, -32767, SEM_UNDO)]), Ok(()));
        assert_eq!((v, adj), ([0], [0]));
        v = [100];
        adj = [-32768];
        assert_eq!(perform(&mut v, Some(&mut adj), &[op(0, 1, SEM_UNDO)]), Err(SemopError::Range));
        assert_eq!((v, adj), ([100], [-32768]));
    }

    #[test]
    fn undo_rolls_back_with_the_values() {
        let mut v = [5u16, 0];
        let mut adj = [0i32, 0];
        assert_eq!(
            perform(&mut v, Some(&mut adj), &[op(0, -2, SEM_UNDO), op(1, -1, SEM_UNDO)]),
            Err(SemopError::WouldBlock { op: 1 })
        );
        assert_eq!((v, adj), ([5, 0], [0, 0]));
        assert_eq!(perform(&mut v, Some(&mut adj), &[op(0, -2, SEM_UNDO), op(1, 3, 0)]), Ok(()));
        assert_eq!((v, adj), ([3, 3], [2, 0]));
        assert_eq!(undo_value(v[0], adj[0]), 5);
        assert_eq!(undo_value(1, -4), 0);
        assert_eq!(undo_value(32000, 32000), 32767);
    }
}
