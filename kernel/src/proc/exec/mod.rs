//! execve's loader: from an executable file and its arguments to a fresh
//! address space with the program, its ELF interpreter, the vDSO and the
//! initial stack, ready for the point of no return (`syscall::exec`).
//!
//! It follows Linux 6.1's binfmt loop: the first bytes of the file pick
//! the handler. An ELF file is mapped (`elf`), with the interpreter its
//! PT_INTERP names; a `#!` script (`script`) rewrites the arguments and
//! starts over with its interpreter, at most `shebang::MAX_NESTING`
//! times; anything else is ENOEXEC. `stack` lays out argv, envp and the
//! auxiliary vector exactly where Linux puts them; the stack area then
//! shrinks to what they use plus Linux's stack_expand and grows on
//! faults. Every file of the chain is denied writers while it loads
//! (ETXTBSY), the program for as long as it runs.

mod elf;
mod script;
mod stack;

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use kiln_util::shebang;
use linux_abi::errno::Errno;

use crate::cred::Cred;
use crate::fs::dentry::{resolve, Dentry};
use crate::fs::inode::FileType;
use crate::fs::perm;
use crate::fs::writecount::{deny_write_access, DenyWrite};
use crate::mm::aspace::AddressSpace;

pub use stack::{arg_space, MAX_ARG_STRLEN};

/// What an execve works on while it loads (the parts of Linux's
/// `linux_binprm` Kiln needs).
pub struct Binprm {
    /// The name the program was asked for: the path execve got, or
    /// `/dev/fd/N[/path]` for execveat relative to a descriptor. It is
    /// AT_EXECFN and gives the command name; scripts do not change it.
    pub filename: String,
    /// The name a script's interpreter is given for the script (the
    /// filename, then each interpreter's name down a nested chain).
    pub interp: String,
    pub argv: Vec<Vec<u8>>,
    pub envp: Vec<Vec<u8>>,
    /// The filename names a close-on-exec descriptor, so it cannot be
    /// opened after exec: a script, whose interpreter would open it,
    /// fails with ENOENT instead.
    pub path_inaccessible: bool,
    /// Bytes the strings may take on the new stack (`arg_space`).
    pub arg_limit: u64,
    /// RLIMIT_STACK's soft limit: how far the new stack may grow.
    pub stack_limit: u64,
    /// The directory relative interpreter paths start from (the cwd).
    pub cwd: Arc<Dentry>,
    /// The caller's credentials: they look up and check each file.
    pub cred: Arc<Cred>,
}

/// The new program, built but not yet running.
pub struct Image {
    pub vm: AddressSpace,
    pub entry: u64,
    pub stack_pointer: u64,
    /// The path of the file finally run (a script's interpreter):
    /// /proc/<pid>/exe.
    pub exe: String,
    /// The credentials the program runs with (set-id bits of the ELF
    /// file finally run; a script's own are ignored, as on Linux).
    pub cred: Arc<Cred>,
    /// The process stays dumpable: no id changed, and every file of the
    /// chain (scripts, program, interpreter) was readable.
    pub dumpable: bool,
    /// The program file kept from being written while it runs (ETXTBSY),
    /// for the process to hold (`Process::exe_file`).
    pub deny: DenyWrite,
    /// The auxiliary vector as written to the stack (Process::auxv).
    pub auxv: Vec<u8>,
}

/// Linux's open_exec checks on a looked-up file: a symlink here was not
/// followed (ELOOP); otherwise only a regular file on a mount without
/// `noexec` that `cred` may execute may run (EACCES).
pub fn check_executable(cred: &Cred, d: &Arc<Dentry>) -> Result<(), Errno> {
    if d.inode().file_type() == FileType::Symlink {
        return Err(Errno::ELOOP);
    }
    perm::may_exec(cred, d)
}

/// Looks up and checks an interpreter (a script's or PT_INTERP's) as
/// Linux's open_exec does: from the cwd unless absolute, symlinks
/// followed.
fn open_exec(bprm: &Binprm, path: &str) -> Result<Arc<Dentry>, Errno> {
    let d = resolve(&bprm.cred, &bprm.cwd, path, true)?;
    check_executable(&bprm.cred, &d)?;
    Ok(d)
}

/// Reads up to `buf.len()` bytes at `offset`, as many calls as it takes.
fn read_exact_or_eof(d: &Arc<Dentry>, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
    let mut done = 0;
    while done < buf.len() {
        let n = d.inode().read_at(offset + done as u64, &mut buf[done..])?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

/// Loads `file` (already checked with `check_executable`) for `bprm`.
pub fn load(file: Arc<Dentry>, mut bprm: Binprm) -> Result<(Image, Binprm), Errno> {
    stack::check_space(&bprm)?;
    let mut file = file;
    // A script the caller cannot read leaves the process non-dumpable.
    let mut readable = true;
    // The program itself, then up to MAX_NESTING interpreters; a chain
    // that is still a script after that is ELOOP.
    for _ in 0..=shebang::MAX_NESTING {
        // Each file of the chain is kept from being written while it is
        // loaded, and one open for writing cannot run (ETXTBSY), as
        // Linux's do_open_execat; the program keeps its denial.
        let deny = deny_write_access(file.inode())?;
        let mut head = [0u8; shebang::BUF_SIZE];
        let n = read_exact_or_eof(&file, 0, &mut head)?;
        if head.starts_with(b"\x7fELF") {
            let mut image = elf::load(&file, &head[..n], &bprm, deny)?;
            image.dumpable &= readable;
            return Ok((image, bprm));
        }
        let line = shebang::parse(&head[..n]).map_err(|_| Errno::ENOEXEC)?;
        readable &= perm::may_read(&bprm.cred, file.inode().as_ref());
        file = script::rewrite(&mut bprm, &line)?;
    }
    Err(Errno::ELOOP)
}
