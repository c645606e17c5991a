//! Files: the VFS (inodes, the dentry cache, mounts, path walk), the file
//! systems (tmpfs for / and /tmp, devfs nodes, procfs, a minimal sysfs),
//! pipes, the console terminal, open file descriptions and fd tables,
//! advisory locks (record, OFD, flock) and leases, and the event files
//! (epoll, eventfd, timerfd, inotify with its VFS hooks in `notify`).

pub mod dentry;
pub mod devfs;
pub mod devpts;
pub mod epoll;
pub mod eventfd;
pub mod ext4;
pub mod fasync;
pub mod fdtable;
pub mod fhandle;
pub mod file;
pub mod fown;
pub mod initramfs;
pub mod inode;
pub mod inotify;
pub mod ldisc;
pub mod lease;
pub mod lock;
pub mod meminfo;
pub mod mount;
pub mod notify;
pub mod nsfs;
pub mod pagecache;
pub mod pagestore;
pub mod perm;
pub mod pipe;
mod pipe_buf;
pub mod procfs;
pub mod pty;
pub mod seek;
pub mod timerfd;
pub mod tmpfs;
pub mod truncate;
pub mod tty;
pub mod ucounts;
pub mod writecount;
pub mod xattr;

use alloc::sync::Arc;

use linux_abi::errno::Errno;

pub use dentry::Dentry;
pub use fdtable::{FdTable, SharedFdTable};
pub use file::OpenFile;
pub use inode::Inode;

/// `root=` from the command line: the block device to mount as `/`.
pub struct DiskRoot<'a> {
    pub device: &'a str,
    pub read_only: bool,
}

/// The disk's ext4 (or ext2) root, or None (logged) when it cannot be
/// mounted: the boot then falls back to the initramfs.
fn disk_root(disk: &DiskRoot) -> Option<Arc<dyn Inode>> {
    let Some(queue) = crate::block::by_path(disk.device) else {
        log::error!("root={}: no such block device; booting from the initramfs", disk.device);
        return None;
    };
    match ext4::mount(queue, disk.read_only, false) {
        Ok(root) => {
            log::info!("root: ext4 on {} ({})", disk.device, if disk.read_only { "ro" } else { "rw" });
            Some(root)
        }
        Err(e) => {
            log::error!("root={}: cannot mount: {}; booting from the initramfs", disk.device, e.name());
            None
        }
    }
}

/// Builds the root file system: a tmpfs filled from the initramfs, or with
/// `root=/dev/vdX` the disk's ext4, with /dev, /proc, /sys and /tmp
/// mounted on it. An initramfs that cannot be unpacked is an error the
/// caller must stop on: a root missing files would fail later in ways far
/// harder to read.
pub fn init(initramfs: Option<hal::TakenModule>, disk: Option<DiskRoot>) -> Result<(), initramfs::UnpackError> {
    if let Err(e) = tty::init_console() {
        log::error!("no console terminal: {}", e.name());
    }
    if let Some(root) = disk.as_ref().and_then(disk_root) {
        let root = Dentry::new_root(root);
        dentry::set_root(root.clone());
        if mount::mount_root(&root, "ext4", disk.as_ref().map_or("", |d| d.device)).is_err() {
            log::error!("cannot record the root mount: no memory");
        }
        mount_pseudo();
        return Ok(());
    }
    let root: Arc<dyn Inode> = tmpfs::Tmpfs::new_root(0o755);
    let root = Dentry::new_root(root);
    dentry::set_root(root.clone());
    if mount::mount_root(&root, "rootfs", "rootfs").is_err() {
        log::error!("cannot record the root mount: no memory");
    }
    if let Some(archive) = initramfs {
        let start = hal::time::monotonic_ns();
        let size = archive.len();
        let done = initramfs::unpack(archive)?;
        let ms = (hal::time::monotonic_ns() - start) / 1_000_000;
        log::info!(
            "initramfs: {} entries, {} MiB of files from {} KiB in {ms} ms; its frames are free again",
            done.entries,
            done.bytes >> 20,
            size / 1024
        );
    }
    mount_pseudo();
    Ok(())
}

/// /dev, /dev/pts, /proc, /sys and /tmp on the root.
fn mount_pseudo() {
    for (path, fstype) in
        [("/dev", "devtmpfs"), ("/dev/pts", "devpts"), ("/proc", "proc"), ("/sys", "sysfs"), ("/tmp", "tmpfs")]
    {
        if let Err(e) = mount_at(path, fstype, "none") {
            log::error!("cannot mount {fstype} on {path}: {}", e.name());
        }
    }
}

/// sync(2): every file system that keeps data on a device writes it back
/// and flushes the device.
pub fn sync_all() {
    ext4::sync_all();
}

/// File system types that live on a block device (mount(2)'s source names
/// it; /proc/filesystems shows them without `nodev`).
pub fn is_block_fs(fstype: &str) -> bool {
    matches!(fstype, "ext4" | "ext2" | "ext3")
}

/// Mounts the ext4/ext2 volume on the block device `rdev`: its root and
/// the options /proc/mounts shows.
pub fn new_block_fs(
    fstype: &str,
    rdev: u64,
    data: &str,
    sb_flags: u64,
) -> Result<(Arc<dyn Inode>, alloc::string::String), Errno> {
    if !is_block_fs(fstype) {
        return Err(Errno::ENODEV);
    }
    let queue = crate::block::by_rdev(rdev).ok_or(Errno::ENXIO)?;
    let options = ext4::parse_options(data)?;
    let read_only = sb_flags & linux_abi::consts::MS_RDONLY != 0 || data.split(',').any(|o| o == "ro");
    let synchronous = sb_flags & linux_abi::consts::MS_SYNCHRONOUS != 0 || data.split(',').any(|o| o == "sync");
    Ok((ext4::mount(queue, read_only, synchronous)?, options))
}

/// Creates the directory if needed and mounts a new file system there.
pub fn mount_at(path: &str, fstype: &str, source: &str) -> Result<(), Errno> {
    let root = dentry::root();
    let cred = &crate::cred::ROOT;
    let target = match dentry::resolve(cred, &root, path, true) {
        Ok(d) => d,
        Err(Errno::ENOENT) => {
            let (dir, name) = dentry::resolve_parent(cred, &root, path)?;
            dir.inode().create(&name, inode::S_IFDIR | 0o755, 0, inode::Owner::ROOT)?;
            dentry::resolve(cred, &root, path, true)?
        }
        Err(e) => return Err(e),
    };
    let (fs_root, options) = new_fs_with(fstype, "")?;
    let sb = mount::Super::new(fstype, options)?;
    mount::mount_new(&target, root_dentry(fstype, fs_root), sb, source, 0, mount::mnt_flags_of(0))
}

/// File system types a layer above adds (the IPC layer's "mqueue"): the
/// mount(2) name and what makes (or finds) the root to mount.
type FsMaker = fn() -> Result<Arc<dyn Inode>, Errno>;
static FS_TYPES: hal::sync::SpinLock<alloc::vec::Vec<(&'static str, FsMaker)>> =
    hal::sync::SpinLock::new(alloc::vec::Vec::new());

/// Adds a file system type (at boot).
pub fn register_fs_type(name: &'static str, make: FsMaker) {
    let mut types = FS_TYPES.lock();
    if types.try_reserve(1).is_ok() {
        types.push((name, make));
    }
}

/// The names of the registered file system types (/proc/filesystems).
pub fn registered_fs_types() -> alloc::vec::Vec<&'static str> {
    FS_TYPES.lock().iter().map(|(n, _)| *n).collect()
}

/// /sys/devices/system/cpu as far as C libraries and tools read it: a
/// `cpuN` directory per running CPU (glibc's get_nprocs_conf and
/// stress-ng count them) and the `online`, `possible` and `present` masks
/// (get_nprocs reads `online`), all "0-(N-1)" since every CPU found is
/// started and none goes offline. Written once at mount time: sysfs is
/// mounted after the application processors start.
fn populate_sys_cpus(sys: &Arc<dyn Inode>) -> Result<(), Errno> {
    let dir = inode::S_IFDIR | 0o755;
    let system = sys.lookup("devices")?.create("system", dir, 0, inode::Owner::ROOT)?;
    let cpu = system.create("cpu", dir, 0, inode::Owner::ROOT)?;
    let count = hal::percpu::online_cpus().max(1);
    for n in 0..count {
        let mut name = crate::mm::TryString::new();
        let done = core::fmt::Write::write_fmt(&mut name, format_args!("cpu{n}"));
        cpu.create(&name.finish(done)?, dir, 0, inode::Owner::ROOT)?;
    }
    let mut mask = crate::mm::TryString::new();
    let done = match count {
        1 => core::fmt::Write::write_str(&mut mask, "0\n"),
        _ => core::fmt::Write::write_fmt(&mut mask, format_args!("0-{}\n", count - 1)),
    };
    let mask = mask.finish(done)?;
    for name in ["online", "possible", "present"] {
        cpu.create(name, inode::S_IFREG | 0o444, 0, inode::Owner::ROOT)?.write_at(0, mask.as_bytes())?;
    }
    Ok(())
}

/// The file system types mount(2) knows, in /proc/filesystems order
/// (sysfs(2) numbers them in that order).
pub fn fs_type_names() -> alloc::vec::Vec<&'static str> {
    let mut names = alloc::vec::Vec::new();
    let builtin = ["tmpfs", "proc", "sysfs", "devtmpfs", "ramfs", "devpts", "ext4", "ext2"];
    let registered = registered_fs_types();
    if names.try_reserve(builtin.len() + registered.len()).is_ok() {
        names.extend_from_slice(&builtin);
        names.extend(registered);
    }
    names
}

/// A fresh instance of `fstype` configured by mount(2)'s `data` (tmpfs:
/// size=, nr_inodes=, mode=, uid=, gid=), and the options /proc/mounts
/// shows for it (",size=1024k,mode=700"). An unknown option is EINVAL.
pub fn new_fs_with(fstype: &str, data: &str) -> Result<(Arc<dyn Inode>, alloc::string::String), Errno> {
    if fstype == "tmpfs" || fstype == "ramfs" {
        let opts = tmpfs::Options::parse(data)?;
        let root = tmpfs::Tmpfs::new_root_opts(&opts);
        return Ok((root, opts.shown()?));
    }
    if !fs_type_names().contains(&fstype) {
        return Err(Errno::ENODEV);
    }
    if fstype == "devpts" {
        // devpts reads its own options (mode, ptmxmode, gid, uid, max).
        return Ok((new_fs_plain(fstype, Some(data))?, alloc::string::String::new()));
    }
    // Other types take no options here.
    if data.split(',').any(|o| !o.is_empty() && !is_generic_option(o)) {
        return Err(Errno::EINVAL);
    }
    Ok((new_fs_plain(fstype, None)?, alloc::string::String::new()))
}

/// The root dentry to mount for a new instance's root inode (a devpts
/// instance learns its root, where its pty nodes are looked up).
pub fn root_dentry(fstype: &str, root: Arc<dyn Inode>) -> Arc<Dentry> {
    let d = Dentry::new_root(root);
    if fstype == "devpts" {
        devpts::instance_of(&d);
    }
    d
}

/// Options every file system accepts in mount(2)'s data (superblock flags).
pub fn is_generic_option(o: &str) -> bool {
    matches!(o, "ro" | "rw" | "sync" | "async" | "dirsync" | "lazytime" | "nolazytime" | "mand" | "nomand" | "silent")
}

fn new_fs_plain(fstype: &str, data: Option<&str>) -> Result<Arc<dyn Inode>, Errno> {
    let registered = FS_TYPES.lock().iter().find(|(n, _)| *n == fstype).map(|(_, m)| *m);
    if let Some(make) = registered {
        return make();
    }
    Ok(match fstype {
        "devpts" => devpts::new_instance(data)?,
        "tmpfs" | "ramfs" => tmpfs::Tmpfs::new_root(0o1777),
        "devtmpfs" => {
            let dev: Arc<dyn Inode> = tmpfs::Tmpfs::new_root(0o755);
            devfs::populate(&dev)?;
            dev
        }
        "proc" => procfs::new_root(),
        "sysfs" => {
            let sys: Arc<dyn Inode> = tmpfs::Tmpfs::new_root_with(0o555, xattr::XattrKinds::KERNFS);
            for d in ["block", "bus", "class", "dev", "devices", "firmware", "fs", "kernel", "module", "power"] {
                let dir = sys.create(d, inode::S_IFDIR | 0o755, 0, inode::Owner::ROOT)?;
                if d == "block" {
                    crate::block::sysfs::populate(&dir)?;
                }
            }
            populate_sys_cpus(&sys)?;
            sys
        }
        _ => return Err(Errno::ENODEV),
    })
}
