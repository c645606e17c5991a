//! The in-memory file tree and path lookup.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::Once;
use linux_abi::errno::Errno;

use crate::mm::vma::PageSource;
use crate::sync::Mutex;

pub enum InodeKind {
    Dir(Mutex<BTreeMap<String, Arc<Inode>>>),
    File(Mutex<Vec<u8>>),
    Symlink(String),
}

pub struct Inode {
    pub ino: u64,
    /// File type and permission bits, as in `st_mode`.
    pub mode: u32,
    pub kind: InodeKind,
}

static NEXT_INO: AtomicU64 = AtomicU64::new(1);
static ROOT: Once<Arc<Inode>> = Once::new();

pub const S_IFDIR: u32 = 0o040000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFCHR: u32 = 0o020000;

impl Inode {
    pub fn new(mode: u32, kind: InodeKind) -> Arc<Inode> {
        Arc::new(Inode { ino: NEXT_INO.fetch_add(1, Ordering::Relaxed), mode, kind })
    }

    pub fn new_dir(perm: u32) -> Arc<Inode> {
        Inode::new(S_IFDIR | perm, InodeKind::Dir(Mutex::new(BTreeMap::new())))
    }

    pub fn is_dir(&self) -> bool {
        matches!(self.kind, InodeKind::Dir(_))
    }

    pub fn size(&self) -> u64 {
        match &self.kind {
            InodeKind::File(data) => data.lock().len() as u64,
            InodeKind::Symlink(t) => t.len() as u64,
            InodeKind::Dir(_) => 4096,
        }
    }

    /// Reads file bytes at `offset`; 0 at or past the end.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        match &self.kind {
            InodeKind::File(data) => {
                let data = data.lock();
                let start = (offset as usize).min(data.len());
                let n = buf.len().min(data.len() - start);
                buf[..n].copy_from_slice(&data[start..start + n]);
                Ok(n)
            }
            InodeKind::Dir(_) => Err(Errno::EISDIR),
            InodeKind::Symlink(_) => Err(Errno::EINVAL),
        }
    }

    pub fn child(&self, name: &str) -> Option<Arc<Inode>> {
        match &self.kind {
            InodeKind::Dir(children) => children.lock().get(name).cloned(),
            _ => None,
        }
    }

    pub fn insert_child(&self, name: &str, inode: Arc<Inode>) -> Result<(), Errno> {
        match &self.kind {
            InodeKind::Dir(children) => {
                children.lock().insert(String::from(name), inode);
                Ok(())
            }
            _ => Err(Errno::ENOTDIR),
        }
    }
}

impl PageSource for Inode {
    fn read_page(&self, offset: u64, buf: &mut [u8]) -> usize {
        self.read_at(offset, buf).unwrap_or(0)
    }
}

pub fn root() -> Arc<Inode> {
    ROOT.get().cloned().unwrap_or_else(|| {
        ROOT.set(Inode::new_dir(0o755));
        ROOT.get().cloned().expect("root set")
    })
}

const MAX_SYMLINKS: usize = 40;

/// Resolves `path` (absolute, or relative to `cwd`), following symlinks;
/// a trailing symlink is followed only if `follow`.
pub fn lookup(cwd: &str, path: &str, follow: bool) -> Result<Arc<Inode>, Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let mut budget = MAX_SYMLINKS;
    resolve(cwd, path, follow, &mut budget)
}

fn resolve(cwd: &str, path: &str, follow: bool, budget: &mut usize) -> Result<Arc<Inode>, Errno> {
    // The chain of directories walked so far, so ".." can step back.
    let mut stack: Vec<Arc<Inode>> = Vec::new();
    stack.push(root());
    let full: String;
    let path = if path.starts_with('/') {
        path
    } else {
        full = alloc::format!("{cwd}/{path}");
        &full
    };
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let dir = stack.last().cloned().expect("root on stack");
        if !dir.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        if *part == ".." {
            if stack.len() > 1 {
                stack.pop();
            }
            continue;
        }
        if part.len() > 255 {
            return Err(Errno::ENAMETOOLONG);
        }
        let child = dir.child(part).ok_or(Errno::ENOENT)?;
        if let InodeKind::Symlink(target) = &child.kind {
            if !last || follow {
                if *budget == 0 {
                    return Err(Errno::ELOOP);
                }
                *budget -= 1;
                let base = dir_path_of(&parts[..i]);
                let resolved = resolve(&base, target, true, budget)?;
                stack.push(resolved);
                continue;
            }
        }
        stack.push(child);
    }
    if path.ends_with('/') && !stack.last().is_some_and(|i| i.is_dir()) {
        return Err(Errno::ENOTDIR);
    }
    Ok(stack.pop().expect("root on stack"))
}

fn dir_path_of(parts: &[&str]) -> String {
    let mut s = String::from("/");
    for p in parts {
        s.push_str(p);
        s.push('/');
    }
    s
}

/// Creates every missing directory of `path` and returns the last.
pub fn mkdir_all(path: &str) -> Result<Arc<Inode>, Errno> {
    let mut dir = root();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        dir = match dir.child(part) {
            Some(d) if d.is_dir() => d,
            Some(_) => return Err(Errno::ENOTDIR),
            None => {
                let d = Inode::new_dir(0o755);
                dir.insert_child(part, d.clone())?;
                d
            }
        };
    }
    Ok(dir)
}

/// Splits "a/b/c" into ("a/b", "c").
pub fn split_parent(path: &str) -> (&str, &str) {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rfind('/') {
        Some(i) => (&trimmed[..i.max(1)], &trimmed[i + 1..]),
        None => ("", trimmed),
    }
}
