//! The system's names as uname(2) reports them: the fixed kernel identity
//! and the host and domain names of each UTS namespace ([`UtsNs`]), which
//! sethostname/setdomainname and /proc/sys/kernel/{hostname,domainname}
//! change in the caller's namespace (each name holds at most 64 bytes).
//! Which namespace is the caller's is `proc::ns`'s business: it installs
//! a hook here ([`set_current_hook`]) so this module does not reach up.

use alloc::string::String;
use alloc::sync::Arc;

use hal::sync::{Once, SpinLock};
use linux_abi::errno::Errno;

pub const SYSNAME: &str = "Linux";
pub const RELEASE: &str = "6.1.0-kiln";
pub const VERSION: &str = "#1 SMP Kiln";
pub const MACHINE: &str = "x86_64";
/// __NEW_UTS_LEN: the longest name.
pub const NAME_MAX: usize = 64;

/// Linux's proc inode number of the initial UTS namespace.
pub const INIT_UTS_INUM: u64 = 0xEFFF_FFFE;

#[derive(Clone, Copy)]
struct Name {
    bytes: [u8; NAME_MAX],
    len: usize,
}

impl Name {
    const fn new(init: &[u8]) -> Name {
        let mut bytes = [0u8; NAME_MAX];
        let mut i = 0;
        while i < init.len() {
            bytes[i] = init[i];
            i += 1;
        }
        Name { bytes, len: init.len() }
    }

    fn get(&self) -> String {
        String::from_utf8_lossy(&self.bytes[..self.len]).into_owned()
    }

    fn set(&mut self, value: &[u8]) -> Result<(), Errno> {
        if value.len() > NAME_MAX {
            return Err(Errno::EINVAL);
        }
        self.bytes = [0; NAME_MAX];
        self.bytes[..value.len()].copy_from_slice(value);
        self.len = value.len();
        Ok(())
    }
}

#[derive(Clone, Copy)]
struct Names {
    hostname: Name,
    domainname: Name,
}

/// A UTS namespace: its proc inode number and its two names.
pub struct UtsNs {
    pub inum: u64,
    names: SpinLock<Names>,
}

impl UtsNs {
    pub fn hostname(&self) -> String {
        self.names.lock().hostname.get()
    }

    pub fn domainname(&self) -> String {
        self.names.lock().domainname.get()
    }

    /// sethostname: EINVAL past 64 bytes.
    pub fn set_hostname(&self, name: &[u8]) -> Result<(), Errno> {
        self.names.lock().hostname.set(name)
    }

    pub fn set_domainname(&self, name: &[u8]) -> Result<(), Errno> {
        self.names.lock().domainname.set(name)
    }

    /// A new namespace (unshare or clone with CLONE_NEWUTS) starting with
    /// this one's names.
    pub fn copy(&self, inum: u64) -> Result<Arc<UtsNs>, Errno> {
        let names = *self.names.lock();
        Arc::try_new(UtsNs { inum, names: SpinLock::new(names) }).map_err(|_| Errno::ENOMEM)
    }
}

static INITIAL: Once<Arc<UtsNs>> = Once::new();

/// The initial UTS namespace ("kiln", "(none)").
pub fn initial() -> Arc<UtsNs> {
    loop {
        if let Some(ns) = INITIAL.get() {
            return ns.clone();
        }
        INITIAL.set(Arc::new(UtsNs {
            inum: INIT_UTS_INUM,
            names: SpinLock::new(Names { hostname: Name::new(b"kiln"), domainname: Name::new(b"(none)") }),
        }));
    }
}

static CURRENT: Once<fn() -> Option<Arc<UtsNs>>> = Once::new();

/// Installs how to find the caller's UTS namespace.
pub fn set_current_hook(current: fn() -> Option<Arc<UtsNs>>) {
    CURRENT.set(current);
}

/// The caller's UTS namespace (the initial one in kernel threads).
pub fn current() -> Arc<UtsNs> {
    CURRENT.get().and_then(|f| f()).unwrap_or_else(initial)
}

/// The caller's host name.
pub fn hostname() -> String {
    current().hostname()
}

/// The caller's domain name.
pub fn domainname() -> String {
    current().domainname()
}

/// sethostname in the caller's namespace: EINVAL past 64 bytes.
pub fn set_hostname(name: &[u8]) -> Result<(), Errno> {
    current().set_hostname(name)
}

pub fn set_domainname(name: &[u8]) -> Result<(), Errno> {
    current().set_domainname(name)
}

/// What a write to a sysctl string keeps (Linux's proc_dostring): up to
/// the first newline or NUL, cut to `max` bytes.
pub fn sysctl_string(bytes: &[u8], max: usize) -> &[u8] {
    let end = bytes.iter().position(|&b| b == b'\n' || b == 0).unwrap_or(bytes.len());
    &bytes[..end.min(max)]
}

/// /proc/sys/kernel/hostname.
pub fn set_hostname_line(bytes: &[u8]) -> Result<(), Errno> {
    set_hostname(sysctl_string(bytes, NAME_MAX))
}

/// /proc/sys/kernel/domainname.
pub fn set_domainname_line(bytes: &[u8]) -> Result<(), Errno> {
    set_domainname(sysctl_string(bytes, NAME_MAX))
}
