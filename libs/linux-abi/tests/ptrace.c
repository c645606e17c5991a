/*
 * Prints the ptrace ABI as "name value" lines for tests/ptrace.rs: request
 * and option numbers from <linux/ptrace.h>, and the layouts of
 * user_regs_struct and struct user from glibc's <sys/user.h> (the one
 * header that declares struct user).
 */
#include <stddef.h>
#include <stdio.h>
#include <sys/user.h>
#include <linux/ptrace.h>
#include <linux/audit.h>
#include <linux/elf.h>

#define OFF(name, type, field) printf("%s %lu\n", name, (unsigned long)offsetof(type, field))
#define SZ(name, type) printf("%s %lu\n", name, (unsigned long)sizeof(type))
#define VAL(name) printf("%s %lld\n", #name, (long long)(name))

int main(void)
{
    SZ("user_regs_struct", struct user_regs_struct);
    OFF("regs.r15", struct user_regs_struct, r15);
    OFF("regs.rbx", struct user_regs_struct, rbx);
    OFF("regs.rax", struct user_regs_struct, rax);
    OFF("regs.orig_rax", struct user_regs_struct, orig_rax);
    OFF("regs.rip", struct user_regs_struct, rip);
    OFF("regs.eflags", struct user_regs_struct, eflags);
    OFF("regs.rsp", struct user_regs_struct, rsp);
    OFF("regs.fs_base", struct user_regs_struct, fs_base);
    OFF("regs.gs", struct user_regs_struct, gs);
    SZ("user", struct user);
    OFF("user.u_fpvalid", struct user, u_fpvalid);
    OFF("user.i387", struct user, i387);
    OFF("user.u_tsize", struct user, u_tsize);
    OFF("user.signal", struct user, signal);
    OFF("user.u_ar0", struct user, u_ar0);
    OFF("user.magic", struct user, magic);
    OFF("user.u_comm", struct user, u_comm);
    OFF("user.u_debugreg", struct user, u_debugreg);
    SZ("user_fpregs_struct", struct user_fpregs_struct);
    SZ("ptrace_syscall_info", struct ptrace_syscall_info);
    OFF("syscall_info.entry", struct ptrace_syscall_info, entry);
    OFF("syscall_info.entry.args", struct ptrace_syscall_info, entry.args);
    OFF("syscall_info.exit.is_error", struct ptrace_syscall_info, exit.is_error);
    SZ("peeksiginfo_args", struct ptrace_peeksiginfo_args);
    VAL(PTRACE_TRACEME);
    VAL(PTRACE_PEEKUSR);
    VAL(PTRACE_POKEUSR);
    VAL(PTRACE_CONT);
    VAL(PTRACE_KILL);
    VAL(PTRACE_SINGLESTEP);
    VAL(PTRACE_GETREGS);
    VAL(PTRACE_SETREGS);
    VAL(PTRACE_GETFPREGS);
    VAL(PTRACE_SETFPREGS);
    VAL(PTRACE_ATTACH);
    VAL(PTRACE_DETACH);
    VAL(PTRACE_SYSCALL);
    VAL(PTRACE_SYSEMU);
    VAL(PTRACE_SETOPTIONS);
    VAL(PTRACE_GETEVENTMSG);
    VAL(PTRACE_GETSIGINFO);
    VAL(PTRACE_SETSIGINFO);
    VAL(PTRACE_GETREGSET);
    VAL(PTRACE_SETREGSET);
    VAL(PTRACE_SEIZE);
    VAL(PTRACE_INTERRUPT);
    VAL(PTRACE_LISTEN);
    VAL(PTRACE_PEEKSIGINFO);
    VAL(PTRACE_GETSIGMASK);
    VAL(PTRACE_SETSIGMASK);
    VAL(PTRACE_GET_SYSCALL_INFO);
    VAL(PTRACE_O_TRACESYSGOOD);
    VAL(PTRACE_O_TRACEEXIT);
    VAL(PTRACE_O_EXITKILL);
    VAL(PTRACE_O_MASK);
    VAL(PTRACE_EVENT_VFORK_DONE);
    VAL(PTRACE_EVENT_STOP);
    VAL(PTRACE_PEEKSIGINFO_SHARED);
    VAL(PTRACE_SYSCALL_INFO_EXIT);
    VAL(AUDIT_ARCH_X86_64);
    VAL(NT_PRSTATUS);
    VAL(NT_PRFPREG);
    VAL(NT_X86_XSTATE);
    return 0;
}
