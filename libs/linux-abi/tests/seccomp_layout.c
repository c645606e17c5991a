/*
 * Prints the seccomp and classic BPF constants and struct layouts from
 * the kernel UAPI headers as "name value" lines; tests/seccomp_layout.rs
 * compares them with the linux-abi crate's `seccomp` module.
 */
#include <stddef.h>
#include <stdio.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#define SZ(name, type) printf("%s %lu\n", name, (unsigned long)sizeof(type))
#define OFF(name, type, field) printf("%s %lu\n", name, (unsigned long)offsetof(type, field))
#define VAL(name) printf("%s %lld\n", #name, (long long)(name))
#define UVAL(name) printf("%s %llu\n", #name, (unsigned long long)(unsigned)(name))

int main(void)
{
    SZ("seccomp_data", struct seccomp_data);
    OFF("seccomp_data.nr", struct seccomp_data, nr);
    OFF("seccomp_data.arch", struct seccomp_data, arch);
    OFF("seccomp_data.instruction_pointer", struct seccomp_data, instruction_pointer);
    OFF("seccomp_data.args", struct seccomp_data, args);
    SZ("seccomp_notif", struct seccomp_notif);
    SZ("seccomp_notif_resp", struct seccomp_notif_resp);
    SZ("sock_fprog", struct sock_fprog);
    OFF("sock_fprog.filter", struct sock_fprog, filter);
    SZ("sock_filter", struct sock_filter);
    VAL(SECCOMP_MODE_DISABLED); VAL(SECCOMP_MODE_STRICT); VAL(SECCOMP_MODE_FILTER);
    VAL(SECCOMP_SET_MODE_STRICT); VAL(SECCOMP_SET_MODE_FILTER); VAL(SECCOMP_GET_ACTION_AVAIL);
    VAL(SECCOMP_GET_NOTIF_SIZES);
    VAL(SECCOMP_FILTER_FLAG_TSYNC); VAL(SECCOMP_FILTER_FLAG_LOG); VAL(SECCOMP_FILTER_FLAG_SPEC_ALLOW);
    VAL(SECCOMP_FILTER_FLAG_NEW_LISTENER); VAL(SECCOMP_FILTER_FLAG_TSYNC_ESRCH);
#ifdef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
    VAL(SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
#endif
    UVAL(SECCOMP_RET_KILL_PROCESS); UVAL(SECCOMP_RET_KILL_THREAD); UVAL(SECCOMP_RET_KILL);
    UVAL(SECCOMP_RET_TRAP); UVAL(SECCOMP_RET_ERRNO); UVAL(SECCOMP_RET_USER_NOTIF);
    UVAL(SECCOMP_RET_TRACE); UVAL(SECCOMP_RET_LOG); UVAL(SECCOMP_RET_ALLOW);
    UVAL(SECCOMP_RET_ACTION_FULL); UVAL(SECCOMP_RET_ACTION); UVAL(SECCOMP_RET_DATA);
    VAL(BPF_MAXINSNS); VAL(BPF_MEMWORDS);
    VAL(BPF_LD); VAL(BPF_LDX); VAL(BPF_ST); VAL(BPF_STX); VAL(BPF_ALU); VAL(BPF_JMP);
    VAL(BPF_RET); VAL(BPF_MISC); VAL(BPF_W); VAL(BPF_H); VAL(BPF_B); VAL(BPF_IMM);
    VAL(BPF_ABS); VAL(BPF_IND); VAL(BPF_MEM); VAL(BPF_LEN); VAL(BPF_MSH); VAL(BPF_ADD);
    VAL(BPF_SUB); VAL(BPF_MUL); VAL(BPF_DIV); VAL(BPF_OR); VAL(BPF_AND); VAL(BPF_LSH);
    VAL(BPF_RSH); VAL(BPF_NEG); VAL(BPF_MOD); VAL(BPF_XOR); VAL(BPF_JA); VAL(BPF_JEQ);
    VAL(BPF_JGT); VAL(BPF_JGE); VAL(BPF_JSET); VAL(BPF_K); VAL(BPF_X); VAL(BPF_A);
    VAL(BPF_TAX); VAL(BPF_TXA); UVAL(SKF_AD_OFF);
    return 0;
}
