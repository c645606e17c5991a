//! /proc: files generated from kernel state when they are opened.
//!
//! The root lists one directory per process plus `self`, `meminfo`,
//! `cpuinfo`, `uptime`, `loadavg`, `mounts`, `filesystems`, `stat`,
//! `version`, `locks` and `sys/` (the sysctl table, `sys.rs`), and the
//! read-only files other subsystems `register` (/proc/sysvipc). Each
//! process directory's files are in `pid.rs`; it also has `fd/`, `task/`,
//! `fdinfo/`, `exe`, `cwd` and `root`.

mod pid;
pub mod sys;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::fmt::Write;
use core::sync::atomic::Ordering;

use hal::sync::SpinLock;
use linux_abi::errno::Errno;

use super::file::{FileOps, SnapshotFile};
use super::inode::{DirEntry, FileType, FsStats, Inode, Metadata, S_IFREG};
use crate::proc::{self, Pid, Process};

pub const PROC_MAGIC: u64 = 0x9fa0;
const PROC_DEV: u64 = 0x4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    Root,
    SelfLink,
    ThreadSelfLink,
    MountsLink,
    /// A directory of /proc/sys: its path below /proc/sys ("" for sys itself).
    SysDir(&'static str),
    /// A sysctl file: its index in `sys::rows()`.
    SysFile(usize),
    TaskDir(Pid),
    TaskEntry(Pid, Pid),
    /// A thread's own stat or status.
    TaskFile(Pid, Pid, &'static str),
    Global(&'static str),
    PidDir(Pid),
    PidFile(Pid, &'static str),
    PidLink(Pid, &'static str),
    FdDir(Pid),
    FdLink(Pid, i32),
    FdInfoDir(Pid),
    FdInfo(Pid, i32),
    NsDir(Pid),
    NsLink(Pid, &'static str),
    /// A registered file or directory, by its path below /proc.
    Extra(&'static str),
}

pub struct ProcInode {
    node: Node,
}

/// Read-only files other subsystems add to /proc (System V IPC's
/// /proc/sysvipc): a path below /proc and the function that makes the
/// file's text. Directories are implied by the paths. /proc/sys rows
/// are registered with `sys::register` instead.
type Content = fn(&'static str) -> String;
static EXTRA: SpinLock<Vec<(&'static str, Content)>> = SpinLock::new(Vec::new());

/// Adds the file /proc/`path`, whose text `content(path)` makes when the
/// file is opened (at boot, by the subsystem that owns it).
pub fn register(path: &'static str, content: Content) {
    let mut extra = EXTRA.lock();
    if extra.try_reserve(1).is_ok() {
        extra.push((path, content));
    }
}

/// The registered node `name` in directory `dir` ("" for /proc itself,
/// else a path ending in '/'): a file, or a directory some registered
/// path passes through.
fn extra_lookup(dir: &str, name: &str) -> Option<Node> {
    let extra = EXTRA.lock();
    for (path, _) in extra.iter() {
        let Some(rest) = path.strip_prefix(dir) else { continue };
        if rest == name {
            return Some(Node::Extra(path));
        }
        if rest.strip_prefix(name).is_some_and(|r| r.starts_with('/')) {
            return Some(Node::Extra(&path[..dir.len() + name.len()]));
        }
    }
    None
}

/// The registered entries of directory `dir` (as in `extra_lookup`).
fn extra_entries(dir: &str) -> Vec<(String, Node)> {
    let mut out: Vec<(String, Node)> = Vec::new();
    for (path, _) in EXTRA.lock().iter() {
        let Some(rest) = path.strip_prefix(dir) else { continue };
        let name = rest.split('/').next().unwrap_or(rest);
        if name.is_empty() || out.iter().any(|(n, _)| n == name) {
            continue;
        }
        out.push((name.to_string(), Node::Extra(&path[..dir.len() + name.len()])));
    }
    out
}

fn extra_content(path: &str) -> Option<String> {
    let f = EXTRA.lock().iter().find(|(p, _)| *p == path).map(|(p, f)| (*p, *f));
    f.map(|(p, f)| f(p))
}

fn extra_is_file(path: &str) -> bool {
    EXTRA.lock().iter().any(|(p, _)| *p == path)
}

/// A stable inode number for a registered path (below the pid ranges).
fn extra_ino(path: &str) -> u64 {
    let hash = path.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    100 + hash % 65_000
}

const GLOBALS: &[&str] = &["meminfo", "cpuinfo", "uptime", "loadavg", "filesystems", "stat", "version", "locks"];
const PID_FILES: &[&str] = &[
    "stat",
    "status",
    "cmdline",
    "comm",
    "maps",
    "statm",
    "environ",
    "auxv",
    "mounts",
    "mountinfo",
    "smaps",
    "smaps_rollup",
    "pagemap",
    "mem",
];
/// The files a thread's directory has of its own.
const TASK_FILES: &[&str] = &["stat", "status"];
const PID_LINKS: &[&str] = &["exe", "cwd", "root"];

pub fn new_root() -> Arc<dyn Inode> {
    Arc::new(ProcInode { node: Node::Root })
}

fn node(n: Node) -> Arc<dyn Inode> {
    Arc::new(ProcInode { node: n })
}

fn ino_of(n: Node) -> u64 {
    match n {
        Node::Root => 1,
        Node::SelfLink => 2,
        Node::ThreadSelfLink => 3,
        Node::MountsLink => 4,
        Node::SysDir(path) => 0x1_0000 + path.bytes().fold(0u64, |h, b| (h * 31 + u64::from(b)) & 0xffff),
        Node::SysFile(row) => 0x2_0000 + row as u64,
        Node::TaskDir(p) => ((p as u64) << 16) | 300,
        Node::TaskEntry(p, t) => ((p as u64) << 16) | (0x8000 + (t as u64 & 0x7fff)),
        Node::TaskFile(p, t, f) => {
            (((p as u64) << 16) | (0x8000 + (t as u64 & 0x7fff)))
                + ((1 + TASK_FILES.iter().position(|x| *x == f).unwrap_or(0) as u64) << 32)
        }
        Node::Global(name) => 10 + GLOBALS.iter().position(|g| *g == name).unwrap_or(0) as u64,
        Node::PidDir(p) => (p as u64) << 16,
        Node::PidFile(p, f) => ((p as u64) << 16) | (1 + PID_FILES.iter().position(|x| *x == f).unwrap_or(0) as u64),
        Node::PidLink(p, f) => ((p as u64) << 16) | (100 + PID_LINKS.iter().position(|x| *x == f).unwrap_or(0) as u64),
        Node::FdDir(p) => ((p as u64) << 16) | 200,
        Node::FdLink(p, fd) => ((p as u64) << 16) | (1000 + fd as u64),
        Node::FdInfoDir(p) => ((p as u64) << 16) | 201,
        Node::FdInfo(p, fd) => ((p as u64) << 16) | (3000 + fd as u64),
        Node::NsDir(p) => ((p as u64) << 16) | 400,
        Node::NsLink(p, n) => {
            ((p as u64) << 16) | (410 + proc::ns::NS_LINKS.iter().position(|x| *x == n).unwrap_or(0) as u64)
        }
        Node::Extra(path) => extra_ino(path),
    }
}

/// The pid namespace whose ids /proc shows: the reader's (Linux uses the
/// one /proc was mounted from; the two agree unless a process reads a
/// /proc mounted outside its namespace).
fn viewer_ns() -> Arc<proc::pidns::PidNs> {
    proc::current_task().map_or_else(proc::pidns::initial, |t| t.process.pid_ns.clone())
}

/// The process the reader calls `pid`.
fn process(pid: Pid) -> Result<Arc<Process>, Errno> {
    proc::find_process(viewer_ns().global(pid).ok_or(Errno::ENOENT)?).ok_or(Errno::ENOENT)
}

/// The thread of `p` the reader calls `tid`.
fn thread(p: &Process, tid: Pid) -> Option<Arc<proc::Task>> {
    let global = viewer_ns().global(tid)?;
    p.tasks.lock().iter().find(|t| t.tid() == global).cloned()
}

/// A global id as the reader sees it.
fn seen(global: Pid) -> Pid {
    viewer_ns().local_or_zero(global)
}

impl ProcInode {
    fn kind(&self) -> FileType {
        match self.node {
            Node::Root
            | Node::SysDir(_)
            | Node::PidDir(_)
            | Node::FdDir(_)
            | Node::FdInfoDir(_)
            | Node::TaskDir(_)
            | Node::NsDir(_)
            | Node::TaskEntry(..) => FileType::Directory,
            Node::SelfLink
            | Node::ThreadSelfLink
            | Node::MountsLink
            | Node::PidLink(..)
            | Node::FdLink(..)
            | Node::NsLink(..) => FileType::Symlink,
            Node::Extra(path) if !extra_is_file(path) => FileType::Directory,
            _ => FileType::Regular,
        }
    }

    /// What reading the file gives: its text, or for /proc/<pid>/auxv
    /// the binary vector.
    fn bytes(&self) -> Result<Vec<u8>, Errno> {
        if let Node::PidFile(pid, "auxv") = self.node {
            let p = process(pid)?;
            let auxv = p.auxv.lock();
            let mut copy = Vec::new();
            copy.try_reserve_exact(auxv.len()).map_err(|_| Errno::ENOMEM)?;
            copy.extend_from_slice(&auxv);
            return Ok(copy);
        }
        self.content().map(String::into_bytes)
    }

    fn content(&self) -> Result<String, Errno> {
        match self.node {
            Node::Global(name) => global(name),
            // Read through an open file (pid::MemFile), never as text.
            Node::PidFile(_, "mem") => Err(Errno::EIO),
            Node::SysFile(row) => sys::row(row).map(sys::read).ok_or(Errno::ENOENT),
            Node::PidFile(pid, f) => pid_file(&process(pid)?, f),
            Node::FdInfo(pid, fd) => pid::fdinfo(&process(pid)?, fd),
            Node::TaskFile(pid, tid, f) => {
                let p = process(pid)?;
                let t = thread(&p, tid).ok_or(Errno::ENOENT)?;
                Ok(if f == "stat" { pid::stat(&p, Some(&t)) } else { pid::status(&p, Some(&t)) })
            }
            Node::Extra(path) => extra_content(path).ok_or(Errno::EISDIR),
            _ => Err(Errno::EISDIR),
        }
    }
}

impl ProcInode {
    /// The process a node belongs to.
    fn pid(&self) -> Option<Pid> {
        match self.node {
            Node::TaskDir(p)
            | Node::TaskEntry(p, _)
            | Node::TaskFile(p, _, _)
            | Node::PidDir(p)
            | Node::PidFile(p, _)
            | Node::PidLink(p, _)
            | Node::FdDir(p)
            | Node::FdLink(p, _)
            | Node::FdInfoDir(p)
            | Node::FdInfo(p, _)
            | Node::NsDir(p)
            | Node::NsLink(p, _) => Some(p),
            _ => None,
        }
    }

    /// A process's files belong to its effective ids, a thread's
    /// directory and own files to the thread's; all but the 0555
    /// directories belong to root while the process is not dumpable or
    /// has no memory left (Linux's task_dump_owner).
    fn owner(&self, public_dir: bool) -> (u32, u32) {
        let Some(p) = self.pid().and_then(|pid| process(pid).ok()) else {
            return (0, 0);
        };
        if !public_dir && (p.dumpable.load(Ordering::Relaxed) != 1 || p.vm.lock().is_none()) {
            return (0, 0);
        }
        let cred = match self.node {
            Node::TaskEntry(_, tid) | Node::TaskFile(_, tid, _) => {
                thread(&p, tid).map(|t| t.cred()).or_else(|| p.cred())
            }
            _ => p.cred(),
        };
        cred.map_or((0, 0), |c| (c.euid, c.egid))
    }
}

impl Inode for ProcInode {
    fn metadata(&self) -> Metadata {
        let kind = self.kind();
        let perm = match (kind, self.node) {
            (_, Node::FdDir(_)) => 0o500,
            (_, Node::PidFile(_, "environ" | "pagemap" | "auxv")) => 0o400,
            (_, Node::PidFile(_, "mem")) => 0o600,
            (FileType::Directory, _) => 0o555,
            (FileType::Symlink, _) => 0o777,
            (_, Node::SysFile(row)) => sys::row(row).map_or(0o444, |r| r.mode),
            _ => 0o444,
        };
        let (uid, gid) = self.owner(perm == 0o555 && kind == FileType::Directory);
        let t = crate::clock::realtime_ns();
        Metadata {
            dev: PROC_DEV,
            ino: ino_of(self.node),
            mode: kind.mode_bits() | perm,
            nlink: if kind == FileType::Directory { 2 } else { 1 },
            uid,
            gid,
            atime: t,
            mtime: t,
            ctime: t,
            ..Metadata::default()
        }
    }

    /// A process may always read and search its own fd directory, which
    /// belongs to root while it is not dumpable (proc_fd_permission).
    fn grants_caller(&self, _mask: u32) -> bool {
        match self.node {
            Node::FdDir(pid) => proc::current_task().is_some_and(|t| seen(t.process.pid) == pid),
            _ => false,
        }
    }

    fn fs_stats(&self) -> FsStats {
        FsStats { magic: PROC_MAGIC, block_size: 4096, name_max: 255, ..FsStats::default() }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let data = self.bytes()?;
        let bytes = data.as_slice();
        let start = (offset as usize).min(bytes.len());
        let n = buf.len().min(bytes.len() - start);
        buf[..n].copy_from_slice(&bytes[start..start + n]);
        Ok(n)
    }

    fn write_at(&self, _offset: u64, _buf: &[u8]) -> Result<usize, Errno> {
        Err(Errno::EACCES)
    }

    fn lookup(&self, name: &str) -> Result<Arc<dyn Inode>, Errno> {
        match self.node {
            Node::Root => {
                if name == "self" {
                    return Ok(node(Node::SelfLink));
                }
                if name == "thread-self" {
                    return Ok(node(Node::ThreadSelfLink));
                }
                if name == "mounts" {
                    return Ok(node(Node::MountsLink));
                }
                if name == "sys" {
                    return Ok(node(Node::SysDir("")));
                }
                if let Some(g) = GLOBALS.iter().find(|g| **g == name) {
                    return Ok(node(Node::Global(g)));
                }
                if let Some(n) = extra_lookup("", name) {
                    return Ok(node(n));
                }
                let pid: Pid = name.parse().map_err(|_| Errno::ENOENT)?;
                process(pid)?;
                Ok(node(Node::PidDir(pid)))
            }
            Node::SysDir(dir) => {
                let path = if dir.is_empty() { String::from(name) } else { format!("{dir}/{name}") };
                if let Some(row) = sys::find(&path) {
                    return Ok(node(Node::SysFile(row)));
                }
                // A directory: name it by a row's own (static) path prefix.
                let row = sys::rows()
                    .find(|r| {
                        r.path.len() > path.len() && r.path.starts_with(&path) && r.path.as_bytes()[path.len()] == b'/'
                    })
                    .ok_or(Errno::ENOENT)?;
                Ok(node(Node::SysDir(&row.path[..path.len()])))
            }
            Node::Extra(path) if !extra_is_file(path) => {
                let dir = alloc::format!("{path}/");
                extra_lookup(&dir, name).map(node).ok_or(Errno::ENOENT)
            }
            Node::TaskDir(pid) => {
                let tid: Pid = name.parse().map_err(|_| Errno::ENOENT)?;
                let global = viewer_ns().global(tid).ok_or(Errno::ENOENT)?;
                if !process(pid)?.tasks.lock().iter().any(|t| t.tid() == global) {
                    return Err(Errno::ENOENT);
                }
                Ok(node(Node::TaskEntry(pid, tid)))
            }
            Node::TaskEntry(pid, tid) => {
                if let Some(f) = TASK_FILES.iter().find(|f| **f == name) {
                    return Ok(node(Node::TaskFile(pid, tid, f)));
                }
                // The rest of a thread's directory shows the process's files.
                ProcInode { node: Node::PidDir(pid) }.lookup(name)
            }
            Node::PidDir(pid) => {
                if let Some(f) = PID_FILES.iter().find(|f| **f == name) {
                    return Ok(node(Node::PidFile(pid, f)));
                }
                if let Some(l) = PID_LINKS.iter().find(|l| **l == name) {
                    return Ok(node(Node::PidLink(pid, l)));
                }
                if name == "fd" {
                    return Ok(node(Node::FdDir(pid)));
                }
                if name == "fdinfo" {
                    return Ok(node(Node::FdInfoDir(pid)));
                }
                if name == "task" {
                    return Ok(node(Node::TaskDir(pid)));
                }
                if name == "ns" {
                    return Ok(node(Node::NsDir(pid)));
                }
                Err(Errno::ENOENT)
            }
            Node::NsDir(pid) => {
                process(pid)?;
                match proc::ns::NS_LINKS.iter().find(|n| **n == name) {
                    Some(n) => Ok(node(Node::NsLink(pid, n))),
                    None => Err(Errno::ENOENT),
                }
            }
            Node::FdDir(pid) => {
                let fd: i32 = name.parse().map_err(|_| Errno::ENOENT)?;
                process(pid)?.files().lock().get(fd).map_err(|_| Errno::ENOENT)?;
                Ok(node(Node::FdLink(pid, fd)))
            }
            Node::FdInfoDir(pid) => {
                let fd: i32 = name.parse().map_err(|_| Errno::ENOENT)?;
                process(pid)?.files().lock().get(fd).map_err(|_| Errno::ENOENT)?;
                Ok(node(Node::FdInfo(pid, fd)))
            }
            _ if self.kind() == FileType::Directory => Err(Errno::ENOENT),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        let mut out = Vec::new();
        let mut push = |name: String, n: Node| {
            let kind = ProcInode { node: n }.kind();
            out.push(DirEntry { name, ino: ino_of(n), kind });
        };
        match self.node {
            Node::Root => {
                for g in GLOBALS {
                    push(g.to_string(), Node::Global(g));
                }
                push("self".to_string(), Node::SelfLink);
                push("thread-self".to_string(), Node::ThreadSelfLink);
                push("mounts".to_string(), Node::MountsLink);
                push("sys".to_string(), Node::SysDir(""));
                for (name, n) in extra_entries("") {
                    push(name, n);
                }
                let ns = viewer_ns();
                let mut pids: Vec<Pid> = proc::all_processes()
                    .iter()
                    .filter(|p| ns.contains(&p.pid_ns))
                    .filter_map(|p| ns.local(p.pid))
                    .collect();
                pids.sort_unstable();
                for pid in pids {
                    push(format!("{pid}"), Node::PidDir(pid));
                }
            }
            Node::SysDir(dir) => {
                for (name, is_dir) in sys::list(dir) {
                    let path = if dir.is_empty() { String::from(name) } else { format!("{dir}/{name}") };
                    let n = if is_dir {
                        match sys::rows().find(|r| r.path.starts_with(&path)) {
                            Some(r) => Node::SysDir(&r.path[..path.len()]),
                            None => continue,
                        }
                    } else {
                        match sys::find(&path) {
                            Some(row) => Node::SysFile(row),
                            None => continue,
                        }
                    };
                    push(name.to_string(), n);
                }
            }
            Node::Extra(path) if !extra_is_file(path) => {
                for (name, n) in extra_entries(&alloc::format!("{path}/")) {
                    push(name, n);
                }
            }
            Node::TaskDir(pid) => {
                let tids: Vec<Pid> = process(pid)?.tasks.lock().iter().map(|t| seen(t.tid())).collect();
                for tid in tids {
                    push(format!("{tid}"), Node::TaskEntry(pid, tid));
                }
            }
            Node::TaskEntry(pid, tid) => {
                let mut entries = ProcInode { node: Node::PidDir(pid) }.readdir()?;
                for e in entries.iter_mut() {
                    if let Some(f) = TASK_FILES.iter().find(|f| **f == e.name) {
                        e.ino = ino_of(Node::TaskFile(pid, tid, f));
                    }
                }
                return Ok(entries);
            }
            Node::PidDir(pid) => {
                for f in PID_FILES {
                    push(f.to_string(), Node::PidFile(pid, f));
                }
                for l in PID_LINKS {
                    push(l.to_string(), Node::PidLink(pid, l));
                }
                push("fd".to_string(), Node::FdDir(pid));
                push("fdinfo".to_string(), Node::FdInfoDir(pid));
                push("task".to_string(), Node::TaskDir(pid));
                push("ns".to_string(), Node::NsDir(pid));
            }
            Node::NsDir(pid) => {
                process(pid)?;
                for n in proc::ns::NS_LINKS {
                    push(n.to_string(), Node::NsLink(pid, n));
                }
            }
            Node::FdDir(pid) | Node::FdInfoDir(pid) => {
                let info = matches!(self.node, Node::FdInfoDir(_));
                let process = process(pid)?;
                let table = process.files().lock();
                for fd in 0..1024 {
                    if table.get(fd).is_ok() {
                        push(format!("{fd}"), if info { Node::FdInfo(pid, fd) } else { Node::FdLink(pid, fd) });
                    }
                }
            }
            _ => return Err(Errno::ENOTDIR),
        }
        Ok(out)
    }

    fn readlink(&self) -> Result<String, Errno> {
        match self.node {
            Node::SelfLink => {
                let t = proc::current_task().ok_or(Errno::ENOENT)?;
                Ok(format!("{}", seen(t.process.pid)))
            }
            Node::ThreadSelfLink => {
                let t = proc::current_task().ok_or(Errno::ENOENT)?;
                Ok(format!("{}/task/{}", seen(t.process.pid), seen(t.tid())))
            }
            Node::NsLink(pid, name) => {
                let ns = proc::ns::of_process(&*process(pid)?, name).ok_or(Errno::ENOENT)?;
                Ok(format!("{}:[{}]", name.trim_end_matches("_for_children"), ns.inum()))
            }
            Node::MountsLink => Ok(String::from("self/mounts")),
            Node::PidLink(pid, "exe") => Ok(process(pid)?.exe.lock().clone()),
            // As seen from the reader's root.
            Node::PidLink(pid, "cwd") => {
                let cwd = process(pid)?.cwd.lock().clone();
                Ok(cwd.path_for_caller())
            }
            Node::PidLink(pid, "root") => {
                let root = process(pid)?.root.lock().clone();
                Ok(root.path_for_caller())
            }
            Node::PidLink(_, _) => Ok(String::from("/")),
            Node::FdLink(pid, fd) => {
                let f = process(pid)?.files().lock().get(fd).map_err(|_| Errno::ENOENT)?;
                Ok(describe_file(&f))
            }
            _ => Err(Errno::EINVAL),
        }
    }

    fn cacheable(&self) -> bool {
        false
    }

    fn magic_link(&self) -> Option<Result<Arc<super::dentry::Dentry>, Errno>> {
        if let Node::NsLink(pid, name) = self.node {
            return Some(ns_file(pid, name));
        }
        // cwd and root lead to the directory itself, not to a path.
        match self.node {
            Node::PidLink(pid, "cwd") => return Some(process(pid).map(|p| p.cwd.lock().clone())),
            Node::PidLink(pid, "root") => return Some(process(pid).map(|p| p.root.lock().clone())),
            _ => {}
        }
        let Node::FdLink(pid, fd) = self.node else {
            return None;
        };
        let f = match process(pid).and_then(|p| p.files().lock().get(fd).map_err(|_| Errno::ENOENT)) {
            Ok(f) => f,
            Err(e) => return Some(Err(e)),
        };
        if let Some(d) = &f.dentry {
            return Some(Ok(d.clone()));
        }
        Some(Ok(super::dentry::anonymous(Arc::new(OpenFileInode { file: f }))))
    }

    fn truncate(&self, _size: u64) -> Result<(), Errno> {
        // O_TRUNC on a sysctl file is accepted and means nothing.
        match self.node {
            Node::SysFile(_) => Ok(()),
            _ => Err(Errno::EACCES),
        }
    }

    fn open(&self, flags: u32) -> Option<Result<Arc<dyn FileOps>, Errno>> {
        if self.kind() != FileType::Regular {
            return None;
        }
        if let Node::SysFile(row) = self.node {
            return Some(sys::row(row).ok_or(Errno::ENOENT).and_then(|r| sys_open(r, flags)));
        }
        if let Node::PidFile(pid, "pagemap") = self.node {
            let show_pfn = proc::current_task().is_some_and(|t| t.cred().capable(linux_abi::capability::CAP_SYS_ADMIN));
            return Some(
                process(pid)
                    .map(|p| Arc::new(pid::PagemapFile { process: Arc::downgrade(&p), show_pfn }) as Arc<dyn FileOps>),
            );
        }
        if let Node::PidFile(pid, "mem") = self.node {
            return Some(process(pid).and_then(|p| pid::MemFile::open(&p)).map(|f| Arc::new(f) as Arc<dyn FileOps>));
        }
        Some(self.bytes().map(|b| Arc::new(SnapshotFile::new(b, S_IFREG | 0o444)) as Arc<dyn FileOps>))
    }
}

/// What /proc/<pid>/ns/<name> leads to: the namespace's nsfs file.
fn ns_file(pid: Pid, name: &'static str) -> Result<Arc<super::dentry::Dentry>, Errno> {
    let ns = proc::ns::of_process(&*process(pid)?, name).ok_or(Errno::ENOENT)?;
    let inode = super::nsfs::NsInode {
        kind: name.trim_end_matches("_for_children"),
        inum: ns.inum(),
        target: Arc::try_new(ns).map_err(|_| Errno::ENOMEM)?,
    };
    Ok(super::dentry::anonymous(Arc::try_new(inode).map_err(|_| Errno::ENOMEM)?))
}

/// Opens a sysctl file. Its mode binds root too (Linux's sysctl_perm):
/// a read-only file cannot be opened for writing, drop_caches (0200) not
/// for reading. What is read is the value at open.
fn sys_open(row: &'static sys::Sysctl, flags: u32) -> Result<Arc<dyn FileOps>, Errno> {
    let access = flags & 3;
    let wants_read = access != linux_abi::consts::O_WRONLY;
    let wants_write = access != linux_abi::consts::O_RDONLY;
    if (wants_read && row.mode & 0o400 == 0) || (wants_write && row.mode & 0o200 == 0) {
        return Err(Errno::EACCES);
    }
    let data = if wants_read { sys::read(row).into_bytes() } else { Vec::new() };
    Ok(Arc::new(SysctlFile { row, data }))
}

/// An open sysctl file: reads see the value at open, each write sets it.
struct SysctlFile {
    row: &'static sys::Sysctl,
    data: Vec<u8>,
}

impl FileOps for SysctlFile {
    fn read_at(&self, offset: u64, buf: &mut [u8], _nonblock: bool) -> Result<usize, Errno> {
        let start = (offset as usize).min(self.data.len());
        let n = buf.len().min(self.data.len() - start);
        buf[..n].copy_from_slice(&self.data[start..start + n]);
        Ok(n)
    }

    fn write_at(&self, offset: u64, buf: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        // A write past the start is accepted and ignored, as Linux's
        // strict sysctl writes treat a second write to an open file.
        if offset == 0 {
            sys::write(self.row, buf)?;
        }
        Ok(buf.len())
    }

    fn mode(&self) -> u32 {
        S_IFREG | self.row.mode
    }
}

/// What /proc/<pid>/fd/<n> points at.
fn describe_file(f: &super::OpenFile) -> String {
    if let Some(ns) = f.ops.inode().and_then(|i| i.as_any().downcast_ref::<super::nsfs::NsInode>()) {
        return format!("{}:[{}]", ns.kind, ns.inum);
    }
    if let Some(d) = &f.dentry {
        return d.path_for_caller();
    }
    if let Some(name) = f.ops.anon_name() {
        return format!("anon_inode:{name}");
    }
    let mode = f.ops.mode();
    match mode & super::inode::S_IFMT {
        super::inode::S_IFIFO => format!("pipe:[{}]", Arc::as_ptr(&f.ops) as *const () as usize & 0xffffff),
        super::inode::S_IFCHR => String::from("/dev/console"),
        super::inode::S_IFSOCK => format!("socket:[{}]", f.ops.ino().unwrap_or(0)),
        _ => String::from("anon_inode:[unknown]"),
    }
}

/// The process a /proc/<pid> directory names (Linux's
/// `tgid_pidfd_to_pid`: pidfd_send_signal takes such a directory's
/// descriptor as a pidfd). None for anything else, /proc/<pid>/task/<tid>
/// included.
pub fn tgid_of_dir(inode: &dyn Inode) -> Option<Pid> {
    match inode.as_any().downcast_ref::<ProcInode>()?.node {
        Node::PidDir(pid) => Some(pid),
        _ => None,
    }
}

fn global(name: &str) -> Result<String, Errno> {
    let mut s = String::new();
    match name {
        "meminfo" => return super::meminfo::text(),
        "cpuinfo" => {
            let info = hal::boot_info();
            for cpu in 0..hal::percpu::online_cpus().max(1) {
                let _ = write!(
                    s,
                    "processor\t: {cpu}\nvendor_id\t: {}\ncpu family\t: {}\nmodel\t\t: {}\nmodel name\t: {}\n\
                     stepping\t: {}\ncpu MHz\t\t: {}.{:03}\nflags\t\t: fpu sse sse2{}{}\n\n",
                    info.cpu.vendor_str(),
                    info.cpu.family,
                    info.cpu.model,
                    info.cpu.brand_str(),
                    info.cpu.stepping,
                    info.tsc_hz / 1_000_000,
                    info.tsc_hz / 1000 % 1000,
                    if info.cpu.x2apic { " x2apic" } else { "" },
                    if info.cpu.nx { " nx" } else { "" },
                );
            }
        }
        "uptime" => {
            let ns = crate::clock::now_ns();
            let _ = writeln!(
                s,
                "{}.{:02} {}.{:02}",
                ns / 1_000_000_000,
                ns / 10_000_000 % 100,
                ns / 1_000_000_000,
                ns / 10_000_000 % 100
            );
        }
        "loadavg" => {
            let n = proc::all_processes().len();
            let _ = writeln!(s, "0.00 0.00 0.00 1/{n} {}", proc::last_pid());
        }

        "filesystems" => {
            for name in super::fs_type_names() {
                let nodev = if super::is_block_fs(name) { "" } else { "nodev" };
                let _ = writeln!(s, "{nodev}\t{name}");
            }
        }
        "version" => s.push_str("Linux version 6.1.0-kiln (kiln@kiln) #1 SMP Kiln\n"),
        "locks" => s = super::lock::proc_locks(),
        "stat" => {
            let ticks = crate::clock::now_ns() / 10_000_000;
            let _ = write!(
                s,
                "cpu  {ticks} 0 0 0 0 0 0 0 0 0\ncpu0 {ticks} 0 0 0 0 0 0 0 0 0\nbtime {}\nprocesses {}\nprocs_running 1\nprocs_blocked 0\n",
                crate::clock::realtime_ns() / 1_000_000_000 - crate::clock::now_ns() / 1_000_000_000,
                proc::last_pid()
            );
        }
        _ => return Err(Errno::ENOENT),
    }
    Ok(s)
}

/// An already open file reached through /proc/<pid>/fd (a pipe, say):
/// opening it again shares the original file's operations.
struct OpenFileInode {
    file: Arc<super::OpenFile>,
}

impl Inode for OpenFileInode {
    fn metadata(&self) -> Metadata {
        let mut m = Metadata { mode: self.file.ops.mode(), nlink: 1, ..Metadata::default() };
        m.ino = self.file.ops.ino().unwrap_or(0);
        m
    }

    fn fs_stats(&self) -> FsStats {
        FsStats { magic: 0x5049_5045, block_size: 4096, name_max: 255, ..FsStats::default() }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn open(&self, _flags: u32) -> Option<Result<Arc<dyn FileOps>, Errno>> {
        // A socket cannot be opened again (Linux's sock_no_open): its one
        // open file is what its in-flight references are counted against.
        if self.file.ops.mode() & super::inode::S_IFMT == super::inode::S_IFSOCK {
            return Some(Err(Errno::ENXIO));
        }
        Some(Ok(self.file.ops.clone()))
    }
}

/// The scheduling parameters of a process's main thread (Linux reports
/// the thread group leader's in /proc/<pid>/stat).
pub(super) fn leader_sched_params(p: &Process) -> crate::sched::SchedParams {
    let tasks = p.tasks.lock();
    let leader = tasks.iter().find(|t| t.is_leader()).or(tasks.first());
    leader.and_then(|t| t.kthread.get()).map_or(crate::sched::SchedParams::DEFAULT, |k| k.sched_params())
}

fn pid_file(p: &Arc<Process>, f: &str) -> Result<String, Errno> {
    let mut s = String::new();
    match f {
        "stat" => s = pid::stat(p, None),
        "status" => s = pid::status(p, None),
        "statm" => s = pid::statm(p),
        "maps" => s = pid::maps(p),
        "smaps" => s = pid::smaps(p),
        "smaps_rollup" => s = pid::smaps_rollup(p),
        "cmdline" => {
            for a in p.cmdline.lock().iter() {
                s.push_str(a);
                s.push('\0');
            }
        }
        "environ" => {
            for e in p.environ.lock().iter() {
                s.push_str(e);
                s.push('\0');
            }
        }
        // As the process sees them, from its root.
        "mounts" => {
            let root = p.root.lock().clone();
            s = super::mount::mounts_text(&root)?;
        }
        "mountinfo" => {
            let root = p.root.lock().clone();
            s = super::mount::mountinfo_text(&root)?;
        }
        "comm" => {
            s = pid::comm(p);
            s.push('\n');
        }
        _ => return Err(Errno::ENOENT),
    }
    Ok(s)
}
