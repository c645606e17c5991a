//! ELF executables, placed where Linux 6.1 places them without address
//! randomization:
//!
//! * an ET_EXEC program at its own addresses;
//! * an ET_DYN program with an interpreter (a PIE) at ELF_ET_DYN_BASE,
//!   aligned down to its largest segment alignment (0x555555554000 for
//!   the usual 4 KiB);
//! * an ET_DYN program without one (static PIE, or ld.so run by name),
//!   and the interpreter, in the mmap area, each at the highest range
//!   free for its whole span: the interpreter ends right below the mmap
//!   base, the vDSO goes right below it;
//! * the brk at the page after the program's last segment; the stack
//!   executable only when PT_GNU_STACK asks for it.
//!
//! Segments are private file mappings, mapped lazily; bytes past a
//! segment's file size read as zero (that is the .bss). A later segment
//! replaces what an earlier one mapped on the same page, as MAP_FIXED does.
//! The interpreter is opened as Linux's open_exec does, and a file that is
//! no ELF interpreter for this machine is ELIBBAD.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use linux_abi::errno::Errno;
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};
use object::LittleEndian as LE;

use super::stack::{self, AuxValues};
use super::{open_exec, read_exact_or_eof, Binprm, Image};
use crate::fs::dentry::Dentry;
use crate::fs::perm;
use crate::fs::writecount::{deny_write_access, DenyWrite};
use crate::mm::aspace::{AddressSpace, STACK_SIZE, STACK_TOP};
use crate::mm::vma::{Backing, Prot, Vma, VmaKind};
use crate::mm::{page_ceil, page_floor, PAGE_SIZE};

/// Where PIE programs go: 2/3 of the 47-bit address space (Linux's
/// ELF_ET_DYN_BASE on x86_64), before alignment.
const ELF_ET_DYN_BASE: u64 = 0x5555_5555_4aaa;
/// Linux's PATH_MAX: a longer PT_INTERP is refused.
const PATH_MAX: u64 = 4096;

/// Which file is being read: errors in the program are ENOEXEC (another
/// binary format might take it), in its interpreter ELIBBAD.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Program,
    Interpreter,
}

impl Role {
    fn bad(self) -> Errno {
        match self {
            Role::Program => Errno::ENOEXEC,
            Role::Interpreter => Errno::ELIBBAD,
        }
    }
}

/// The parts of an ELF file the loader uses.
struct ElfFile {
    dentry: Arc<Dentry>,
    e_type: u16,
    entry: u64,
    phoff: u64,
    phdrs: Vec<elf::ProgramHeader64<LE>>,
}

impl ElfFile {
    /// Checks the header (`head`: the file's first bytes) and reads the
    /// program headers, as Linux's load_elf_binary and load_elf_phdrs do.
    fn read(dentry: &Arc<Dentry>, head: &[u8], role: Role) -> Result<ElfFile, Errno> {
        let header = elf::FileHeader64::<LE>::parse(head).map_err(|_| role.bad())?;
        let endian = header.endian().map_err(|_| role.bad())?;
        let e_type = header.e_type(endian);
        if header.e_machine(endian) != elf::EM_X86_64
            || (role == Role::Program && e_type != elf::ET_EXEC && e_type != elf::ET_DYN)
        {
            return Err(role.bad());
        }
        let phnum = usize::from(header.e_phnum(endian));
        let size = phnum * core::mem::size_of::<elf::ProgramHeader64<LE>>();
        if usize::from(header.e_phentsize(endian)) != core::mem::size_of::<elf::ProgramHeader64<LE>>()
            || size == 0
            || size > PAGE_SIZE as usize
        {
            return Err(role.bad());
        }
        let mut raw = alloc::vec![0u8; size];
        if read_exact_or_eof(dentry, header.e_phoff(endian), &mut raw).map_err(|_| role.bad())? != size {
            return Err(role.bad());
        }
        let table = object::pod::slice_from_all_bytes::<elf::ProgramHeader64<LE>>(&raw).map_err(|_| role.bad())?;
        let mut phdrs = Vec::new();
        phdrs.try_reserve_exact(table.len()).map_err(|_| Errno::ENOMEM)?;
        phdrs.extend_from_slice(table);
        Ok(ElfFile {
            dentry: dentry.clone(),
            e_type,
            entry: header.e_entry(endian),
            phoff: header.e_phoff(endian),
            phdrs,
        })
    }

    fn loads(&self) -> impl Iterator<Item = &elf::ProgramHeader64<LE>> {
        self.phdrs.iter().filter(|p| p.p_type(LE) == elf::PT_LOAD)
    }

    /// The path PT_INTERP names, if any (the first one counts).
    fn interpreter_path(&self) -> Result<Option<String>, Errno> {
        let Some(ph) = self.phdrs.iter().find(|p| p.p_type(LE) == elf::PT_INTERP) else {
            return Ok(None);
        };
        let len = ph.p_filesz(LE);
        if !(2..=PATH_MAX).contains(&len) {
            return Err(Errno::ENOEXEC);
        }
        let mut path = alloc::vec![0u8; len as usize];
        if read_exact_or_eof(&self.dentry, ph.p_offset(LE), &mut path)? != path.len() {
            return Err(Errno::EIO);
        }
        if path.last() != Some(&0) {
            return Err(Errno::ENOEXEC);
        }
        // The kernel passes it on as a C string: it ends at the first NUL.
        let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
        Ok(Some(String::from_utf8_lossy(&path[..end]).into_owned()))
    }

    fn executable_stack(&self) -> bool {
        self.phdrs.iter().any(|p| p.p_type(LE) == elf::PT_GNU_STACK && p.p_flags(LE) & elf::PF_X != 0)
    }

    /// The page-aligned span of all PT_LOADs (Linux's total_mapping_size).
    fn span(&self) -> Option<(u64, u64)> {
        let low = self.loads().map(|p| page_floor(p.p_vaddr(LE))).min()?;
        let high = self.loads().map(|p| p.p_vaddr(LE).saturating_add(p.p_memsz(LE))).max()?;
        Some((low, page_ceil(high)?))
    }

    /// The largest power-of-two PT_LOAD alignment, at least a page.
    fn max_alignment(&self) -> u64 {
        self.loads().map(|p| p.p_align(LE)).filter(|a| a.is_power_of_two()).max().unwrap_or(0).max(PAGE_SIZE)
    }
}

/// Where an image went.
struct Mapped {
    bias: u64,
    /// Page-aligned end of the last segment (the program's brk).
    end: u64,
}

/// Where an image's first segment goes when the kernel picks: at `hint`
/// if its whole span fits there, else the highest free range (mmap's
/// placement for a file mapping of the total size).
fn pick_bias(vm: &AddressSpace, file: &ElfFile, hint: u64) -> Result<u64, Errno> {
    let (low, high) = file.span().ok_or(Errno::ENOEXEC)?;
    let len = high - low;
    let start = match hint.checked_add(len) {
        Some(end) if hint >= crate::mm::mmap_min_addr() && end <= hal::paging::USER_END && vm.is_free(hint, end) => {
            hint
        }
        _ => vm.find_free(len).ok_or(Errno::ENOMEM)?,
    };
    Ok(start - low)
}

/// Maps every PT_LOAD of `file` (whose path is `name`) at `bias`.
fn map_segments(vm: &mut AddressSpace, file: &ElfFile, name: &str, bias: u64) -> Result<Mapped, Errno> {
    let inode = file.dentry.inode();
    let file_size = inode.metadata().size;
    let mut end = 0;
    for ph in file.loads() {
        let (vaddr, memsz, offset, filesz) = (ph.p_vaddr(LE), ph.p_memsz(LE), ph.p_offset(LE), ph.p_filesz(LE));
        if memsz == 0 {
            continue;
        }
        if vaddr % PAGE_SIZE != offset % PAGE_SIZE
            || filesz > memsz
            || offset.checked_add(filesz).is_none_or(|e| e > file_size)
        {
            return Err(Errno::ENOEXEC);
        }
        let va = bias.checked_add(vaddr).ok_or(Errno::ENOEXEC)?;
        let start = page_floor(va);
        let seg_end = va.checked_add(memsz).and_then(page_ceil).ok_or(Errno::ENOEXEC)?;
        if start < crate::mm::mmap_min_addr() || seg_end > hal::paging::USER_END {
            return Err(Errno::ENOEXEC);
        }
        let flags = ph.p_flags(LE);
        let prot = Prot { read: flags & elf::PF_R != 0, write: flags & elf::PF_W != 0, exec: flags & elf::PF_X != 0 };
        let backing = Backing::file(inode.clone(), offset - (va - start), Some(offset + filesz));
        vm.mmap(start, seg_end - start, prot, backing, true, false)?;
        vm.set_name(start, name);
        end = end.max(seg_end);
    }
    if end == 0 {
        return Err(Errno::ENOEXEC);
    }
    Ok(Mapped { bias, end })
}

/// Loads the ELF program in `dentry` (its first bytes in `head`) with the
/// interpreter it names, the vDSO and the stack for `bprm`.
pub(super) fn load(dentry: &Arc<Dentry>, head: &[u8], bprm: &Binprm, deny: DenyWrite) -> Result<Image, Errno> {
    let program = ElfFile::read(dentry, head, Role::Program)?;
    // The credentials the program will run with: its set-id bits count,
    // not its interpreter's.
    let (creds, mut dumpable) = perm::exec_creds(&bprm.cred, dentry);
    let mut _interp_deny = None;
    let interpreter = match program.interpreter_path()? {
        Some(path) => {
            let d = open_exec(bprm, &path)?;
            // Held while the interpreter loads: an ld.so open for
            // writing cannot run either.
            _interp_deny = Some(deny_write_access(d.inode())?);
            // An unreadable interpreter keeps the process from dumping
            // too (Linux's would_dump).
            dumpable &= perm::may_read(&bprm.cred, d.inode().as_ref());
            let mut ehdr = [0u8; core::mem::size_of::<elf::FileHeader64<LE>>()];
            if read_exact_or_eof(&d, 0, &mut ehdr)? != ehdr.len() {
                return Err(Errno::EIO);
            }
            Some(ElfFile::read(&d, &ehdr, Role::Interpreter)?)
        }
        None => None,
    };

    let mut vm = AddressSpace::new()?;
    vm.insert(Vma {
        start: STACK_TOP - STACK_SIZE,
        end: STACK_TOP,
        prot: Prot { read: true, write: true, exec: program.executable_stack() },
        backing: Backing::Anonymous,
        kind: VmaKind::Stack,
        name: None,
        flags: Default::default(),
    })?;

    let bias = match (program.e_type, &interpreter) {
        (elf::ET_DYN, Some(_)) => {
            let first = program.loads().next().map_or(0, |p| p.p_vaddr(LE));
            page_floor((ELF_ET_DYN_BASE & !(program.max_alignment() - 1)).wrapping_sub(first))
        }
        (elf::ET_DYN, None) => {
            let first = program.loads().next().map_or(0, |p| page_floor(p.p_vaddr(LE)));
            pick_bias(&vm, &program, first)?
        }
        _ => 0,
    };
    let exe = dentry.path();
    let main = map_segments(&mut vm, &program, &exe, bias)?;
    vm.set_brk_base(main.end);

    let (entry, base) = match &interpreter {
        Some(interp) => {
            if interp.e_type != elf::ET_EXEC && interp.e_type != elf::ET_DYN {
                return Err(Errno::EINVAL);
            }
            // A PIE's interpreter ignores its own addresses; otherwise its
            // first segment's address is a hint.
            let bias = match (interp.e_type, program.e_type) {
                (elf::ET_EXEC, _) => 0,
                (_, elf::ET_DYN) => pick_bias(&vm, interp, 0)?,
                _ => {
                    let first = interp.loads().next().map_or(0, |p| page_floor(p.p_vaddr(LE)));
                    pick_bias(&vm, interp, first)?
                }
            };
            let mapped = map_segments(&mut vm, interp, &interp.dentry.path(), bias)?;
            let base = if interp.e_type == elf::ET_DYN { mapped.bias } else { 0 };
            (mapped.bias.wrapping_add(interp.entry), base)
        }
        None => (bias.wrapping_add(program.entry), 0),
    };
    let vdso = crate::vdso::map_into(&mut vm)?;

    // AT_PHDR: where the segment holding the program headers put them.
    let phdr = program
        .loads()
        .find(|p| p.p_offset(LE) <= program.phoff && program.phoff < p.p_offset(LE) + p.p_filesz(LE))
        .map_or(0, |p| program.phoff - p.p_offset(LE) + p.p_vaddr(LE))
        .wrapping_add(bias);
    let c = &creds.cred;
    let aux = AuxValues {
        vdso,
        phdr,
        phnum: program.phdrs.len() as u64,
        base,
        entry: bias.wrapping_add(program.entry),
        uid: c.uid,
        euid: c.euid,
        gid: c.gid,
        egid: c.egid,
        secure: creds.secure,
    };
    let (stack_pointer, auxv) = stack::build(&mut vm, bprm, &aux)?;
    vm.set_stack_limit(bprm.stack_limit);
    vm.settle_stack(stack_pointer);
    let cred = Arc::try_new(creds.cred).map_err(|_| Errno::ENOMEM)?;
    Ok(Image { vm, entry, stack_pointer, exe, cred, dumpable, deny, auxv })
}
