/*
 * stack_prog: prints the permissions of its [stack] mapping; built with
 * an executable stack (PT_GNU_STACK with PF_X) for the `interp` test.
 */
#include <stdio.h>
#include <string.h>

int main(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512], perms[5] = "?";
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "[stack]"))
            sscanf(line, "%*s %4s", perms);
    printf("  [stack] %s\n", perms);
    return 0;
}
