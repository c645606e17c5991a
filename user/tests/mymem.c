/*
 * /dev/mymem: read, write and lseek within the 512 KiB buffer, the
 * errors for everything outside it, and the atomic-add ioctl.
 *
 * The host has no such device (the Linux module is loaded only in the
 * benchmark guest), so there this prints "no /dev/mymem: skipped"; in
 * Kiln every check must pass.
 */
#include "common.h"
#include "../mymem/mymem.h"

#include <fcntl.h>
#include <sys/mman.h>

int main(void)
{
    t_init("mymem");
    int fd = open("/dev/mymem", O_RDWR);
    if (fd < 0) {
        printf("no /dev/mymem: skipped\n");
        return t_done();
    }
    char buf[4096], back[4096];
    for (int i = 0; i < 4096; i++)
        buf[i] = (char)(i * 13);
    check(pwrite(fd, buf, 4096, 1000) == 4096, "pwrite 4 KiB at 1000");
    check(pread(fd, back, 4096, 1000) == 4096 && memcmp(buf, back, 4096) == 0, "pread returns what was written");
    check(lseek(fd, 0, SEEK_END) == MYMEM_SIZE, "SEEK_END is the buffer size");
    check(lseek(fd, -8, SEEK_END) == MYMEM_SIZE - 8, "SEEK_END - 8");
    check(lseek(fd, 4, SEEK_CUR) == MYMEM_SIZE - 4, "SEEK_CUR + 4");
    check(lseek(fd, 0, SEEK_SET) == 0, "SEEK_SET 0");
    check(write(fd, "abc", 3) == 3 && lseek(fd, 0, SEEK_CUR) == 3, "write advances the offset");
    EXPECT_ERR(EINVAL, "lseek past the end", lseek(fd, MYMEM_SIZE + 1, SEEK_SET));
    EXPECT_ERR(EINVAL, "lseek before the start", lseek(fd, -1, SEEK_SET));
    EXPECT_ERR(EINVAL, "lseek bad whence", lseek(fd, 0, 42));
    EXPECT_ERR(EINVAL, "pread past the end", pread(fd, back, 1, MYMEM_SIZE));
    EXPECT_ERR(EINVAL, "pread crossing the end", pread(fd, back, 16, MYMEM_SIZE - 8));
    /* A refused write leaves the data alone. */
    check(pwrite(fd, "12345678", 8, MYMEM_SIZE - 8) == 8, "write the last 8 bytes");
    EXPECT_ERR(EINVAL, "pwrite crossing the end", pwrite(fd, buf, 16, MYMEM_SIZE - 8));
    check(pread(fd, back, 8, MYMEM_SIZE - 8) == 8 && memcmp(back, "12345678", 8) == 0, "refused write changed nothing");
    EXPECT_ERR(EFAULT, "read into a bad pointer", pread(fd, BAD_PTR, 8, 0));
    EXPECT_ERR(EFAULT, "write from a kernel pointer", pwrite(fd, KERNEL_PTR, 8, 0));

    uint64_t zero = 0;
    check(pwrite(fd, &zero, 8, 64) == 8, "reset the counter");
    struct mymem_add add = { .offset = 64, .value = 5 };
    check(ioctl(fd, MYMEM_IOC_ADD, &add) == 0 && add.result == 5, "atomic add returns the new value");
    add.value = 37;
    check(ioctl(fd, MYMEM_IOC_ADD, &add) == 0 && add.result == 42, "second add");
    uint64_t counter = 0;
    check(pread(fd, &counter, 8, 64) == 8 && counter == 42, "the counter reads back 42");
    add.offset = 65;
    EXPECT_ERR(EINVAL, "unaligned counter", ioctl(fd, MYMEM_IOC_ADD, &add));
    add.offset = MYMEM_SIZE;
    EXPECT_ERR(EINVAL, "counter past the end", ioctl(fd, MYMEM_IOC_ADD, &add));
    EXPECT_ERR(ENOTTY, "unknown ioctl", ioctl(fd, _IO('m', 99)));
    EXPECT_ERR(EFAULT, "ioctl with a bad pointer", ioctl(fd, MYMEM_IOC_ADD, BAD_PTR));
    close(fd);
    return t_done();
}
