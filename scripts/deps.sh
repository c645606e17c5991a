#!/usr/bin/env bash
# Installs the Debian packages Kiln's build and tests need, if any are
# missing. It runs before every `make` target, before any Rust code can be
# compiled (xtask itself needs Debian's cargo), so it must be plain shell,
# idempotent, and fast when everything is already there: one dpkg-query
# call, and apt only when something is missing.
set -euo pipefail

PACKAGES=(
    rustc-web cargo-web rust-web-src # kernel toolchain with rust-src for -Zbuild-std
    rust-web-clippy                  # make clippy on the kernel
    lld-16                           # kernel linker
    qemu-system-x86                  # boots the kernel
    musl-tools busybox-static        # static user-space programs
    golang-go                        # user/go: Go programs (CGO_ENABLED=0)
    grub-pc-bin grub-common xorriso mtools # GRUB ISO (grub-mkrescue)
    curl redis-tools wrk iperf3 libmemcached-tools # host clients of the servers in Kiln (servers stage, bench-servers)
)

# `dpkg-query -W` prints a line for each package it knows; unknown ones go
# to stderr and make it exit 1, which is fine: they are simply missing.
installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)
missing=()
for pkg in "${PACKAGES[@]}"; do
    if ! grep -qx "$pkg install ok installed" <<<"$installed"; then
        missing+=("$pkg")
    fi
done

if [ ${#missing[@]} -eq 0 ] && [ -x /usr/bin/cargo ]; then
    exit 0
fi
reinstall=()
if [ ${#missing[@]} -eq 0 ]; then
    # Installed per dpkg but /usr/bin/cargo gone: reinstall the toolchain.
    missing=(cargo-web)
    reinstall=(--reinstall)
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then
        SUDO=(sudo)
    else
        echo "deps.sh: missing packages (${missing[*]}) and not root" >&2
        exit 1
    fi
fi

echo "deps.sh: installing ${missing[*]}" >&2
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${reinstall[@]}" "${missing[@]}"
