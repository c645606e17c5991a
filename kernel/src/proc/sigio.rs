//! Signal-driven I/O's delivery: the signal a file sends its owner
//! (`fs::fown`) when it becomes ready or its lease breaks, sent to a
//! thread, a process or every process of a group.
//!
//! With no F_SETSIG signal the owner gets a plain SIGIO (si_code
//! SI_KERNEL); with one, that signal with si_code the reason (`POLL_*`),
//! si_band the matching poll bits and si_fd the descriptor, as Linux's
//! send_sigio does.

use linux_abi::layout::Siginfo;
use linux_abi::signal::{self as sig, POLL_IN};

use crate::fs::fown::{FileOwner, OwnerKind};

/// Linux's band_table: the poll bits each `POLL_*` reason stands for.
fn band(code: i32) -> i64 {
    const IN: i64 = 0x001 | 0x040;
    const OUT: i64 = 0x004 | 0x100 | 0x200;
    const MSG: i64 = 0x001 | 0x040 | 0x400;
    const ERR: i64 = 0x008;
    const PRI: i64 = 0x002 | 0x080;
    const HUP: i64 = 0x010 | 0x008;
    match code - POLL_IN {
        0 => IN,
        1 => OUT,
        2 => MSG,
        3 => ERR,
        4 => PRI,
        5 => HUP,
        _ => !0,
    }
}

fn send(owner: FileOwner, fd: i32, code: i32) {
    let info = if owner.signo == 0 {
        Siginfo::kill(sig::SIGIO, sig::SI_KERNEL, 0, 0)
    } else {
        Siginfo::poll(owner.signo, code, band(code), fd)
    };
    match owner.kind {
        OwnerKind::Thread => {
            if let Some(t) = super::find_task(owner.id) {
                super::signal::send_to_task(&t, info);
            }
        }
        OwnerKind::Process => {
            if let Some(p) = super::find_process(owner.id) {
                super::signal::send_to_process(&p, info);
            }
        }
        OwnerKind::Group => {
            for p in super::all_processes() {
                if p.pgid.load(core::sync::atomic::Ordering::Relaxed) == owner.id {
                    super::signal::send_to_process(&p, info);
                }
            }
        }
    }
}

/// Whether F_SETOWN's `id` names a live thread, process or group.
pub fn target_exists(kind: OwnerKind, id: i32) -> bool {
    match kind {
        OwnerKind::Thread => super::find_task(id).is_some(),
        OwnerKind::Process => super::find_process(id).is_some(),
        OwnerKind::Group => {
            super::all_processes().iter().any(|p| p.pgid.load(core::sync::atomic::Ordering::Relaxed) == id)
        }
    }
}

/// Registers the sender with the file layer (once, at boot).
pub fn init() {
    crate::fs::fown::set_sender(send);
}
