//! Boot: the two ways a loader hands Kiln the CPU, and the climb to 64-bit
//! higher-half code.
//!
//! QEMU's `-kernel` enters through the Xen PVH note in 32-bit protected mode
//! with `%ebx` pointing at an `hvm_start_info`; GRUB enters through the
//! multiboot2 header with `%eax` holding the multiboot2 magic and `%ebx` the
//! boot information. Both land on `_start32`, which builds throw-away page
//! tables (identity, direct map and higher half for the first 4 GiB with
//! 2 MiB pages), enables long mode with NX, and jumps to `hal_entry64`. From
//! there [`crate::init`] parses the boot information and builds the real
//! kernel address space.

use core::arch::global_asm;

/// Magic the multiboot2 loader leaves in `%eax`.
pub const MULTIBOOT2_BOOTLOADER_MAGIC: u32 = 0x36d7_6289;

global_asm!(
    r#"
    .section .multiboot2, "a"
    .balign 8
mb2_header_start:
    .long 0xe85250d6                 /* magic */
    .long 0                          /* architecture: i386 protected mode */
    .long mb2_header_end - mb2_header_start
    .long -(0xe85250d6 + 0 + (mb2_header_end - mb2_header_start))
    /* entry address tag: the 32-bit entry point */
    .balign 8
    .short 3
    .short 0
    .long 12
    .long _start32
    /* end tag */
    .balign 8
    .short 0
    .short 0
    .long 8
mb2_header_end:

    .section .note.Xen, "a", @note
    .balign 4
    .long 4                          /* namesz */
    .long 4                          /* descsz */
    .long 18                         /* XEN_ELFNOTE_PHYS32_ENTRY */
    .asciz "Xen"
    .long _start32

    .section .boot.bss, "aw", @nobits
    .balign 4096
    .global hal_boot_pml4
hal_boot_pml4:
boot_pml4:      .skip 4096
boot_pdpt_low:  .skip 4096
boot_pdpt_high: .skip 4096
boot_pd:        .skip 4096 * 4

    .section .boot.data, "aw"
    .balign 16
boot_gdt:
    .quad 0
    .quad 0x00af9a000000ffff         /* 0x08: 64-bit kernel code */
    .quad 0x00cf92000000ffff         /* 0x10: data */
boot_gdt_end:
boot_gdt_ptr:
    .short boot_gdt_end - boot_gdt - 1
    .long boot_gdt

    .section .boot.text, "ax"
    .code32
    .global _start32
_start32:
    cli
    cld
    mov edi, eax                     /* loader magic (multiboot2) or junk (PVH) */
    mov esi, ebx                     /* boot information, physical */

    /* 4 page directories of 2 MiB pages: identity of the first 4 GiB */
    mov ecx, 0
1:
    mov eax, ecx
    shl eax, 21
    or eax, 0x83                     /* present, writable, huge */
    mov edx, ecx
    shr edx, 11                      /* high half of the physical address */
    mov [boot_pd + ecx * 8], eax
    mov [boot_pd + ecx * 8 + 4], edx
    inc ecx
    cmp ecx, 2048
    jne 1b

    /* pdpt_low[0..4] -> the four page directories */
    mov ecx, 0
2:
    mov eax, ecx
    shl eax, 12
    add eax, offset boot_pd
    or eax, 0x3
    mov [boot_pdpt_low + ecx * 8], eax
    mov dword ptr [boot_pdpt_low + ecx * 8 + 4], 0
    inc ecx
    cmp ecx, 4
    jne 2b

    /* pdpt_high[510] (-2 GiB) -> first GiB, where the kernel image lives */
    mov eax, offset boot_pd
    or eax, 0x3
    mov [boot_pdpt_high + 510 * 8], eax

    mov eax, offset boot_pdpt_low
    or eax, 0x3
    mov [boot_pml4], eax             /* identity, for this code */
    mov [boot_pml4 + 256 * 8], eax   /* direct map base 0xffff800000000000 */
    mov eax, offset boot_pdpt_high
    or eax, 0x3
    mov [boot_pml4 + 511 * 8], eax

    mov eax, offset boot_pml4
    mov cr3, eax
    mov eax, cr4
    or eax, 0x20                     /* PAE */
    mov cr4, eax
    mov ecx, 0xC0000080              /* EFER */
    rdmsr
    or eax, 0x900                    /* LME | NXE */
    wrmsr
    mov eax, cr0
    or eax, 0x80010001               /* PG | WP | PE */
    mov cr0, eax

    lgdt [boot_gdt_ptr]
    /* ljmp 0x08:boot_long_mode, spelled out so the assembler cannot pick a 16-bit form */
    .byte 0xea
    .long boot_long_mode
    .short 0x08

    .code64
boot_long_mode:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor eax, eax
    mov fs, ax
    mov gs, ax
    movabs rax, offset hal_entry64
    jmp rax

    .section .text.hal_entry64, "ax"
hal_entry64:
    movabs rsp, offset {stack} + {stack_size}
    xor ebp, ebp
    /* edi = magic, esi = info (zero-extended by the 32-bit moves) */
    call {rust_entry}
    ud2
"#,
    stack = sym BOOT_STACK,
    stack_size = const BOOT_STACK_SIZE,
    rust_entry = sym crate::hal_start,
);

const BOOT_STACK_SIZE: usize = 64 * 1024;

/// The stack `hal_start` runs on until the first guarded kernel stack exists.
/// `static mut` so it lands in writable .bss; only the assembly above names it.
#[repr(C, align(16))]
struct BootStack([u8; BOOT_STACK_SIZE]);

static mut BOOT_STACK: BootStack = BootStack([0; BOOT_STACK_SIZE]);
