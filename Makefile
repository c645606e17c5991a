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
export SMP CMDLINE QEMU_EXTRA EXTRA CMD ROOT MEM ROOTFS_PACKAGES VIA_LDSO NET HOSTFWD

.DEFAULT_GOAL := run
.PHONY: run test test-smp nettest-long bench-servers iso build bench clean fmt clippy deps rootfs

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

# The servers stage's run through the NIC with the issue's 1 GiB each
# way between netecho on the host and in Kiln (make test moves 64 MiB).
nettest-long:
	@$(DEPS)
	@$(XTASK) nettest-long

# Issue 12's application rows (nginx, redis, iperf3, memcached through a
# virtio NIC, clients on the host), Kiln against Linux; apart from `make
# bench`'s rows, in bench/results/servers.md.
bench-servers:
	@$(DEPS)
	@$(XTASK) bench-servers

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
