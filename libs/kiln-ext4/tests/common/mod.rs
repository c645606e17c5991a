//! Shared helpers of the host tests: in-memory block devices (plain, with
//! a write limit that models a power cut, and copy-on-write over a shared
//! image for the fuzzer), and e2fsprogs wrappers (mkfs.ext4, e2fsck,
//! debugfs) working in a per-test temporary directory.

#![allow(dead_code)]

use kiln_ext4::{BlockDevice, Errno, Result, Timestamp};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

pub const SECTOR: usize = 512;

/// An image held in memory. `write_limit` stops accepting writes after that
/// many (they are silently lost, as at a power cut).
pub struct MemDevice {
    pub data: Vec<u8>,
    pub writes: u64,
    pub flushes: u64,
    pub write_limit: Option<u64>,
}

impl MemDevice {
    pub fn new(data: Vec<u8>) -> Self {
        MemDevice { data, writes: 0, flushes: 0, write_limit: None }
    }
    pub fn open(path: &Path) -> Self {
        Self::new(std::fs::read(path).expect("read image"))
    }
    pub fn save(&self, path: &Path) {
        std::fs::write(path, &self.data).expect("write image");
    }
}

impl BlockDevice for MemDevice {
    fn sector_count(&self) -> u64 {
        (self.data.len() / SECTOR) as u64
    }
    fn read(&mut self, sector: u64, buf: &mut [u8]) -> Result<()> {
        let off = sector as usize * SECTOR;
        let src = self.data.get(off..off + buf.len()).ok_or(Errno::EIO)?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn write(&mut self, sector: u64, buf: &[u8]) -> Result<()> {
        self.writes += 1;
        if self.write_limit.is_some_and(|l| self.writes > l) {
            return Ok(());
        }
        let off = sector as usize * SECTOR;
        let dst = self.data.get_mut(off..off + buf.len()).ok_or(Errno::EIO)?;
        dst.copy_from_slice(buf);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        self.flushes += 1;
        Ok(())
    }
}

/// Copy-on-write sectors over a shared image: cheap per fuzz case.
pub struct OverlayDevice {
    pub base: Rc<Vec<u8>>,
    pub changed: HashMap<u64, Vec<u8>>,
}

impl OverlayDevice {
    pub fn new(base: Rc<Vec<u8>>) -> Self {
        OverlayDevice { base, changed: HashMap::new() }
    }
    pub fn poke(&mut self, byte: usize, value: u8) {
        let s = (byte / SECTOR) as u64;
        let mut sec = self.sector(s);
        sec[byte % SECTOR] = value;
        self.changed.insert(s, sec);
    }
    fn sector(&self, s: u64) -> Vec<u8> {
        match self.changed.get(&s) {
            Some(v) => v.clone(),
            None => self.base[s as usize * SECTOR..(s as usize + 1) * SECTOR].to_vec(),
        }
    }
}

impl BlockDevice for OverlayDevice {
    fn sector_count(&self) -> u64 {
        (self.base.len() / SECTOR) as u64
    }
    fn read(&mut self, sector: u64, buf: &mut [u8]) -> Result<()> {
        if (sector as usize + buf.len() / SECTOR) * SECTOR > self.base.len() {
            return Err(Errno::EIO);
        }
        for (i, chunk) in buf.chunks_mut(SECTOR).enumerate() {
            chunk.copy_from_slice(&self.sector(sector + i as u64));
        }
        Ok(())
    }
    fn write(&mut self, sector: u64, buf: &[u8]) -> Result<()> {
        if (sector as usize + buf.len() / SECTOR) * SECTOR > self.base.len() {
            return Err(Errno::EIO);
        }
        for (i, chunk) in buf.chunks(SECTOR).enumerate() {
            self.changed.insert(sector + i as u64, chunk.to_vec());
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A fresh temporary directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("kiln-ext4-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sbin(tool: &str) -> String {
    for d in ["/usr/sbin", "/sbin", "/usr/bin"] {
        let p = format!("{d}/{tool}");
        if Path::new(&p).exists() {
            return p;
        }
    }
    tool.to_string()
}

/// `mkfs.<kind>` on a new image of `size_kib`, filled from `from`.
pub fn mkfs(kind: &str, img: &Path, size_kib: u64, extra: &[&str], from: Option<&Path>) {
    let f = std::fs::File::create(img).unwrap();
    f.set_len(size_kib * 1024).unwrap();
    drop(f);
    let mut c = Command::new(sbin(&format!("mkfs.{kind}")));
    c.arg("-q").arg("-F").args(["-E", "root_owner=0:0"]).args(extra);
    if let Some(d) = from {
        c.arg("-d").arg(d);
    }
    c.arg(img);
    // A fixed creation time keeps images reproducible.
    c.env("E2FSPROGS_FAKE_TIME", "1700000000");
    let out = c.output().expect("run mkfs");
    assert!(out.status.success(), "mkfs failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// `e2fsck` with `args`; (exit code, output).
pub fn e2fsck(img: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(sbin("e2fsck")).args(args).arg(img).output().expect("run e2fsck");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// Asserts that `e2fsck -fn` finds nothing wrong.
pub fn assert_clean(img: &Path) {
    let (code, text) = e2fsck(img, &["-fn"]);
    assert_eq!(code, 0, "e2fsck -fn is not clean:\n{text}");
}

/// Runs a debugfs request (read-only unless `write`); its output.
pub fn debugfs(img: &Path, request: &str, write: bool) -> String {
    let mut c = Command::new(sbin("debugfs"));
    if write {
        c.arg("-w");
    }
    let out = c.arg("-R").arg(request).arg(img).output().expect("run debugfs");
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

pub fn t(sec: i64, nsec: u32) -> Timestamp {
    Timestamp { sec, nsec }
}

/// Sets an extended attribute on a host file (std has no setxattr).
pub fn host_setxattr(path: &Path, name: &str, value: &str) -> bool {
    Command::new("python3")
        .arg("-c")
        .arg("import os,sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())")
        .arg(path)
        .arg(name)
        .arg(value)
        .status()
        .is_ok_and(|s| s.success())
}

/// A deterministic generator (xorshift64*), for the tests' data and the fuzzer.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Bytes that identify their file and offset, so misplaced data shows.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    (0..len).map(|_| r.next() as u8).collect()
}

/// A debugfs request's standard output, as bytes (for `cat`).
pub fn debugfs_bytes(img: &Path, request: &str) -> Vec<u8> {
    Command::new(sbin("debugfs")).arg("-R").arg(request).arg(img).output().expect("run debugfs").stdout
}
