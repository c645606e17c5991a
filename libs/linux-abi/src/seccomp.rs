//! Secure computing (`seccomp(2)`, `<linux/seccomp.h>`) and the classic
//! BPF instruction set its filters are written in (`<linux/filter.h>`,
//! `<linux/bpf_common.h>`): modes, operations, filter flags, the action
//! values a filter returns, opcodes, and the sizes of the structs
//! exchanged with user space.

/// `prctl(PR_GET_SECCOMP)` / `/proc/<pid>/status` modes.
pub const SECCOMP_MODE_DISABLED: u32 = 0;
pub const SECCOMP_MODE_STRICT: u32 = 1;
pub const SECCOMP_MODE_FILTER: u32 = 2;

/// `seccomp(2)` operations.
pub const SECCOMP_SET_MODE_STRICT: u32 = 0;
pub const SECCOMP_SET_MODE_FILTER: u32 = 1;
pub const SECCOMP_GET_ACTION_AVAIL: u32 = 2;
pub const SECCOMP_GET_NOTIF_SIZES: u32 = 3;

/// `SECCOMP_SET_MODE_FILTER` flags.
pub const SECCOMP_FILTER_FLAG_TSYNC: u32 = 1 << 0;
pub const SECCOMP_FILTER_FLAG_LOG: u32 = 1 << 1;
pub const SECCOMP_FILTER_FLAG_SPEC_ALLOW: u32 = 1 << 2;
pub const SECCOMP_FILTER_FLAG_NEW_LISTENER: u32 = 1 << 3;
pub const SECCOMP_FILTER_FLAG_TSYNC_ESRCH: u32 = 1 << 4;
pub const SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: u32 = 1 << 5;

/// Filter return values: the action in the high 16 bits (compared as a
/// signed number, lowest wins), data in the low 16.
pub const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
pub const SECCOMP_RET_KILL_THREAD: u32 = 0x0000_0000;
pub const SECCOMP_RET_KILL: u32 = SECCOMP_RET_KILL_THREAD;
pub const SECCOMP_RET_TRAP: u32 = 0x0003_0000;
pub const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
pub const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;
pub const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;
pub const SECCOMP_RET_LOG: u32 = 0x7ffc_0000;
pub const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
pub const SECCOMP_RET_ACTION_FULL: u32 = 0xffff_0000;
pub const SECCOMP_RET_ACTION: u32 = 0x7fff_0000;
pub const SECCOMP_RET_DATA: u32 = 0x0000_ffff;

/// `struct seccomp_data`: nr (int), arch (u32), instruction_pointer
/// (u64), args (6 x u64).
pub const SECCOMP_DATA_SIZE: usize = 64;
pub const SECCOMP_DATA_NR: usize = 0;
pub const SECCOMP_DATA_ARCH: usize = 4;
pub const SECCOMP_DATA_IP: usize = 8;
pub const SECCOMP_DATA_ARGS: usize = 16;
/// `struct seccomp_notif`, `struct seccomp_notif_resp` (for
/// `SECCOMP_GET_NOTIF_SIZES`).
pub const SECCOMP_NOTIF_SIZE: usize = 80;
pub const SECCOMP_NOTIF_RESP_SIZE: usize = 24;

/// `struct sock_fprog` (len: u16, then the filter pointer at 8) and
/// `struct sock_filter` (code: u16, jt: u8, jf: u8, k: u32).
pub const SOCK_FPROG_SIZE: usize = 16;
pub const SOCK_FPROG_FILTER: usize = 8;
pub const SOCK_FILTER_SIZE: usize = 8;

/// Classic BPF limits.
pub const BPF_MAXINSNS: usize = 4096;
pub const BPF_MEMWORDS: usize = 16;

/// Instruction classes.
pub const BPF_LD: u16 = 0x00;
pub const BPF_LDX: u16 = 0x01;
pub const BPF_ST: u16 = 0x02;
pub const BPF_STX: u16 = 0x03;
pub const BPF_ALU: u16 = 0x04;
pub const BPF_JMP: u16 = 0x05;
pub const BPF_RET: u16 = 0x06;
pub const BPF_MISC: u16 = 0x07;
/// Load sizes.
pub const BPF_W: u16 = 0x00;
pub const BPF_H: u16 = 0x08;
pub const BPF_B: u16 = 0x10;
/// Load modes.
pub const BPF_IMM: u16 = 0x00;
pub const BPF_ABS: u16 = 0x20;
pub const BPF_IND: u16 = 0x40;
pub const BPF_MEM: u16 = 0x60;
pub const BPF_LEN: u16 = 0x80;
pub const BPF_MSH: u16 = 0xa0;
/// ALU operations.
pub const BPF_ADD: u16 = 0x00;
pub const BPF_SUB: u16 = 0x10;
pub const BPF_MUL: u16 = 0x20;
pub const BPF_DIV: u16 = 0x30;
pub const BPF_OR: u16 = 0x40;
pub const BPF_AND: u16 = 0x50;
pub const BPF_LSH: u16 = 0x60;
pub const BPF_RSH: u16 = 0x70;
pub const BPF_NEG: u16 = 0x80;
pub const BPF_MOD: u16 = 0x90;
pub const BPF_XOR: u16 = 0xa0;
/// Jumps.
pub const BPF_JA: u16 = 0x00;
pub const BPF_JEQ: u16 = 0x10;
pub const BPF_JGT: u16 = 0x20;
pub const BPF_JGE: u16 = 0x30;
pub const BPF_JSET: u16 = 0x40;
/// Operand source: the constant k or the index register X.
pub const BPF_K: u16 = 0x00;
pub const BPF_X: u16 = 0x08;
/// Return value source: the accumulator.
pub const BPF_A: u16 = 0x10;
/// Register transfers.
pub const BPF_TAX: u16 = 0x00;
pub const BPF_TXA: u16 = 0x80;
/// Where ancillary loads (socket filters only) start.
pub const SKF_AD_OFF: u32 = 0xffff_f000;
