use super::*;

fn stmt(code: u16, k: u32) -> Insn {
    Insn::new(code, 0, 0, k)
}
fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
    Insn::new(code, jt, jf, k)
}

fn check(prog: &[Insn]) -> Result<(), Invalid> {
    let mut masks = [0u16; BPF_MAXINSNS];
    check_filter(prog, &mut masks)
}

const LD_NR: Insn = Insn::new(BPF_LD | BPF_W | BPF_ABS, 0, 0, 0);
const RET_ALLOW: Insn = Insn::new(BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);

/// What libseccomp emits for "errno EPERM on getppid, allow the rest",
/// with an arch check that kills on a foreign architecture.
fn typical() -> [Insn; 7] {
    [
        stmt(BPF_LD | BPF_W | BPF_ABS, 4),
        jump(BPF_JMP | BPF_JEQ | BPF_K, 0xc000_003e, 1, 0),
        stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        LD_NR,
        jump(BPF_JMP | BPF_JEQ | BPF_K, 110, 0, 1),
        stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),
        RET_ALLOW,
    ]
}

fn data(nr: i32) -> SeccompData {
    SeccompData { nr, arch: 0xc000_003e, instruction_pointer: 0x1122_3344_5566_7788, args: [1, 2, 3, 4, 5, 6] }
}

#[test]
fn a_typical_filter_passes_and_decides() {
    let p = typical();
    assert_eq!(check(&p), Ok(()));
    assert_eq!(run(&p, &data(110)), SECCOMP_RET_ERRNO | 1);
    assert_eq!(run(&p, &data(39)), SECCOMP_RET_ALLOW);
    let mut foreign = data(110);
    foreign.arch = 0x4000_0003;
    assert_eq!(run(&p, &foreign), SECCOMP_RET_KILL_PROCESS);
}

#[test]
fn lengths_outside_one_to_4096_are_refused() {
    assert_eq!(check(&[]), Err(Invalid::Length));
    let long = [RET_ALLOW; BPF_MAXINSNS + 1];
    assert_eq!(check(&long), Err(Invalid::Length));
    let max = [RET_ALLOW; BPF_MAXINSNS];
    assert_eq!(check(&max), Ok(()));
}

#[test]
fn data_loads_must_be_aligned_words_inside_seccomp_data() {
    for k in (0..64).step_by(4) {
        assert_eq!(check(&[stmt(BPF_LD | BPF_W | BPF_ABS, k), RET_ALLOW]), Ok(()), "offset {k}");
    }
    for k in [1, 2, 3, 62, 64, 68, 0x1000, SKF_AD_OFF, SKF_AD_OFF + 4, u32::MAX] {
        assert!(check(&[stmt(BPF_LD | BPF_W | BPF_ABS, k), RET_ALLOW]).is_err(), "offset {k}");
    }
    // Half-word and byte loads, and indirect ones, are socket-filter only.
    for code in
        [BPF_LD | BPF_H | BPF_ABS, BPF_LD | BPF_B | BPF_ABS, BPF_LD | BPF_W | BPF_IND, BPF_LDX | BPF_B | BPF_MSH]
    {
        assert_eq!(check(&[stmt(code, 0), RET_ALLOW]), Err(Invalid::Opcode { pc: 0 }), "code {code:#x}");
    }
}

#[test]
fn opcodes_outside_seccomp_are_refused() {
    // MOD is classic BPF but not seccomp; 0xff and BPF_JA|BPF_X are neither.
    assert_eq!(check(&[stmt(BPF_ALU | BPF_MOD | BPF_K, 3), RET_ALLOW]), Err(Invalid::Opcode { pc: 0 }));
    assert_eq!(check(&[stmt(0xff, 0), RET_ALLOW]), Err(Invalid::Opcode { pc: 0 }));
    assert_eq!(check(&[stmt(BPF_JMP | BPF_JA | BPF_X, 0), RET_ALLOW]), Err(Invalid::Opcode { pc: 0 }));
    assert_eq!(check(&[stmt(BPF_RET | BPF_X, 0)]), Err(Invalid::Opcode { pc: 0 }));
    let mut accepted = 0;
    for code in 0..=u16::MAX {
        let p = [stmt(code, 1), RET_ALLOW];
        if check(&p).is_ok() {
            accepted += 1;
        }
    }
    // With k = 1: 19 ALU (9 ops x K/X, NEG), 8 conditional jumps, 2
    // returns, LD W LEN/IMM, LDX W LEN/IMM, ST, STX, TAX, TXA. JA 1 jumps
    // past the end, the data load at 1 is unaligned, and loads from
    // memory fail because nothing stored first.
    assert_eq!(accepted, 19 + 8 + 2 + 2 + 2 + 2 + 2);
}

#[test]
fn constants_that_would_trap_are_refused() {
    assert_eq!(check(&[stmt(BPF_ALU | BPF_DIV | BPF_K, 0), RET_ALLOW]), Err(Invalid::Constant { pc: 0 }));
    assert_eq!(check(&[stmt(BPF_ALU | BPF_LSH | BPF_K, 32), RET_ALLOW]), Err(Invalid::Constant { pc: 0 }));
    assert_eq!(check(&[stmt(BPF_ALU | BPF_RSH | BPF_K, 31), RET_ALLOW]), Ok(()));
    assert_eq!(check(&[stmt(BPF_ST, 16), RET_ALLOW]), Err(Invalid::MemIndex { pc: 0 }));
}

#[test]
fn jumps_must_land_inside_the_program() {
    assert_eq!(check(&[jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1), RET_ALLOW]), Err(Invalid::Jump { pc: 0 }));
    assert_eq!(check(&[jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), RET_ALLOW]), Err(Invalid::Jump { pc: 0 }));
    assert_eq!(check(&[jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0), RET_ALLOW]), Ok(()));
    assert_eq!(check(&[stmt(BPF_JMP | BPF_JA, 1), RET_ALLOW]), Err(Invalid::Jump { pc: 0 }));
    assert_eq!(check(&[stmt(BPF_JMP | BPF_JA, u32::MAX), RET_ALLOW]), Err(Invalid::Jump { pc: 0 }));
    assert_eq!(check(&[stmt(BPF_JMP | BPF_JA, 1), RET_ALLOW, RET_ALLOW]), Ok(()));
}

#[test]
fn the_last_instruction_must_return() {
    assert_eq!(check(&[LD_NR]), Err(Invalid::NoReturn));
    assert_eq!(check(&[RET_ALLOW, LD_NR]), Err(Invalid::NoReturn));
    assert_eq!(check(&[stmt(BPF_RET | BPF_A, 0)]), Ok(()));
}

#[test]
fn scratch_words_must_be_stored_on_every_path_before_loads() {
    let stored = [stmt(BPF_ST, 3), stmt(BPF_LDX | BPF_MEM, 3), RET_ALLOW];
    assert_eq!(check(&stored), Ok(()));
    assert_eq!(check(&[stmt(BPF_LD | BPF_MEM, 3), RET_ALLOW]), Err(Invalid::LoadBeforeStore { pc: 0 }));
    // Stored only on the taken branch: the other path reaches the load.
    let one_path =
        [LD_NR, jump(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1), stmt(BPF_ST, 5), stmt(BPF_LD | BPF_MEM, 5), RET_ALLOW];
    assert_eq!(check(&one_path), Err(Invalid::LoadBeforeStore { pc: 3 }));
    let both = [
        stmt(BPF_ST, 5),
        LD_NR,
        jump(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1),
        stmt(BPF_ST, 6),
        stmt(BPF_LD | BPF_MEM, 5),
        RET_ALLOW,
    ];
    assert_eq!(check(&both), Ok(()));
}

#[test]
fn data_words_are_little_endian_halves() {
    let d = data(-1);
    assert_eq!(d.word(0), Some(u32::MAX));
    assert_eq!(d.word(8), Some(0x5566_7788));
    assert_eq!(d.word(12), Some(0x1122_3344));
    assert_eq!(d.word(16), Some(1));
    assert_eq!(d.word(20), Some(0));
    assert_eq!(d.word(56), Some(6));
    assert_eq!(d.word(60), Some(0));
    assert_eq!(d.word(64), None);
    assert_eq!(d.word(2), None);
}

#[test]
fn alu_memory_and_jumps_compute_as_classic_bpf() {
    let d = data(7);
    let prog = [
        LD_NR,                              // A = 7
        stmt(BPF_ALU | BPF_MUL | BPF_K, 6), // 42
        stmt(BPF_ST, 0),                    // M[0] = 42
        stmt(BPF_LDX | BPF_W | BPF_LEN, 0), // X = 64
        stmt(BPF_ALU | BPF_ADD | BPF_X, 0), // 106
        stmt(BPF_ALU | BPF_RSH | BPF_K, 1), // 53
        stmt(BPF_ALU | BPF_XOR | BPF_K, 1), // 52
        stmt(BPF_MISC | BPF_TAX, 0),        // X = 52
        stmt(BPF_LD | BPF_MEM, 0),          // A = 42
        stmt(BPF_ALU | BPF_SUB | BPF_X, 0), // -10
        stmt(BPF_ALU | BPF_NEG, 0),         // 10
        jump(BPF_JMP | BPF_JSET | BPF_K, 2, 0, 1),
        stmt(BPF_ALU | BPF_OR | BPF_K, 0x100), // 0x10a
        stmt(BPF_RET | BPF_A, 0),
    ];
    assert_eq!(check(&prog), Ok(()));
    assert_eq!(run(&prog, &d), 0x10a);
}

#[test]
fn division_by_a_zero_register_returns_zero() {
    let prog = [stmt(BPF_LDX | BPF_IMM, 0), stmt(BPF_ALU | BPF_DIV | BPF_X, 0), RET_ALLOW];
    assert_eq!(check(&prog), Ok(()));
    assert_eq!(run(&prog, &data(1)), 0);
}

#[test]
fn unchecked_programs_cannot_panic_or_escape() {
    assert_eq!(run(&[], &data(1)), 0);
    assert_eq!(run(&[stmt(BPF_JMP | BPF_JA, u32::MAX)], &data(1)), 0);
    assert_eq!(run(&[stmt(BPF_LD | BPF_W | BPF_ABS, 3), RET_ALLOW], &data(1)), 0);
    assert_eq!(run(&[stmt(BPF_ST, 99), RET_ALLOW], &data(1)), 0);
    assert_eq!(run(&[stmt(BPF_LD | BPF_MEM, 99), stmt(BPF_RET | BPF_A, 0)], &data(1)), 0);
    assert_eq!(run(&[jump(BPF_JMP | BPF_JEQ | BPF_K, 1, 255, 255)], &data(1)), 0);
    let mut masks = [0u16; 1];
    assert_eq!(check_filter(&[RET_ALLOW, RET_ALLOW], &mut masks), Err(Invalid::Length));
}

#[test]
fn the_strictest_action_wins_and_ties_keep_the_newer() {
    let order = [
        SECCOMP_RET_KILL_PROCESS,
        SECCOMP_RET_KILL_THREAD,
        SECCOMP_RET_TRAP,
        SECCOMP_RET_ERRNO,
        SECCOMP_RET_USER_NOTIF,
        SECCOMP_RET_TRACE,
        SECCOMP_RET_LOG,
        SECCOMP_RET_ALLOW,
    ];
    for (i, &a) in order.iter().enumerate() {
        for &b in &order[i + 1..] {
            assert_eq!(stricter(a, b), a);
            assert_eq!(stricter(b, a), a);
        }
    }
    assert_eq!(stricter(SECCOMP_RET_ERRNO | 1, SECCOMP_RET_ERRNO | 2), SECCOMP_RET_ERRNO | 1);
    assert_eq!(Action::of(0x0001_0000), Action::KillProcess);
    assert_eq!(Action::of(SECCOMP_RET_KILL_PROCESS | 5), Action::KillProcess);
    assert!(Action::available(SECCOMP_RET_LOG));
    assert!(!Action::available(SECCOMP_RET_ERRNO | 1));
    assert!(!Action::available(0x0001_0000));
}

#[test]
fn converted_lengths_follow_linux_conversion() {
    // 3 prologue + 1 + 2 (jf 0, but AUDIT_ARCH_X86_64 has the sign bit)
    // + 2 + 1 + 1 (jt 0: inverted) + 2 + 2.
    assert_eq!(converted_len(&typical()), 14);
    assert_eq!(converted_len(&[RET_ALLOW; 4096]), 3 + 2 * 4096);
    assert_eq!(converted_len(&[stmt(BPF_RET | BPF_A, 0)]), 4);
    assert_eq!(converted_len(&[stmt(BPF_ALU | BPF_DIV | BPF_X, 0), RET_ALLOW]), 3 + 5 + 2);
    // JSET cannot be inverted; both branches jumping takes a JA too; a
    // constant with the sign bit is moved to a register first.
    assert_eq!(converted_len(&[jump(BPF_JMP | BPF_JSET | BPF_K, 1, 0, 1), RET_ALLOW, RET_ALLOW]), 3 + 2 + 4);
    assert_eq!(converted_len(&[jump(BPF_JMP | BPF_JEQ | BPF_K, 1, 1, 1), RET_ALLOW, RET_ALLOW, RET_ALLOW]), 3 + 2 + 6);
    assert_eq!(converted_len(&[jump(BPF_JMP | BPF_JEQ | BPF_K, 0x8000_0000, 0, 0), RET_ALLOW]), 3 + 2 + 2);
    assert_eq!(converted_len(&[jump(BPF_JMP | BPF_JEQ | BPF_X, 0x8000_0000, 0, 0), RET_ALLOW]), 3 + 1 + 2);
}
