/*
 * Prints the sizes and field offsets of the rseq ABI structs and the
 * constants of rseq(2), pidfd_open(2), waitid(P_PIDFD) and
 * process_vm_readv(2) as "name value" lines, from the kernel UAPI
 * headers. tests/rseq_layout.rs compares them with the linux-abi crate.
 */
#include <stddef.h>
#include <stdio.h>
#include <linux/rseq.h>
#include <linux/pidfd.h>
#include <linux/wait.h>
#include <linux/uio.h>

#define SZ(name, type) printf("%s %lu\n", name, (unsigned long)sizeof(type))
#define AL(name, type) printf("%s %lu\n", name, (unsigned long)_Alignof(type))
#define OFF(name, type, field) printf("%s %lu\n", name, (unsigned long)offsetof(type, field))
#define VAL(name) printf("%s %lld\n", #name, (long long)(name))

int main(void)
{
    SZ("rseq", struct rseq);
    AL("rseq.align", struct rseq);
    OFF("rseq.cpu_id_start", struct rseq, cpu_id_start);
    OFF("rseq.cpu_id", struct rseq, cpu_id);
    OFF("rseq.rseq_cs", struct rseq, rseq_cs);
    OFF("rseq.flags", struct rseq, flags);
    /* node_id and mm_cid (Linux 6.3) follow flags; older headers end
     * the struct there, so the test places them after flags itself. */
    printf("rseq.flags_end %lu\n", (unsigned long)(offsetof(struct rseq, flags) + sizeof(__u32)));
    SZ("rseq_cs", struct rseq_cs);
    OFF("rseq_cs.version", struct rseq_cs, version);
    OFF("rseq_cs.flags", struct rseq_cs, flags);
    OFF("rseq_cs.start_ip", struct rseq_cs, start_ip);
    OFF("rseq_cs.post_commit_offset", struct rseq_cs, post_commit_offset);
    OFF("rseq_cs.abort_ip", struct rseq_cs, abort_ip);
    VAL(RSEQ_FLAG_UNREGISTER);
    VAL(RSEQ_CPU_ID_UNINITIALIZED);
    VAL(RSEQ_CPU_ID_REGISTRATION_FAILED);
    VAL(RSEQ_CS_FLAG_NO_RESTART_ON_PREEMPT);
    VAL(RSEQ_CS_FLAG_NO_RESTART_ON_SIGNAL);
    VAL(RSEQ_CS_FLAG_NO_RESTART_ON_MIGRATE);
    VAL(PIDFD_NONBLOCK);
    VAL(P_PIDFD);
    VAL(UIO_MAXIOV);
    return 0;
}
