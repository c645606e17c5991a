/*
 * libkt_path.so: a library the dynamic test programs can only find
 * through LD_LIBRARY_PATH.
 */
const char *kt_path_hello(void)
{
    return "found through LD_LIBRARY_PATH";
}
