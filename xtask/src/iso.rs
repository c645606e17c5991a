//! A BIOS-bootable GRUB ISO, so the multiboot2 boot path (the one real
//! machines use) is tested and not only QEMU's direct PVH boot.

use std::path::Path;
use std::process::Command;

use crate::Result;

/// The GRUB script. It has no menu: the commands run as the script is read,
/// so there is nothing to wait for. GRUB also writes to the serial port so
/// that, if it fails to load the kernel, the error shows up in the log
/// instead of only on a VGA screen nobody sees.
pub fn grub_cfg(cmdline: &str) -> String {
    let sep = if cmdline.is_empty() { "" } else { " " };
    format!(
        "set timeout=0\n\
         serial --unit=0 --speed=115200\n\
         terminal_output serial console\n\
         multiboot2 /boot/kiln.elf{sep}{cmdline}\n\
         boot\n"
    )
}

/// Builds `out` from `elf`. The staging tree sits next to the ISO and is
/// recreated each time so no stale file ends up on the image.
pub fn make(elf: &Path, cmdline: &str, out: &Path) -> Result<()> {
    let stem = out.file_stem().and_then(|s| s.to_str()).unwrap_or("kiln");
    let dir = out.with_file_name(format!("{stem}-iso-root"));
    let io = |what: &str, p: &Path, e: std::io::Error| format!("{what} {}: {e}", p.display());
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| io("remove", &dir, e))?;
    }
    let grub = dir.join("boot").join("grub");
    std::fs::create_dir_all(&grub).map_err(|e| io("create", &grub, e))?;
    let dst = dir.join("boot").join("kiln.elf");
    std::fs::copy(elf, &dst).map_err(|e| io("copy to", &dst, e))?;
    let cfg = grub.join("grub.cfg");
    std::fs::write(&cfg, grub_cfg(cmdline)).map_err(|e| io("write", &cfg, e))?;

    // grub-mkrescue is chatty (xorriso's banner and progress) on success;
    // show its output only when it fails.
    let output = Command::new("grub-mkrescue")
        .arg("-o")
        .arg(out)
        .arg(&dir)
        .output()
        .map_err(|e| format!("cannot start grub-mkrescue: {e}"))?;
    if !output.status.success() {
        eprint!("{}", String::from_utf8_lossy(&output.stdout));
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        return Err(format!("grub-mkrescue failed ({})", output.status));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cfg_loads_kernel_with_cmdline() {
        let cfg = grub_cfg("ktest.filter=boot");
        assert!(cfg.contains("set timeout=0\n"));
        assert!(cfg.contains("\nmultiboot2 /boot/kiln.elf ktest.filter=boot\nboot\n"));
        assert!(grub_cfg("").contains("\nmultiboot2 /boot/kiln.elf\n"));
    }
}
