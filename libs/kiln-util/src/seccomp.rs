//! The pure logic of seccomp filters: Linux's checks on a classic BPF
//! program before it may be attached (`bpf_check_classic`, then
//! `seccomp_check_filter`), the interpreter that runs one over a
//! `struct seccomp_data`, and the order of precedence between the
//! actions that stacked filters return. The kernel copies the program in,
//! keeps the chain of filters and acts on the verdict; nothing here
//! allocates (the load-before-store check borrows its scratch space from
//! the caller) and nothing panics on any input, checked or not.

use linux_abi::seccomp::*;

/// One classic BPF instruction (`struct sock_filter`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

impl Insn {
    pub const fn new(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
        Insn { code, jt, jf, k }
    }

    /// Decodes a `struct sock_filter` as user memory holds it.
    pub fn from_bytes(b: [u8; SOCK_FILTER_SIZE]) -> Insn {
        Insn {
            code: u16::from_le_bytes([b[0], b[1]]),
            jt: b[2],
            jf: b[3],
            k: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }
}

/// Why a program was refused (seccomp answers EINVAL for every one; the
/// reasons are for tests and logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// No instructions, or more than `BPF_MAXINSNS`.
    Length,
    /// An opcode classic BPF does not have, or seccomp does not allow.
    Opcode { pc: usize },
    /// Division by a zero constant, or a constant shift of 32 or more.
    Constant { pc: usize },
    /// A scratch-memory index past `BPF_MEMWORDS`.
    MemIndex { pc: usize },
    /// A jump past the last instruction.
    Jump { pc: usize },
    /// A load from `struct seccomp_data` that is unaligned or out of it.
    DataOffset { pc: usize },
    /// The program does not end with a return.
    NoReturn,
    /// A scratch word read on some path before any store to it.
    LoadBeforeStore { pc: usize },
}

const LD_W_ABS: u16 = BPF_LD | BPF_W | BPF_ABS;
const LD_W_LEN: u16 = BPF_LD | BPF_W | BPF_LEN;
const LDX_W_LEN: u16 = BPF_LDX | BPF_W | BPF_LEN;

/// The opcodes classic BPF has at all (Linux's `chk_code_allowed`).
fn classic_opcode(code: u16) -> bool {
    let alu = |op| [BPF_ALU | op | BPF_K, BPF_ALU | op | BPF_X];
    let ops = [BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_MOD, BPF_AND, BPF_OR, BPF_XOR, BPF_LSH, BPF_RSH];
    if ops.iter().any(|&op| alu(op).contains(&code)) {
        return true;
    }
    let jumps = [BPF_JEQ, BPF_JGE, BPF_JGT, BPF_JSET];
    if jumps.iter().any(|&j| code == BPF_JMP | j | BPF_K || code == BPF_JMP | j | BPF_X) {
        return true;
    }
    matches!(
        code,
        c if c == BPF_ALU | BPF_NEG
            || c == BPF_LD | BPF_W | BPF_ABS
            || c == BPF_LD | BPF_H | BPF_ABS
            || c == BPF_LD | BPF_B | BPF_ABS
            || c == BPF_LD | BPF_W | BPF_LEN
            || c == BPF_LD | BPF_W | BPF_IND
            || c == BPF_LD | BPF_H | BPF_IND
            || c == BPF_LD | BPF_B | BPF_IND
            || c == BPF_LD | BPF_IMM
            || c == BPF_LD | BPF_MEM
            || c == BPF_LDX | BPF_W | BPF_LEN
            || c == BPF_LDX | BPF_B | BPF_MSH
            || c == BPF_LDX | BPF_IMM
            || c == BPF_LDX | BPF_MEM
            || c == BPF_ST
            || c == BPF_STX
            || c == BPF_MISC | BPF_TAX
            || c == BPF_MISC | BPF_TXA
            || c == BPF_RET | BPF_K
            || c == BPF_RET | BPF_A
            || c == BPF_JMP | BPF_JA
    )
}

fn is_conditional_jump(code: u16) -> bool {
    code & 0x07 == BPF_JMP && code != BPF_JMP | BPF_JA
}

/// The ancillary loads socket filters know (`bpf_anc_helper`); seccomp
/// refuses them later anyway, but the classic check lets them through.
fn known_ancillary(k: u32) -> bool {
    // SKF_AD_PROTOCOL (0) .. SKF_AD_RANDOM (56), every 4 bytes, and
    // SKF_AD_VLAN_TPID (60).
    let off = k.wrapping_sub(SKF_AD_OFF);
    k >= SKF_AD_OFF && off <= 60 && off.is_multiple_of(4)
}

/// Linux's `bpf_check_classic`: what any classic BPF program must satisfy.
/// `masks` is scratch space of at least `prog.len()` words.
pub fn check_classic(prog: &[Insn], masks: &mut [u16]) -> Result<(), Invalid> {
    let len = prog.len();
    if len == 0 || len > BPF_MAXINSNS {
        return Err(Invalid::Length);
    }
    for (pc, i) in prog.iter().enumerate() {
        if !classic_opcode(i.code) {
            return Err(Invalid::Opcode { pc });
        }
        let code = i.code;
        if code == BPF_ALU | BPF_DIV | BPF_K || code == BPF_ALU | BPF_MOD | BPF_K {
            if i.k == 0 {
                return Err(Invalid::Constant { pc });
            }
        } else if code == BPF_ALU | BPF_LSH | BPF_K || code == BPF_ALU | BPF_RSH | BPF_K {
            if i.k >= 32 {
                return Err(Invalid::Constant { pc });
            }
        } else if code == BPF_LD | BPF_MEM || code == BPF_LDX | BPF_MEM || code == BPF_ST || code == BPF_STX {
            if i.k as usize >= BPF_MEMWORDS {
                return Err(Invalid::MemIndex { pc });
            }
        } else if code == BPF_JMP | BPF_JA {
            if i.k as usize >= len - pc - 1 {
                return Err(Invalid::Jump { pc });
            }
        } else if is_conditional_jump(code) {
            if pc + i.jt as usize + 1 >= len || pc + i.jf as usize + 1 >= len {
                return Err(Invalid::Jump { pc });
            }
        } else if (code == LD_W_ABS || code == BPF_LD | BPF_H | BPF_ABS || code == BPF_LD | BPF_B | BPF_ABS)
            && i.k >= SKF_AD_OFF
            && !known_ancillary(i.k)
        {
            return Err(Invalid::DataOffset { pc });
        }
    }
    let last = prog[len - 1].code;
    if last != BPF_RET | BPF_K && last != BPF_RET | BPF_A {
        return Err(Invalid::NoReturn);
    }
    check_loads_and_stores(prog, masks)
}

/// Every read of a scratch word must follow a store to it on every path
/// (Linux's `check_load_and_stores`). Jumps only go forward, so one pass
/// carrying the set of written words, met at each jump target, suffices.
fn check_loads_and_stores(prog: &[Insn], masks: &mut [u16]) -> Result<(), Invalid> {
    let Some(masks) = masks.get_mut(..prog.len()) else {
        return Err(Invalid::Length);
    };
    masks.fill(0xffff);
    let mut valid: u16 = 0;
    for (pc, i) in prog.iter().enumerate() {
        valid &= masks[pc];
        let code = i.code;
        let bit = 1u16.checked_shl(i.k).unwrap_or(0);
        if code == BPF_ST || code == BPF_STX {
            valid |= bit;
        } else if code == BPF_LD | BPF_MEM || code == BPF_LDX | BPF_MEM {
            if valid & bit == 0 {
                return Err(Invalid::LoadBeforeStore { pc });
            }
        } else if code == BPF_JMP | BPF_JA {
            if let Some(m) = masks.get_mut(pc + 1 + i.k as usize) {
                *m &= valid;
            }
            valid = 0xffff;
        } else if is_conditional_jump(code) {
            for off in [i.jt, i.jf] {
                if let Some(m) = masks.get_mut(pc + 1 + off as usize) {
                    *m &= valid;
                }
            }
            valid = 0xffff;
        }
    }
    Ok(())
}

/// The opcodes seccomp accepts on top of the classic check (Linux's
/// `seccomp_check_filter`): word loads from the data at aligned offsets
/// inside it, the data's length, and no packet loads, MOD or ancillary
/// operations.
fn check_seccomp_only(prog: &[Insn]) -> Result<(), Invalid> {
    for (pc, i) in prog.iter().enumerate() {
        let code = i.code;
        if code == LD_W_ABS {
            if i.k as usize >= SECCOMP_DATA_SIZE || i.k & 3 != 0 {
                return Err(Invalid::DataOffset { pc });
            }
            continue;
        }
        let allowed = code == LD_W_LEN
            || code == LDX_W_LEN
            || code == BPF_RET | BPF_K
            || code == BPF_RET | BPF_A
            || code == BPF_ALU | BPF_NEG
            || code == BPF_LD | BPF_IMM
            || code == BPF_LDX | BPF_IMM
            || code == BPF_MISC | BPF_TAX
            || code == BPF_MISC | BPF_TXA
            || code == BPF_LD | BPF_MEM
            || code == BPF_LDX | BPF_MEM
            || code == BPF_ST
            || code == BPF_STX
            || code == BPF_JMP | BPF_JA
            || (code & 0x07 == BPF_ALU && code & 0xf0 != BPF_MOD && classic_opcode(code))
            || (is_conditional_jump(code) && classic_opcode(code));
        if !allowed {
            return Err(Invalid::Opcode { pc });
        }
    }
    Ok(())
}

/// Everything Linux checks before a seccomp filter is attached, in its
/// order. `masks` is scratch space of at least `prog.len()` words.
pub fn check_filter(prog: &[Insn], masks: &mut [u16]) -> Result<(), Invalid> {
    check_classic(prog, masks)?;
    check_seccomp_only(prog)
}

/// The system call a filter judges (`struct seccomp_data`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeccompData {
    pub nr: i32,
    pub arch: u32,
    pub instruction_pointer: u64,
    pub args: [u64; 6],
}

impl SeccompData {
    /// The 32-bit word at byte offset `k`, in the machine's (little-endian)
    /// order, as seccomp loads it; `None` outside the struct or unaligned.
    pub fn word(&self, k: u32) -> Option<u32> {
        if k & 3 != 0 {
            return None;
        }
        let k = k as usize;
        let split = |v: u64, hi: bool| if hi { (v >> 32) as u32 } else { v as u32 };
        match k {
            SECCOMP_DATA_NR => Some(self.nr as u32),
            SECCOMP_DATA_ARCH => Some(self.arch),
            8 | 12 => Some(split(self.instruction_pointer, k == 12)),
            16..=63 => {
                let off = k - SECCOMP_DATA_ARGS;
                Some(split(self.args[off / 8], off % 8 == 4))
            }
            _ => None,
        }
    }
}

/// Runs a program that passed `check_filter` over `data` and returns what
/// it returns. A program that did not pass cannot make this panic or
/// loop: an instruction seccomp would have refused ends it with 0
/// (`SECCOMP_RET_KILL_THREAD`), as does running off the end. Division
/// by a zero X returns 0 as well, as Linux's conversion of classic
/// programs does.
pub fn run(prog: &[Insn], data: &SeccompData) -> u32 {
    let (mut a, mut x) = (0u32, 0u32);
    let mut mem = [0u32; BPF_MEMWORDS];
    let mut pc = 0usize;
    while let Some(&i) = prog.get(pc) {
        pc += 1;
        let code = i.code;
        match code & 0x07 {
            BPF_LD => match code {
                LD_W_ABS => match data.word(i.k) {
                    Some(w) => a = w,
                    None => return 0,
                },
                LD_W_LEN => a = SECCOMP_DATA_SIZE as u32,
                c if c == BPF_LD | BPF_IMM => a = i.k,
                c if c == BPF_LD | BPF_MEM => a = mem.get(i.k as usize).copied().unwrap_or(0),
                _ => return 0,
            },
            BPF_LDX => match code {
                LDX_W_LEN => x = SECCOMP_DATA_SIZE as u32,
                c if c == BPF_LDX | BPF_IMM => x = i.k,
                c if c == BPF_LDX | BPF_MEM => x = mem.get(i.k as usize).copied().unwrap_or(0),
                _ => return 0,
            },
            BPF_ST | BPF_STX if code & !0x07 == 0 => {
                let v = if code == BPF_ST { a } else { x };
                match mem.get_mut(i.k as usize) {
                    Some(m) => *m = v,
                    None => return 0,
                }
            }
            BPF_ALU => {
                let src = if code & BPF_X != 0 { x } else { i.k };
                a = match code & 0xf0 {
                    BPF_ADD => a.wrapping_add(src),
                    BPF_SUB => a.wrapping_sub(src),
                    BPF_MUL => a.wrapping_mul(src),
                    BPF_DIV => match a.checked_div(src) {
                        Some(q) => q,
                        None => return 0,
                    },
                    BPF_MOD => match a.checked_rem(src) {
                        Some(r) => r,
                        None => return 0,
                    },
                    BPF_AND => a & src,
                    BPF_OR => a | src,
                    BPF_XOR => a ^ src,
                    // Linux's interpreter masks a register shift to 5 bits.
                    BPF_LSH => a << (src & 31),
                    BPF_RSH => a >> (src & 31),
                    BPF_NEG if code == BPF_ALU | BPF_NEG => a.wrapping_neg(),
                    _ => return 0,
                };
            }
            BPF_JMP => {
                let src = if code & BPF_X != 0 { x } else { i.k };
                let taken = match code & 0xf0 {
                    BPF_JA if code == BPF_JMP | BPF_JA => {
                        pc = pc.saturating_add(i.k as usize);
                        continue;
                    }
                    BPF_JEQ => a == src,
                    BPF_JGT => a > src,
                    BPF_JGE => a >= src,
                    BPF_JSET => a & src != 0,
                    _ => return 0,
                };
                pc += usize::from(if taken { i.jt } else { i.jf });
            }
            BPF_RET => {
                return match code {
                    c if c == BPF_RET | BPF_K => i.k,
                    c if c == BPF_RET | BPF_A => a,
                    _ => 0,
                };
            }
            BPF_MISC => match code {
                c if c == BPF_MISC | BPF_TAX => x = a,
                c if c == BPF_MISC | BPF_TXA => a = x,
                _ => return 0,
            },
            _ => return 0,
        }
    }
    0
}

/// What a filter's return value asks for, by its action bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    KillProcess,
    KillThread,
    Trap,
    Errno,
    UserNotif,
    Trace,
    Log,
    Allow,
}

impl Action {
    /// The action of a return value. Values seccomp does not know kill
    /// the process, as Linux's `__seccomp_filter` treats them.
    pub fn of(ret: u32) -> Action {
        match ret & SECCOMP_RET_ACTION_FULL {
            SECCOMP_RET_KILL_THREAD => Action::KillThread,
            SECCOMP_RET_TRAP => Action::Trap,
            SECCOMP_RET_ERRNO => Action::Errno,
            SECCOMP_RET_USER_NOTIF => Action::UserNotif,
            SECCOMP_RET_TRACE => Action::Trace,
            SECCOMP_RET_LOG => Action::Log,
            SECCOMP_RET_ALLOW => Action::Allow,
            _ => Action::KillProcess,
        }
    }

    /// Whether `SECCOMP_GET_ACTION_AVAIL` reports `action` (the full
    /// action bits, no data) as supported.
    pub fn available(action: u32) -> bool {
        matches!(
            action,
            SECCOMP_RET_KILL_PROCESS
                | SECCOMP_RET_KILL_THREAD
                | SECCOMP_RET_TRAP
                | SECCOMP_RET_ERRNO
                | SECCOMP_RET_USER_NOTIF
                | SECCOMP_RET_TRACE
                | SECCOMP_RET_LOG
                | SECCOMP_RET_ALLOW
        )
    }
}

/// The return value that wins between two filters' (Linux's
/// `seccomp_run_filters`): the lower action, compared as a signed
/// number, so KILL_PROCESS < KILL_THREAD < TRAP < ERRNO < USER_NOTIF <
/// TRACE < LOG < ALLOW; on a tie, the one seen first (the newer filter).
pub fn stricter(first: u32, later: u32) -> u32 {
    let action = |r: u32| (r & SECCOMP_RET_ACTION_FULL) as i32;
    if action(later) < action(first) {
        later
    } else {
        first
    }
}

/// The most instructions all of a thread's filters may add up to, each
/// filter counting four more (Linux's MAX_INSNS_PER_PATH); attaching past
/// it is ENOMEM. The count is of the instructions Linux runs, the eBPF
/// its classic program converts to ([`converted_len`]).
pub const MAX_INSNS_PER_PATH: usize = 1 << 15;

/// The length of a checked seccomp program once Linux converts it to
/// eBPF (`bpf_convert_filter`), which is what its path limit counts:
/// three instructions of prologue (clear A and X, keep the context),
/// two for a constant return (move, exit), five for a division by X (the
/// zero test and its early exit), and for a conditional jump one, or two
/// when neither branch falls through and the condition cannot be
/// inverted (JSET) or both branches jump, plus one to widen a constant
/// with the sign bit set.
pub fn converted_len(prog: &[Insn]) -> usize {
    let mut len = 3;
    for i in prog {
        let code = i.code;
        len += if code == BPF_RET | BPF_K || code == BPF_RET | BPF_A {
            if code == BPF_RET | BPF_K {
                2
            } else {
                1
            }
        } else if code == BPF_ALU | BPF_DIV | BPF_X || code == BPF_ALU | BPF_MOD | BPF_X {
            5
        } else if is_conditional_jump(code) {
            let widen = usize::from(code & BPF_X == 0 && (i.k as i32) < 0);
            let op = code & 0xf0;
            let one = i.jf == 0 || (i.jt == 0 && (op == BPF_JEQ || op == BPF_JGT || op == BPF_JGE));
            widen + if one { 1 } else { 2 }
        } else {
            1
        };
    }
    len
}
/// What each filter adds to the count beyond its own length.
pub const FILTER_PENALTY: usize = 4;

/// The system calls strict mode allows (x86_64: read, write, exit,
/// rt_sigreturn).
pub fn strict_allows(nr: u64) -> bool {
    matches!(nr, 0 | 1 | 60 | 15)
}

#[cfg(test)]
mod tests;
