#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
//! The x86_64 Linux system call ABI, as Kiln implements it.
//!
//! Everything user space can observe about the interface lives here as
//! plain data: error numbers ([`errno`]), system call numbers ([`nr`]),
//! signals ([`signal`]), flag and command constants ([`consts`]),
//! capabilities and securebits ([`capability`]), file-system call
//! constants and formats (xattrs, ACLs, splice, openat2, acct: [`fs`]), the
//! `wait4` status word ([`wait_status`]), byte-exact encoders for the
//! structs exchanged through user memory ([`layout`]), the IPC and
//! file-lock structs and limits ([`ipc`]), the socket structs,
//! constants and control-message rules ([`socket`]), restartable
//! sequences ([`rseq`]), process descriptors ([`pidfd`]) and seccomp with
//! its classic BPF ([`seccomp`]). The values are facts
//! of the Linux ABI taken from the kernel's UAPI headers; the tests compare
//! them with the headers installed on the build host when a C compiler is
//! available. No heap, no `unsafe`, no dependencies beyond `core`.

pub mod capability;
pub mod consts;
pub mod errno;
pub mod fs;
pub mod ipc;
pub mod layout;
pub mod nr;
pub mod pidfd;
pub mod ptrace;
pub mod rseq;
pub mod seccomp;
pub mod signal;
pub mod socket;
pub mod wait_status;

pub use errno::Errno;
