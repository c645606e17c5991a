//! Inter-process communication objects: System V message queues,
//! semaphore sets and shared memory segments, and POSIX message queues
//! (with their mqueue file system). Each family keeps its objects here; `syscall/` reads the
//! arguments and calls in. Credentials checks go through `creds`.

pub mod creds;
pub mod ids;
pub mod limits;
pub mod mqueue;
pub mod msg;
pub mod perm;
pub mod sem;
pub mod shm;

/// Hooks the IPC objects into the layers below at boot: /proc files and
/// the process-exit work.
pub fn init() {
    use crate::fs::procfs::register;
    register("sysvipc/msg", |_| msg::proc_text());
    register("sysvipc/sem", |_| sem::proc_text());
    register("sysvipc/shm", |_| shm::proc_text());
    crate::fs::procfs::sys::register(limits::SYSCTLS);
    crate::proc::exit::on_process_exit(sem::exit_undo);
    crate::fs::register_fs_type("mqueue", mqueue::root_inode);
}
