/*
 * interp_prog: a dynamically linked program whose PT_INTERP names
 * /tmp/interp/ld.so, which the `interp` test replaces with whatever it
 * wants the kernel to load as an ELF interpreter.
 */
#include <stdio.h>

int main(void)
{
    puts("  interp_prog ran");
    return 0;
}
