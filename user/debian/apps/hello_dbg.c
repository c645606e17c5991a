/* The program gdb debugs: a call chain to break in, a loop to step. */
#include <stdio.h>

static int leaf(int x)
{
    int y = x * 3;
    return y + 1;
}

static int middle(int x)
{
    return leaf(x + 1) * 2;
}

int main(void)
{
    int total = 0;
    for (int i = 0; i < 3; i++)
        total += middle(i);
    printf("total %d\n", total);
    return 0;
}
