//! The vDSO contract: the layout of the data page the kernel shares with
//! the vDSO's C code (`user/vdso/vvar.h`), and the checks the kernel makes
//! of the image it embeds before mapping it into every process.
//!
//! The image is mapped as is, at a different address in each process, so
//! it must be a position-independent ELF shared object whose one loadable
//! segment starts at file offset 0 and address 0, holds everything a
//! loader reads (headers, dynamic section, symbol tables), and has nothing
//! writable and no bss.

use crate::bytes::{u16_at, u32_at, u64_at};

/// Byte offsets and values of `struct kiln_vvar` (see `vvar.h`).
pub mod vvar {
    pub const SEQ: usize = 0;
    pub const CLOCK_MODE: usize = 4;
    pub const TSC_EPOCH: usize = 8;
    pub const TSC_MULT: usize = 16;
    pub const REALTIME_BASE: usize = 24;
    pub const COARSE_RES: usize = 32;
    pub const CPU_MODE: usize = 40;
    pub const SIZE: usize = 48;

    /// The fixed-point shift of `tsc_mult`: nanoseconds are
    /// `((tsc - tsc_epoch) * tsc_mult) >> TSC_SHIFT`, in the kernel
    /// (`hal::time`) and in the vDSO alike.
    pub const TSC_SHIFT: u32 = 32;

    pub const CLOCK_SYSCALL: u32 = 0;
    pub const CLOCK_TSC: u32 = 1;

    pub const CPU_SYSCALL: u32 = 0;
    pub const CPU_RDPID: u32 = 1;
    pub const CPU_RDTSCP: u32 = 2;

    /// Pages of the `[vvar]` area right below the vDSO text (only the
    /// first is backed), as Linux 6.1 lays out its own.
    pub const PAGES: u64 = 4;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageError {
    NotElf,
    /// Not a 64-bit little-endian x86_64 shared object.
    WrongKind,
    BadProgramHeaders,
    /// The loadable segment is not one segment at offset 0, address 0,
    /// inside the file, without bss.
    BadLoadSegment,
    /// A writable segment: the image is shared read-only by every process.
    Writable,
    NoDynamicSection,
}

/// What the kernel needs to map a checked image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageInfo {
    /// 4 KiB pages holding the whole file (section headers included, as a
    /// debugger reads them from memory).
    pub pages: usize,
}

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PF_W: u32 = 2;

/// Checks `image` against the contract above.
pub fn check_image(image: &[u8]) -> Result<ImageInfo, ImageError> {
    if image.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err(ImageError::NotElf);
    }
    let ident_ok = image.get(4) == Some(&2) && image.get(5) == Some(&1);
    let e_type = u16_at(image, 16).ok_or(ImageError::NotElf)?;
    let e_machine = u16_at(image, 18).ok_or(ImageError::NotElf)?;
    if !ident_ok || e_type != 3 || e_machine != 62 {
        return Err(ImageError::WrongKind);
    }
    let phoff = u64_at(image, 32).ok_or(ImageError::NotElf)? as usize;
    let phentsize = u16_at(image, 54).ok_or(ImageError::NotElf)? as usize;
    let phnum = u16_at(image, 56).ok_or(ImageError::NotElf)? as usize;
    if phentsize != 56 || phnum == 0 {
        return Err(ImageError::BadProgramHeaders);
    }
    let mut loads = 0;
    let mut load_end = 0u64;
    let mut dynamic = None;
    for i in 0..phnum {
        let ph = phoff.checked_add(i * phentsize).ok_or(ImageError::BadProgramHeaders)?;
        let field = |off: usize| u64_at(image, ph + off).ok_or(ImageError::BadProgramHeaders);
        let p_type = u32_at(image, ph).ok_or(ImageError::BadProgramHeaders)?;
        let p_flags = u32_at(image, ph + 4).ok_or(ImageError::BadProgramHeaders)?;
        let (offset, vaddr, filesz, memsz) = (field(8)?, field(16)?, field(32)?, field(40)?);
        match p_type {
            PT_LOAD => {
                loads += 1;
                if offset != 0 || vaddr != 0 || memsz != filesz || filesz > image.len() as u64 {
                    return Err(ImageError::BadLoadSegment);
                }
                if p_flags & PF_W != 0 {
                    return Err(ImageError::Writable);
                }
                load_end = filesz;
            }
            PT_DYNAMIC => dynamic = Some((vaddr, memsz)),
            _ => {}
        }
    }
    if loads != 1 {
        return Err(ImageError::BadLoadSegment);
    }
    match dynamic {
        Some((start, len)) if start.checked_add(len).is_some_and(|end| end <= load_end) => {}
        _ => return Err(ImageError::NoDynamicSection),
    }
    Ok(ImageInfo { pages: image.len().div_ceil(4096) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::process::Command;

    /// A minimal image: ELF header, two program headers (PT_LOAD over the
    /// whole file, PT_DYNAMIC inside it), padding.
    fn image() -> Vec<u8> {
        let mut b = vec![0u8; 0x200];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[16..18].copy_from_slice(&3u16.to_le_bytes());
        b[18..20].copy_from_slice(&62u16.to_le_bytes());
        b[32..40].copy_from_slice(&64u64.to_le_bytes());
        b[54..56].copy_from_slice(&56u16.to_le_bytes());
        b[56..58].copy_from_slice(&2u16.to_le_bytes());
        let mut ph = |i: usize, ty: u32, flags: u32, off: u64, vaddr: u64, size: u64| {
            let p = 64 + i * 56;
            b[p..p + 4].copy_from_slice(&ty.to_le_bytes());
            b[p + 4..p + 8].copy_from_slice(&flags.to_le_bytes());
            b[p + 8..p + 16].copy_from_slice(&off.to_le_bytes());
            b[p + 16..p + 24].copy_from_slice(&vaddr.to_le_bytes());
            b[p + 32..p + 40].copy_from_slice(&size.to_le_bytes());
            b[p + 40..p + 48].copy_from_slice(&size.to_le_bytes());
        };
        ph(0, PT_LOAD, 5, 0, 0, 0x200);
        ph(1, PT_DYNAMIC, 4, 0x100, 0x100, 0x40);
        b
    }

    fn set_u32(b: &mut [u8], off: usize, v: u32) {
        b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    #[test]
    fn accepts_a_well_formed_image() {
        assert_eq!(check_image(&image()), Ok(ImageInfo { pages: 1 }));
        let mut big = image();
        big.resize(4097, 0);
        assert_eq!(check_image(&big), Ok(ImageInfo { pages: 2 }));
    }

    #[test]
    fn rejects_what_cannot_be_shared_read_only() {
        assert_eq!(check_image(b"\x7fEL"), Err(ImageError::NotElf));
        let mut b = image();
        b[18] = 3; // EM_386
        assert_eq!(check_image(&b), Err(ImageError::WrongKind));
        let mut b = image();
        set_u32(&mut b, 64 + 4, 6); // PF_R | PF_W
        assert_eq!(check_image(&b), Err(ImageError::Writable));
        let mut b = image();
        b[64 + 16] = 0x10; // vaddr 0x10
        assert_eq!(check_image(&b), Err(ImageError::BadLoadSegment));
        let mut b = image();
        b[64 + 40..64 + 48].copy_from_slice(&0x300u64.to_le_bytes()); // bss
        assert_eq!(check_image(&b), Err(ImageError::BadLoadSegment));
        let mut b = image();
        set_u32(&mut b, 64 + 56, 4); // PT_DYNAMIC -> PT_NOTE
        assert_eq!(check_image(&b), Err(ImageError::NoDynamicSection));
        let mut b = image();
        b[32..40].copy_from_slice(&0x1f0u64.to_le_bytes()); // headers past the end
        assert_eq!(check_image(&b), Err(ImageError::BadProgramHeaders));
    }

    fn repo() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
    }

    /// The C side's offsets (compiled from vvar.h) equal these constants.
    #[test]
    fn vvar_layout_matches_the_c_header() {
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
        let dir = std::env::temp_dir().join(format!("kiln-vvar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("vvar.c");
        std::fs::write(
            &src,
            "#include <stddef.h>\n#include <stdio.h>\n#include \"vvar.h\"\n\
             #define F(f) printf(\"%zu \", offsetof(struct kiln_vvar, f));\n\
             int main(void) { F(seq) F(clock_mode) F(tsc_epoch) F(tsc_mult) F(realtime_base_ns) F(coarse_res_ns)\n\
             F(cpu_mode) printf(\"%zu %d %d %d %d %d %d %d\\n\", sizeof(struct kiln_vvar), KILN_TSC_SHIFT,\n\
             KILN_CLOCK_SYSCALL, KILN_CLOCK_TSC, KILN_CPU_SYSCALL, KILN_CPU_RDPID, KILN_CPU_RDTSCP, KILN_VVAR_PAGES);\n\
             return 0; }\n",
        )
        .unwrap();
        let exe = dir.join("vvar");
        let built =
            match Command::new(&cc).arg("-I").arg(repo().join("user/vdso")).arg("-o").arg(&exe).arg(&src).output() {
                Ok(o) => o,
                Err(_) => {
                    eprintln!("skipping the vvar.h check: no C compiler");
                    return;
                }
            };
        assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
        let out = String::from_utf8(Command::new(&exe).output().unwrap().stdout).unwrap();
        use vvar::*;
        let rust = [
            SEQ,
            CLOCK_MODE,
            TSC_EPOCH,
            TSC_MULT,
            REALTIME_BASE,
            COARSE_RES,
            CPU_MODE,
            SIZE,
            TSC_SHIFT as usize,
            CLOCK_SYSCALL as usize,
            CLOCK_TSC as usize,
            CPU_SYSCALL as usize,
            CPU_RDPID as usize,
            CPU_RDTSCP as usize,
            PAGES as usize,
        ]
        .map(|v| v.to_string())
        .join(" ");
        assert_eq!(out.trim(), rust);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The real image (when `make -C user/vdso` has built it) passes.
    #[test]
    fn the_built_image_passes() {
        let path = repo().join("build/vdso/vdso.so");
        match std::fs::read(&path) {
            Ok(bytes) => assert!(check_image(&bytes).is_ok(), "{:?}", check_image(&bytes)),
            Err(_) => eprintln!("skipping: {} not built", path.display()),
        }
    }
}
