//! System V shared memory: shmget, shmat, shmdt and shmctl with Linux's
//! semantics and limits.
//!
//! A segment is an unnamed file of the internal tmpfs
//! (`fs::tmpfs::unnamed_file`), so its pages are page-store frames that
//! every attachment maps, exactly as shared mappings of a tmpfs file do.
//! An attachment is a shared file mapping that carries the segment as
//! its `MapCounter`: every area made over it (shmat, fork, a split)
//! counts in `shm_nattch` and stamps `shm_atime`/`shm_lpid`, every area
//! that goes (shmdt, munmap, exec, exit) uncounts and stamps
//! `shm_dtime`. IPC_RMID of an attached segment only marks it SHM_DEST
//! and hides its key; the last detach destroys it.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use hal::sync::SpinLock;
use linux_abi::errno::Errno;
use linux_abi::ipc::{
    IpcPerm, ShmInfo, ShmInfo64, ShmidDs, IPC_CREAT, IPC_EXCL, IPC_PRIVATE, IPC_STAT, SHMLBA, SHMMIN, SHMSEG, SHM_DEST,
    SHM_EXEC, SHM_HUGETLB, SHM_LOCK, SHM_LOCKED, SHM_NORESERVE, SHM_RDONLY, SHM_REMAP, SHM_RND, SHM_STAT_ANY,
};

use super::ids::IpcIds;
use super::limits::{self, SHMALL, SHMMAX, SHMMNI};
use super::perm;
use crate::fs::Inode;
use crate::mm::vma::{Backing, MapCounter, Prot};
use crate::mm::{Vm, PAGE_SIZE};
use crate::proc::Task;

struct SegState {
    perm: IpcPerm,
    atime: i64,
    dtime: i64,
    ctime: i64,
    cpid: i32,
    lpid: i32,
    nattch: u64,
    /// Destroyed: out of the table, its identifier dead.
    gone: bool,
}

pub struct ShmSegment {
    id: i32,
    size: u64,
    file: Arc<dyn Inode>,
    state: SpinLock<SegState>,
}

static SEGMENTS: SpinLock<IpcIds<ShmSegment>> = SpinLock::new(IpcIds::new());
/// Pages of all segments (shm_tot, bounded by shmall).
static SHM_TOT: AtomicU64 = AtomicU64::new(0);

fn pages(size: u64) -> u64 {
    size.div_ceil(PAGE_SIZE)
}

fn current_pid() -> i32 {
    crate::proc::current_task().map_or(0, |t| t.process.pid)
}

impl MapCounter for ShmSegment {
    fn opened(&self) {
        let mut st = self.state.lock();
        st.nattch += 1;
        st.atime = perm::now();
        st.lpid = current_pid();
    }

    fn closed(&self) {
        let destroy = {
            let mut st = self.state.lock();
            st.nattch = st.nattch.saturating_sub(1);
            st.dtime = perm::now();
            st.lpid = current_pid();
            st.nattch == 0 && st.perm.mode & SHM_DEST != 0 && !st.gone
        };
        if destroy {
            self.destroy();
        }
    }
}

impl ShmSegment {
    /// Takes the segment out of the table and gives its pages back (with
    /// the last reference to its file).
    fn destroy(&self) {
        {
            let mut st = self.state.lock();
            if st.gone {
                return;
            }
            st.gone = true;
        }
        let removed = SEGMENTS.lock().remove(self.id);
        SHM_TOT.fetch_sub(pages(self.size), Ordering::Relaxed);
        drop(removed);
    }

    fn resident_pages(&self) -> u64 {
        self.file.metadata().blocks / 8
    }
}

/// The segment with `key`, as shmget finds it: None when it must be made.
fn find(task: &Arc<Task>, ids: &IpcIds<ShmSegment>, key: i32, size: u64, flags: u32) -> Result<Option<i32>, Errno> {
    if key == IPC_PRIVATE {
        return Ok(None);
    }
    let Some((id, seg)) = ids.find_key(key) else {
        return if flags & IPC_CREAT == 0 { Err(Errno::ENOENT) } else { Ok(None) };
    };
    if flags & IPC_CREAT != 0 && flags & IPC_EXCL != 0 {
        return Err(Errno::EEXIST);
    }
    if seg.size < size {
        return Err(Errno::EINVAL);
    }
    perm::check(task, &seg.state.lock().perm, flags)?;
    Ok(Some(id))
}

/// shmget.
pub fn get(task: &Arc<Task>, key: i32, size: u64, flags: u32) -> Result<i32, Errno> {
    loop {
        if let Some(id) = find(task, &SEGMENTS.lock(), key, size, flags)? {
            return Ok(id);
        }
        if size < SHMMIN || size > limits::get64(&SHMMAX) {
            return Err(Errno::EINVAL);
        }
        let n = pages(size);
        if n.checked_mul(PAGE_SIZE).is_none() {
            return Err(Errno::ENOSPC);
        }
        let tot = SHM_TOT.load(Ordering::Relaxed);
        if tot.checked_add(n).is_none_or(|t| t > limits::get64(&SHMALL)) {
            return Err(Errno::ENOSPC);
        }
        if flags & SHM_HUGETLB != 0 {
            // No huge pages are reserved (nr_hugepages is 0).
            return Err(Errno::ENOMEM);
        }
        // Linux charges a segment against memory unless SHM_NORESERVE.
        if flags & SHM_NORESERVE == 0 {
            crate::mm::AddressSpace::check_commit(size)?;
        }
        // The file is made outside the table's lock (truncating it may
        // sleep); a creator that raced us to the key wins.
        let file: Arc<dyn Inode> = crate::fs::tmpfs::unnamed_file(
            0o777,
            linux_abi::ipc::F_SEAL_SEAL,
            // Access goes through the segment's IPC permissions, not the file's.
            crate::fs::inode::Owner::ROOT,
        );
        file.truncate(size)?;
        let mut ids = SEGMENTS.lock();
        if key != IPC_PRIVATE && ids.find_key(key).is_some() {
            drop(ids);
            drop(file);
            continue;
        }
        let mut new_perm = perm::new_perm(task, key, flags);
        let pid = task.process.pid;
        let id = ids.add(key, limits::get64(&SHMMNI) as usize, |id| {
            new_perm.seq = (id >> 15) as u16;
            Arc::try_new(ShmSegment {
                id,
                size,
                file: file.clone(),
                state: SpinLock::new(SegState {
                    perm: new_perm,
                    atime: 0,
                    dtime: 0,
                    ctime: perm::now(),
                    cpid: pid,
                    lpid: 0,
                    nattch: 0,
                    gone: false,
                }),
            })
            .map_err(|_| Errno::ENOMEM)
        });
        drop(ids);
        drop(file);
        let id = id?;
        SHM_TOT.fetch_add(n, Ordering::Relaxed);
        return Ok(id);
    }
}

/// shmat: attaches segment `id` at `addr` (0: anywhere) and returns the
/// address.
pub fn attach(task: &Arc<Task>, vm: &Vm, id: i32, addr: u64, flags: u32) -> Result<u64, Errno> {
    if id < 0 {
        return Err(Errno::EINVAL);
    }
    let mut addr = addr;
    if addr != 0 {
        if !addr.is_multiple_of(SHMLBA) {
            if flags & SHM_RND == 0 {
                return Err(Errno::EINVAL);
            }
            addr -= addr % SHMLBA;
            if addr == 0 && flags & SHM_REMAP != 0 {
                return Err(Errno::EINVAL);
            }
        }
    } else if flags & SHM_REMAP != 0 {
        return Err(Errno::EINVAL);
    }
    let read_only = flags & SHM_RDONLY != 0;
    let mut access = if read_only { perm::READ } else { perm::READ | perm::WRITE };
    let mut prot = Prot { read: true, write: !read_only, exec: false };
    if flags & SHM_EXEC != 0 {
        access |= perm::EXEC;
        prot.exec = true;
    }
    let seg = SEGMENTS.lock().get(id)?.clone();
    {
        let st = seg.state.lock();
        perm::check(task, &st.perm, access)?;
        if st.gone {
            return Err(Errno::EIDRM);
        }
    }
    let len = pages(seg.size) * PAGE_SIZE;
    let counter: Arc<dyn MapCounter> = seg.clone();
    let mut space = vm.lock();
    if addr != 0 && flags & SHM_REMAP == 0 {
        let end = addr.checked_add(seg.size).ok_or(Errno::EINVAL)?;
        if space.overlaps(addr, end) {
            return Err(Errno::EINVAL);
        }
    }
    let backing = Backing::shm_attach(seg.file.clone(), !read_only, counter);
    let start = space.mmap(addr, len, prot, backing, addr != 0, false)?;
    space.set_name(start, &alloc::format!("/SYSV{:08x} (deleted)", seg.state.lock().perm.key as u32));
    Ok(start)
}

/// shmdt: detaches the attachment that starts at `addr`.
pub fn detach(vm: &Vm, addr: u64) -> Result<(), Errno> {
    if !addr.is_multiple_of(PAGE_SIZE) {
        return Err(Errno::EINVAL);
    }
    vm.lock().detach_shm(addr)
}

/// IPC_STAT (by id), SHM_STAT and SHM_STAT_ANY (by slot index).
pub fn stat(task: &Arc<Task>, id: i32, cmd: u32) -> Result<(i32, ShmidDs), Errno> {
    let (ret, seg) = SEGMENTS.lock().get_for_stat(id, cmd != IPC_STAT)?;
    let st = seg.state.lock();
    if cmd != SHM_STAT_ANY {
        perm::check(task, &st.perm, perm::READ)?;
    }
    if st.gone {
        return Err(Errno::EIDRM);
    }
    Ok((
        ret,
        ShmidDs {
            perm: st.perm,
            segsz: seg.size,
            atime: st.atime,
            dtime: st.dtime,
            ctime: st.ctime,
            cpid: st.cpid,
            lpid: st.lpid,
            nattch: st.nattch,
        },
    ))
}

/// IPC_INFO.
pub fn ipc_info() -> (i32, ShmInfo64) {
    let max = SEGMENTS.lock().max_index().max(0);
    let info = ShmInfo64 {
        shmmax: limits::get64(&SHMMAX),
        shmmin: SHMMIN,
        shmmni: limits::get64(&SHMMNI),
        shmseg: SHMSEG,
        shmall: limits::get64(&SHMALL),
    };
    (max, info)
}

/// SHM_INFO.
pub fn shm_info() -> (i32, ShmInfo) {
    let (max, in_use, segs) = {
        let ids = SEGMENTS.lock();
        let segs: Vec<Arc<ShmSegment>> = ids.iter().map(|(_, s)| s.clone()).collect();
        (ids.max_index().max(0), ids.in_use(), segs)
    };
    let rss = segs.iter().map(|s| s.resident_pages()).sum();
    let info = ShmInfo {
        used_ids: in_use as i32,
        shm_tot: SHM_TOT.load(Ordering::Relaxed),
        shm_rss: rss,
        shm_swp: 0,
        swap_attempts: 0,
        swap_successes: 0,
    };
    (max, info)
}

fn segment(id: i32) -> Result<Arc<ShmSegment>, Errno> {
    SEGMENTS.lock().get(id).cloned()
}

/// IPC_SET.
pub fn set(task: &Arc<Task>, id: i32, new: &ShmidDs) -> Result<(), Errno> {
    let seg = segment(id)?;
    let mut guard = seg.state.lock();
    let st = &mut *guard;
    perm::check_set(task, &st.perm, st.gone)?;
    perm::update(&mut st.perm, &mut st.ctime, &new.perm)
}

/// IPC_RMID: destroys the segment now if nothing has it attached, else
/// marks it SHM_DEST (its key no longer finds it) for the last detach.
pub fn remove(task: &Arc<Task>, id: i32) -> Result<(), Errno> {
    let seg = segment(id)?;
    let destroy = {
        let mut st = seg.state.lock();
        perm::check_control(task, &st.perm)?;
        if st.gone {
            return Err(Errno::EIDRM);
        }
        if st.nattch > 0 {
            st.perm.mode |= SHM_DEST;
            st.perm.key = IPC_PRIVATE;
            false
        } else {
            true
        }
    };
    if destroy {
        seg.destroy();
    } else {
        SEGMENTS.lock().forget_key(id);
    }
    Ok(())
}

/// SHM_LOCK and SHM_UNLOCK: nothing is ever swapped, so only the mode
/// bit and the permission check (the owner or creator, or CAP_IPC_LOCK)
/// remain.
pub fn lock(task: &Arc<Task>, id: i32, cmd: u32) -> Result<(), Errno> {
    let seg = segment(id)?;
    let mut st = seg.state.lock();
    if !super::creds::capable(task, super::creds::CAP_IPC_LOCK) {
        let euid = super::creds::euid(task);
        if euid != st.perm.uid && euid != st.perm.cuid {
            return Err(Errno::EPERM);
        }
    }
    if st.gone {
        return Err(Errno::EIDRM);
    }
    if cmd == SHM_LOCK {
        st.perm.mode |= SHM_LOCKED;
    } else {
        st.perm.mode &= !SHM_LOCKED;
    }
    Ok(())
}

/// The text of /proc/sysvipc/shm.
pub fn proc_text() -> alloc::string::String {
    use core::fmt::Write;
    let mut s = alloc::string::String::from(
        "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n",
    );
    let segs: Vec<Arc<ShmSegment>> = SEGMENTS.lock().iter().map(|(_, s)| s.clone()).collect();
    for seg in segs {
        let rss = seg.resident_pages() * PAGE_SIZE;
        let st = seg.state.lock();
        let p = &st.perm;
        let _ = writeln!(
            s,
            "{:10} {:10}  {:4o} {:21} {:5} {:5}  {:5} {:5} {:5} {:5} {:5} {:10} {:10} {:10} {:21} {:21}",
            p.key,
            seg.id,
            p.mode,
            seg.size,
            st.cpid,
            st.lpid,
            st.nattch,
            p.uid,
            p.gid,
            p.cuid,
            p.cgid,
            st.atime,
            st.dtime,
            st.ctime,
            rss,
            0
        );
    }
    s
}
