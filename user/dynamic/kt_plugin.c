/*
 * libkt_plugin.so: loaded with dlopen by the dynamic test programs. Its
 * thread-local variable lives in a TLS block allocated after startup.
 */
#include <stdlib.h>

__thread long plugin_tls = 1000;
static int loaded;

__attribute__((constructor)) static void plugin_init(void)
{
    loaded = 1;
}

int kt_plugin_loaded(void)
{
    return loaded;
}

/* Adds to this thread's counter and returns it. */
long kt_plugin_bump(long by)
{
    plugin_tls += by;
    return plugin_tls;
}
