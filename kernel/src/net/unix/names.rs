//! AF_UNIX names: where bind puts a socket and connect and sendto find
//! it.
//!
//! * A path name is a socket inode that bind creates in the file system
//!   (mode 0777 less the umask, owned by the caller's file-system ids,
//!   with write and search permission on the directory as any create;
//!   an existing name is EADDRINUSE). Connecting or sending to it needs
//!   search permission along the path and write permission on it. The
//!   socket keeps the inode, and a table keyed by the inode finds the
//!   socket, so unlinking the name leaves the socket working but
//!   unreachable, and a new file at the same path is another inode.
//! * An abstract name (a leading NUL) lives only in a table, one per
//!   socket type as on Linux, and goes when the socket does.
//! * Autobind (bind with only the family, or sending or connecting with
//!   SO_PASSCRED while unbound) picks an abstract name of five hex digits.

use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::socket::{self as s, UnixName};

use super::UnixSocket;
use crate::cred::MAY_WRITE;
use crate::fs::dentry::{resolve, resolve_parent, Dentry};
use crate::fs::inode::{FileType, Inode, S_IFSOCK};
use crate::fs::perm;
use crate::net::{AddrBuf, NameCtx, SockType};

/// A bound name.
pub struct Name {
    /// The address as getsockname and recvfrom report it.
    pub addr: AddrBuf,
    /// A path name's socket inode, kept so its key stays unique.
    inode: Option<Arc<dyn Inode>>,
}

impl Name {
    pub fn is_abstract(&self) -> bool {
        self.inode.is_none()
    }

    /// The `sun_path` bytes (for /proc/net/unix).
    pub fn path_bytes(&self) -> &[u8] {
        &self.addr.as_bytes()[s::SUN_PATH_OFFSET..]
    }
}

#[derive(Default)]
struct Table {
    /// Abstract names by socket type, then name.
    abstract_names: BTreeMap<(u8, Vec<u8>), Weak<UnixSocket>>,
    /// Path names by the address of their socket inode.
    paths: BTreeMap<usize, Weak<UnixSocket>>,
}

static TABLE: SpinLock<Option<Table>> = SpinLock::new(None);

fn with_table<T>(f: impl FnOnce(&mut Table) -> T) -> T {
    let mut t = TABLE.lock();
    f(t.get_or_insert_with(Table::default))
}

fn inode_key(inode: &Arc<dyn Inode>) -> usize {
    Arc::as_ptr(inode) as *const () as usize
}

fn type_key(kind: SockType) -> u8 {
    kind as u8
}

fn abstract_addr(name: &[u8]) -> AddrBuf {
    let mut out = [0u8; s::SockaddrUn::SIZE + 1];
    let n = s::encode_unix_addr(&UnixName::Abstract(name), &mut out);
    AddrBuf::new(&out[..n])
}

/// Registers `sock` under the abstract name `name` (EADDRINUSE if taken).
pub fn bind_abstract(sock: &Arc<UnixSocket>, name: &[u8]) -> Result<Arc<Name>, Errno> {
    let named = Arc::try_new(Name { addr: abstract_addr(name), inode: None }).map_err(|_| Errno::ENOMEM)?;
    let mut key = Vec::new();
    key.try_reserve_exact(name.len()).map_err(|_| Errno::ENOMEM)?;
    key.extend_from_slice(name);
    with_table(|t| {
        let key = (type_key(sock.kind), key);
        if t.abstract_names.get(&key).is_some_and(|w| w.strong_count() > 0) {
            return Err(Errno::EADDRINUSE);
        }
        t.abstract_names.insert(key, Arc::downgrade(sock));
        Ok(())
    })?;
    Ok(named)
}

static NEXT_AUTO: AtomicU32 = AtomicU32::new(0);

/// Autobind: the first free name of five hex digits.
pub fn autobind(sock: &Arc<UnixSocket>) -> Result<Arc<Name>, Errno> {
    if NEXT_AUTO.load(Ordering::Relaxed) == 0 {
        let mut r = [0u8; 4];
        crate::random::fill(&mut r);
        let seed = (u32::from_le_bytes(r) & 0xfffff) | 1;
        let _ = NEXT_AUTO.compare_exchange(0, seed, Ordering::Relaxed, Ordering::Relaxed);
    }
    for _ in 0..=0xfffff {
        let n = NEXT_AUTO.fetch_add(1, Ordering::Relaxed) & 0xfffff;
        let mut name = [0u8; 5];
        for (i, b) in name.iter_mut().enumerate() {
            *b = b"0123456789abcdef"[((n >> (4 * (4 - i))) & 0xf) as usize];
        }
        match bind_abstract(sock, &name) {
            Err(Errno::EADDRINUSE) => continue,
            r => return r,
        }
    }
    Err(Errno::ENOSPC)
}

fn path_str(path: &[u8]) -> Result<&str, Errno> {
    core::str::from_utf8(path).map_err(|_| Errno::EINVAL)
}

/// Creates the socket inode for a path name and registers `sock` there.
pub fn bind_path(sock: &Arc<UnixSocket>, path: &[u8], names: &NameCtx) -> Result<Arc<Name>, Errno> {
    let p = path_str(path)?;
    let (dir, leaf) = resolve_parent(&names.cred, &names.cwd, p)?;
    if leaf == "." || leaf == ".." || dir.child(&leaf).is_ok() {
        return Err(Errno::EADDRINUSE);
    }
    crate::fs::dentry::check_writable(&dir)?;
    perm::may_create(&names.cred, &dir)?;
    // As any mknod: the umask or the directory's default ACL decides the
    // permission bits, and the socket file inherits the ACLs.
    let inode = match perm::create(&names.cred, &dir, &leaf, S_IFSOCK | 0o777, names.umask, 0) {
        Err(Errno::EEXIST) => return Err(Errno::EADDRINUSE),
        r => r?,
    };
    let mut out = [0u8; s::SockaddrUn::SIZE + 1];
    let n = s::encode_unix_addr(&UnixName::Path(path), &mut out);
    let key = inode_key(&inode);
    let named = Arc::try_new(Name { addr: AddrBuf::new(&out[..n]), inode: Some(inode) }).map_err(|_| Errno::ENOMEM)?;
    with_table(|t| t.paths.insert(key, Arc::downgrade(sock)));
    Ok(named)
}

/// Removes a released socket's name from the tables (its file, if any,
/// stays, as on Linux).
pub fn unbind(name: &Name, sock: &UnixSocket) {
    let me = sock as *const UnixSocket;
    with_table(|t| match &name.inode {
        Some(inode) => {
            let key = inode_key(inode);
            if t.paths.get(&key).is_some_and(|w| w.as_ptr() == me) {
                t.paths.remove(&key);
            }
        }
        None => {
            let key = (type_key(sock.kind), name.path_bytes()[1..].to_vec());
            if t.abstract_names.get(&key).is_some_and(|w| w.as_ptr() == me) {
                t.abstract_names.remove(&key);
            }
        }
    });
}

/// Finds the socket an address names, for a socket of type `kind`
/// (Linux's `unix_find_other`): a path must lead to a socket inode
/// (ECONNREFUSED otherwise) of the same type (EPROTOTYPE); an abstract
/// name is looked up among sockets of that type only.
pub fn find(addr: &[u8], kind: SockType, names: Option<&NameCtx>) -> Result<Arc<UnixSocket>, Errno> {
    match s::parse_unix_addr(addr, false).ok_or(Errno::EINVAL)? {
        UnixName::Auto => Err(Errno::EINVAL),
        UnixName::Abstract(name) => with_table(|t| {
            let mut key = Vec::new();
            key.try_reserve_exact(name.len()).map_err(|_| Errno::ENOMEM)?;
            key.extend_from_slice(name);
            t.abstract_names.get(&(type_key(kind), key)).and_then(Weak::upgrade).ok_or(Errno::ECONNREFUSED)
        }),
        UnixName::Path(path) => {
            let names = names.ok_or(Errno::ECONNREFUSED)?;
            // The walk checks search permission on every directory; then
            // write permission on what it found, before its type.
            let d: Arc<Dentry> = resolve(&names.cred, &names.cwd, path_str(path)?, true)?;
            perm::permission(&names.cred, &d, MAY_WRITE)?;
            let inode = d.inode();
            if inode.file_type() != FileType::Socket {
                return Err(Errno::ECONNREFUSED);
            }
            let sock = with_table(|t| t.paths.get(&inode_key(inode)).and_then(Weak::upgrade));
            let sock = sock.ok_or(Errno::ECONNREFUSED)?;
            if sock.kind != kind {
                return Err(Errno::EPROTOTYPE);
            }
            Ok(sock)
        }
    }
}

/// The address a socket of no name reports: the family alone.
pub fn unnamed() -> AddrBuf {
    AddrBuf::new(&s::AF_UNIX.to_le_bytes())
}

/// A name as text for /proc/net/unix: '@' for the leading NUL of an
/// abstract name and for NULs in it.
pub fn write_proc_text(name: &Name, out: &mut impl core::fmt::Write) -> core::fmt::Result {
    let bytes = name.path_bytes();
    if name.is_abstract() {
        for &b in bytes {
            out.write_char(if b == 0 { '@' } else { b as char })?;
        }
    } else {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        for &b in &bytes[..end] {
            out.write_char(b as char)?;
        }
    }
    Ok(())
}
