//! Checks the `seccomp` module against the kernel UAPI headers installed
//! on the build host: `tests/seccomp_layout.c` is compiled with the host C
//! compiler (`$CC`, else `cc`) and prints the constants and struct
//! layouts. Skipped, with a note on stderr, when the compiler or headers
//! are missing.

use c_oracle::{c_probe, table, CValues};
use linux_abi::seccomp::*;

fn run_c() -> Option<CValues> {
    c_probe!("seccomp_layout.c", "linux/seccomp.h")
}

#[test]
fn seccomp_constants_and_layouts() {
    let Some(c) = run_c() else { return };
    let get = |k: &str| c.get(k);
    let sizes = [
        ("seccomp_data", SECCOMP_DATA_SIZE),
        ("seccomp_data.nr", SECCOMP_DATA_NR),
        ("seccomp_data.arch", SECCOMP_DATA_ARCH),
        ("seccomp_data.instruction_pointer", SECCOMP_DATA_IP),
        ("seccomp_data.args", SECCOMP_DATA_ARGS),
        ("seccomp_notif", SECCOMP_NOTIF_SIZE),
        ("seccomp_notif_resp", SECCOMP_NOTIF_RESP_SIZE),
        ("sock_fprog", SOCK_FPROG_SIZE),
        ("sock_fprog.filter", SOCK_FPROG_FILTER),
        ("sock_filter", SOCK_FILTER_SIZE),
    ];
    for (k, v) in sizes {
        assert_eq!(get(k), v as i128, "{k}");
    }
    let mut table = table![
        SECCOMP_MODE_DISABLED,
        SECCOMP_MODE_STRICT,
        SECCOMP_MODE_FILTER,
        SECCOMP_SET_MODE_STRICT,
        SECCOMP_SET_MODE_FILTER,
        SECCOMP_GET_ACTION_AVAIL,
        SECCOMP_GET_NOTIF_SIZES,
        SECCOMP_FILTER_FLAG_TSYNC,
        SECCOMP_FILTER_FLAG_LOG,
        SECCOMP_FILTER_FLAG_SPEC_ALLOW,
        SECCOMP_FILTER_FLAG_NEW_LISTENER,
        SECCOMP_FILTER_FLAG_TSYNC_ESRCH,
        SECCOMP_RET_KILL_PROCESS,
        SECCOMP_RET_KILL_THREAD,
        SECCOMP_RET_KILL,
        SECCOMP_RET_TRAP,
        SECCOMP_RET_ERRNO,
        SECCOMP_RET_USER_NOTIF,
        SECCOMP_RET_TRACE,
        SECCOMP_RET_LOG,
        SECCOMP_RET_ALLOW,
        SECCOMP_RET_ACTION_FULL,
        SECCOMP_RET_ACTION,
        SECCOMP_RET_DATA,
        BPF_MAXINSNS,
        BPF_MEMWORDS,
        BPF_LD,
        BPF_LDX,
        BPF_ST,
        BPF_STX,
        BPF_ALU,
        BPF_JMP,
        BPF_RET,
        BPF_MISC,
        BPF_W,
        BPF_H,
        BPF_B,
        BPF_IMM,
        BPF_ABS,
        BPF_IND,
        BPF_MEM,
        BPF_LEN,
        BPF_MSH,
        BPF_ADD,
        BPF_SUB,
        BPF_MUL,
        BPF_DIV,
        BPF_OR,
        BPF_AND,
        BPF_LSH,
        BPF_RSH,
        BPF_NEG,
        BPF_MOD,
        BPF_XOR,
        BPF_JA,
        BPF_JEQ,
        BPF_JGT,
        BPF_JGE,
        BPF_JSET,
        BPF_K,
        BPF_X,
        BPF_A,
        BPF_TAX,
        BPF_TXA,
        SKF_AD_OFF,
    ];
    // Headers older than Linux 6.0 lack this flag.
    if c.contains("SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") {
        table.push(("SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV", SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV as i128));
    }
    c.constants(&table, |k| k.starts_with(|ch: char| ch.is_ascii_uppercase()));
}
