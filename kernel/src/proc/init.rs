//! Starting the first user process.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

use hal::sync::SpinLock;
use hal::user::UserContext;
use linux_abi::errno::Errno;
use linux_abi::signal::SigSet;

use super::signal::{default_actions, SignalState};
use super::{exec, register_process, task, Process, Task};
use crate::fs::dentry::{resolve, root};
use crate::fs::file::OpenFile;
use crate::fs::{FdTable, SharedFdTable};
use crate::sync::Mutex;

/// Runs `path` with `argv` as pid 1, with the console terminal on fds
/// 0, 1 and 2 as its controlling terminal.
pub fn start(path: &str, argv: Vec<String>) -> Result<(), Errno> {
    crate::fs::dentry::set_caller_root_hook(super::caller_root);
    super::ctty::init();
    super::ns::init();
    let cred = Arc::new(crate::cred::ROOT.clone());
    let dentry = resolve(&cred, &root(), path, true)?;
    exec::check_executable(&cred, &dentry)?;
    let envp: Vec<String> =
        ["HOME=/", "TERM=linux", "PATH=/sbin:/bin:/usr/sbin:/usr/bin"].iter().map(|s| String::from(*s)).collect();
    let bprm = exec::Binprm {
        filename: String::from(path),
        interp: String::from(path),
        argv: argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
        envp: envp.iter().map(|e| e.as_bytes().to_vec()).collect(),
        path_inaccessible: false,
        arg_limit: exec::arg_space(8 << 20),
        stack_limit: 8 << 20,
        cwd: root(),
        cred: cred.clone(),
    };
    let (image, _) = exec::load(dentry, bprm)?;

    let mut files = FdTable::new();
    let console_node = resolve(&cred, &root(), "/dev/console", true)?;
    for _ in 0..3 {
        let ops = crate::fs::tty::open_console(linux_abi::consts::O_NOCTTY)?;
        files.install(Arc::new(OpenFile::with_dentry(ops, linux_abi::consts::O_RDWR, console_node.clone())), false)?;
    }
    let pid = super::alloc_pid()?;
    let vm = Arc::new(Mutex::new(image.vm));
    let signals = SignalState::new(Arc::new(SpinLock::new(default_actions())));
    let p = Arc::new(Process::new(pid, Weak::new(), vm, SharedFdTable::new(files)?, signals));
    *p.exe.lock() = image.exe;
    *p.exe_file.lock() = Some(image.deny);
    p.set_comm_from_path(path);
    *p.cmdline.lock() = argv;
    *p.environ.lock() = envp;
    *p.auxv.lock() = image.auxv;
    register_process(&p);
    crate::fs::tty::activate(crate::fs::tty::Caller { pgid: pid, sid: pid, session_leader: true });
    *p.ctty.lock() = crate::fs::tty::console();
    let t = Arc::new(Task::new(pid, p.clone(), SigSet(0), cred));
    p.tasks.lock().push(t.clone());
    let mut ctx = Box::new(UserContext::new());
    ctx.regs.rip = image.entry;
    ctx.regs.rsp = image.stack_pointer;
    task::start(t, ctx)
}
