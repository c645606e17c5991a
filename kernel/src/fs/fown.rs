//! The owner of an open file description: who gets SIGIO (or the signal
//! chosen with F_SETSIG) when the file has something to say, as set by
//! `F_SETOWN`/`F_SETOWN_EX` and by taking a lease.
//!
//! Sending the signal means finding processes, which is the process
//! layer's business: it registers a [`SigioSender`] at boot, and the file
//! layer calls it without knowing about processes.

use hal::sync::Once;
use linux_abi::errno::Errno;
use linux_abi::ipc::{F_OWNER_PGRP, F_OWNER_PID, F_OWNER_TID};

/// Whom an owner names: a thread, a process (thread group) or a process
/// group (Linux's PIDTYPE_PID, PIDTYPE_TGID, PIDTYPE_PGID).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OwnerKind {
    /// A fresh file's owner type, as Linux's zeroed `f_owner` reads.
    #[default]
    Thread,
    Process,
    Group,
}

/// The owner and the signal of one open file description.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileOwner {
    pub kind: OwnerKind,
    /// 0: nobody.
    pub id: i32,
    /// 0: plain SIGIO.
    pub signo: u32,
}

impl FileOwner {
    /// `F_GETOWN`: a process group comes back negative.
    pub fn getown(&self) -> i64 {
        match self.kind {
            OwnerKind::Group => -i64::from(self.id),
            _ => i64::from(self.id),
        }
    }

    /// `F_GETOWN_EX`'s type.
    pub fn ex_kind(&self) -> i32 {
        match self.kind {
            OwnerKind::Thread => F_OWNER_TID,
            OwnerKind::Process => F_OWNER_PID,
            OwnerKind::Group => F_OWNER_PGRP,
        }
    }

    /// `F_SETOWN_EX`'s type.
    pub fn kind_from_ex(kind: i32) -> Result<OwnerKind, Errno> {
        match kind {
            F_OWNER_TID => Ok(OwnerKind::Thread),
            F_OWNER_PID => Ok(OwnerKind::Process),
            F_OWNER_PGRP => Ok(OwnerKind::Group),
            _ => Err(Errno::EINVAL),
        }
    }
}

/// Sends the owner its signal for `fd` with reason `code` (a `POLL_*`
/// si_code): the F_SETSIG signal with a siginfo naming the descriptor and
/// band, or a plain SIGIO when none was set.
pub type SigioSender = fn(owner: FileOwner, fd: i32, code: i32);

static SENDER: Once<SigioSender> = Once::new();

/// The process layer's sender, registered once at boot.
pub fn set_sender(sender: SigioSender) {
    SENDER.set(sender);
}

pub fn send(owner: FileOwner, fd: i32, code: i32) {
    if owner.id == 0 {
        return;
    }
    if let Some(send) = SENDER.get() {
        send(owner, fd, code);
    }
}
