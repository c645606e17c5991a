//! The ACPI facts Kiln needs at boot: which CPUs exist (their local APIC
//! ids) and where the IO APIC is, both from the MADT, and where PCI
//! configuration space is memory-mapped (ECAM), from the MCFG, and
//! where the VT-d remapping unit is, from the DMAR.
//!
//! The tables sit in firmware-reserved memory that the kernel's direct map
//! does not cover, so they are read once during boot, while the loader's
//! page tables still map the first 4 GiB, and the results are kept in
//! [`AcpiFacts`]. Parsing itself is [`kiln_util::acpi`]'s, which treats the
//! firmware's bytes as untrusted; this module only finds and maps them.

use kiln_util::{acpi, vtd};

use crate::percpu::MAX_CPUS;

/// What the MADT said, or defaults when there was no usable MADT.
#[derive(Clone, Copy, Debug)]
pub struct AcpiFacts {
    /// Whether a valid MADT was found.
    pub madt_found: bool,
    apic_ids: [u32; MAX_CPUS],
    cpus: usize,
    /// Further usable CPUs listed beyond [`MAX_CPUS`].
    pub cpus_ignored: usize,
    /// The first IO APIC's physical address.
    pub ioapic: Option<u64>,
    /// The MCFG's ECAM window for PCI segment 0, if there is one (QEMU's
    /// q35 has it; the older `pc` machine has no MCFG).
    pub ecam: Option<acpi::McfgEntry>,
    /// The DMAR (VT-d remapping units), when the machine has an IOMMU.
    pub dmar: Option<vtd::Dmar>,
}

impl AcpiFacts {
    pub const fn none() -> AcpiFacts {
        AcpiFacts {
            madt_found: false,
            apic_ids: [0; MAX_CPUS],
            cpus: 0,
            cpus_ignored: 0,
            ioapic: None,
            ecam: None,
            dmar: None,
        }
    }

    /// Local APIC ids of the usable CPUs, in MADT order.
    pub fn cpu_apic_ids(&self) -> &[u32] {
        &self.apic_ids[..self.cpus]
    }
}

/// Where the loader said the RSDP is.
pub(crate) enum RsdpSource<'a> {
    /// A copy of the RSDP (multiboot2 ACPI tags).
    Bytes(&'a [u8]),
    /// Its physical address (PVH).
    Phys(u64),
    /// Unknown: search the BIOS area.
    Search,
}

/// Reads `len` bytes of physical memory below 4 GiB, through the loader's
/// direct map; None when the range is not below 4 GiB.
type PhysReader = fn(u64, usize) -> Option<&'static [u8]>;

/// Finds and reads the MADT. Runs on the boot page tables.
pub(crate) fn read_facts(source: RsdpSource<'_>, phys: PhysReader) -> AcpiFacts {
    let rsdp = match source {
        RsdpSource::Bytes(b) => acpi::parse_rsdp(b),
        RsdpSource::Phys(addr) => phys(addr, acpi::RSDP_V2_LEN).and_then(acpi::parse_rsdp),
        RsdpSource::Search => None,
    }
    .or_else(|| {
        // The BIOS read-only area, where SeaBIOS and others put it.
        phys(0xE_0000, 0x2_0000).and_then(acpi::find_rsdp).map(|(_, r)| r)
    });
    let mut facts = AcpiFacts::none();
    let Some(root) = rsdp.and_then(|r| r.root_table_addr()).and_then(|a| table_at(a, phys)) else {
        return facts;
    };
    let find = |sig: &[u8; 4]| {
        acpi::root_table_entries(root)
            .filter_map(|addr| table_at(addr, phys))
            .find(|t| acpi::parse_sdt_header(t).is_some_and(|h| h.signature == *sig))
    };
    facts.dmar = find(b"DMAR").and_then(vtd::parse_dmar);
    facts.ecam = find(b"MCFG").and_then(|t| acpi::mcfg_entries(t).find(|e| e.segment == 0));
    let Some(madt_bytes) = find(b"APIC") else {
        return facts;
    };
    let Some(madt) = acpi::parse_madt(madt_bytes) else {
        return facts;
    };
    facts.madt_found = true;
    for entry in madt.entries() {
        if let Some(id) = entry.enabled_cpu_apic_id() {
            if facts.cpu_apic_ids().contains(&id) {
                continue;
            }
            if facts.cpus < MAX_CPUS {
                facts.apic_ids[facts.cpus] = id;
                facts.cpus += 1;
            } else {
                facts.cpus_ignored += 1;
            }
        }
        if let acpi::MadtEntry::IoApic { address, .. } = entry {
            facts.ioapic.get_or_insert(u64::from(address));
        }
    }
    facts
}

/// The whole table at `addr` if its header and checksum are sound.
fn table_at(addr: u64, phys: PhysReader) -> Option<&'static [u8]> {
    let header = acpi::parse_sdt_header(phys(addr, acpi::SDT_HEADER_LEN)?)?;
    // No firmware table is anywhere near this large; a bad length must
    // not make us read across the address space.
    if header.length > 1 << 20 {
        return None;
    }
    let table = phys(addr, header.length as usize)?;
    acpi::table_is_valid(table).then_some(table)
}

/// The usable CPUs' APIC ids, if the firmware listed them.
pub(crate) fn cpu_apic_ids() -> Option<&'static [u32]> {
    let facts = &crate::bootinfo::get().acpi;
    (facts.madt_found && !facts.cpu_apic_ids().is_empty()).then(|| facts.cpu_apic_ids())
}
