/* Counts QEMU `-d exec,nochain` lines per guest PC. With `-singlestep`
 * every translation block is one instruction, so the counts are
 * instructions executed at each address. Reads the log on stdin, writes
 * "PC COUNT" lines (hex, decimal) on stdout and the total on stderr.
 * Built and run by iprofile.py. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS (1u << 22)
static uint64_t pcs[SLOTS], counts[SLOTS];

int main(void) {
    char line[512];
    uint64_t total = 0;
    while (fgets(line, sizeof line, stdin)) {
        /* "Trace 0: 0xHOST [CSBASE/PC/FLAGS/CFLAGS] ..." */
        char *open = strchr(line, '[');
        char *slash = open ? strchr(open, '/') : NULL;
        if (!slash)
            continue;
        uint64_t pc = strtoull(slash + 1, NULL, 16);
        uint64_t h = (pc * 0x9E3779B97F4A7C15ull) >> 42;
        while (pcs[h] && pcs[h] != pc)
            h = (h + 1) & (SLOTS - 1);
        pcs[h] = pc;
        counts[h]++;
        total++;
    }
    for (uint64_t i = 0; i < SLOTS; i++)
        if (pcs[i])
            printf("%llx %llu\n", (unsigned long long)pcs[i], (unsigned long long)counts[i]);
    fprintf(stderr, "total %llu\n", (unsigned long long)total);
    return 0;
}
