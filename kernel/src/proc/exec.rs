//! Loading an ELF executable into a fresh address space and building the
//! System V initial stack (argc, argv, envp, auxv) that libc's `_start`
//! expects.
//!
//! Static and static-PIE executables are supported. Segments are mapped
//! lazily as private file mappings; a segment's .bss tail reads as zero
//! because bytes past its file size are never copied in.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::consts as c;
use linux_abi::errno::Errno;
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};
use object::LittleEndian as LE;

use crate::fs::Inode;
use crate::mm::aspace::{AddressSpace, STACK_SIZE, STACK_TOP};
use crate::mm::vma::{Backing, Prot, Vma, VmaKind};
use crate::mm::{page_ceil, page_floor, PAGE_SIZE};

/// Where static-PIE executables are loaded (Linux's ELF_ET_DYN_BASE).
const PIE_BASE: u64 = 0x5555_5555_4000;
/// Total bytes of argument and environment strings accepted (ARG_MAX-ish).
pub const MAX_ARG_BYTES: usize = 128 * 1024;

/// What the auxiliary vector says about the new credentials: AT_UID,
/// AT_EUID, AT_GID, AT_EGID, and AT_SECURE for a program that gained
/// privileges (set-id bits or capabilities), which libc then runs in
/// secure mode.
#[derive(Clone, Copy, Debug, Default)]
pub struct AuxCreds {
    pub uid: u32,
    pub euid: u32,
    pub gid: u32,
    pub egid: u32,
    pub secure: bool,
}

pub struct Image {
    pub vm: AddressSpace,
    pub entry: u64,
    pub stack_pointer: u64,
}

fn prot_of(flags: u32) -> Prot {
    Prot { read: flags & elf::PF_R != 0, write: flags & elf::PF_W != 0, exec: flags & elf::PF_X != 0 }
}

/// Reads the part of the file that holds the ELF and program headers.
fn read_headers(inode: &Arc<dyn Inode>) -> Result<Vec<u8>, Errno> {
    let mut head = alloc::vec![0u8; 4096];
    let n = inode.read_at(0, &mut head)?;
    head.truncate(n);
    if n >= 64 {
        let phoff = u64::from_le_bytes(head[32..40].try_into().unwrap_or([0; 8]));
        let phnum = u16::from_le_bytes([head[56], head[57]]) as u64;
        let need = phoff.saturating_add(phnum * 56).min(1 << 20) as usize;
        if need > head.len() {
            head.resize(need, 0);
            let n = inode.read_at(0, &mut head)?;
            head.truncate(n);
        }
    }
    Ok(head)
}

/// Loads the executable in `inode` with the given arguments.
pub fn load(
    inode: &Arc<dyn Inode>,
    path: &str,
    argv: &[String],
    envp: &[String],
    creds: &AuxCreds,
) -> Result<Image, Errno> {
    let headers = read_headers(inode)?;
    let mut vm = AddressSpace::new()?;
    let (entry, phdr, phnum, brk) = map_segments(&headers, inode, &mut vm, path)?;
    vm.set_brk_base(brk);
    vm.insert(Vma {
        start: STACK_TOP - STACK_SIZE,
        end: STACK_TOP,
        prot: Prot { read: true, write: true, exec: false },
        backing: Backing::Anonymous,
        kind: VmaKind::Stack,
        name: None,
        flags: Default::default(),
    })?;
    let sp = build_stack(&mut vm, path, argv, envp, entry, phdr, phnum, creds)?;
    Ok(Image { vm, entry, stack_pointer: sp })
}

/// Maps every PT_LOAD; returns (entry, phdr address, phnum, end of image).
fn map_segments(
    data: &[u8],
    inode: &Arc<dyn Inode>,
    vm: &mut AddressSpace,
    path: &str,
) -> Result<(u64, u64, u64, u64), Errno> {
    if data.len() < 4 || &data[..4] != b"\x7fELF" {
        return Err(Errno::ENOEXEC);
    }
    let header = elf::FileHeader64::<LE>::parse(data).map_err(|_| Errno::ENOEXEC)?;
    let endian = header.endian().map_err(|_| Errno::ENOEXEC)?;
    if header.e_machine(endian) != elf::EM_X86_64 {
        return Err(Errno::ENOEXEC);
    }
    let base = match header.e_type(endian) {
        elf::ET_EXEC => 0,
        elf::ET_DYN => PIE_BASE,
        _ => return Err(Errno::ENOEXEC),
    };
    let phdrs = header.program_headers(endian, data).map_err(|_| Errno::ENOEXEC)?;
    if phdrs.iter().any(|p| p.p_type(endian) == elf::PT_INTERP) {
        log::warn!("exec: dynamically linked executables are not supported yet");
        return Err(Errno::ENOEXEC);
    }
    let phoff = header.e_phoff(endian);
    let mut phdr_addr = 0;
    let mut image_end = 0;
    let file_size = inode.metadata().size;
    for ph in phdrs.iter() {
        match ph.p_type(endian) {
            elf::PT_PHDR => phdr_addr = base + ph.p_vaddr(endian),
            elf::PT_LOAD => {
                let (vaddr, memsz, offset, filesz) =
                    (ph.p_vaddr(endian), ph.p_memsz(endian), ph.p_offset(endian), ph.p_filesz(endian));
                if memsz == 0 {
                    continue;
                }
                if vaddr % PAGE_SIZE != offset % PAGE_SIZE
                    || filesz > memsz
                    || offset.checked_add(filesz).is_none_or(|e| e > file_size)
                {
                    return Err(Errno::ENOEXEC);
                }
                let va = base.checked_add(vaddr).ok_or(Errno::ENOEXEC)?;
                let start = page_floor(va);
                let end = va.checked_add(memsz).and_then(page_ceil).ok_or(Errno::ENOEXEC)?;
                if phdr_addr == 0 && offset <= phoff && phoff < offset + filesz {
                    phdr_addr = va + (phoff - offset);
                }
                vm.insert(Vma {
                    start,
                    end,
                    prot: prot_of(ph.p_flags(endian)),
                    backing: Backing::file(inode.clone(), offset - (va - start), Some(offset + filesz)),
                    kind: VmaKind::Normal,
                    flags: Default::default(),
                    name: Some(String::from(path)),
                })
                .map_err(|_| Errno::ENOEXEC)?;
                image_end = image_end.max(end);
            }
            _ => {}
        }
    }
    if image_end == 0 {
        return Err(Errno::ENOEXEC);
    }
    Ok((base + header.e_entry(endian), phdr_addr, u64::from(header.e_phnum(endian)), image_end))
}

/// Lays out strings, pointers and auxv at the top of the stack.
#[allow(clippy::too_many_arguments)]
fn build_stack(
    vm: &mut AddressSpace,
    path: &str,
    argv: &[String],
    envp: &[String],
    entry: u64,
    phdr: u64,
    phnum: u64,
    creds: &AuxCreds,
) -> Result<u64, Errno> {
    let mut strings: Vec<u8> = Vec::new();
    let mut push_str = |s: &[u8]| -> u64 {
        let off = strings.len() as u64;
        strings.extend_from_slice(s);
        strings.push(0);
        off
    };
    let execfn_off = push_str(path.as_bytes());
    let argv_offs: Vec<u64> = argv.iter().map(|a| push_str(a.as_bytes())).collect();
    let envp_offs: Vec<u64> = envp.iter().map(|e| push_str(e.as_bytes())).collect();
    let platform_off = push_str(b"x86_64");
    let random_off = strings.len() as u64;
    let mut random = [0u8; 16];
    crate::random::fill(&mut random);
    strings.extend_from_slice(&random);

    let strings_base = (STACK_TOP - 16 - strings.len() as u64) & !15;
    let at = |off: u64| strings_base + off;
    let hwcap = u64::from(hal::cpu::cpuid(1, 0).edx);
    let auxv: [(u64, u64); 18] = [
        (c::AT_PHDR, phdr),
        (c::AT_PHENT, 56),
        (c::AT_PHNUM, phnum),
        (c::AT_PAGESZ, PAGE_SIZE),
        (c::AT_BASE, 0),
        (c::AT_FLAGS, 0),
        (c::AT_ENTRY, entry),
        (c::AT_UID, u64::from(creds.uid)),
        (c::AT_EUID, u64::from(creds.euid)),
        (c::AT_GID, u64::from(creds.gid)),
        (c::AT_EGID, u64::from(creds.egid)),
        (c::AT_SECURE, u64::from(creds.secure)),
        (c::AT_RANDOM, at(random_off)),
        (c::AT_HWCAP, hwcap),
        (c::AT_HWCAP2, 0),
        (c::AT_CLKTCK, 100),
        (c::AT_PLATFORM, at(platform_off)),
        (c::AT_EXECFN, at(execfn_off)),
    ];
    let mut words: Vec<u64> = Vec::new();
    words.push(argv.len() as u64);
    words.extend(argv_offs.iter().map(|&o| at(o)));
    words.push(0);
    words.extend(envp_offs.iter().map(|&o| at(o)));
    words.push(0);
    for (k, v) in auxv {
        words.push(k);
        words.push(v);
    }
    words.push(c::AT_NULL);
    words.push(0);
    let table_bytes = words.len() as u64 * 8;
    let sp = (strings_base - table_bytes) & !15;
    if STACK_TOP - sp > STACK_SIZE / 2 {
        return Err(Errno::E2BIG);
    }
    let table: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    vm.write_remote(strings_base, &strings)?;
    vm.write_remote(sp, &table)?;
    Ok(sp)
}
