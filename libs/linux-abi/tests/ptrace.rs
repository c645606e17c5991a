//! Checks `linux_abi::ptrace` against the host's headers: `tests/ptrace.c`
//! prints the numbers and layouts, compiled with the host C compiler
//! (`$CC`, else `cc`); skipped with a note when there is none.

use c_oracle::{c_probe, CValues};
use linux_abi::ptrace::*;

fn c_values() -> Option<CValues> {
    c_probe!("ptrace.c", "linux/ptrace.h")
}

#[test]
fn ptrace_abi_matches_headers() {
    let Some(c) = c_values() else {
        return;
    };
    let get = |k: &str| c.get(k);
    let word = |k: &str, index: usize| assert_eq!(get(k), (index * 8) as i128, "offset of {k}");
    assert_eq!(get("user_regs_struct"), UserRegs::SIZE as i128);
    word("regs.r15", reg::R15);
    word("regs.rbx", reg::RBX);
    word("regs.rax", reg::RAX);
    word("regs.orig_rax", reg::ORIG_RAX);
    word("regs.rip", reg::RIP);
    word("regs.eflags", reg::EFLAGS);
    word("regs.rsp", reg::RSP);
    word("regs.fs_base", reg::FS_BASE);
    word("regs.gs", reg::GS);
    assert_eq!(get("user"), user_area::SIZE as i128);
    assert_eq!(get("user.u_fpvalid"), user_area::FPVALID as i128);
    assert_eq!(get("user.i387"), user_area::I387 as i128);
    assert_eq!(get("user.u_tsize"), user_area::TSIZE as i128);
    assert_eq!(get("user.signal"), user_area::SIGNAL as i128);
    assert_eq!(get("user.u_ar0"), user_area::AR0 as i128);
    assert_eq!(get("user.magic"), user_area::MAGIC as i128);
    assert_eq!(get("user.u_comm"), user_area::COMM as i128);
    assert_eq!(get("user.u_debugreg"), user_area::DEBUGREG as i128);
    assert_eq!(get("user_fpregs_struct"), 512);
    assert_eq!(get("ptrace_syscall_info"), SyscallInfo::SIZE as i128);
    assert_eq!(get("syscall_info.entry"), SyscallInfo::HEADER as i128);
    assert_eq!(get("syscall_info.entry.args"), 32);
    assert_eq!(get("syscall_info.exit.is_error"), 32);
    assert_eq!(get("peeksiginfo_args"), PeekSiginfoArgs::SIZE as i128);
    let consts: &[(&str, i128)] = &[
        ("PTRACE_TRACEME", PTRACE_TRACEME as i128),
        ("PTRACE_PEEKUSR", PTRACE_PEEKUSR as i128),
        ("PTRACE_POKEUSR", PTRACE_POKEUSR as i128),
        ("PTRACE_CONT", PTRACE_CONT as i128),
        ("PTRACE_KILL", PTRACE_KILL as i128),
        ("PTRACE_SINGLESTEP", PTRACE_SINGLESTEP as i128),
        ("PTRACE_GETREGS", PTRACE_GETREGS as i128),
        ("PTRACE_SETREGS", PTRACE_SETREGS as i128),
        ("PTRACE_GETFPREGS", PTRACE_GETFPREGS as i128),
        ("PTRACE_SETFPREGS", PTRACE_SETFPREGS as i128),
        ("PTRACE_ATTACH", PTRACE_ATTACH as i128),
        ("PTRACE_DETACH", PTRACE_DETACH as i128),
        ("PTRACE_SYSCALL", PTRACE_SYSCALL as i128),
        ("PTRACE_SYSEMU", PTRACE_SYSEMU as i128),
        ("PTRACE_SETOPTIONS", PTRACE_SETOPTIONS as i128),
        ("PTRACE_GETEVENTMSG", PTRACE_GETEVENTMSG as i128),
        ("PTRACE_GETSIGINFO", PTRACE_GETSIGINFO as i128),
        ("PTRACE_SETSIGINFO", PTRACE_SETSIGINFO as i128),
        ("PTRACE_GETREGSET", PTRACE_GETREGSET as i128),
        ("PTRACE_SETREGSET", PTRACE_SETREGSET as i128),
        ("PTRACE_SEIZE", PTRACE_SEIZE as i128),
        ("PTRACE_INTERRUPT", PTRACE_INTERRUPT as i128),
        ("PTRACE_LISTEN", PTRACE_LISTEN as i128),
        ("PTRACE_PEEKSIGINFO", PTRACE_PEEKSIGINFO as i128),
        ("PTRACE_GETSIGMASK", PTRACE_GETSIGMASK as i128),
        ("PTRACE_SETSIGMASK", PTRACE_SETSIGMASK as i128),
        ("PTRACE_GET_SYSCALL_INFO", PTRACE_GET_SYSCALL_INFO as i128),
        ("PTRACE_O_TRACESYSGOOD", PTRACE_O_TRACESYSGOOD as i128),
        ("PTRACE_O_TRACEEXIT", PTRACE_O_TRACEEXIT as i128),
        ("PTRACE_O_EXITKILL", PTRACE_O_EXITKILL as i128),
        ("PTRACE_O_MASK", PTRACE_O_MASK as i128),
        ("PTRACE_EVENT_VFORK_DONE", PTRACE_EVENT_VFORK_DONE as i128),
        ("PTRACE_EVENT_STOP", PTRACE_EVENT_STOP as i128),
        ("PTRACE_PEEKSIGINFO_SHARED", PTRACE_PEEKSIGINFO_SHARED as i128),
        ("PTRACE_SYSCALL_INFO_EXIT", PTRACE_SYSCALL_INFO_EXIT as i128),
        ("AUDIT_ARCH_X86_64", AUDIT_ARCH_X86_64 as i128),
        ("NT_PRSTATUS", NT_PRSTATUS as i128),
        ("NT_PRFPREG", NT_PRFPREG as i128),
        ("NT_X86_XSTATE", NT_X86_XSTATE as i128),
    ];
    for (name, rust) in consts {
        assert_eq!(get(name), *rust, "value of {name}");
    }
}
