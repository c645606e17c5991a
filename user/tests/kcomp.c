/*
 * kcomp: Kiln's components from the command line (docs/components.md).
 *
 *   kcomp [list]         print /proc/kiln/components
 *   kcomp merge A B      put components A and B in one protection domain
 *   kcomp split A        take A out of its merged domain
 *   kcomp fault A        make A fault once (a real exception inside it)
 *   kcomp domain A       print the domain A is in
 *
 * A and B are names or indices (the first columns of the /proc file).
 * Changes go through the kernel's own component interface: Kiln's
 * invocation system call (0x0100_0000) on the reserved capability -1;
 * Linux has neither and answers ENOSYS. Exit status: 0 done, 1 the
 * kernel refused (its errno printed), 2 a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_invoke.h"

#define PROC_FILE "/proc/kiln/components"

enum { OP_COUNT = 0, OP_MERGE = 1, OP_SPLIT = 2, OP_FAULT = 3, OP_DOMAIN = 4 };

static long control(long op, uint64_t a, uint64_t b, uint64_t *value)
{
    return kiln_invoke(KILN_CONTROL, op, a, b, value);
}

/* The index of component `name` (a name or an index), or -1. */
static long find(const char *name)
{
    FILE *f = fopen(PROC_FILE, "r");
    if (!f)
        return -1;
    char line[256], id[32], got[64];
    long found = -1;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '\n')
            break; /* the edges follow */
        if (sscanf(line, "%31s %63s", id, got) == 2 && strcmp(id, "id") != 0 &&
            (strcmp(got, name) == 0 || strcmp(id, name) == 0)) {
            found = strtol(id, NULL, 10);
            break;
        }
    }
    fclose(f);
    return found;
}

static int list(void)
{
    FILE *f = fopen(PROC_FILE, "r");
    if (!f) {
        fprintf(stderr, "kcomp: %s: %s\n", PROC_FILE, strerror(errno));
        return 1;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, stdout);
    fclose(f);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: kcomp [list] | merge A B | split A | fault A | domain A\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "list") == 0)
        return argc <= 2 ? list() : usage();
    const char *cmd = argv[1];
    long op;
    int want;
    if (strcmp(cmd, "merge") == 0)
        op = OP_MERGE, want = 2;
    else if (strcmp(cmd, "split") == 0)
        op = OP_SPLIT, want = 1;
    else if (strcmp(cmd, "fault") == 0)
        op = OP_FAULT, want = 1;
    else if (strcmp(cmd, "domain") == 0)
        op = OP_DOMAIN, want = 1;
    else
        return usage();
    if (argc != 2 + want)
        return usage();
    long ids[2] = {0, 0};
    for (int i = 0; i < want; i++) {
        ids[i] = find(argv[2 + i]);
        if (ids[i] < 0) {
            fprintf(stderr, "kcomp: no component %s\n", argv[2 + i]);
            return 2;
        }
    }
    uint64_t value;
    long r = control(op, (uint64_t)ids[0], (uint64_t)ids[1], &value);
    if (r != 0) {
        fprintf(stderr, "kcomp: %s: %s\n", cmd, strerror((int)-r));
        return 1;
    }
    if (op == OP_FAULT)
        printf("%s: faults %llu\n", argv[2], (unsigned long long)value);
    else if (op == OP_DOMAIN)
        printf("%s: domain %llu\n", argv[2], (unsigned long long)value);
    return 0;
}
