# Kiln's entry points. Every target first makes sure the Debian packages are
# there (scripts/deps.sh, fast when they are), then hands over to xtask,
# which does the real work. xtask is built with Debian's toolchain, the one
# the kernel needs, so only one toolchain's artifacts live in target/.

CARGO := RUSTC=/usr/bin/rustc /usr/bin/cargo
XTASK := $(CARGO) run -q -p xtask --
DEPS := scripts/deps.sh

# `make run` knobs: SMP (CPUs, default 2), CMDLINE (kernel command line),
# QEMU_EXTRA (more QEMU arguments), EXTRA (a host directory copied into the
# root file system), CMD (a command run under `sh -c`; its status ends QEMU),
# ROOT (`debian` boots the root `make rootfs` builds), MEM (guest memory,
# QEMU's -m syntax; default 512M, or 2G with ROOT=debian).
# NET (the NIC: virtio, the default, e1000 or none; on QEMU user
# networking), HOSTFWD (QEMU hostfwd rules bound to 127.0.0.1, separated by
# spaces, e.g. "tcp:127.0.0.1:8080-:80").
# IOMMU=1 boots the q35 machine with QEMU's VT-d IOMMU (DMA remapping).
# DISK (a raw disk image; `make disk` builds one), DISK_BUS (virtio, the
# default: /dev/vda in Kiln; nvme: /dev/nvme0n1).
# `make disk` knobs: DISK_DIR (the folder copied in; default user/), DISK_OUT
# (default build/disk.img), DISK_SIZE (default 64M), DISK_FS (ext4 or ext2).
# `make rootfs` knob: ROOTFS_PACKAGES (the Debian packages to put in).
#
# `make test` has its own CPU counts per stage (-smp 1, and 2 and 4 for
# the SMP stage); only an SMP given by the user (command line or
# environment) overrides them, so remember whether it was before the
# default below fills it in.
ifneq ($(strip $(SMP)),)
TEST_SMP := --smp $(strip $(SMP))
endif
SMP ?= 2
CMDLINE ?=
QEMU_EXTRA ?=
EXTRA ?=
CMD ?=
ROOT ?=
MEM ?=
ROOTFS_PACKAGES ?=
VIA_LDSO ?=
NET ?=
HOSTFWD ?=
DISK ?=
DISK_BUS ?=
IOMMU ?=
DISK_DIR ?= user
DISK_OUT ?= build/disk.img
DISK_SIZE ?= 64M
DISK_FS ?= ext4
export IOMMU SMP CMDLINE QEMU_EXTRA EXTRA CMD ROOT MEM ROOTFS_PACKAGES VIA_LDSO NET HOSTFWD DISK DISK_BUS

.DEFAULT_GOAL := run
.PHONY: run test test-smp test-kernel test-storage crashtest fuzz-ext4 nettest-long test-net fuzz-net test-tap nethub bench-servers iso build bench clean fmt clippy deps rootfs disk

deps:
	@$(DEPS)

# The command line goes through the environment ($$CMDLINE) rather than
# being pasted into the recipe, so quotes in it survive.
run:
	@$(DEPS)
	@$(XTASK) run --cmdline "$$CMDLINE"

test:
	@$(DEPS)
	@$(XTASK) test $(TEST_SMP)

# Only the SMP stage of `make test` (same SMP rule).
test-smp:
	@$(DEPS)
	@$(XTASK) test-smp $(TEST_SMP)

# A raw disk image made by the host's mkfs (mkfs.ext4 -d: filled from a
# folder, no root or loop device needed).
disk:
	@mkdir -p $(dir $(DISK_OUT))
	@rm -f $(DISK_OUT)
	truncate -s $(DISK_SIZE) $(DISK_OUT)
	/sbin/mkfs.$(DISK_FS) -q -F -d $(DISK_DIR) $(DISK_OUT)
	@echo "$(DISK_OUT): $(DISK_FS) from $(DISK_DIR); boot it with make run DISK=$(DISK_OUT)"

# Only the in-kernel stage of `make test`, RUNS times in a row at -smp 4
# (or at SMP), stopping at the first failure; KTEST_FILTER narrows it.
RUNS ?= 1
test-kernel:
	@$(DEPS)
	@$(XTASK) test-kernel $(TEST_SMP) -n $(RUNS)

# Only the storage stage of `make test`.
test-storage:
	@$(DEPS)
	@$(XTASK) test-storage

# Power cuts of an ext4 workload, checked by the host's e2fsck (N cuts).
N ?= 20
crashtest:
	@$(DEPS)
	@$(XTASK) crashtest -n $(N)

# Hostile images: 10,000 mutated ext4 images through kiln-ext4 on the
# host, then FUZZ_N of them mounted, walked and written in Kiln.
FUZZ_N ?= 240
fuzz-ext4:
	@$(DEPS)
	@$(XTASK) fuzz-ext4 -n $(FUZZ_N)

# The issue's 1 GiB each way between netecho on the host and in Kiln,
# through a virtio-net and then an e1000 NIC (make test moves 64 MiB).
nettest-long:
	@$(DEPS)
	@$(XTASK) nettest-long

# Netecho from the host through each NIC, then two Kiln machines on a
# NET=socket segment with a hostile host program among them (make test's
# network stage alone); fuzz-net runs the segment with the issue's counts
# (100,000 malformed frames, 50,000 SYNs, 5,000 connections).
test-net:
	@$(DEPS)
	@$(XTASK) test-net

fuzz-net:
	@$(DEPS)
	@$(XTASK) fuzz-net

# Netecho (4 MiB each way) through a virtio NIC on a tap device in a
# network namespace made and removed for the run: the path of `make
# bench-servers TAP=1` (needs root).
test-tap:
	@$(DEPS)
	@$(XTASK) test-tap

# The hub of a NET=socket segment on 127.0.0.1:SEGMENT (default 10400) for
# `make run NET=socket NODE=n` machines (n from 0).
SEGMENT ?= 10400
nethub:
	@$(XTASK) nethub $(SEGMENT)

# Issue 12's application rows (nginx, redis, iperf3, memcached through a
# virtio NIC, clients on the host), Kiln against Linux; apart from `make
# bench`'s rows, in bench/results/servers.md. The NIC is on slirp; TAP=1
# puts it on a tap device in a network namespace the run makes and
# removes (root), TAP=both measures both.
TAP ?=
bench-servers:
	@$(DEPS)
	@$(XTASK) bench-servers $(if $(filter both,$(TAP)),both,$(if $(filter-out 0,$(TAP)),tap,slirp))

# A Debian root from Debian's packages, cached under build/debian.
rootfs:
	@$(DEPS)
	@$(XTASK) rootfs

iso:
	@$(DEPS)
	@$(XTASK) iso

build:
	@$(DEPS)
	@$(XTASK) build

bench:
	@$(DEPS)
	@$(XTASK) bench

fmt:
	@$(DEPS)
	@$(XTASK) fmt

clippy:
	@$(DEPS)
	@$(XTASK) clippy

# No xtask here: building it only to delete it would be wasted work.
clean:
	@$(DEPS)
	$(CARGO) clean
