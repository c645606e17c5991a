/*
 * libkt.so: the shared library the dynamic test programs are linked
 * against (found through their $ORIGIN/lib run path): a function, data,
 * a constructor, and a thread-local variable.
 */
int kt_constructed;
int kt_data = 41;
__thread int kt_tls = 7;

__attribute__((constructor)) static void kt_init(void)
{
    kt_constructed = 1;
}

int kt_add(int a, int b)
{
    return a + b;
}

/* The address of this thread's kt_tls, as the library sees it. */
int *kt_tls_addr(void)
{
    return &kt_tls;
}
