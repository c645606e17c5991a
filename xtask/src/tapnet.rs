//! A tap device inside a network namespace the run creates and removes
//! itself (issue 12: slirp caps the bandwidth rows). The namespace
//! `kiln-bench-<pid>` holds only `lo` and the tap [`TAP`], whose host end
//! is [`HOST_ADDR`]/24; QEMU runs inside it (`ip netns exec`) and opens
//! the tap, the guest takes [`GUEST_ADDR`], and the host's clients run
//! inside it too. The namespace has no route but the tap's /24 and no
//! other interface, so traffic never leaves this machine; IPv6 is off in
//! it, so the host end sends no neighbour-discovery multicast.
//!
//! The namespace goes on every exit path: [`TapNet`]'s `Drop` (normal
//! return, error, panic), a reaper shell that outlives a killed xtask
//! (Ctrl-C, SIGKILL) and deletes it once the xtask's pid is gone, and, for
//! anything left even so, [`TapNet::create`] first deletes the
//! `kiln-bench-*` namespaces whose pid no longer runs.

use std::process::{Command, Stdio};

use crate::Result;

/// The prefix of the namespaces this module makes; the pid follows.
const PREFIX: &str = "kiln-bench-";
/// The tap device's name inside the namespace.
pub const TAP: &str = "kilntap0";
/// The host end's address (the clients' source).
pub const HOST_ADDR: &str = "10.77.0.1";
/// The guest's address (the clients' target).
pub const GUEST_ADDR: &str = "10.77.0.2";
/// The prefix length of both.
pub const PREFIX_LEN: u8 = 24;

/// A live namespace with its tap; deleted on drop.
pub struct TapNet {
    name: String,
}

/// Runs `ip args`, failing with its stderr.
fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// The pid in a namespace name of ours, if it is one.
fn owner_pid(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.parse().ok()
}

/// The network namespaces `ip netns list` names.
fn namespaces() -> Vec<String> {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).stdin(Stdio::null()).output() else {
        return Vec::new();
    };
    // Each line is `name` or `name (id: N)`.
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_whitespace().next()).map(String::from).collect()
}

/// Whether a namespace called `name` exists.
pub fn listed(name: &str) -> bool {
    namespaces().iter().any(|n| n == name)
}

/// Deletes the namespaces of ours left by runs that no longer exist.
fn remove_stale() {
    for name in namespaces() {
        if let Some(pid) = owner_pid(&name) {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                println!("tapnet: removing {name}, left by a run that is gone");
                let _ = ip(&["netns", "del", &name]);
            }
        }
    }
}

/// `program` to be run inside the namespace `netns` (`ip netns exec`,
/// which execs it).
pub fn command_in(netns: &str, program: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", netns, program]);
    c
}

impl TapNet {
    /// Makes the namespace and its tap, after removing stale ones.
    pub fn create() -> Result<TapNet> {
        remove_stale();
        let name = format!("{PREFIX}{}", std::process::id());
        ip(&["netns", "add", &name])?;
        // From here on the guard deletes it, whatever fails next.
        let net = TapNet { name };
        net.spawn_reaper()?;
        net.run("sysctl", &["-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"])?;
        net.run("ip", &["link", "set", "lo", "up"])?;
        net.run("ip", &["tuntap", "add", "dev", TAP, "mode", "tap"])?;
        net.run("ip", &["addr", "add", &format!("{HOST_ADDR}/{PREFIX_LEN}"), "dev", TAP])?;
        net.run("ip", &["link", "set", TAP, "up"])?;
        Ok(net)
    }

    /// The namespace's name (for `ip netns exec`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `program` to be run inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        command_in(&self.name, program)
    }

    /// Runs `program args` inside the namespace, failing with its stderr.
    fn run(&self, program: &str, args: &[&str]) -> Result<()> {
        let out = self
            .command(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{program} in {}: {e}", self.name))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} {} in {}: {}",
                args.join(" "),
                self.name,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// A shell that ignores the terminal's signals and deletes the
    /// namespace once this process is gone: Ctrl-C and SIGKILL skip Drop.
    fn spawn_reaper(&self) -> Result<()> {
        Command::new("sh")
            .args([
                "-c",
                "trap '' INT HUP TERM QUIT; while kill -0 \"$0\" 2>/dev/null; do sleep 1; done; ip netns del \"$1\" 2>/dev/null",
                &std::process::id().to_string(),
                &self.name,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(drop)
            .map_err(|e| format!("start the namespace reaper: {e}"))
    }

    /// QEMU arguments attaching NIC `model` (e.g. `virtio-net-pci`) to the
    /// tap. No vhost: both kernels see QEMU's own virtio-net backend, as
    /// under slirp.
    pub fn netdev_args(model: &str) -> Vec<String> {
        vec![
            "-netdev".into(),
            format!("tap,id=n0,ifname={TAP},script=no,downscript=no,vhost=off"),
            "-device".into(),
            format!("{model},netdev=n0"),
        ]
    }
}

impl Drop for TapNet {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("tapnet: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::owner_pid;

    #[test]
    fn only_our_names_have_owners() {
        assert_eq!(owner_pid("kiln-bench-1234"), Some(1234));
        assert_eq!(owner_pid("kiln-bench-probe"), None);
        assert_eq!(owner_pid("other-1234"), None);
    }
}
