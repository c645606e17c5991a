//! The hostile member of a `NET=socket` segment: malformed frames, a SYN
//! flood and a connection flood aimed at one Kiln machine, all seeded and
//! bounded in count and time.
//!
//! It joins the segment as any machine does (a UDP socket on 127.0.0.1
//! sending to the hub) with its own MAC and IPv4 address, answers ARP for
//! that address (so the target can reply to it), and never names another
//! member's address as a source (so no member's ARP entry is poisoned and
//! the normal traffic afterwards means something).

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::Result;

pub const FLOOD_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x4b, 0x00, 0x99];
pub const FLOOD_IP: [u8; 4] = [10, 0, 3, 9];

/// The machine attacked.
#[derive(Clone, Copy)]
pub struct Target {
    pub mac: [u8; 6],
    pub ip: [u8; 4],
    /// TCP ports with listeners (the flood goes to the first).
    pub tcp_ports: [u16; 2],
    /// A UDP echo server the malformed frames go to.
    pub udp_port: u16,
    /// Another, for the liveness probes (and the other machine): one the
    /// frames never reach, since a datagram echoed towards a source no
    /// machine answers ARP for blocks its socket (see docs/networking.md).
    pub probe_port: u16,
}

/// UDP ports no frame may touch (the guests' "go on" signals).
pub const SIGNAL_PORTS: [u16; 2] = [7003, 7005];

/// xorshift64*: seeded, reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545f4914f6cdd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
    /// Up to `max - 1` random bytes.
    fn upto(&mut self, max: u64) -> Vec<u8> {
        let n = self.below(max) as usize;
        self.bytes(n)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// The Internet checksum of `data` starting from `sum`.
fn csum(mut sum: u32, data: &[u8]) -> u16 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [b] = chunks.remainder() {
        sum += (*b as u32) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn pseudo4(src: [u8; 4], dst: [u8; 4], proto: u8, len: usize) -> u32 {
    let mut s = 0u32;
    for c in [src, dst] {
        s += u16::from_be_bytes([c[0], c[1]]) as u32 + u16::from_be_bytes([c[2], c[3]]) as u32;
    }
    s + proto as u32 + len as u32
}

fn eth(dst: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + payload.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&FLOOD_MAC);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, options: &[u8], payload: &[u8], id: u16) -> Vec<u8> {
    let hl = 20 + options.len();
    let mut p = vec![0u8; hl];
    p[0] = 0x40 | (hl / 4) as u8;
    p[2..4].copy_from_slice(&((hl + payload.len()) as u16).to_be_bytes());
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[8] = 64;
    p[9] = proto;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    p[20..].copy_from_slice(options);
    let c = csum(0, &p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(payload);
    p
}

/// A TCP segment with a right checksum for IPv4 `src` → `dst`.
#[allow(clippy::too_many_arguments)]
fn tcp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, options: &[u8]) -> Vec<u8> {
    let hl = 20 + options.len().div_ceil(4) * 4;
    let mut t = vec![0u8; hl];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[12] = ((hl / 4) as u8) << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&65535u16.to_be_bytes());
    t[20..20 + options.len()].copy_from_slice(options);
    let c = csum(pseudo4(src, dst, 6, t.len()), &t);
    t[16..18].copy_from_slice(&c.to_be_bytes());
    t
}

fn udp4(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = 8 + payload.len();
    let mut u = vec![0u8; 8];
    u[0..2].copy_from_slice(&sport.to_be_bytes());
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u[4..6].copy_from_slice(&(len as u16).to_be_bytes());
    u.extend_from_slice(payload);
    let c = csum(pseudo4(src, dst, 17, len), &u);
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const ACK: u8 = 0x10;

/// A source address that is not another member's: ours, or one no
/// machine has.
fn source(rng: &mut Rng) -> [u8; 4] {
    match rng.below(3) {
        0 => FLOOD_IP,
        1 => [10, 0, 3, 100 + rng.below(150) as u8],
        _ => [192, 0, 2, rng.next() as u8],
    }
}

fn dport(rng: &mut Rng, t: &Target) -> u16 {
    let p = match rng.below(4) {
        0 => t.tcp_ports[0],
        1 => t.tcp_ports[1],
        2 => t.udp_port,
        _ => rng.next() as u16,
    };
    if SIGNAL_PORTS.contains(&p) || p == t.probe_port {
        p + 1
    } else {
        p
    }
}

/// Random TCP options: known kinds with wrong lengths, unknown kinds,
/// lengths past the end.
fn tcp_options(rng: &mut Rng) -> Vec<u8> {
    let mut o = Vec::new();
    for _ in 0..rng.below(6) {
        match rng.below(6) {
            0 => o.extend_from_slice(&[2, rng.below(6) as u8, rng.next() as u8, rng.next() as u8]),
            1 => o.extend_from_slice(&[3, rng.below(5) as u8, rng.next() as u8]),
            2 => o.extend_from_slice(&[4, rng.below(4) as u8]),
            3 => {
                let n = rng.below(40) as u8;
                o.extend_from_slice(&[5, n]);
                o.extend(rng.bytes(n.saturating_sub(2) as usize % 34));
            }
            4 => o.extend_from_slice(&[8, 10, 0, 0, 0, 1, 0, 0, 0, 0]),
            _ => o.extend(rng.upto(8)),
        }
    }
    o.truncate(40);
    o
}

/// One malformed (or odd but well-formed) frame for `t`.
pub fn hostile_frame(rng: &mut Rng, t: &Target, kind: Option<u64>) -> Vec<u8> {
    let dst_mac = if rng.chance(90) { t.mac } else { [0xff; 6] };
    let src = source(rng);
    let k = rng.below(10);
    let mut frame = match kind.unwrap_or(k) {
        // Bytes.
        0 => {
            let n = rng.below(1600) as usize;
            let mut f = rng.bytes(n);
            if n >= 6 {
                f[..6].copy_from_slice(&dst_mac);
            }
            f
        }
        // An unknown or odd EtherType.
        1 => {
            let et = [0x0800, 0x86dd, 0x0806, 0x8100, 0x88cc, rng.next() as u16][rng.below(6) as usize];
            let n = rng.below(100) as usize;
            eth(dst_mac, et, &rng.bytes(n))
        }
        // ARP with bad sizes, operations, truncations (never about a
        // member's address but the target's own).
        2 => {
            let mut a = vec![0, 1, 8, 0, 6, 4, 0, 1];
            if rng.chance(50) {
                a[rng.below(8) as usize] = rng.next() as u8;
            }
            a.extend_from_slice(&FLOOD_MAC);
            a.extend_from_slice(&FLOOD_IP);
            a.extend_from_slice(&[0; 6]);
            a.extend_from_slice(&t.ip);
            let cut = if rng.chance(30) { rng.below(a.len() as u64) as usize } else { a.len() };
            a.truncate(cut);
            eth(dst_mac, 0x0806, &a)
        }
        // IPv4 with a broken header.
        3 => {
            let opts = if rng.chance(40) {
                {
                    let n = rng.below(11) as usize * 4;
                    rng.bytes(n)
                }
            } else {
                Vec::new()
            };
            let body = rng.upto(200);
            let mut p =
                ipv4(src, t.ip, [1, 6, 17, 2, 41, 47, rng.next() as u8][rng.below(7) as usize], &opts, &body, 1);
            match rng.below(7) {
                0 => p[0] = (rng.below(16) as u8) << 4 | 5,
                1 => p[0] = 0x40 | rng.below(16) as u8,
                2 => p[2..4].copy_from_slice(&(rng.next() as u16).to_be_bytes()),
                3 => p[10] ^= 0x5a,
                4 => p[8] = 0,
                5 => p.truncate(rng.below(20) as usize),
                _ => p[12..16].copy_from_slice(&[255, 255, 255, 255]),
            }
            eth(dst_mac, 0x0800, &p)
        }
        // IPv4 fragments of a UDP datagram: random offsets, overlaps,
        // too short, too long.
        4 => {
            let body = udp4(src, t.ip, 40000, dport(rng, t), &rng.upto(3000));
            let off = rng.below(body.len() as u64) as usize & !7;
            let end = (off + 8 + rng.below(1400) as usize).min(body.len());
            let mut p = ipv4(src, t.ip, 17, &[], &body[off..end], rng.below(4) as u16);
            let more = if rng.chance(70) { 0x2000u16 } else { 0 };
            let fo = if rng.chance(10) { rng.next() as u16 & 0x1fff } else { (off / 8) as u16 };
            p[6..8].copy_from_slice(&(more | fo).to_be_bytes());
            p[10..12].copy_from_slice(&[0, 0]);
            let c = csum(0, &p[..20]);
            p[10..12].copy_from_slice(&c.to_be_bytes());
            eth(dst_mac, 0x0800, &p)
        }
        // IPv6 with random extension-header chains and lengths.
        5 => {
            let mut p = vec![0x60, 0, 0, 0, 0, 0, [0, 43, 44, 60, 6, 17, 58, 59][rng.below(8) as usize], 64];
            p.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x4b, 0, 0x99]);
            p.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x4b, 0, t.mac[5]]);
            let body = rng.upto(300);
            let len = if rng.chance(70) { body.len() as u16 } else { rng.next() as u16 };
            p[4..6].copy_from_slice(&len.to_be_bytes());
            p.extend_from_slice(&body);
            eth(if rng.chance(50) { dst_mac } else { [0x33, 0x33, 0, 0, 0, 1] }, 0x86dd, &p)
        }
        // TCP with odd flags, offsets and options, checksums right or not.
        6 | 7 => {
            let flags = rng.next() as u8;
            let flags = if flags & SYN != 0 && rng.chance(50) { flags & !SYN } else { flags };
            let opts = tcp_options(rng);
            let mut seg = tcp4(
                src,
                t.ip,
                1024 + rng.below((CONN_BASE - 1024) as u64) as u16,
                dport(rng, t),
                rng.next() as u32,
                rng.next() as u32,
                flags,
                &opts,
            );
            seg.extend(rng.upto(64));
            match rng.below(5) {
                0 => seg[12] = (rng.below(16) as u8) << 4,
                1 => seg[16] ^= 0x33,
                2 => seg.truncate(rng.below(20) as usize),
                _ => {
                    // Right checksum over what is sent.
                    seg[16..18].copy_from_slice(&[0, 0]);
                    let c = csum(pseudo4(src, t.ip, 6, seg.len()), &seg);
                    seg[16..18].copy_from_slice(&c.to_be_bytes());
                }
            }
            eth(dst_mac, 0x0800, &ipv4(src, t.ip, 6, &[], &seg, 7))
        }
        // UDP with lying lengths and checksums.
        8 => {
            let mut u = udp4(src, t.ip, rng.next() as u16, dport(rng, t), &rng.upto(600));
            match rng.below(4) {
                0 => u[4..6].copy_from_slice(&(rng.next() as u16).to_be_bytes()),
                1 => u[6] ^= 0x10,
                2 => u[6..8].copy_from_slice(&[0, 0]),
                _ => u.truncate(rng.below(8) as usize),
            }
            eth(dst_mac, 0x0800, &ipv4(src, t.ip, 17, &[], &u, 9))
        }
        // ICMP of every type, echo requests of every size.
        _ => {
            let mut m = vec![rng.below(50) as u8, rng.below(16) as u8, 0, 0];
            m.extend(rng.upto(1400));
            let c = csum(0, &m);
            if rng.chance(80) {
                m[2..4].copy_from_slice(&c.to_be_bytes());
            }
            eth(dst_mac, 0x0800, &ipv4(src, t.ip, 1, &[], &m, 11))
        }
    };
    // Now and then cut the finished frame short or pad it out.
    if rng.chance(10) && !frame.is_empty() {
        frame.truncate(rng.below(frame.len() as u64) as usize);
    } else if rng.chance(5) {
        frame.extend(rng.upto(64));
    }
    frame.truncate(1514);
    if frame.is_empty() {
        // QEMU's dgram netdev takes an empty datagram for the end of the
        // connection and stops receiving: no Ethernet carries one anyway.
        frame.push(0);
    }
    frame
}

/// What the floods saw.
#[derive(Default, Debug)]
pub struct Report {
    pub frames: u64,
    pub syns: u64,
    pub syn_acks_to_flood: u64,
    pub handshakes: u64,
    pub handshakes_tried: u64,
}

/// A member of the segment: sends to the hub, and a thread answers ARP
/// for [`FLOOD_IP`] and completes the handshakes the connection flood
/// begins.
pub struct Member {
    sock: UdpSocket,
    hub: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// SYN-ACKs from the target to the SYN flood's ports.
    flood_acks: Arc<AtomicU64>,
    /// UDP echoes of our probes from the target.
    pongs: Arc<AtomicU64>,
    /// Connection-flood ports whose handshake we finished.
    completed: Arc<Mutex<std::collections::HashSet<u16>>>,
}

/// Our UDP port for liveness probes (echoed by the target's 7001).
const PROBE_PORT: u16 = 40001;

/// Source ports of the connection flood start here; the SYN flood's are
/// below.
const CONN_BASE: u16 = 30000;

impl Member {
    pub fn join(hub_port: u16, target: Target) -> Result<Member> {
        let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("flood: bind: {e}"))?;
        let hub = std::net::SocketAddr::from(([127, 0, 0, 1], hub_port));
        let rx = sock.try_clone().map_err(|e| format!("flood: {e}"))?;
        rx.set_read_timeout(Some(Duration::from_millis(100))).map_err(|e| format!("flood: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flood_acks = Arc::new(AtomicU64::new(0));
        let completed = Arc::new(Mutex::new(std::collections::HashSet::new()));
        let pongs = Arc::new(AtomicU64::new(0));
        let (s, a, c, p) = (stop.clone(), flood_acks.clone(), completed.clone(), pongs.clone());
        let thread = std::thread::spawn(move || answer(rx, hub, target, &s, &a, &c, &p));
        let m = Member { sock, hub, stop, thread: Some(thread), flood_acks, pongs, completed };
        // A gratuitous ARP so the hub knows where FLOOD_MAC is.
        let mut arp = vec![0, 1, 8, 0, 6, 4, 0, 2];
        arp.extend_from_slice(&FLOOD_MAC);
        arp.extend_from_slice(&FLOOD_IP);
        arp.extend_from_slice(&FLOOD_MAC);
        arp.extend_from_slice(&FLOOD_IP);
        m.send(&eth([0xff; 6], 0x0806, &arp));
        Ok(m)
    }

    fn send(&self, frame: &[u8]) {
        let _ = self.sock.send_to(frame, self.hub);
    }

    /// A UDP datagram to a machine's `port` (the guests' signal).
    pub fn signal(&self, mac: [u8; 6], ip: [u8; 4], port: u16) {
        let u = udp4(FLOOD_IP, ip, 40000, port, b"go");
        self.send(&eth(mac, 0x0800, &ipv4(FLOOD_IP, ip, 17, &[], &u, 1)));
    }

    /// Whether the target's UDP echo server answers within `limit` (the
    /// driver, the stack and user space are all alive).
    pub fn ping(&self, t: &Target, limit: Duration) -> bool {
        let before = self.pongs.load(Ordering::Relaxed);
        let end = Instant::now() + limit;
        let mut seq = 0u16;
        while Instant::now() < end {
            let u = udp4(FLOOD_IP, t.ip, PROBE_PORT, t.probe_port, b"kiln probe");
            self.send(&eth(t.mac, 0x0800, &ipv4(FLOOD_IP, t.ip, 17, &[], &u, seq)));
            seq += 1;
            std::thread::sleep(Duration::from_millis(500));
            if self.pongs.load(Ordering::Relaxed) > before {
                return true;
            }
        }
        false
    }

    /// `count` malformed frames, at most `limit` long.
    pub fn hostile(&self, t: &Target, seed: u64, count: u64, kind: Option<u64>, limit: Duration, r: &mut Report) {
        let mut rng = Rng::new(seed);
        let end = Instant::now() + limit;
        for i in 0..count {
            self.send(&hostile_frame(&mut rng, t, kind));
            r.frames += 1;
            if i % 64 == 63 {
                // The guest's ring is 256 frames: do not drown it faster
                // than a busy TCG machine drains it.
                std::thread::sleep(Duration::from_millis(2));
                if Instant::now() > end {
                    break;
                }
            }
        }
    }

    /// `count` SYNs from random ports below CONN_BASE, never finished.
    pub fn syn_flood(&self, t: &Target, seed: u64, count: u64, limit: Duration, r: &mut Report) {
        let mut rng = Rng::new(seed);
        let end = Instant::now() + limit;
        for i in 0..count {
            let sport = 1024 + rng.below((CONN_BASE - 1024) as u64) as u16;
            let seg = tcp4(FLOOD_IP, t.ip, sport, t.tcp_ports[0], rng.next() as u32, 0, SYN, &[2, 4, 5, 0xb4]);
            self.send(&eth(t.mac, 0x0800, &ipv4(FLOOD_IP, t.ip, 6, &[], &seg, i as u16)));
            r.syns += 1;
            if i % 64 == 63 {
                std::thread::sleep(Duration::from_millis(2));
                if Instant::now() > end {
                    break;
                }
            }
        }
        r.syn_acks_to_flood = self.flood_acks.load(Ordering::Relaxed);
    }

    /// `count` handshakes to `port` from ports CONN_BASE.., left open;
    /// at most `window` unanswered at once, SYNs resent after a second.
    pub fn conn_flood(&self, t: &Target, port: u16, count: u16, window: usize, limit: Duration, r: &mut Report) {
        let end = Instant::now() + limit;
        let mut sent_at: Vec<Option<Instant>> = vec![None; count as usize];
        let mut next = 0usize;
        loop {
            let done = self.completed.lock().map(|c| c.len()).unwrap_or(0);
            if done >= count as usize || Instant::now() > end {
                break;
            }
            let outstanding = {
                let c = self.completed.lock().expect("lock");
                (0..next).filter(|i| !c.contains(&(CONN_BASE + *i as u16))).count()
            };
            if outstanding < window && next < count as usize {
                self.syn(t, port, CONN_BASE + next as u16);
                sent_at[next] = Some(Instant::now());
                r.handshakes_tried += 1;
                next += 1;
                continue;
            }
            // Resend SYNs unanswered for a second (the target dropped them
            // while its queue was full).
            let c = self.completed.lock().expect("lock").clone();
            for (i, at) in sent_at.iter_mut().enumerate().take(next) {
                let p = CONN_BASE + i as u16;
                if !c.contains(&p) && at.is_some_and(|a| a.elapsed() > Duration::from_secs(1)) {
                    self.syn(t, port, p);
                    *at = Some(Instant::now());
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        r.handshakes = self.completed.lock().map(|c| c.len() as u64).unwrap_or(0);
    }

    fn syn(&self, t: &Target, port: u16, sport: u16) {
        let seg = tcp4(FLOOD_IP, t.ip, sport, port, sport as u32 * 1000, 0, SYN, &[2, 4, 5, 0xb4]);
        self.send(&eth(t.mac, 0x0800, &ipv4(FLOOD_IP, t.ip, 6, &[], &seg, sport)));
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The member's receive side: ARP replies for FLOOD_IP, ACKs finishing
/// the connection flood's handshakes, a count of the SYN flood's SYN-ACKs.
fn answer(
    sock: UdpSocket,
    hub: std::net::SocketAddr,
    t: Target,
    stop: &AtomicBool,
    flood_acks: &AtomicU64,
    completed: &Mutex<std::collections::HashSet<u16>>,
    pongs: &AtomicU64,
) {
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let Ok((n, _)) = sock.recv_from(&mut buf) else { continue };
        let f = &buf[..n];
        if n < 42 {
            continue;
        }
        let et = u16::from_be_bytes([f[12], f[13]]);
        if et == 0x0806 && f[20..22] == [0, 1] && f[38..42] == FLOOD_IP {
            let mut a = vec![0, 1, 8, 0, 6, 4, 0, 2];
            a.extend_from_slice(&FLOOD_MAC);
            a.extend_from_slice(&FLOOD_IP);
            a.extend_from_slice(&f[22..32]);
            let mut sender = [0u8; 6];
            sender.copy_from_slice(&f[22..28]);
            let _ = sock.send_to(&eth(sender, 0x0806, &a), hub);
            continue;
        }
        if et == 0x0800 && f[23] == 17 && f[30..34] == FLOOD_IP && f[36..38] == PROBE_PORT.to_be_bytes() {
            pongs.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if et != 0x0800 || f[23] != 6 || f[30..34] != FLOOD_IP || f[26..30] != t.ip {
            continue;
        }
        let ihl = (f[14] & 15) as usize * 4;
        let tcp = &f[14 + ihl..];
        if tcp.len() < 20 {
            continue;
        }
        let sport = u16::from_be_bytes([tcp[0], tcp[1]]);
        let dport = u16::from_be_bytes([tcp[2], tcp[3]]);
        let seq = u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]);
        let flags = tcp[13];
        if flags & (SYN | ACK) != SYN | ACK || flags & RST != 0 {
            continue;
        }
        if dport < CONN_BASE {
            flood_acks.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let seg = tcp4(FLOOD_IP, t.ip, dport, sport, dport as u32 * 1000 + 1, seq.wrapping_add(1), ACK, &[]);
        let _ = sock.send_to(&eth(t.mac, 0x0800, &ipv4(FLOOD_IP, t.ip, 6, &[], &seg, dport)), hub);
        if let Ok(mut c) = completed.lock() {
            c.insert(dport);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_verify() {
        let seg = tcp4([10, 0, 3, 9], [10, 0, 3, 1], 1234, 80, 1, 0, SYN, &[2, 4, 5, 0xb4]);
        assert_eq!(csum(pseudo4([10, 0, 3, 9], [10, 0, 3, 1], 6, seg.len()), &seg), 0);
        let ip = ipv4([10, 0, 3, 9], [10, 0, 3, 1], 6, &[], &seg, 1);
        assert_eq!(csum(0, &ip[..20]), 0);
    }

    #[test]
    fn frames_are_reproducible_and_bounded() {
        let t = Target { mac: [2; 6], ip: [10, 0, 3, 1], tcp_ports: [7004, 7000], udp_port: 7002, probe_port: 7001 };
        let (mut a, mut b) = (Rng::new(5), Rng::new(5));
        for _ in 0..2000 {
            let f = hostile_frame(&mut a, &t, None);
            assert_eq!(f, hostile_frame(&mut b, &t, None));
            assert!(!f.is_empty() && f.len() <= 1514);
        }
    }
}
