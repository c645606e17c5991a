//! ptrace(2) on x86_64: request numbers, options, events, the register
//! structs a tracer reads and writes (`user_regs_struct`, the offsets of
//! `struct user` that PEEKUSER/POKEUSER address) and the records of
//! PTRACE_GET_SYSCALL_INFO and PTRACE_PEEKSIGINFO. Values from
//! `<linux/ptrace.h>`, `<asm/ptrace-abi.h>` and `<sys/user.h>`; checked
//! against the host's headers in `tests/ptrace.rs`.

pub const PTRACE_TRACEME: u64 = 0;
pub const PTRACE_PEEKTEXT: u64 = 1;
pub const PTRACE_PEEKDATA: u64 = 2;
pub const PTRACE_PEEKUSR: u64 = 3;
pub const PTRACE_POKETEXT: u64 = 4;
pub const PTRACE_POKEDATA: u64 = 5;
pub const PTRACE_POKEUSR: u64 = 6;
pub const PTRACE_CONT: u64 = 7;
pub const PTRACE_KILL: u64 = 8;
pub const PTRACE_SINGLESTEP: u64 = 9;
pub const PTRACE_GETREGS: u64 = 12;
pub const PTRACE_SETREGS: u64 = 13;
pub const PTRACE_GETFPREGS: u64 = 14;
pub const PTRACE_SETFPREGS: u64 = 15;
pub const PTRACE_ATTACH: u64 = 16;
pub const PTRACE_DETACH: u64 = 17;
pub const PTRACE_GETFPXREGS: u64 = 18;
pub const PTRACE_SETFPXREGS: u64 = 19;
pub const PTRACE_SYSCALL: u64 = 24;
pub const PTRACE_ARCH_PRCTL: u64 = 30;
pub const PTRACE_SYSEMU: u64 = 31;
pub const PTRACE_SYSEMU_SINGLESTEP: u64 = 32;
pub const PTRACE_SINGLEBLOCK: u64 = 33;
pub const PTRACE_SETOPTIONS: u64 = 0x4200;
pub const PTRACE_GETEVENTMSG: u64 = 0x4201;
pub const PTRACE_GETSIGINFO: u64 = 0x4202;
pub const PTRACE_SETSIGINFO: u64 = 0x4203;
pub const PTRACE_GETREGSET: u64 = 0x4204;
pub const PTRACE_SETREGSET: u64 = 0x4205;
pub const PTRACE_SEIZE: u64 = 0x4206;
pub const PTRACE_INTERRUPT: u64 = 0x4207;
pub const PTRACE_LISTEN: u64 = 0x4208;
pub const PTRACE_PEEKSIGINFO: u64 = 0x4209;
pub const PTRACE_GETSIGMASK: u64 = 0x420a;
pub const PTRACE_SETSIGMASK: u64 = 0x420b;
pub const PTRACE_SECCOMP_GET_FILTER: u64 = 0x420c;
pub const PTRACE_SECCOMP_GET_METADATA: u64 = 0x420d;
pub const PTRACE_GET_SYSCALL_INFO: u64 = 0x420e;

pub const PTRACE_O_TRACESYSGOOD: u32 = 1;
pub const PTRACE_O_TRACEFORK: u32 = 1 << 1;
pub const PTRACE_O_TRACEVFORK: u32 = 1 << 2;
pub const PTRACE_O_TRACECLONE: u32 = 1 << 3;
pub const PTRACE_O_TRACEEXEC: u32 = 1 << 4;
pub const PTRACE_O_TRACEVFORKDONE: u32 = 1 << 5;
pub const PTRACE_O_TRACEEXIT: u32 = 1 << 6;
pub const PTRACE_O_TRACESECCOMP: u32 = 1 << 7;
pub const PTRACE_O_EXITKILL: u32 = 1 << 20;
pub const PTRACE_O_SUSPEND_SECCOMP: u32 = 1 << 21;
pub const PTRACE_O_MASK: u32 = 0x0000_00ff | PTRACE_O_EXITKILL | PTRACE_O_SUSPEND_SECCOMP;

pub const PTRACE_EVENT_FORK: u32 = 1;
pub const PTRACE_EVENT_VFORK: u32 = 2;
pub const PTRACE_EVENT_CLONE: u32 = 3;
pub const PTRACE_EVENT_EXEC: u32 = 4;
pub const PTRACE_EVENT_VFORK_DONE: u32 = 5;
pub const PTRACE_EVENT_EXIT: u32 = 6;
pub const PTRACE_EVENT_SECCOMP: u32 = 7;
pub const PTRACE_EVENT_STOP: u32 = 128;

/// The message at syscall stops (GETEVENTMSG), which also tells
/// PTRACE_GET_SYSCALL_INFO entry from exit.
pub const PTRACE_EVENTMSG_SYSCALL_ENTRY: u64 = 1;
pub const PTRACE_EVENTMSG_SYSCALL_EXIT: u64 = 2;

pub const PTRACE_PEEKSIGINFO_SHARED: u32 = 1;

pub const PTRACE_SYSCALL_INFO_NONE: u8 = 0;
pub const PTRACE_SYSCALL_INFO_ENTRY: u8 = 1;
pub const PTRACE_SYSCALL_INFO_EXIT: u8 = 2;
pub const PTRACE_SYSCALL_INFO_SECCOMP: u8 = 3;

/// `AUDIT_ARCH_X86_64`.
pub const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;

/// ELF note types of the register sets (GETREGSET/SETREGSET).
pub const NT_PRSTATUS: u64 = 1;
pub const NT_PRFPREG: u64 = 2;
pub const NT_X86_XSTATE: u64 = 0x202;

/// `struct user_regs_struct`: 27 unsigned longs in this order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserRegs {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub rbp: u64,
    pub rbx: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rax: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub orig_rax: u64,
    pub rip: u64,
    pub cs: u64,
    pub eflags: u64,
    pub rsp: u64,
    pub ss: u64,
    pub fs_base: u64,
    pub gs_base: u64,
    pub ds: u64,
    pub es: u64,
    pub fs: u64,
    pub gs: u64,
}

/// Word indexes of `user_regs_struct` (`offsetof / 8`), which are also
/// the PEEKUSER/POKEUSER offsets of the registers.
pub mod reg {
    pub const R15: usize = 0;
    pub const R14: usize = 1;
    pub const R13: usize = 2;
    pub const R12: usize = 3;
    pub const RBP: usize = 4;
    pub const RBX: usize = 5;
    pub const R11: usize = 6;
    pub const R10: usize = 7;
    pub const R9: usize = 8;
    pub const R8: usize = 9;
    pub const RAX: usize = 10;
    pub const RCX: usize = 11;
    pub const RDX: usize = 12;
    pub const RSI: usize = 13;
    pub const RDI: usize = 14;
    pub const ORIG_RAX: usize = 15;
    pub const RIP: usize = 16;
    pub const CS: usize = 17;
    pub const EFLAGS: usize = 18;
    pub const RSP: usize = 19;
    pub const SS: usize = 20;
    pub const FS_BASE: usize = 21;
    pub const GS_BASE: usize = 22;
    pub const DS: usize = 23;
    pub const ES: usize = 24;
    pub const FS: usize = 25;
    pub const GS: usize = 26;
    pub const COUNT: usize = 27;
}

impl UserRegs {
    pub const SIZE: usize = reg::COUNT * 8;

    pub fn to_words(&self) -> [u64; reg::COUNT] {
        [
            self.r15,
            self.r14,
            self.r13,
            self.r12,
            self.rbp,
            self.rbx,
            self.r11,
            self.r10,
            self.r9,
            self.r8,
            self.rax,
            self.rcx,
            self.rdx,
            self.rsi,
            self.rdi,
            self.orig_rax,
            self.rip,
            self.cs,
            self.eflags,
            self.rsp,
            self.ss,
            self.fs_base,
            self.gs_base,
            self.ds,
            self.es,
            self.fs,
            self.gs,
        ]
    }

    pub fn from_words(w: &[u64; reg::COUNT]) -> UserRegs {
        UserRegs {
            r15: w[0],
            r14: w[1],
            r13: w[2],
            r12: w[3],
            rbp: w[4],
            rbx: w[5],
            r11: w[6],
            r10: w[7],
            r9: w[8],
            r8: w[9],
            rax: w[10],
            rcx: w[11],
            rdx: w[12],
            rsi: w[13],
            rdi: w[14],
            orig_rax: w[15],
            rip: w[16],
            cs: w[17],
            eflags: w[18],
            rsp: w[19],
            ss: w[20],
            fs_base: w[21],
            gs_base: w[22],
            ds: w[23],
            es: w[24],
            fs: w[25],
            gs: w[26],
        }
    }

    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut b = [0u8; Self::SIZE];
        for (i, w) in self.to_words().iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    pub fn from_bytes(b: &[u8; Self::SIZE]) -> UserRegs {
        let mut w = [0u64; reg::COUNT];
        for (i, word) in w.iter_mut().enumerate() {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i * 8..i * 8 + 8]);
            *word = u64::from_le_bytes(x);
        }
        UserRegs::from_words(&w)
    }
}

/// Offsets in `struct user` (PEEKUSER/POKEUSER address the struct by
/// byte offset, a word at a time).
pub mod user_area {
    /// `regs`: a `user_regs_struct`.
    pub const REGS: usize = 0;
    /// `u_fpvalid` (int).
    pub const FPVALID: usize = 216;
    /// `i387`: the 512-byte `user_fpregs_struct` (FXSAVE image).
    pub const I387: usize = 224;
    pub const TSIZE: usize = 736;
    pub const DSIZE: usize = 744;
    pub const SSIZE: usize = 752;
    pub const START_CODE: usize = 760;
    pub const START_STACK: usize = 768;
    pub const SIGNAL: usize = 776;
    pub const AR0: usize = 792;
    pub const FPSTATE: usize = 800;
    pub const MAGIC: usize = 808;
    pub const COMM: usize = 816;
    /// `u_debugreg[8]`.
    pub const DEBUGREG: usize = 848;
    /// libc's `sizeof(struct user)`.
    pub const SIZE: usize = 912;
    /// The kernel's: two more words (`error_code`, `fault_address`),
    /// which PEEKUSER reads as 0; the bound of PEEKUSER/POKEUSER.
    pub const KERNEL_SIZE: usize = 928;
}

/// The bits of DR6 that read as one when nothing set them (Linux keeps
/// the tracer's view in positive polarity and flips it with this).
pub const DR6_RESERVED: u64 = 0xffff_0ff0;
/// DR6 bit: the trap came from single-stepping.
pub const DR_STEP: u64 = 1 << 14;

/// `struct ptrace_syscall_info` as PTRACE_GET_SYSCALL_INFO writes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyscallInfo {
    pub op: u8,
    pub arch: u32,
    pub instruction_pointer: u64,
    pub stack_pointer: u64,
    /// Entry: the number and arguments.
    pub nr: u64,
    pub args: [u64; 6],
    /// Exit: the return value and whether it is an error.
    pub rval: i64,
    pub is_error: u8,
}

impl SyscallInfo {
    /// The whole struct (the seccomp member is the largest: 84 bytes,
    /// padded to 88).
    pub const SIZE: usize = 88;
    /// `offsetof(struct ptrace_syscall_info, entry)`.
    pub const HEADER: usize = 24;

    /// The encoding and the size Linux reports for this op (the end of
    /// the member that op fills).
    pub fn encode(&self) -> ([u8; Self::SIZE], usize) {
        let mut b = [0u8; Self::SIZE];
        b[0] = self.op;
        b[4..8].copy_from_slice(&self.arch.to_le_bytes());
        b[8..16].copy_from_slice(&self.instruction_pointer.to_le_bytes());
        b[16..24].copy_from_slice(&self.stack_pointer.to_le_bytes());
        let size = match self.op {
            PTRACE_SYSCALL_INFO_ENTRY => {
                b[24..32].copy_from_slice(&self.nr.to_le_bytes());
                for (i, a) in self.args.iter().enumerate() {
                    b[32 + i * 8..40 + i * 8].copy_from_slice(&a.to_le_bytes());
                }
                80
            }
            PTRACE_SYSCALL_INFO_EXIT => {
                b[24..32].copy_from_slice(&self.rval.to_le_bytes());
                b[32] = self.is_error;
                33
            }
            _ => Self::HEADER,
        };
        (b, size)
    }
}

/// `struct ptrace_peeksiginfo_args`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeekSiginfoArgs {
    pub off: u64,
    pub flags: u32,
    pub nr: i32,
}

impl PeekSiginfoArgs {
    pub const SIZE: usize = 16;

    pub fn from_bytes(b: &[u8; 16]) -> PeekSiginfoArgs {
        let mut off = [0u8; 8];
        off.copy_from_slice(&b[..8]);
        let mut flags = [0u8; 4];
        flags.copy_from_slice(&b[8..12]);
        let mut nr = [0u8; 4];
        nr.copy_from_slice(&b[12..16]);
        PeekSiginfoArgs { off: u64::from_le_bytes(off), flags: u32::from_le_bytes(flags), nr: i32::from_le_bytes(nr) }
    }
}

/// The `wait4` status of a ptrace stop: `0x7f`, the signal above it, and
/// an event above that (`sig` may carry 0x80 for TRACESYSGOOD).
pub fn stop_status(sig: u32, event: u32) -> i32 {
    (0x7f | ((sig & 0xff) << 8) | ((event & 0xff) << 16)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regs_round_trip() {
        let mut w = [0u64; reg::COUNT];
        for (i, x) in w.iter_mut().enumerate() {
            *x = 0x1111_0000 + i as u64;
        }
        let r = UserRegs::from_words(&w);
        assert_eq!(r.orig_rax, w[reg::ORIG_RAX]);
        assert_eq!(r.rip, w[reg::RIP]);
        assert_eq!(r.gs, w[reg::GS]);
        assert_eq!(UserRegs::from_bytes(&r.to_bytes()), r);
        assert_eq!(r.to_words(), w);
    }

    #[test]
    fn syscall_info_sizes() {
        let entry =
            SyscallInfo { op: PTRACE_SYSCALL_INFO_ENTRY, nr: 39, args: [1, 2, 3, 4, 5, 6], ..Default::default() };
        let (b, n) = entry.encode();
        assert_eq!(n, 80);
        assert_eq!(b[24], 39);
        assert_eq!(b[72], 6);
        let exit = SyscallInfo { op: PTRACE_SYSCALL_INFO_EXIT, rval: -2, is_error: 1, ..Default::default() };
        let (b, n) = exit.encode();
        assert_eq!(n, 33);
        assert_eq!(b[24], 0xfe);
        assert_eq!(b[32], 1);
        assert_eq!(SyscallInfo::default().encode().1, 24);
    }

    #[test]
    fn stop_statuses() {
        assert_eq!(stop_status(19, 0), 0x137f);
        assert_eq!(stop_status(5 | 0x80, 0), 0x857f);
        assert_eq!(stop_status(5, PTRACE_EVENT_STOP), 0x80057f);
        assert_eq!(stop_status(5, PTRACE_EVENT_FORK), 0x1057f);
    }
}
