//! The x86_64 ELF core file layout Linux writes (`fs/binfmt_elf.c`): an
//! ELF header of type ET_CORE, a PT_NOTE program header followed by one
//! PT_LOAD per memory area, the notes (NT_PRSTATUS, NT_PRPSINFO,
//! NT_SIGINFO, NT_FPREGSET), then each area's bytes at a page-aligned
//! offset. This module lays out the header part; the caller writes the
//! memory, reading it as it goes.

/// One memory area of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    /// Size in memory.
    pub memsz: u64,
    /// Bytes of it that the file holds (0 for areas not dumped).
    pub filesz: u64,
    pub read: bool,
    pub write: bool,
    pub exec: bool,
}

/// The dumping thread's state: struct elf_prstatus.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrStatus {
    pub signo: u32,
    pub code: i32,
    pub pending: u64,
    pub blocked: u64,
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub sid: i32,
    /// (user, system, children user, children system) in µs.
    pub times_us: [u64; 4],
    /// In user_regs_struct order: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8
    /// rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss fs_base gs_base
    /// ds es fs gs.
    pub regs: [u64; 27],
}

/// struct elf_prpsinfo.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrPsInfo<'a> {
    pub state: u8,
    pub uid: u32,
    pub gid: u32,
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub sid: i32,
    pub fname: &'a [u8],
    pub psargs: &'a [u8],
}

pub const ET_CORE: u16 = 4;
pub const EM_X86_64: u16 = 62;
pub const PT_LOAD: u32 = 1;
pub const PT_NOTE: u32 = 4;
pub const NT_PRSTATUS: u32 = 1;
pub const NT_PRFPREG: u32 = 2;
pub const NT_PRPSINFO: u32 = 3;
pub const NT_SIGINFO: u32 = 0x5349_4749;
const EHDR_SIZE: usize = 64;
const PHDR_SIZE: usize = 56;
const PRSTATUS_SIZE: usize = 336;
const PRPSINFO_SIZE: usize = 136;
pub const PAGE: u64 = 4096;

fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

fn note_size(desc: usize) -> usize {
    // namesz, descsz, type, "CORE\0" padded to 8, desc padded to 4.
    12 + 8 + desc.next_multiple_of(4)
}

fn put_note(buf: &mut [u8], at: usize, kind: u32, desc: &[u8]) -> usize {
    put(buf, at, &5u32.to_le_bytes());
    put(buf, at + 4, &(desc.len() as u32).to_le_bytes());
    put(buf, at + 8, &kind.to_le_bytes());
    put(buf, at + 12, b"CORE\0\0\0\0");
    put(buf, at + 20, desc);
    at + note_size(desc.len())
}

/// The size of the notes for one thread.
pub fn notes_size() -> usize {
    note_size(PRSTATUS_SIZE) + note_size(PRPSINFO_SIZE) + note_size(128) + note_size(512)
}

/// The size of everything before the first segment's bytes (headers and
/// notes, rounded up to a page).
pub fn header_size(segments: usize) -> u64 {
    ((EHDR_SIZE + PHDR_SIZE * (segments + 1) + notes_size()) as u64).next_multiple_of(PAGE)
}

/// Where each segment's bytes go in the file.
pub fn segment_offsets(segments: &[Segment]) -> impl Iterator<Item = u64> + '_ {
    let mut at = header_size(segments.len());
    segments.iter().map(move |s| {
        let here = at;
        at += s.filesz.next_multiple_of(PAGE);
        here
    })
}

/// Writes the ELF header, program headers and notes into `out`, which
/// must be `header_size(segments.len())` bytes long (the caller zeroes
/// it). `siginfo` is the 128-byte siginfo_t, `fpregs` the FXSAVE image.
pub fn write_header(
    out: &mut [u8],
    segments: &[Segment],
    st: &PrStatus,
    ps: &PrPsInfo,
    siginfo: &[u8; 128],
    fpregs: &[u8; 512],
) {
    let phnum = segments.len() + 1;
    put(out, 0, &[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
    put(out, 16, &ET_CORE.to_le_bytes());
    put(out, 18, &EM_X86_64.to_le_bytes());
    put(out, 20, &1u32.to_le_bytes());
    put(out, 32, &(EHDR_SIZE as u64).to_le_bytes());
    put(out, 52, &(EHDR_SIZE as u16).to_le_bytes());
    put(out, 54, &(PHDR_SIZE as u16).to_le_bytes());
    put(out, 56, &(phnum as u16).to_le_bytes());
    put(out, 58, &64u16.to_le_bytes());

    let notes_at = EHDR_SIZE + PHDR_SIZE * phnum;
    let note_ph = EHDR_SIZE;
    put(out, note_ph, &PT_NOTE.to_le_bytes());
    put(out, note_ph + 8, &(notes_at as u64).to_le_bytes());
    put(out, note_ph + 32, &(notes_size() as u64).to_le_bytes());
    for (i, (s, off)) in segments.iter().zip(segment_offsets(segments)).enumerate() {
        let ph = EHDR_SIZE + PHDR_SIZE * (i + 1);
        let flags = u32::from(s.exec) | (u32::from(s.write) << 1) | (u32::from(s.read) << 2);
        put(out, ph, &PT_LOAD.to_le_bytes());
        put(out, ph + 4, &flags.to_le_bytes());
        put(out, ph + 8, &off.to_le_bytes());
        put(out, ph + 16, &s.vaddr.to_le_bytes());
        put(out, ph + 32, &s.filesz.to_le_bytes());
        put(out, ph + 40, &s.memsz.to_le_bytes());
        put(out, ph + 48, &PAGE.to_le_bytes());
    }

    let mut prs = [0u8; PRSTATUS_SIZE];
    put(&mut prs, 0, &st.signo.to_le_bytes());
    put(&mut prs, 4, &st.code.to_le_bytes());
    put(&mut prs, 12, &(st.signo as u16).to_le_bytes());
    put(&mut prs, 16, &st.pending.to_le_bytes());
    put(&mut prs, 24, &st.blocked.to_le_bytes());
    for (i, v) in [st.pid, st.ppid, st.pgrp, st.sid].iter().enumerate() {
        put(&mut prs, 32 + 4 * i, &v.to_le_bytes());
    }
    for (i, us) in st.times_us.iter().enumerate() {
        put(&mut prs, 48 + 16 * i, &(us / 1_000_000).to_le_bytes());
        put(&mut prs, 56 + 16 * i, &(us % 1_000_000).to_le_bytes());
    }
    for (i, r) in st.regs.iter().enumerate() {
        put(&mut prs, 112 + 8 * i, &r.to_le_bytes());
    }
    put(&mut prs, 328, &1u32.to_le_bytes());

    let mut psi = [0u8; PRPSINFO_SIZE];
    psi[0] = ps.state;
    psi[1] = match ps.state {
        0 => b'R',
        1 => b'S',
        2 => b'D',
        _ => b'T',
    };
    put(&mut psi, 16, &ps.uid.to_le_bytes());
    put(&mut psi, 20, &ps.gid.to_le_bytes());
    for (i, v) in [ps.pid, ps.ppid, ps.pgrp, ps.sid].iter().enumerate() {
        put(&mut psi, 24 + 4 * i, &v.to_le_bytes());
    }
    let n = ps.fname.len().min(15);
    put(&mut psi, 40, &ps.fname[..n]);
    let n = ps.psargs.len().min(79);
    put(&mut psi, 56, &ps.psargs[..n]);

    let mut at = notes_at;
    at = put_note(out, at, NT_PRSTATUS, &prs);
    at = put_note(out, at, NT_PRPSINFO, &psi);
    at = put_note(out, at, NT_SIGINFO, siginfo);
    put_note(out, at, NT_PRFPREG, fpregs);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u16_at(b: &[u8], at: usize) -> u16 {
        u16::from_le_bytes([b[at], b[at + 1]])
    }
    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }
    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn header_notes_and_segments() {
        let segs = [
            Segment { vaddr: 0x400000, memsz: 0x2000, filesz: 0x1000, read: true, write: false, exec: true },
            Segment { vaddr: 0x600000, memsz: 0x3000, filesz: 0x3000, read: true, write: true, exec: false },
        ];
        let st = PrStatus { signo: 6, pid: 42, ..PrStatus::default() };
        let ps = PrPsInfo { pid: 42, fname: b"prog", psargs: b"prog -x", ..PrPsInfo::default() };
        let mut out = std::vec![0u8; header_size(2) as usize];
        write_header(&mut out, &segs, &st, &ps, &[0; 128], &[0; 512]);
        assert_eq!(&out[..4], b"\x7fELF");
        assert_eq!(u16_at(&out, 16), ET_CORE);
        assert_eq!(u16_at(&out, 18), EM_X86_64);
        assert_eq!(u16_at(&out, 56), 3);
        // PT_NOTE first, then the loads at page-aligned offsets.
        assert_eq!(u32_at(&out, 64), PT_NOTE);
        let notes = u64_at(&out, 64 + 8) as usize;
        assert_eq!(notes, 64 + 3 * 56);
        assert_eq!(u32_at(&out, 120), PT_LOAD);
        assert_eq!(u32_at(&out, 124), 5); // R + X
        assert_eq!(u64_at(&out, 128), 0x1000);
        assert_eq!(u64_at(&out, 184), 0x2000);
        // NT_PRSTATUS: "CORE", pr_cursig and pr_pid.
        assert_eq!(u32_at(&out, notes + 4), 336);
        assert_eq!(u32_at(&out, notes + 8), NT_PRSTATUS);
        assert_eq!(&out[notes + 12..notes + 17], b"CORE\0");
        assert_eq!(u16_at(&out, notes + 20 + 12), 6);
        assert_eq!(u32_at(&out, notes + 20 + 32), 42);
        let psinfo = notes + note_size(336);
        assert_eq!(u32_at(&out, psinfo + 8), NT_PRPSINFO);
        assert_eq!(&out[psinfo + 20 + 40..psinfo + 20 + 44], b"prog");
        assert_eq!(&out[psinfo + 20 + 56..psinfo + 20 + 63], b"prog -x");
    }
}
