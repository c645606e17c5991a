// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/mymem for Linux: the C baseline that Kiln's kernel/src/dev/mymem.rs
 * is measured against (docs/mymem.md). Same interface as Kiln's driver and
 * user/mymem/mymem.h:
 *
 *  - a 512 KiB buffer; read, write and llseek (SEEK_SET/CUR/END); a seek
 *    outside [0, size] or an access that would cross the end is -EINVAL,
 *    so a request never silently transfers less than it asked for;
 *  - MYMEM_IOC_ADD adds to an aligned 8-byte counter and returns the new
 *    value, the in-kernel read-modify-write that fixes the labs' race.
 *
 * One mutex covers the buffer: a read or write is then atomic with
 * respect to every other, as in Kiln, and the ioctl's read-modify-write
 * needs no separate atomic path. copy_{to,from}_user may fault and sleep,
 * which a mutex (unlike a spinlock) allows.
 *
 * Loading with `timing=1` also runs the labs' in-kernel timing test
 * against the same internal functions and logs lines in Kiln's format:
 * `mymem in-kernel size N read X ns write Y ns`.
 */
#include <linux/fs.h>
#include <linux/ioctl.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/random.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#define MYMEM_SIZE (512 * 1024)

struct mymem_add {
	__u64 offset;
	__u64 value;
	__u64 result;
};

#define MYMEM_IOC_ADD _IOWR('m', 1, struct mymem_add)

static u8 *buffer;
static DEFINE_MUTEX(lock);

static bool timing;
module_param(timing, bool, 0444);
MODULE_PARM_DESC(timing, "run the in-kernel timing test at load");

/* The whole request must lie inside the buffer (overflow-safe). */
static bool mymem_in_range(loff_t pos, size_t len)
{
	return pos >= 0 && pos <= MYMEM_SIZE && len <= MYMEM_SIZE - pos;
}

static ssize_t mymem_read(struct file *f, char __user *ubuf, size_t len, loff_t *ppos)
{
	unsigned long left;

	if (!mymem_in_range(*ppos, len))
		return -EINVAL;
	mutex_lock(&lock);
	left = copy_to_user(ubuf, buffer + *ppos, len);
	mutex_unlock(&lock);
	if (left)
		return -EFAULT;
	*ppos += len;
	return len;
}

static ssize_t mymem_write(struct file *f, const char __user *ubuf, size_t len, loff_t *ppos)
{
	unsigned long left;

	if (!mymem_in_range(*ppos, len))
		return -EINVAL;
	mutex_lock(&lock);
	left = copy_from_user(buffer + *ppos, ubuf, len);
	mutex_unlock(&lock);
	if (left)
		return -EFAULT;
	*ppos += len;
	return len;
}

static loff_t mymem_llseek(struct file *f, loff_t off, int whence)
{
	loff_t base;

	switch (whence) {
	case SEEK_SET:
		base = 0;
		break;
	case SEEK_CUR:
		base = f->f_pos;
		break;
	case SEEK_END:
		base = MYMEM_SIZE;
		break;
	default:
		return -EINVAL;
	}
	/* Both are within +-2^63 only if off is small; check before adding. */
	if (off > MYMEM_SIZE - base || off < -base)
		return -EINVAL;
	f->f_pos = base + off;
	return f->f_pos;
}

static long mymem_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct mymem_add a;
	u64 *counter;

	if (cmd != MYMEM_IOC_ADD)
		return -ENOTTY;
	if (copy_from_user(&a, (void __user *)arg, sizeof(a)))
		return -EFAULT;
	if (a.offset % 8 || a.offset > MYMEM_SIZE - 8)
		return -EINVAL;
	counter = (u64 *)(buffer + a.offset);
	mutex_lock(&lock);
	*counter += a.value;
	a.result = *counter;
	mutex_unlock(&lock);
	if (copy_to_user((void __user *)arg, &a, sizeof(a)))
		return -EFAULT;
	return 0;
}

static const struct file_operations mymem_fops = {
	.owner = THIS_MODULE,
	.read = mymem_read,
	.write = mymem_write,
	.llseek = mymem_llseek,
	.unlocked_ioctl = mymem_ioctl,
};

static struct miscdevice mymem_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "mymem",
	.fops = &mymem_fops,
	.mode = 0666,
};

/*
 * The in-kernel side of the labs' timing test: the same copy under the
 * same lock as read/write, minus the system call and the user copy, so
 * the difference from the user-level figures is the crossing's cost.
 */
static void mymem_timing(void)
{
	static const size_t sizes[] = { 1, 64, 1024, 64 * 1024, MYMEM_SIZE };
	const int trials = 1000;
	u8 *src = vmalloc(MYMEM_SIZE), *dst = vmalloc(MYMEM_SIZE);
	int s, t;

	if (!src || !dst)
		goto out;
	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		u64 rsum = 0, wsum = 0;

		for (t = 0; t < trials; t++) {
			u64 t0, t1, t2;

			get_random_bytes(src, sizes[s]);
			t0 = ktime_get_ns();
			mutex_lock(&lock);
			memcpy(buffer, src, sizes[s]);
			mutex_unlock(&lock);
			t1 = ktime_get_ns();
			mutex_lock(&lock);
			memcpy(dst, buffer, sizes[s]);
			mutex_unlock(&lock);
			t2 = ktime_get_ns();
			wsum += t1 - t0;
			rsum += t2 - t1;
			cond_resched();
		}
		pr_info("mymem in-kernel size %zu read %llu ns write %llu ns\n", sizes[s],
			rsum / trials, wsum / trials);
	}
out:
	vfree(src);
	vfree(dst);
}

static int __init mymem_init(void)
{
	int err;

	BUILD_BUG_ON(MYMEM_IOC_ADD != 0xC0186D01);
	buffer = vzalloc(MYMEM_SIZE);
	if (!buffer)
		return -ENOMEM;
	err = misc_register(&mymem_dev);
	if (err) {
		vfree(buffer);
		return err;
	}
	if (timing)
		mymem_timing();
	return 0;
}

static void __exit mymem_exit(void)
{
	misc_deregister(&mymem_dev);
	vfree(buffer);
}

module_init(mymem_init);
module_exit(mymem_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("/dev/mymem: a 512 KiB buffer with an atomic-add ioctl (Kiln benchmark baseline)");
