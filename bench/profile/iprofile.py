#!/usr/bin/env python3
"""Instruction profile of one kbench benchmark in Kiln (or Linux), per operation.

    iprofile.py record OUT NAME [SECONDS]   boot the bench initramfs under icount on
                                            the fair CPU model, run `kbench all 100 NAME`,
                                            and for SECONDS (default 10) of the timed loop
                                            count the instructions executed at every
                                            address (QEMU -singlestep -d exec,nochain,
                                            switched on through the monitor)
    iprofile.py report OUT MARKER [N]       instructions per operation by function; an
                                            operation is one execution of the first
                                            instruction of the function matching the
                                            regular expression MARKER (e.g. sys_poll)
    iprofile.py annotate OUT MARKER FUNC    per-instruction counts of the functions
                                            matching FUNC

Only the interval after the benchmark started is recorded, so boot and setup
do not count. Per-operation figures match `make bench`'s icount column to
within about 1 % (kbench's own loop around the call is in <user>).
Environment: KELF (default target/kiln/kiln.elf), INITRD (default
target/kiln/bench-initramfs.cpio.gz, which `make bench` builds), LINUX (a
vmlinuz: profile Linux instead; its symbols are not resolved), IPROFILE_DELAY
(seconds from kbench's start to the recording, default 0.3; less for a
benchmark that ends sooner at full speed, such as epoll_wait).

Storage rows (`bench storage`, kstor): STORAGE=virtio or nvme boots the storage
initramfs (INITRD default target/kiln/bench-storage-initramfs.cpio.gz, which
`cargo run -p xtask -- bench storage` builds) with a fresh image made as that
bench makes it (OUT.img, deleted afterwards) and runs `kstor DEV 100 NAME` (that row
and the rows it needs only); the recording starts when kstor reports the row before it."""
import bisect
import os
import re
import socket
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KELF = os.environ.get("KELF", os.path.join(ROOT, "target/kiln/kiln.elf"))
INITRD = os.environ.get("INITRD", os.path.join(ROOT, "target/kiln/bench-initramfs.cpio.gz"))
USER_END = 0x800000000000


def counter():
    exe = os.path.join(ROOT, "target/kiln/pccount")
    src = os.path.join(os.path.dirname(__file__), "pccount.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        subprocess.run(["cc", "-O2", "-o", exe, src], check=True)
    return exe


KSTOR_ROWS = ["seq_write", "seq_read", "rand_read_cold", "rand_read_warm", "fsync_4k", "create_4k", "unlink",
              "untar_sync"]


def storage_image(out, bus):
    """A fresh image as xtask/src/bench/storage.rs makes it, and its QEMU arguments."""
    img = f"{out}.img"
    uuid = "6b696c6e-7374-6f72-6167-650000000001"
    subprocess.run(["truncate", "-s", "0", img], check=True)
    subprocess.run(["truncate", "-s", "512M", img], check=True)
    subprocess.run(["/sbin/mkfs.ext4", "-q", "-F", "-U", uuid, "-E",
                    f"lazy_itable_init=0,lazy_journal_init=0,hash_seed={uuid}", img],
                   check=True, env=dict(os.environ, E2FSPROGS_FAKE_TIME="1767225600"))
    device = "virtio-blk-pci,drive=d0" if bus == "virtio" else "nvme,drive=d0,serial=kiln0"
    return img, ["-drive", f"file={img},if=none,id=d0,format=raw,cache=writeback,discard=unmap",
                 "-device", device]


def record(out, name, seconds):
    mon, fifo = f"{out}.mon", f"{out}.fifo"
    bus = os.environ.get("STORAGE")
    initrd, disk, start = INITRD, [], b"kbench start"
    if bus:
        initrd = os.environ.get("INITRD", os.path.join(ROOT, "target/kiln/bench-storage-initramfs.cpio.gz"))
        img, disk = storage_image(out, bus)
        before = KSTOR_ROWS.index(name)
        start = f"bench {KSTOR_ROWS[before - 1]} ".encode() if before else b"kstor start"
    for p in (mon, fifo):
        if os.path.exists(p):
            os.unlink(p)
    os.mkfifo(fifo)
    count = subprocess.Popen(f"'{counter()}' < '{fifo}' > '{out}' 2> '{out}.total'", shell=True)
    linux = os.environ.get("LINUX")
    if linux:
        kernel = linux
        append = f"console=ttyS0 quiet panic=-1 rdinit=/init mitigations=off nokaslr norandmaps -- all 100 {name}"
    else:
        kernel, append = KELF, f"init=/init -- all 100 {name}"
    if bus:
        dev = "/dev/vda" if bus == "virtio" else "/dev/nvme0n1"
        # Only the row profiled (and the rows it needs): kstor skips the rest.
        append = append.split(" -- ")[0] + f" -- /b/kstor {dev} 100 {name}"
    qemu = subprocess.Popen(
        ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max,-erms,-fsrm", "-m", "512M", "-smp", "1",
         "-display", "none", "-no-reboot", "-nic", "none", "-serial", "stdio",
         "-monitor", f"unix:{mon},server=on,wait=off", "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
         "-kernel", kernel, "-initrd", initrd, "-append", append, "-D", fifo,
         # The storage rows wait for a real disk: with sleep=off an idle
         # guest's clock races ahead and its request timeouts fire.
         "-icount", f"shift=0,align=off,sleep={'on' if bus else 'off'}"] + disk,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with open(out + ".log", "wb") as log:
        for line in qemu.stdout:
            log.write(line)
            if start in line:
                break
        # Past the first few operations (kbench's untimed warm-up runs
        # at full speed until logging slows the guest down).
        time.sleep(float(os.environ.get("IPROFILE_DELAY", "0.3")))
        s = socket.socket(socket.AF_UNIX)
        s.connect(mon)
        for cmd in ("singlestep on", "log exec,nochain"):
            s.sendall(cmd.encode() + b"\n")
            time.sleep(0.2)
        time.sleep(seconds)
        try:
            for cmd in ("log none", "singlestep off", "quit"):
                s.sendall(cmd.encode() + b"\n")
                time.sleep(0.2)
        except OSError:
            pass  # the benchmark ended first
        log.write(qemu.stdout.read())
    qemu.wait()
    count.wait()
    for p in (mon, fifo) + ((img,) if bus else ()):
        if os.path.exists(p):
            os.unlink(p)
    print(open(out + ".total").read().strip())


def symbols():
    syms = []
    nm = subprocess.run(["nm", "-C", "-S", "--defined-only", KELF], capture_output=True, text=True).stdout
    for line in nm.splitlines():
        p = line.split(" ", 3)
        if len(p) == 4 and p[2] in "tTwW":
            syms.append((int(p[0], 16), int(p[1], 16), p[3]))
    syms.sort()
    return syms


def load(out):
    pcs = {}
    for line in open(out):
        pc, n = line.split()
        pcs[int(pc, 16)] = int(n)
    return pcs


def operations(pcs, syms, marker):
    hits = [pcs.get(a, 0) for a, _, s in syms if re.search(marker, s)]
    return max(hits, default=0) or 1


def report(out, marker, top):
    syms, pcs = symbols(), load(out)
    addrs = [a for a, _, _ in syms]
    by = {}
    for pc, n in pcs.items():
        if pc < USER_END:
            k = "<user>"
        else:
            i = bisect.bisect_right(addrs, pc) - 1
            k = syms[i][2] if i >= 0 else "?"
        by[k] = by.get(k, 0) + n
    ops = operations(pcs, syms, marker)
    total = sum(by.values())
    print(f"{ops} operations, {total} instructions, {total / ops:.0f} per operation")
    for k, v in sorted(by.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{v / ops:10.1f}  {k[:140]}")


def annotate(out, marker, func):
    syms, pcs = symbols(), load(out)
    ops = operations(pcs, syms, marker)
    for a, size, s in syms:
        if not re.search(func, s):
            continue
        print(f"== {s} {a:#x} {size}")
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", f"--start-address={a}",
                              f"--stop-address={a + size}", KELF], capture_output=True, text=True).stdout
        for line in dis.splitlines():
            m = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
            if m:
                print(f"{pcs.get(int(m.group(1), 16), 0) / ops:8.1f} {m.group(1)[-6:]} {m.group(2)[:110]}")


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) >= 3 and a[0] == "record":
        record(a[1], a[2], float(a[3]) if len(a) > 3 else 10.0)
    elif len(a) >= 3 and a[0] == "report":
        report(a[1], a[2], int(a[3]) if len(a) > 3 else 40)
    elif len(a) == 4 and a[0] == "annotate":
        annotate(a[1], a[2], a[3])
    else:
        sys.exit(__doc__)
