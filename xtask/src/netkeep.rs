//! The network stage's keepalive check: two Kiln machines on a
//! `NET=socket` segment, one (A, 10.0.3.1) connected to an echo on the
//! other (B, 10.0.3.2) with SO_KEEPALIVE and small TCP_KEEPIDLE,
//! TCP_KEEPINTVL and TCP_KEEPCNT. A stays idle longer than idle + cnt ×
//! intvl while B answers the probes (the connection must live: probes
//! went out at the values set after SO_KEEPALIVE), echoes a byte, and
//! then the hub drops everything B sends, as if B had crashed. A's recv
//! must fail with ETIMEDOUT, and not before idle + cnt × intvl have
//! passed since B was last heard (Linux's `tcp_keepalive_timer`).

use std::path::Path;
use std::time::Duration;

use crate::{build, nethub, qemu, Result};

/// The values A sets (seconds, seconds, probes): the reset is due
/// `IDLE + CNT * INTVL` = 5 s after B was last heard.
const IDLE: u32 = 2;
const INTVL: u32 = 1;
const CNT: u32 = 3;

fn check(label: &str, name: &str, r: std::result::Result<String, String>, passed: &mut u64, failed: &mut u64) {
    match r {
        Ok(text) => {
            *passed += 1;
            println!("{label} {name} ... ok ({text})");
        }
        Err(why) => {
            *failed += 1;
            crate::recap::failure(format!("{label} {name} ... FAILED ({why})"));
        }
    }
}

pub fn keepalive(repo: &Path, elf: &Path) -> Result<(u64, u64)> {
    let label = "nic-keepalive";
    let initrd = crate::initramfs::make(repo, &build::out_dir(), None)?;
    let hub_port = crate::netseg::free_udp_port()?;
    let hub = nethub::start(hub_port, 2)?;
    // A tries to connect until B listens (exit status 3: not yet).
    let script_a = format!(
        "i=0; while :; do /t/netpeer keepalive 10.0.3.2 7000 {IDLE} {INTVL} {CNT}; [ $? -ne 3 ] && break; \
         i=$((i+1)); [ $i -gt 120 ] && break; sleep 1; done; echo ka-done"
    );
    // B's echo ends when A's reset reaches it (B still hears A).
    let script_b = "/t/netpeer tcp-echo 7000; echo ka-peer-done".to_string();
    let limit = Duration::from_secs(420);
    let mut guests = Vec::new();
    for (node, ip, script) in [(0u8, "10.0.3.1", script_a), (1, "10.0.3.2", script_b)] {
        let mut extra = vec!["-m".to_string(), "256M".to_string()];
        extra.extend(nethub::netdev_args(hub_port, node, "virtio-net-pci"));
        let cmdline = crate::usertest::shell_cmdline_via(&format!("ip={ip}:::255.255.255.0::eth0:off"), None, &script)?;
        let boot = qemu::Boot {
            image: qemu::Image::Kernel { elf: elf.to_path_buf(), cmdline, initrd: Some(initrd.clone()) },
            smp: 1,
            extra,
        };
        let log = build::out_dir().join(format!("{label}-{}.log", if node == 0 { "a" } else { "b" }));
        let _ = std::fs::remove_file(&log);
        let l2 = log.clone();
        guests.push((log, std::thread::spawn(move || qemu::run_captured(&boot, limit, &l2))));
    }
    let log_a = guests[0].0.clone();
    let alive = crate::netseg::wait_for(&log_a, "ka-alive", Duration::from_secs(360), || {});
    if alive {
        hub.silence(1);
    }
    let (mut passed, mut failed) = (0u64, 0u64);
    let mut outputs = Vec::new();
    for (name, (_, t)) in ["a", "b"].iter().zip(guests) {
        let run = t.join().map_err(|_| "a QEMU thread panicked".to_string())??;
        let (p, f) = crate::usertest::leak_verdict(&format!("{label}-{name}"), &run);
        passed += p;
        failed += f;
        outputs.push(run.output);
    }
    drop(hub);
    let a: Vec<&str> = outputs[0].lines().map(str::trim_end).collect();
    let see = format!("see build/{label}-a.log and -b.log");
    let deadline = IDLE + CNT * INTVL;
    let line = |prefix: &str| a.iter().find(|l| l.starts_with(prefix)).map(|l| l.to_string());
    let r = match line("keepalive: ") {
        Some(l) if l == format!("keepalive: alive after {} s idle", deadline + 3) => {
            Ok(format!("idle {} s with probes answered, then a byte echoed", deadline + 3))
        }
        Some(l) => Err(format!("{l} ({see})")),
        None => Err(format!("A never connected ({see})")),
    };
    check(label, "alive-while-answered", r, &mut passed, &mut failed);
    let want = format!("keepalive: recv ETIMEDOUT after at least {deadline} s ({IDLE} + {CNT} x {INTVL})");
    let r = match line("keepalive: recv").or_else(|| line("keepalive: no error")) {
        Some(l) if l == want => Ok(format!("peer silenced: recv ETIMEDOUT, not before {IDLE} + {CNT} x {INTVL} s")),
        Some(l) => Err(format!("{l} ({see})")),
        None => Err(format!("no verdict after the peer went silent ({see})")),
    };
    check(label, "etimedout", r, &mut passed, &mut failed);
    Ok((passed, failed))
}
