//! `make test`'s servers stage: Debian's own servers (nginx, redis,
//! memcached, iperf3), unmodified and with their stock configurations
//! plus a listening port, each driven by Debian's clients and busybox's
//! over 127.0.0.1 inside one machine (`user/debian/servers`). It runs
//! like the Debian-workload stage ([`crate::appstest`]): in Kiln booted
//! with a Debian root that holds the servers, and on the host in the same
//! tree under `chroot`, there in a fresh network namespace (only `lo`,
//! so the stock ports are free) with tmpfs copies of the folders the
//! servers write; each section's output must be identical.

use std::path::Path;
use std::time::Duration;

use crate::appstest::{run_suite, Suite};
use crate::Result;

/// The servers and their clients (busybox for `wget` and `nc`, procps
/// for `pgrep`).
pub const PACKAGES: &[&str] =
    &["nginx", "redis-server", "redis-tools", "memcached", "iperf3", "curl", "busybox", "procps"];

/// Sections that cannot pass until a kernel feature lands, with what
/// each waits for (see `appstest::EXPECTED_TO_FAIL`).
const EXPECTED_TO_FAIL: &[(&str, &str)] = &[];

pub const SERVERS: Suite = Suite {
    label: "servers",
    folder: "servers",
    packages: PACKAGES,
    // Boot, unpack and four sections of a few seconds each in Kiln; the
    // bound is for a server that hangs.
    limit: Duration::from_secs(600),
    memory: "1G",
    own_network: true,
    expected_to_fail: EXPECTED_TO_FAIL,
};

/// Runs the stage (every section, or those named in `only`); returns
/// (passed, failed).
pub fn run(repo: &Path, elf: &Path, only: &[String]) -> Result<(u64, u64)> {
    run_suite(repo, elf, only, &SERVERS)
}
