//! Host unit tests for [`super`], kept in their own file so the
//! implementation stays readable.

use super::*;
use crate::testrng::Rng;

/// The byte that makes `bytes` (with that byte's slot zeroed) sum to 0.
fn fix(bytes: &[u8]) -> u8 {
    0u8.wrapping_sub(bytes.iter().fold(0u8, |s, &b| s.wrapping_add(b)))
}

fn rsdp_v1(rsdt: u32) -> Vec<u8> {
    let mut b = RSDP_SIGNATURE.to_vec();
    b.push(0); // checksum
    b.extend_from_slice(b"BOCHS ");
    b.push(0); // revision
    b.extend_from_slice(&rsdt.to_le_bytes());
    b[8] = fix(&b);
    assert_eq!(b.len(), RSDP_V1_LEN);
    b
}

fn rsdp_v2(rsdt: u32, xsdt: u64) -> Vec<u8> {
    let mut b = rsdp_v1(rsdt);
    b[15] = 2;
    b[8] = 0;
    b[8] = fix(&b);
    b.extend_from_slice(&(RSDP_V2_LEN as u32).to_le_bytes());
    b.extend_from_slice(&xsdt.to_le_bytes());
    b.extend_from_slice(&[0; 4]); // extended checksum, reserved
    b[32] = fix(&b);
    assert_eq!(b.len(), RSDP_V2_LEN);
    b
}

/// A table with a correct header (length, checksum) around `body`.
fn sdt(signature: &[u8; 4], revision: u8, body: &[u8]) -> Vec<u8> {
    let mut t = signature.to_vec();
    t.extend_from_slice(&((SDT_HEADER_LEN + body.len()) as u32).to_le_bytes());
    t.push(revision);
    t.push(0); // checksum
    t.extend_from_slice(b"BOCHS BXPC    ");
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(b"BXPC");
    t.extend_from_slice(&1u32.to_le_bytes());
    assert_eq!(t.len(), SDT_HEADER_LEN);
    t.extend_from_slice(body);
    t[9] = fix(&t);
    t
}

/// Assembles an MADT body entry by entry.
struct MadtBuilder(Vec<u8>);

impl MadtBuilder {
    fn new() -> Self {
        let mut b = 0xfee0_0000u32.to_le_bytes().to_vec();
        b.extend_from_slice(&MADT_PCAT_COMPAT.to_le_bytes());
        MadtBuilder(b)
    }

    fn entry(mut self, kind: u8, payload: &[u8]) -> Self {
        self.0.push(kind);
        self.0.push((2 + payload.len()) as u8);
        self.0.extend_from_slice(payload);
        self
    }

    fn lapic(self, uid: u8, apic_id: u8, flags: u32) -> Self {
        let mut p = vec![uid, apic_id];
        p.extend_from_slice(&flags.to_le_bytes());
        self.entry(0, &p)
    }

    fn ioapic(self, id: u8, address: u32, gsi_base: u32) -> Self {
        let mut p = vec![id, 0];
        p.extend_from_slice(&address.to_le_bytes());
        p.extend_from_slice(&gsi_base.to_le_bytes());
        self.entry(1, &p)
    }

    fn iso(self, source: u8, gsi: u32, flags: u16) -> Self {
        let mut p = vec![0, source];
        p.extend_from_slice(&gsi.to_le_bytes());
        p.extend_from_slice(&flags.to_le_bytes());
        self.entry(2, &p)
    }

    fn x2apic(self, id: u32, flags: u32, uid: u32) -> Self {
        let mut p = vec![0, 0];
        p.extend_from_slice(&id.to_le_bytes());
        p.extend_from_slice(&flags.to_le_bytes());
        p.extend_from_slice(&uid.to_le_bytes());
        self.entry(9, &p)
    }

    fn finish(self) -> Vec<u8> {
        sdt(b"APIC", 3, &self.0)
    }
}

/// What QEMU's `-smp 3,maxcpus=4` MADT looks like, plus an x2APIC entry
/// and the local NMI entry (type 4) QEMU adds.
fn qemu_madt() -> Vec<u8> {
    MadtBuilder::new()
        .lapic(0, 0, 1)
        .lapic(1, 1, 1)
        .lapic(2, 2, 1)
        .lapic(3, 3, 0) // not plugged in
        .ioapic(0, 0xfec0_0000, 0)
        .iso(0, 2, 0)
        .iso(9, 9, 0xd) // SCI: level, active high
        .entry(4, &[0xff, 0, 0, 1])
        .x2apic(300, 1, 300)
        .finish()
}

#[test]
fn rsdp_v1_parses() {
    let b = rsdp_v1(0x7fe_1234);
    let r = parse_rsdp(&b).unwrap();
    assert_eq!(r, Rsdp { revision: 0, rsdt_addr: 0x7fe_1234, xsdt_addr: None });
    assert_eq!(r.root_table_addr(), Some(0x7fe_1234));
    // Trailing bytes (the caller mapped more) are ignored.
    let mut long = b.clone();
    long.extend_from_slice(&[0xaa; 20]);
    assert_eq!(parse_rsdp(&long), Some(r));
}

#[test]
fn rsdp_v2_parses() {
    let b = rsdp_v2(0x7fe_1234, 0x1_0000_5678);
    let r = parse_rsdp(&b).unwrap();
    assert_eq!(r, Rsdp { revision: 2, rsdt_addr: 0x7fe_1234, xsdt_addr: Some(0x1_0000_5678) });
    assert_eq!(r.root_table_addr(), Some(0x1_0000_5678));
    // A zero XSDT address falls back to the RSDT.
    let r = parse_rsdp(&rsdp_v2(0x1000, 0)).unwrap();
    assert_eq!(r.xsdt_addr, None);
    assert_eq!(r.root_table_addr(), Some(0x1000));
    assert_eq!(parse_rsdp(&rsdp_v2(0, 0)).unwrap().root_table_addr(), None);
}

#[test]
fn rsdp_rejects_bad_checksums() {
    let mut b = rsdp_v1(0x1000);
    b[16] ^= 1;
    assert_eq!(parse_rsdp(&b), None);
    // Breaking only the extended part fails the extended checksum.
    let mut b = rsdp_v2(0x1000, 0x2000);
    b[24] ^= 1;
    assert_eq!(parse_rsdp(&b), None);
    // Breaking the first 20 bytes fails the v1 checksum, even if the
    // extended checksum is fixed up to match.
    let mut b = rsdp_v2(0x1000, 0x2000);
    b[16] ^= 1;
    b[32] = 0;
    b[32] = fix(&b);
    assert_eq!(parse_rsdp(&b), None);
}

#[test]
fn rsdp_rejects_bad_signature() {
    let mut b = rsdp_v1(0x1000);
    b[0] = b'r';
    b[8] = 0;
    b[8] = fix(&b); // checksum right, signature wrong
    assert_eq!(parse_rsdp(&b), None);
    assert_eq!(parse_rsdp(&[0; 36]), None);
}

#[test]
fn rsdp_rejects_short_input() {
    let v1 = rsdp_v1(0x1000);
    assert_eq!(parse_rsdp(&v1[..19]), None);
    assert_eq!(parse_rsdp(&[]), None);
    // A revision-2 RSDP needs all of its `length` bytes.
    let v2 = rsdp_v2(0x1000, 0x2000);
    assert_eq!(parse_rsdp(&v2[..20]), None);
    assert_eq!(parse_rsdp(&v2[..35]), None);
    // ... and a length below 36 is bogus, even with matching checksums.
    let mut b = v2.clone();
    b[20] = 20;
    b[32] = 0;
    b[32] = fix(&b);
    assert_eq!(parse_rsdp(&b), None);
}

#[test]
fn rsdp_found_in_bios_area() {
    let mut area = vec![0u8; 0x400];
    // A signature without a valid checksum is skipped ...
    area[0x40..0x48].copy_from_slice(RSDP_SIGNATURE);
    // ... misaligned copies are not looked at ...
    area[0x108..0x108 + RSDP_V2_LEN].copy_from_slice(&rsdp_v2(0xdead, 0xbeef));
    assert_eq!(find_rsdp(&area), None);
    // ... and the first aligned valid one wins.
    area[0x200..0x200 + RSDP_V2_LEN].copy_from_slice(&rsdp_v2(0x1000, 0x2000));
    area[0x300..0x300 + RSDP_V1_LEN].copy_from_slice(&rsdp_v1(0x3000));
    let (off, r) = find_rsdp(&area).unwrap();
    assert_eq!((off, r.xsdt_addr), (0x200, Some(0x2000)));
    // An RSDP cut off by the end of the area is not reported.
    assert_eq!(find_rsdp(&area[..0x210]), None);
    assert_eq!(find_rsdp(&[]), None);
}

#[test]
fn sdt_header_and_checksum() {
    let t = sdt(b"FACP", 6, &[1, 2, 3, 4, 5]);
    assert_eq!(parse_sdt_header(&t), Some(SdtHeader { signature: *b"FACP", length: 41, revision: 6 }));
    // The header alone is enough to read the length ...
    assert!(parse_sdt_header(&t[..SDT_HEADER_LEN]).is_some());
    assert!(parse_sdt_header(&t[..SDT_HEADER_LEN - 1]).is_none());
    // ... but not to validate the table.
    assert!(table_is_valid(&t));
    assert!(!table_is_valid(&t[..40]));
    let mut long = t.clone();
    long.extend_from_slice(&[9; 7]);
    assert!(table_is_valid(&long), "bytes past `length` are not summed");
    let mut bad = t.clone();
    bad[38] ^= 0x80;
    assert!(!table_is_valid(&bad));
    // A length shorter than the header itself is malformed.
    let mut short = sdt(b"FACP", 6, &[]);
    short[4] = 35;
    assert!(parse_sdt_header(&short).is_none());
    assert!(!table_is_valid(&short));
    assert!(!table_is_valid(&[]));
}

#[test]
fn rsdt_entries() {
    let mut body = Vec::new();
    for a in [0x7fe_0000u32, 0, 0x7fe_1000, 0xffff_f000] {
        body.extend_from_slice(&a.to_le_bytes());
    }
    let t = sdt(b"RSDT", 1, &body);
    assert!(table_is_valid(&t));
    let got: Vec<u64> = root_table_entries(&t).collect();
    assert_eq!(got, vec![0x7fe_0000, 0x7fe_1000, 0xffff_f000], "null entry skipped");
    // A trailing partial entry is ignored.
    let mut odd = body.clone();
    odd.extend_from_slice(&[1, 2]);
    assert_eq!(root_table_entries(&sdt(b"RSDT", 1, &odd)).count(), 3);
    // A table cut short of its length yields nothing.
    assert_eq!(root_table_entries(&t[..t.len() - 1]).count(), 0);
    // An empty root table is fine.
    assert_eq!(root_table_entries(&sdt(b"RSDT", 1, &[])).count(), 0);
}

#[test]
fn xsdt_entries() {
    let mut body = Vec::new();
    for a in [0x7fe_0000u64, 0x1_2345_6000, 0] {
        body.extend_from_slice(&a.to_le_bytes());
    }
    let t = sdt(b"XSDT", 1, &body);
    let got: Vec<u64> = root_table_entries(&t).collect();
    assert_eq!(got, vec![0x7fe_0000, 0x1_2345_6000]);
    // Other tables are not root tables.
    assert_eq!(root_table_entries(&sdt(b"FACP", 1, &body)).count(), 0);
    assert_eq!(root_table_entries(&[]).count(), 0);
}

#[test]
fn madt_qemu_like() {
    let t = qemu_madt();
    assert!(table_is_valid(&t));
    let m = parse_madt(&t).unwrap();
    assert_eq!(m.local_apic_address, 0xfee0_0000);
    assert!(m.pcat_compat());
    let entries: Vec<MadtEntry> = m.entries().collect();
    assert_eq!(
        entries,
        vec![
            MadtEntry::LocalApic { processor_uid: 0, apic_id: 0, flags: 1 },
            MadtEntry::LocalApic { processor_uid: 1, apic_id: 1, flags: 1 },
            MadtEntry::LocalApic { processor_uid: 2, apic_id: 2, flags: 1 },
            MadtEntry::LocalApic { processor_uid: 3, apic_id: 3, flags: 0 },
            MadtEntry::IoApic { id: 0, address: 0xfec0_0000, gsi_base: 0 },
            MadtEntry::InterruptOverride { bus: 0, source: 0, gsi: 2, flags: 0 },
            MadtEntry::InterruptOverride { bus: 0, source: 9, gsi: 9, flags: 0xd },
            MadtEntry::Other { kind: 4 },
            MadtEntry::LocalX2Apic { x2apic_id: 300, flags: 1, processor_uid: 300 },
        ]
    );
    let cpus: Vec<u32> = m.entries().filter_map(|e| e.enabled_cpu_apic_id()).collect();
    assert_eq!(cpus, vec![0, 1, 2, 300]);
    let cpus: Vec<u32> = m.entries().filter_map(|e| e.usable_cpu_apic_id()).collect();
    assert_eq!(cpus, vec![0, 1, 2, 300]);
    // The entries borrow the table, not the `Madt`.
    let it = parse_madt(&t).unwrap().entries();
    assert_eq!(it.count(), 9);
}

#[test]
fn cpu_flags() {
    let lapic = |apic_id, flags| MadtEntry::LocalApic { processor_uid: 0, apic_id, flags };
    let x2 = |x2apic_id, flags| MadtEntry::LocalX2Apic { x2apic_id, flags, processor_uid: 0 };
    // Online capable only: a hot-add slot, counted but not started.
    assert_eq!(lapic(5, 2).usable_cpu_apic_id(), Some(5));
    assert_eq!(lapic(5, 2).enabled_cpu_apic_id(), None);
    assert_eq!(x2(500, 2).usable_cpu_apic_id(), Some(500));
    assert_eq!(x2(500, 2).enabled_cpu_apic_id(), None);
    assert_eq!(lapic(5, 0).usable_cpu_apic_id(), None);
    assert_eq!(x2(500, 0).usable_cpu_apic_id(), None);
    // Other flag bits do not matter.
    assert_eq!(lapic(5, 0xffff_fffd).enabled_cpu_apic_id(), Some(5));
    assert_eq!(lapic(5, 0xffff_fffc).usable_cpu_apic_id(), None);
    // Broadcast ids never name a CPU.
    assert_eq!(lapic(0xff, 1).usable_cpu_apic_id(), None);
    assert_eq!(x2(u32::MAX, 1).usable_cpu_apic_id(), None);
    // Non-CPU entries.
    assert_eq!(MadtEntry::IoApic { id: 0, address: 0, gsi_base: 0 }.usable_cpu_apic_id(), None);
    assert_eq!(MadtEntry::Other { kind: 0 }.enabled_cpu_apic_id(), None);
}

#[test]
fn madt_address_override_and_long_entries() {
    let mut p = vec![0, 0];
    p.extend_from_slice(&0x1_fee0_0000u64.to_le_bytes());
    // An entry longer than its fields (a later ACPI revision) still decodes,
    // and the walk steps over the extra bytes.
    let t = MadtBuilder::new().entry(5, &p).entry(0, &[7, 8, 1, 0, 0, 0, 0xaa, 0xbb]).lapic(9, 9, 1).finish();
    let m = parse_madt(&t).unwrap();
    assert!(m.pcat_compat());
    let entries: Vec<MadtEntry> = m.entries().collect();
    assert_eq!(
        entries,
        vec![
            MadtEntry::LocalApicAddressOverride { address: 0x1_fee0_0000 },
            MadtEntry::LocalApic { processor_uid: 7, apic_id: 8, flags: 1 },
            MadtEntry::LocalApic { processor_uid: 9, apic_id: 9, flags: 1 },
        ]
    );
}

#[test]
fn madt_rejects_wrong_or_short_tables() {
    let t = qemu_madt();
    assert!(parse_madt(&sdt(b"APIX", 3, &t[SDT_HEADER_LEN..])).is_none());
    // Shorter than its length.
    assert!(parse_madt(&t[..t.len() - 1]).is_none());
    // Too short for the local APIC address and flags.
    assert!(parse_madt(&sdt(b"APIC", 3, &[0; 7])).is_none());
    // No entries at all is fine.
    assert_eq!(parse_madt(&sdt(b"APIC", 3, &[0; 8])).unwrap().entries().count(), 0);
}

#[test]
fn madt_walk_stops_at_bad_entries() {
    let good = || MadtBuilder::new().lapic(0, 0, 1).ioapic(0, 0xfec0_0000, 0);
    let count = |t: &[u8]| parse_madt(t).unwrap().entries().count();
    assert_eq!(count(&good().finish()), 2);
    // Zero length: no progress possible.
    let mut zero = good().0;
    zero.extend_from_slice(&[0, 0]);
    let zero = MadtBuilder(zero).lapic(1, 1, 1).finish();
    assert_eq!(count(&zero), 2);
    // Length 1 is shorter than the entry header.
    let mut one = good().0;
    one.extend_from_slice(&[9, 1, 0, 0]);
    assert_eq!(count(&MadtBuilder(one).finish()), 2);
    // Entry running past the end of the table.
    let mut past = good().0;
    past.extend_from_slice(&[0, 8, 1, 1, 1, 0]);
    assert_eq!(count(&MadtBuilder(past).finish()), 2);
    // Known type too short for its fields: the walk ends there even though
    // a well-formed entry follows.
    let t = good().entry(1, &[0, 0, 0, 0xc0, 0xfe]).lapic(1, 1, 1).finish();
    assert_eq!(count(&t), 2);
    let t = good().entry(2, &[0, 0, 2, 0, 0, 0, 0]).lapic(1, 1, 1).finish();
    assert_eq!(count(&t), 2);
    let t = good().entry(9, &[0; 13]).finish();
    assert_eq!(count(&t), 2);
    // Unknown types need only their header.
    let t = good().entry(0x7f, &[]).lapic(1, 1, 1).finish();
    assert_eq!(count(&t), 4);
    // A lone trailing type byte ends the walk quietly.
    let mut lone = good().0;
    lone.push(0);
    assert_eq!(count(&MadtBuilder(lone).finish()), 2);
}

/// Runs every parser over `b` and, for what parses, every iterator.
fn exercise(b: &[u8]) {
    if let Some(r) = parse_rsdp(b) {
        let _ = r.root_table_addr();
    }
    let _ = find_rsdp(b);
    let _ = parse_sdt_header(b);
    let _ = table_is_valid(b);
    let _ = root_table_entries(b).count();
    if let Some(m) = parse_madt(b) {
        let _ = m.pcat_compat();
        for e in m.entries() {
            let _ = (e.usable_cpu_apic_id(), e.enabled_cpu_apic_id());
        }
    }
}

#[test]
fn truncated_and_garbage_never_panic() {
    let mut xsdt = Vec::new();
    for a in [0x1000u64, 0x2000] {
        xsdt.extend_from_slice(&a.to_le_bytes());
    }
    let samples = [qemu_madt(), rsdp_v2(0x1000, 0x2000), sdt(b"XSDT", 1, &xsdt), sdt(b"RSDT", 1, &[1, 2, 3, 4])];
    // Every truncation, with the length field kept or patched to fit.
    for good in &samples {
        for n in 0..=good.len() {
            let mut b = good[..n].to_vec();
            exercise(&b);
            if n >= 8 {
                b[4..8].copy_from_slice(&(n as u32).to_le_bytes());
                exercise(&b);
            }
        }
    }
    let mut rng = Rng::new(0xac91);
    for _ in 0..20_000 {
        // Random bit flips of a valid table hit the interesting fields;
        // the length field is the one most worth keeping plausible.
        let good = &samples[rng.below(samples.len() as u64) as usize];
        let mut b = good.clone();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(b.len() as u64) as usize;
            b[i] ^= 1 << rng.below(8);
        }
        exercise(&b);
        // Pure garbage behind a plausible header.
        let mut g = vec![0u8; rng.below(160) as usize];
        rng.fill(&mut g);
        if g.len() >= SDT_HEADER_LEN && rng.below(2) == 0 {
            g[..4].copy_from_slice([b"APIC", b"RSDT", b"XSDT"][rng.below(3) as usize]);
            let n = g.len() as u32 - rng.below(4) as u32;
            g[4..8].copy_from_slice(&n.to_le_bytes());
        }
        if g.len() >= 8 && rng.below(4) == 0 {
            g[..8].copy_from_slice(RSDP_SIGNATURE);
        }
        exercise(&g);
    }
}
