//! `#!` interpreter scripts, as Linux's binfmt_script runs them: the
//! interpreter becomes the program, and the arguments become
//! `interpreter [argument] script args...`, where `script` is the name the
//! script was run by (the original argv[0] is dropped).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use kiln_util::shebang::Shebang;
use linux_abi::errno::Errno;

use super::{open_exec, stack, Binprm};
use crate::fs::dentry::Dentry;

/// Rewrites `bprm` for the script's line; returns the interpreter to run.
pub(super) fn rewrite(bprm: &mut Binprm, line: &Shebang<'_>) -> Result<Arc<Dentry>, Errno> {
    // The interpreter would have to open the script by a name that is
    // gone once exec closes the descriptor.
    if bprm.path_inaccessible {
        return Err(Errno::ENOENT);
    }
    let name = String::from_utf8_lossy(line.interpreter).into_owned();
    let mut argv: Vec<Vec<u8>> = Vec::new();
    argv.try_reserve(bprm.argv.len() + 2).map_err(|_| Errno::ENOMEM)?;
    argv.push(line.interpreter.to_vec());
    if let Some(arg) = line.argument {
        argv.push(arg.to_vec());
    }
    argv.push(bprm.interp.as_bytes().to_vec());
    argv.extend(bprm.argv.drain(..).skip(1));
    bprm.argv = argv;
    stack::check_space(bprm)?;
    bprm.interp = name.clone();
    open_exec(bprm, &name)
}
