//! `NET=socket`: Kiln machines on one Ethernet segment made of UDP
//! datagrams between 127.0.0.1 ports, never anything else.
//!
//! Each machine's NIC is a QEMU `-netdev dgram` whose remote end is the
//! hub's port: every frame the guest sends is one datagram to the hub,
//! and the hub forwards it as a learning switch does (to the port its
//! destination MAC was last seen from, or to every other member when it
//! has not been seen or is a broadcast). Members are the machines' own
//! ports, known in advance so a machine that has sent nothing yet still
//! hears broadcasts, plus any other 127.0.0.1 sender (the hostile-frame
//! program of `netflood`). Machine `n` of a segment on hub port `P` sends
//! from port `P + 1 + n` and has MAC `52:54:00:4b:00:n`.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::Result;

/// The default hub port of `make run NET=socket` and `make nethub`.
pub const DEFAULT_PORT: u16 = 10400;

/// Machine `node`'s MAC on a segment.
pub fn mac(node: u8) -> [u8; 6] {
    [0x52, 0x54, 0x00, 0x4b, 0x00, node]
}

/// Machine `node`'s UDP port on the segment whose hub is at `hub`.
pub fn node_port(hub: u16, node: u8) -> u16 {
    hub + 1 + node as u16
}

/// QEMU arguments joining machine `node` (NIC model `model`) to the
/// segment of the hub at 127.0.0.1:`hub`.
pub fn netdev_args(hub: u16, node: u8, model: &str) -> Vec<String> {
    let m = mac(node);
    let mac = m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
    vec![
        "-netdev".into(),
        format!(
            "dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port={},remote.type=inet,remote.host=127.0.0.1,remote.port={hub}",
            node_port(hub, node)
        ),
        "-device".into(),
        format!("{model},netdev=n0,mac={mac}"),
    ]
}

/// A running hub; dropping it stops its thread.
pub struct Hub {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    port: u16,
    /// Members whose frames the hub drops (a machine gone silent).
    muted: Arc<Mutex<Vec<SocketAddr>>>,
}

impl Hub {
    /// From now on machine `node` is not heard: every frame it sends is
    /// dropped (it still receives), as if it had crashed.
    pub fn silence(&self, node: u8) {
        let addr = SocketAddr::from(([127, 0, 0, 1], node_port(self.port, node)));
        if let Ok(mut m) = self.muted.lock() {
            m.push(addr);
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts a hub on 127.0.0.1:`port` for machines 0..`nodes`.
pub fn start(port: u16, nodes: u8) -> Result<Hub> {
    let sock = UdpSocket::bind(("127.0.0.1", port)).map_err(|e| format!("hub: bind 127.0.0.1:{port}: {e}"))?;
    sock.set_read_timeout(Some(Duration::from_millis(100))).map_err(|e| format!("hub: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let members: Vec<SocketAddr> = (0..nodes).map(|n| SocketAddr::from(([127, 0, 0, 1], node_port(port, n)))).collect();
    let muted = Arc::new(Mutex::new(Vec::new()));
    let m = muted.clone();
    let thread = std::thread::spawn(move || switch(sock, members, &flag, &m));
    Ok(Hub { stop, thread: Some(thread), port, muted })
}

fn switch(sock: UdpSocket, mut members: Vec<SocketAddr>, stop: &AtomicBool, muted: &Mutex<Vec<SocketAddr>>) {
    let mut seen: HashMap<[u8; 6], SocketAddr> = HashMap::new();
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, from)) = sock.recv_from(&mut buf) else { continue };
        if !from.ip().is_loopback() {
            continue;
        }
        if muted.lock().is_ok_and(|m| m.contains(&from)) {
            continue;
        }
        if !members.contains(&from) {
            members.push(from);
        }
        let frame = &buf[..n];
        if n == 0 {
            // QEMU's dgram netdev would take it for the end of the
            // connection and stop receiving.
            continue;
        }
        if n < 14 {
            // Not even an Ethernet header: every other member gets it
            // (a broken frame is what the hostile tests send).
            for m in members.iter().filter(|m| **m != from) {
                let _ = sock.send_to(frame, m);
            }
            continue;
        }
        let mut src = [0u8; 6];
        src.copy_from_slice(&frame[6..12]);
        if src[0] & 1 == 0 {
            seen.insert(src, from);
        }
        let mut dst = [0u8; 6];
        dst.copy_from_slice(&frame[..6]);
        match seen.get(&dst) {
            Some(to) if dst[0] & 1 == 0 => {
                if *to != from {
                    let _ = sock.send_to(frame, to);
                }
            }
            _ => {
                for m in members.iter().filter(|m| **m != from) {
                    let _ = sock.send_to(frame, m);
                }
            }
        }
    }
}

/// `xtask nethub [PORT [NODES]]`: a hub in the foreground for
/// `make run NET=socket NODE=n` machines, until interrupted.
pub fn main(args: &[String]) -> Result<std::process::ExitCode> {
    let port = match args.first() {
        Some(p) => p.parse().map_err(|_| format!("nethub: bad port {p}"))?,
        None => DEFAULT_PORT,
    };
    let nodes = match args.get(1) {
        Some(n) => n.parse().map_err(|_| format!("nethub: bad machine count {n}"))?,
        None => 4,
    };
    let _hub = start(port, nodes)?;
    println!("nethub: 127.0.0.1:{port}, machines 0..{nodes} on ports {}..", node_port(port, 0));
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
