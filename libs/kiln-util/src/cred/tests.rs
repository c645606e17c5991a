//! Host unit tests for [`super`]: each names the Linux rule it checks.

use super::*;

type C = Cred<&'static [u32]>;

fn root() -> C {
    Cred::root(&[])
}

/// A process of user 1000 in group 1000 with no capabilities.
fn user(uid: u32, gid: u32) -> C {
    let mut c = root();
    c.set_resgid(gid, gid, gid).unwrap();
    c.set_resuid(uid, uid, uid).unwrap();
    c
}

fn ids(c: &C) -> [u32; 4] {
    [c.uid, c.euid, c.suid, c.fsuid]
}

fn gids(c: &C) -> [u32; 4] {
    [c.gid, c.egid, c.sgid, c.fsgid]
}

fn file(mode: u32, uid: u32, gid: u32) -> FileAttrs {
    FileAttrs { mode: S_IFREG | mode, uid, gid }
}

fn dir(mode: u32, uid: u32, gid: u32) -> FileAttrs {
    FileAttrs { mode: S_IFDIR | mode, uid, gid }
}

#[test]
fn root_has_every_capability() {
    let c = root();
    assert_eq!(c.caps.permitted, CAP_FULL_SET);
    assert_eq!(c.caps.effective, CAP_FULL_SET);
    assert_eq!(c.caps.bounding, CAP_FULL_SET);
    assert_eq!(CAP_FULL_SET.count_ones(), CAP_LAST_CAP + 1);
    assert!(c.capable(CAP_CHECKPOINT_RESTORE));
}

#[test]
fn setuid_as_root_sets_all_four_and_drops_capabilities() {
    let mut c = root();
    c.set_uid(1000).unwrap();
    assert_eq!(ids(&c), [1000; 4]);
    assert_eq!(c.caps.permitted, 0);
    assert_eq!(c.caps.effective, 0);
    assert_eq!(c.caps.bounding, CAP_FULL_SET, "the bounding set survives");
    assert_eq!(c.set_uid(0), Err(Errno::EPERM));
    assert_eq!(c.set_uid(NO_ID), Err(Errno::EINVAL));
}

#[test]
fn unprivileged_setuid_may_pick_real_or_saved() {
    let mut c = root();
    c.set_resuid(1000, 2000, 3000).unwrap();
    assert_eq!(c.caps.permitted, 0);
    c.set_uid(3000).unwrap();
    assert_eq!(ids(&c), [1000, 3000, 3000, 3000], "only the effective and fs ids change");
    c.set_uid(1000).unwrap();
    assert_eq!(c.set_uid(2000), Err(Errno::EPERM), "the old effective id is not enough");
}

#[test]
fn seteuid_keeps_capabilities_permitted() {
    // glibc's seteuid is setresuid(-1, e, -1).
    let mut c = root();
    c.set_resuid(NO_ID, 1000, NO_ID).unwrap();
    assert_eq!(ids(&c), [0, 1000, 0, 1000]);
    assert_eq!(c.caps.effective, 0);
    assert_eq!(c.caps.permitted, CAP_FULL_SET, "saved uid 0 keeps the permitted set");
    c.set_resuid(NO_ID, 0, NO_ID).unwrap();
    assert_eq!(c.caps.effective, CAP_FULL_SET, "regaining euid 0 restores the effective set");
}

#[test]
fn keepcaps_keeps_permitted_across_leaving_root() {
    let mut c = root();
    c.set_keep_caps(1).unwrap();
    c.set_resuid(1000, 1000, 1000).unwrap();
    assert_eq!(c.caps.permitted, CAP_FULL_SET);
    assert_eq!(c.caps.effective, 0);
    assert_eq!(c.set_keep_caps(2), Err(Errno::EINVAL));
}

#[test]
fn no_setuid_fixup_leaves_capabilities() {
    let mut c = root();
    c.set_securebits(1 << SECURE_NO_SETUID_FIXUP).unwrap();
    c.set_uid(1000).unwrap();
    assert_eq!(c.caps.effective, CAP_FULL_SET);
}

#[test]
fn setreuid_rules() {
    let mut c = root();
    c.set_resuid(1000, 1000, 2000).unwrap();
    // An unprivileged real id may become the effective id, not the saved one.
    assert_eq!(c.set_reuid(2000, NO_ID), Err(Errno::EPERM));
    c.set_reuid(NO_ID, 2000).unwrap();
    assert_eq!(ids(&c), [1000, 2000, 2000, 2000], "euid != old ruid: saved follows");
    c.set_reuid(2000, 1000).unwrap();
    assert_eq!(ids(&c), [2000, 1000, 1000, 1000], "ruid given: saved follows euid");
    c.set_reuid(NO_ID, 2000).unwrap();
    assert_eq!(ids(&c), [2000, 2000, 1000, 2000], "euid == old ruid: saved kept");
    assert_eq!(c.set_reuid(NO_ID, 3000), Err(Errno::EPERM));
}

#[test]
fn setresuid_unprivileged_and_noop() {
    let mut c = user(1000, 1000);
    c.set_resuid(NO_ID, NO_ID, NO_ID).unwrap();
    assert_eq!(c.set_resuid(0, NO_ID, NO_ID), Err(Errno::EPERM));
    let mut c = root();
    c.set_resuid(1, 2, 3).unwrap();
    c.set_resuid(3, 1, 2).unwrap();
    assert_eq!(ids(&c), [3, 1, 2, 1]);
    assert_eq!(c.set_resuid(3, 4, 2), Err(Errno::EPERM));
    // A no-op setresuid does not reset the fs uid to the effective one.
    c.set_fsuid(3);
    c.set_resuid(NO_ID, NO_ID, NO_ID).unwrap();
    assert_eq!(c.fsuid, 3);
    c.set_resuid(NO_ID, 1, NO_ID).unwrap();
    assert_eq!(c.fsuid, 1, "naming the effective id while fsuid differs does reset it");
}

#[test]
fn group_calls_follow_cap_setgid() {
    let mut c = root();
    c.set_gid(50).unwrap();
    assert_eq!(gids(&c), [50; 4]);
    c.set_regid(60, 70).unwrap();
    assert_eq!(gids(&c), [60, 70, 70, 70]);
    c.set_resgid(1, 2, 3).unwrap();
    c.set_uid(1000).unwrap();
    assert!(!c.capable(CAP_SETGID));
    assert_eq!(c.set_gid(9), Err(Errno::EPERM));
    c.set_gid(3).unwrap();
    assert_eq!(gids(&c), [1, 3, 3, 3]);
    assert_eq!(c.set_resgid(NO_ID, 9, NO_ID), Err(Errno::EPERM));
    assert_eq!(c.set_fsgid(9), 3);
    assert_eq!(c.fsgid, 3, "fsgid 9 refused");
    assert_eq!(c.set_fsgid(1), 3);
    assert_eq!(c.fsgid, 1);
    assert!(!c.may_set_groups());
}

#[test]
fn fsuid_moves_file_system_capabilities() {
    let mut c = root();
    assert_eq!(c.set_fsuid(1000), 0);
    assert_eq!(c.caps.effective, CAP_FULL_SET & !CAP_FS_SET);
    assert!(c.capable(CAP_KILL) && !c.capable(CAP_DAC_OVERRIDE) && !c.capable(CAP_LINUX_IMMUTABLE));
    assert_eq!(c.set_fsuid(NO_ID), 1000);
    assert_eq!(c.set_fsuid(0), 1000);
    assert_eq!(c.caps.effective, CAP_FULL_SET);
    let mut u = user(1000, 1000);
    assert_eq!(u.set_fsuid(0), 1000);
    assert_eq!(u.fsuid, 1000, "refused without CAP_SETUID");
}

#[test]
fn capset_rules() {
    let mut c = root();
    let (chown, kill) = (1 << CAP_CHOWN, 1 << CAP_KILL);
    assert_eq!(c.capset(chown | kill, chown, 0), Err(Errno::EPERM), "effective beyond permitted");
    c.capset(chown, chown | kill, kill).unwrap();
    assert_eq!(c.capset(chown, CAP_FULL_SET, 0), Err(Errno::EPERM), "permitted cannot grow");
    // Without CAP_SETPCAP the inheritable set stays within permitted.
    assert_eq!(c.capset(0, chown, chown | 1 << CAP_SETPCAP), Err(Errno::EPERM));
    c.capset(0, chown, chown | kill).unwrap();
    assert_eq!(c.caps.inheritable, chown | kill);
    let mut r = root();
    r.drop_bounding(u64::from(CAP_SYS_TIME)).unwrap();
    r.caps.inheritable = 0;
    assert_eq!(r.capset(0, CAP_FULL_SET, 1 << CAP_SYS_TIME), Err(Errno::EPERM), "inheritable outside bounding");
}

#[test]
fn bounding_and_securebits_need_setpcap() {
    let mut c = root();
    assert_eq!(c.drop_bounding(41), Err(Errno::EINVAL));
    c.drop_bounding(u64::from(CAP_CHOWN)).unwrap();
    assert_eq!(c.caps.bounding, CAP_FULL_SET & !1);
    c.set_securebits(1 << SECURE_KEEP_CAPS | 1 << SECURE_KEEP_CAPS_LOCKED).unwrap();
    assert_eq!(c.set_keep_caps(0), Err(Errno::EPERM), "locked");
    assert_eq!(c.set_securebits(1 << SECURE_KEEP_CAPS_LOCKED), Err(Errno::EPERM), "changes a locked bit");
    assert_eq!(c.set_securebits(1 << SECURE_KEEP_CAPS), Err(Errno::EPERM), "unlocks");
    assert_eq!(c.set_securebits(1 << 8 | 1 << SECURE_KEEP_CAPS | 1 << 5), Err(Errno::EPERM), "unknown bit");
    let mut u = user(1, 1);
    assert_eq!(u.drop_bounding(0), Err(Errno::EPERM));
    assert_eq!(u.set_securebits(0), Err(Errno::EPERM));
}

#[test]
fn ambient_rules() {
    let mut c = root();
    let cap = u64::from(CAP_NET_RAW);
    assert_eq!(c.ambient(PR_CAP_AMBIENT_RAISE, cap, 0, 0), Err(Errno::EPERM), "not inheritable");
    c.capset(CAP_FULL_SET, CAP_FULL_SET, 1 << CAP_NET_RAW).unwrap();
    assert_eq!(c.ambient(PR_CAP_AMBIENT_RAISE, cap, 0, 0), Ok(0));
    assert_eq!(c.ambient(PR_CAP_AMBIENT_IS_SET, cap, 0, 0), Ok(1));
    assert_eq!(c.ambient(PR_CAP_AMBIENT_IS_SET, 41, 0, 0), Err(Errno::EINVAL));
    assert_eq!(c.ambient(PR_CAP_AMBIENT_CLEAR_ALL, 1, 0, 0), Err(Errno::EINVAL));
    assert_eq!(c.ambient(9, cap, 0, 0), Err(Errno::EINVAL));
    // Dropping it from the inheritable set drops it from the ambient set.
    c.capset(CAP_FULL_SET, CAP_FULL_SET, 0).unwrap();
    assert_eq!(c.caps.ambient, 0);
}

#[test]
fn ambient_survives_exec_of_a_plain_file_by_a_user() {
    let mut c = root();
    c.set_keep_caps(1).unwrap();
    c.set_resuid(1000, 1000, 1000).unwrap();
    c.capset(0, 1 << CAP_NET_RAW, 1 << CAP_NET_RAW).unwrap();
    c.ambient(PR_CAP_AMBIENT_RAISE, u64::from(CAP_NET_RAW), 0, 0).unwrap();
    let e = c.exec(&ExecFile { attrs: file(0o755, 0, 0), nosuid: false });
    assert_eq!(e.cred.caps.permitted, 1 << CAP_NET_RAW);
    assert_eq!(e.cred.caps.effective, 1 << CAP_NET_RAW);
    assert!(!e.cred.keep_caps(), "exec clears SECURE_KEEP_CAPS");
    assert!(!e.secure);
}

#[test]
fn exec_as_root_and_as_user() {
    let mut r = root();
    r.capset(0, CAP_FULL_SET, 0).unwrap();
    let e = r.exec(&ExecFile { attrs: file(0o755, 1000, 1000), nosuid: false });
    assert_eq!(e.cred.caps.effective, CAP_FULL_SET, "root regains its effective set");
    assert!(!e.secure);
    let u = user(1000, 1000);
    let e = u.exec(&ExecFile { attrs: file(0o755, 0, 0), nosuid: false });
    assert_eq!(e.cred.caps, CapSets { bounding: CAP_FULL_SET, ..CapSets::default() });
    assert!(!e.secure);
}

#[test]
fn exec_of_set_user_id_root_file() {
    let u = user(1000, 1000);
    let suid_root = ExecFile { attrs: file(0o4755, 0, 0), nosuid: false };
    let e = u.exec(&suid_root);
    assert_eq!(ids(&e.cred), [1000, 0, 0, 0]);
    assert_eq!(e.cred.caps.permitted, CAP_FULL_SET);
    assert_eq!(e.cred.caps.effective, CAP_FULL_SET);
    assert!(e.secure);
    // nosuid and no_new_privs both ignore the bit.
    let e = u.exec(&ExecFile { nosuid: true, ..suid_root });
    assert_eq!(ids(&e.cred), [1000; 4]);
    assert!(!e.secure);
    let mut n = u.clone();
    n.no_new_privs = true;
    let e = n.exec(&suid_root);
    assert_eq!(ids(&e.cred), [1000; 4]);
    assert_eq!(e.cred.caps.permitted, 0);
}

#[test]
fn exec_of_set_group_id_file_needs_group_execute() {
    let u = user(1000, 1000);
    let e = u.exec(&ExecFile { attrs: file(0o2755, 0, 42), nosuid: false });
    assert_eq!(gids(&e.cred), [1000, 42, 42, 42]);
    assert!(e.secure);
    let e = u.exec(&ExecFile { attrs: file(0o2745, 0, 42), nosuid: false });
    assert_eq!(gids(&e.cred), [1000; 4], "no group execute: mandatory-locking mark, not set-group-ID");
}

#[test]
fn exec_with_effective_id_not_real_is_secure() {
    let mut c = root();
    c.set_resuid(1000, 0, 0).unwrap();
    let e = c.exec(&ExecFile { attrs: file(0o755, 0, 0), nosuid: false });
    assert!(e.secure, "the effective uid differs from the old real uid");
    assert_eq!(ids(&e.cred), [1000, 0, 0, 0]);
}

#[test]
fn permission_follows_owner_group_other() {
    let u = user(1000, 1000);
    assert!(u.permission(file(0o600, 1000, 0), MAY_READ | MAY_WRITE));
    assert!(!u.permission(file(0o066, 1000, 1000), MAY_READ), "the owner class decides alone");
    assert!(u.permission(file(0o040, 0, 1000), MAY_READ));
    assert!(!u.permission(file(0o604, 0, 1000), MAY_READ), "the group class decides alone");
    assert!(u.permission(file(0o004, 0, 0), MAY_READ));
    assert!(!u.permission(file(0o004, 0, 0), MAY_WRITE));
    let g = Cred { groups: &[5u32, 7][..], ..u.clone() };
    assert!(g.permission(file(0o070, 0, 7), MAY_READ | MAY_WRITE | MAY_EXEC));
    assert!(!u.permission(file(0o070, 0, 7), MAY_READ));
}

#[test]
fn permission_capabilities_override() {
    let r = root();
    assert!(r.permission(file(0, 5, 5), MAY_READ | MAY_WRITE));
    assert!(!r.permission(file(0o644, 5, 5), MAY_EXEC), "execute needs some x bit");
    assert!(r.permission(file(0o100, 5, 5), MAY_EXEC));
    assert!(r.permission(dir(0, 5, 5), MAY_EXEC | MAY_WRITE));
    let mut s = user(1000, 1000);
    s.caps.effective = 1 << CAP_DAC_READ_SEARCH;
    assert!(s.permission(file(0, 5, 5), MAY_READ));
    assert!(!s.permission(file(0, 5, 5), MAY_WRITE));
    assert!(s.permission(dir(0, 5, 5), MAY_READ | MAY_EXEC));
    assert!(!s.permission(dir(0, 5, 5), MAY_WRITE | MAY_EXEC));
    assert!(r.overrides(MAY_WRITE, false) && r.overrides(MAY_EXEC, true) && !r.overrides(MAY_EXEC, false));
}

#[test]
fn access_uses_real_ids() {
    let mut c = root();
    c.set_resuid(1000, 0, 0).unwrap();
    let a = c.for_access();
    assert_eq!(a.fsuid, 1000);
    assert_eq!(a.caps.effective, 0);
    assert!(!a.permission(file(0o600, 0, 0), MAY_READ));
    let mut u = user(1000, 1000);
    u.set_fsuid(1000);
    assert_eq!(root().for_access().caps.effective, CAP_FULL_SET);
}

#[test]
fn sticky_directories_protect_others_files() {
    let u = user(1000, 1000);
    let tmp = dir(0o1777, 0, 0);
    assert!(u.sticky_forbids(tmp, file(0o666, 2000, 0)));
    assert!(!u.sticky_forbids(tmp, file(0o600, 1000, 0)));
    assert!(!u.sticky_forbids(dir(0o1777, 1000, 0), file(0o600, 2000, 0)), "directory owner");
    assert!(!u.sticky_forbids(dir(0o777, 0, 0), file(0o600, 2000, 0)));
    assert!(!root().sticky_forbids(tmp, file(0o600, 2000, 0)));
}

#[test]
fn chmod_and_chown_rules() {
    let u = user(1000, 1000);
    assert_eq!(u.chmod_mode(file(0o644, 2000, 1000), 0o600), Err(Errno::EPERM));
    assert_eq!(u.chmod_mode(file(0o644, 1000, 1000), 0o2755), Ok(0o2755));
    assert_eq!(u.chmod_mode(file(0o644, 1000, 50), 0o2755), Ok(0o755), "not in the group");
    assert!(u.may_chown(file(0, 1000, 1000), Some(1000), None), "giving it to oneself");
    assert!(!u.may_chown(file(0, 1000, 1000), Some(2000), None));
    assert!(!u.may_chown(file(0, 1000, 1000), None, Some(50)));
    let g = Cred { groups: &[50u32][..], ..u.clone() };
    assert!(g.may_chown(file(0, 1000, 1000), None, Some(50)));
    assert!(!g.may_chown(file(0, 2000, 1000), None, Some(50)), "only the owner");
    assert!(root().may_chown(file(0, 2000, 1000), Some(5), Some(6)));
}

#[test]
fn set_id_bits_on_write_and_chown() {
    let u = user(1000, 1000);
    assert_eq!(u.setid_bits_to_drop(file(0o6755, 1000, 1000)), S_ISUID | S_ISGID);
    assert_eq!(u.setid_bits_to_drop(file(0o6745, 1000, 1000)), S_ISUID, "in group, no group execute");
    assert_eq!(u.setid_bits_to_drop(file(0o2745, 1000, 50)), S_ISGID, "outside the group");
    assert_eq!(root().setid_bits_to_drop(file(0o6755, 1000, 1000)), 0);
    assert_eq!(root().setid_bits_chown_drops(file(0o6755, 1000, 1000)), S_ISUID | S_ISGID);
    assert_eq!(root().setid_bits_chown_drops(file(0o6745, 1000, 1000)), S_ISUID);
    assert_eq!(u.setid_bits_to_drop(dir(0o6755, 1000, 1000)), 0);
}

#[test]
fn new_files_in_set_group_id_directories() {
    let u = user(1000, 1000);
    assert_eq!(u.new_file(dir(0o755, 0, 0), S_IFREG | 0o644), (1000, 1000, S_IFREG | 0o644));
    let sgid = dir(0o2777, 0, 50);
    assert_eq!(u.new_file(sgid, S_IFDIR | 0o755), (1000, 50, S_IFDIR | 0o2755));
    assert_eq!(u.new_file(sgid, S_IFREG | 0o2755), (1000, 50, S_IFREG | 0o755));
    assert_eq!(u.new_file(sgid, S_IFREG | 0o2745), (1000, 50, S_IFREG | 0o2745));
    assert_eq!(root().new_file(sgid, S_IFREG | 0o2755), (0, 50, S_IFREG | 0o2755));
}

#[test]
fn signal_permission() {
    let u = user(1000, 1000);
    let other = user(2000, 2000);
    assert!(!u.may_signal(&other));
    assert!(u.may_signal(&u));
    assert!(root().may_signal(&other));
    let mut saved = root();
    saved.set_resuid(3000, 3000, 1000).unwrap();
    assert!(u.may_signal(&saved), "the target's saved uid matches");
    assert!(!u.may_prlimit(&saved));
    assert!(u.may_prlimit(&user(1000, 1000)));
    assert!(!u.may_renice(&other));
}

#[test]
fn dumpable_follows_id_and_capability_changes() {
    let r = root();
    let mut n = r.clone();
    assert!(!r.change_drops_dumpable(&n));
    n.set_fsuid(5);
    assert!(r.change_drops_dumpable(&n));
    let mut d = r.clone();
    d.capset(0, 0, 0).unwrap();
    assert!(!r.change_drops_dumpable(&d), "losing capabilities is fine");
    assert!(d.change_drops_dumpable(&r), "gaining them is not");
}

#[test]
fn access_acl_decides_for_everyone_but_the_owner() {
    use linux_abi::fs::*;
    let mut acl = POSIX_ACL_XATTR_VERSION.to_le_bytes().to_vec();
    for (t, p, id) in
        [(ACL_USER_OBJ, 0u16, 0u32), (ACL_USER, 6, 1000), (ACL_GROUP_OBJ, 0, 0), (ACL_MASK, 6, 0), (ACL_OTHER, 0, 0)]
    {
        acl.extend_from_slice(&t.to_le_bytes());
        acl.extend_from_slice(&p.to_le_bytes());
        acl.extend_from_slice(&id.to_le_bytes());
    }
    // Mode 0060 (the mask shows as the group bits): user 1000 may read
    // and write through its named entry; user 2000 gets the other entry.
    let f = file(0o060, 0, 0);
    let u1000 = user(1000, 1000);
    assert!(u1000.permission_acl(f, Some(&acl), MAY_READ | MAY_WRITE));
    assert!(!u1000.permission(f, MAY_READ), "without the ACL the mode refuses");
    assert!(!user(2000, 2000).permission_acl(f, Some(&acl), MAY_READ));
    // The owner's class is the mode's, whatever the ACL says.
    let owned = file(0o460, 1000, 0);
    assert!(u1000.permission_acl(owned, Some(&acl), MAY_READ));
    assert!(!u1000.permission_acl(owned, Some(&acl), MAY_WRITE));
    // Without group bits the ACL is not consulted.
    assert!(!u1000.permission_acl(file(0o004, 0, 0), Some(&acl), MAY_WRITE));
    // Capabilities still override.
    assert!(root().permission_acl(file(0o000, 5, 5), Some(&acl), MAY_READ));
}

#[test]
fn ptrace_same_user_and_dumpable() {
    let u = user(1000, 1000);
    let v = user(1001, 1000);
    assert!(u.may_ptrace(&user(1000, 1000), Some(1), PtraceMode::ATTACH_REALCREDS));
    assert!(!u.may_ptrace(&v, Some(1), PtraceMode::ATTACH_REALCREDS), "another user");
    assert!(!u.may_ptrace(&user(1000, 1001), Some(1), PtraceMode::ATTACH_REALCREDS), "another group");
    assert!(!u.may_ptrace(&user(1000, 1000), Some(0), PtraceMode::ATTACH_REALCREDS), "not dumpable");
    assert!(!u.may_ptrace(&user(1000, 1000), Some(2), PtraceMode::ATTACH_REALCREDS), "suid-safe is not dumpable");
    assert!(u.may_ptrace(&user(1000, 1000), None, PtraceMode::ATTACH_REALCREDS), "no memory: dumpable is not asked");
}

#[test]
fn ptrace_checks_every_id_of_the_target() {
    let u = user(1000, 1000);
    // A set-user-ID program run by the caller: its effective and saved
    // uids are another user's.
    let mut t = user(1000, 1000);
    t.euid = 0;
    t.suid = 0;
    assert!(!u.may_ptrace(&t, Some(1), PtraceMode::ATTACH_REALCREDS));
    let mut t = user(1000, 1000);
    t.sgid = 5;
    assert!(!u.may_ptrace(&t, Some(1), PtraceMode::READ_REALCREDS));
}

#[test]
fn ptrace_real_or_filesystem_ids() {
    let mut c = user(1000, 1000);
    c.fsuid = 1001;
    let target = user(1000, 1000);
    assert!(c.may_ptrace(&target, Some(1), PtraceMode::ATTACH_REALCREDS));
    assert!(!c.may_ptrace(&target, Some(1), PtraceMode::ATTACH_FSCREDS), "the file-system uid differs");
}

#[test]
fn ptrace_capabilities() {
    let r = root();
    let u = user(1000, 1000);
    assert!(r.may_ptrace(&u, Some(0), PtraceMode::ATTACH_REALCREDS), "CAP_SYS_PTRACE overrides ids and dumpable");
    assert!(!u.may_ptrace(&r, Some(1), PtraceMode::ATTACH_REALCREDS));
    // Root without CAP_SYS_PTRACE traces root only if its capabilities
    // cover the target's.
    let mut weak = root();
    weak.capset(CAP_FULL_SET & !(1 << CAP_SYS_PTRACE), CAP_FULL_SET & !(1 << CAP_SYS_PTRACE), 0).unwrap();
    assert!(!weak.may_ptrace(&r, Some(1), PtraceMode::ATTACH_REALCREDS), "the target holds more");
    let mut lesser = root();
    lesser.capset(0, 0, 0).unwrap();
    assert!(weak.may_ptrace(&lesser, Some(1), PtraceMode::ATTACH_REALCREDS));
    assert!(!weak.may_ptrace(&lesser, Some(0), PtraceMode::ATTACH_REALCREDS), "not dumpable");
    // Under FSCREDS the caller's effective set counts, not its permitted.
    let mut eff = root();
    eff.capset(0, CAP_FULL_SET, 0).unwrap();
    assert!(eff.may_ptrace(&lesser, Some(1), PtraceMode::ATTACH_REALCREDS));
    let mut some = lesser.clone();
    some.caps.permitted = 1 << CAP_CHOWN;
    assert!(eff.may_ptrace(&some, Some(1), PtraceMode::ATTACH_REALCREDS));
    assert!(!eff.may_ptrace(&some, Some(1), PtraceMode::ATTACH_FSCREDS));
}

#[test]
fn traceme_needs_the_parents_capabilities() {
    let r = root();
    let u = user(1000, 1000);
    assert!(u.may_be_traced_by(&r));
    assert!(u.may_be_traced_by(&user(1001, 1001)), "ids do not matter, capabilities do");
    assert!(!r.may_be_traced_by(&u));
    let mut weak = root();
    weak.capset(0, 1 << CAP_CHOWN, 0).unwrap();
    assert!(!r.may_be_traced_by(&weak));
    assert!(weak.may_be_traced_by(&r));
}
