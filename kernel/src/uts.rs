//! The system's names as uname(2) reports them: the fixed kernel identity
//! and the host and domain names, which sethostname/setdomainname and
//! /proc/sys/kernel/{hostname,domainname} change (Linux's init UTS
//! namespace; each name holds at most 64 bytes).

use alloc::string::String;

use hal::sync::SpinLock;
use linux_abi::errno::Errno;

pub const SYSNAME: &str = "Linux";
pub const RELEASE: &str = "6.1.0-kiln";
pub const VERSION: &str = "#1 SMP Kiln";
pub const MACHINE: &str = "x86_64";
/// __NEW_UTS_LEN: the longest name.
pub const NAME_MAX: usize = 64;

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

static HOSTNAME: SpinLock<Name> = SpinLock::new(Name::new(b"kiln"));
static DOMAINNAME: SpinLock<Name> = SpinLock::new(Name::new(b"(none)"));

pub fn hostname() -> String {
    HOSTNAME.lock().get()
}

pub fn domainname() -> String {
    DOMAINNAME.lock().get()
}

/// sethostname: EINVAL past 64 bytes.
pub fn set_hostname(name: &[u8]) -> Result<(), Errno> {
    HOSTNAME.lock().set(name)
}

pub fn set_domainname(name: &[u8]) -> Result<(), Errno> {
    DOMAINNAME.lock().set(name)
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
