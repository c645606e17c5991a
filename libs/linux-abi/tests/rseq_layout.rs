//! Checks the `rseq` and `pidfd` modules against the kernel UAPI headers
//! installed on the build host: `tests/rseq_layout.c` is compiled with
//! the host C compiler (`$CC`, else `cc`) and prints struct sizes, field
//! offsets and constants; each encoder gives its fields distinct values
//! and the test looks for them at the C offsets. Skipped, with a note on
//! stderr, when the compiler or headers are missing.

use c_oracle::{c_probe, CValues};
use linux_abi::layout::Iovec;
use linux_abi::pidfd::*;
use linux_abi::rseq::*;

fn run_c() -> Option<CValues> {
    c_probe!("rseq_layout.c", "linux/rseq.h")
}

#[test]
fn rseq_and_pidfd_layouts_and_constants() {
    let Some(c) = run_c() else { return };
    assert_eq!(c.get("rseq"), Rseq::SIZE as i128);
    assert_eq!(c.get("rseq.align"), Rseq::ALIGN as i128);
    let r = Rseq {
        cpu_id_start: 0x1111,
        cpu_id: 0x2222,
        rseq_cs: 0x3333_4444_5555,
        flags: 0x6666,
        node_id: 0x77,
        mm_cid: 0x88,
    };
    let b = r.to_bytes();
    c.field("rseq.cpu_id_start", &b, &r.cpu_id_start.to_le_bytes());
    c.field("rseq.cpu_id", &b, &r.cpu_id.to_le_bytes());
    c.field("rseq.rseq_cs", &b, &r.rseq_cs.to_le_bytes());
    c.field("rseq.flags", &b, &r.flags.to_le_bytes());
    // Linux 6.3's node_id and mm_cid, in the 6.1 header's padding.
    c.field("rseq.flags_end", &b, &r.node_id.to_le_bytes());
    const { assert!(Rseq::MM_CID == Rseq::NODE_ID + 4) };
    const { assert!(Rseq::MM_CID + 4 <= Rseq::SIZE) };

    assert_eq!(c.get("rseq_cs"), RseqCs::SIZE as i128);
    let cs = RseqCs { version: 0x11, flags: 0x22, start_ip: 0x3333, post_commit_offset: 0x4444, abort_ip: 0x5555 };
    let b = cs.to_bytes();
    c.field("rseq_cs.version", &b, &cs.version.to_le_bytes());
    c.field("rseq_cs.flags", &b, &cs.flags.to_le_bytes());
    c.field("rseq_cs.start_ip", &b, &cs.start_ip.to_le_bytes());
    c.field("rseq_cs.post_commit_offset", &b, &cs.post_commit_offset.to_le_bytes());
    c.field("rseq_cs.abort_ip", &b, &cs.abort_ip.to_le_bytes());

    assert_eq!(c.get("RSEQ_FLAG_UNREGISTER"), RSEQ_FLAG_UNREGISTER as i128);
    assert_eq!(c.get("RSEQ_CPU_ID_UNINITIALIZED"), RSEQ_CPU_ID_UNINITIALIZED as i128);
    assert_eq!(c.get("RSEQ_CPU_ID_REGISTRATION_FAILED"), RSEQ_CPU_ID_REGISTRATION_FAILED as i128);
    assert_eq!(c.get("RSEQ_CS_FLAG_NO_RESTART_ON_PREEMPT"), RSEQ_CS_FLAG_NO_RESTART_ON_PREEMPT as i128);
    assert_eq!(c.get("RSEQ_CS_FLAG_NO_RESTART_ON_SIGNAL"), RSEQ_CS_FLAG_NO_RESTART_ON_SIGNAL as i128);
    assert_eq!(c.get("RSEQ_CS_FLAG_NO_RESTART_ON_MIGRATE"), RSEQ_CS_FLAG_NO_RESTART_ON_MIGRATE as i128);
    assert_eq!(c.get("PIDFD_NONBLOCK"), PIDFD_NONBLOCK as i128);
    assert_eq!(c.get("P_PIDFD"), P_PIDFD as i128);
    assert_eq!(c.get("UIO_MAXIOV"), Iovec::MAX as i128);
}
