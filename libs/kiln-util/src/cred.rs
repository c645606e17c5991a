//! The credentials a Linux thread acts with, and Linux's rules for
//! changing and using them.
//!
//! A [`Cred`] holds the real, effective, saved and file-system user and
//! group ids, the supplementary groups, the five capability sets
//! (permitted, effective, inheritable, bounding, ambient), the securebits
//! and the no-new-privileges flag. Its methods are the rules of the
//! `set*id` calls, `capset`, the capability `prctl`s and `execve` (with
//! the capability changes each implies, as `security/commoncap.c` does
//! them), and the discretionary access checks the VFS makes with a
//! credential: `generic_permission`, ownership, the sticky bit, set-id
//! bits on new and changed files, signal permission. Everything is plain
//! data, so the kernel stores a `Cred` per thread (copied on change,
//! shared until then) and the host tests below check the rules.
//!
//! The group list is generic (`G: AsRef<[u32]>`, kept sorted) so this
//! crate needs no heap: the kernel uses a shared vector, the tests a
//! `Vec` or a slice.

use linux_abi::capability::*;
use linux_abi::errno::Errno;

/// `(uid_t)-1`: "leave unchanged" for setre*id and setres*id, and the one
/// id that is never valid.
pub const NO_ID: u32 = u32::MAX;

/// Every capability Kiln knows.
pub const CAP_FULL_SET: u64 = (1u64 << (CAP_LAST_CAP + 1)) - 1;

const fn bit(cap: u32) -> u64 {
    1u64 << cap
}

/// The capabilities a change of the file-system uid to or from 0 drops
/// or raises in the effective set (Linux's `CAP_FS_SET`).
pub const CAP_FS_SET: u64 = bit(CAP_CHOWN)
    | bit(CAP_MKNOD)
    | bit(CAP_DAC_OVERRIDE)
    | bit(CAP_DAC_READ_SEARCH)
    | bit(CAP_FOWNER)
    | bit(CAP_FSETID)
    | bit(CAP_MAC_OVERRIDE)
    | bit(CAP_LINUX_IMMUTABLE);

/// Access masks of permission checks (`MAY_*`).
pub const MAY_EXEC: u32 = 1;
pub const MAY_WRITE: u32 = 2;
pub const MAY_READ: u32 = 4;

const S_IFMT: u32 = 0o170_000;
const S_IFDIR: u32 = 0o040_000;
const S_IFREG: u32 = 0o100_000;
pub const S_ISUID: u32 = 0o4000;
pub const S_ISGID: u32 = 0o2000;
pub const S_ISVTX: u32 = 0o1000;
const S_IXGRP: u32 = 0o010;
const S_IXUGO: u32 = 0o111;

/// The five capability sets of a thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CapSets {
    pub permitted: u64,
    pub effective: u64,
    pub inheritable: u64,
    pub bounding: u64,
    pub ambient: u64,
}

/// What a permission check needs to know about a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileAttrs {
    /// `st_mode`: type and permission bits.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

impl FileAttrs {
    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }

    pub fn is_regular(&self) -> bool {
        self.mode & S_IFMT == S_IFREG
    }
}

/// How a ptrace access check is made (Linux's `PTRACE_MODE_*`): to read
/// what a process shows (/proc files, kcmp) or to attach (ptrace, writing
/// /proc/<pid>/mem, process_vm_writev), and with the caller's real or its
/// file-system ids. Without Yama only the credentials matter, so read and
/// attach are checked alike; the flag says what the caller asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtraceMode {
    pub attach: bool,
    pub fscreds: bool,
}

impl PtraceMode {
    pub const READ_REALCREDS: PtraceMode = PtraceMode { attach: false, fscreds: false };
    pub const READ_FSCREDS: PtraceMode = PtraceMode { attach: false, fscreds: true };
    pub const ATTACH_REALCREDS: PtraceMode = PtraceMode { attach: true, fscreds: false };
    pub const ATTACH_FSCREDS: PtraceMode = PtraceMode { attach: true, fscreds: true };
}

/// `PR_GET_DUMPABLE`'s normal value: only a process that is dumpable
/// this way may be traced without CAP_SYS_PTRACE.
pub const SUID_DUMP_USER: u8 = 1;

/// What an executed file contributes to the new credentials.
#[derive(Clone, Copy, Debug)]
pub struct ExecFile {
    pub attrs: FileAttrs,
    /// The file lies on a mount that ignores set-id bits (MS_NOSUID).
    pub nosuid: bool,
}

/// The credentials after an execve, and whether the program must run in
/// secure mode (`AT_SECURE`).
#[derive(Clone, Debug)]
pub struct ExecCreds<G> {
    pub cred: Cred<G>,
    pub secure: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cred<G> {
    pub uid: u32,
    pub euid: u32,
    pub suid: u32,
    pub fsuid: u32,
    pub gid: u32,
    pub egid: u32,
    pub sgid: u32,
    pub fsgid: u32,
    /// Supplementary groups, sorted (getgroups returns them so).
    pub groups: G,
    pub caps: CapSets,
    pub securebits: u32,
    /// PR_SET_NO_NEW_PRIVS: exec grants nothing, and it cannot be unset.
    pub no_new_privs: bool,
}

fn secure(bits: u32, which: u32) -> bool {
    bits & (1 << which) != 0
}

impl<G> Cred<G> {
    /// The credentials of the first process and of kernel threads: root,
    /// every capability permitted and effective, a full bounding set.
    pub const fn root(groups: G) -> Cred<G> {
        Cred {
            uid: 0,
            euid: 0,
            suid: 0,
            fsuid: 0,
            gid: 0,
            egid: 0,
            sgid: 0,
            fsgid: 0,
            groups,
            caps: CapSets {
                permitted: CAP_FULL_SET,
                effective: CAP_FULL_SET,
                inheritable: 0,
                bounding: CAP_FULL_SET,
                ambient: 0,
            },
            securebits: 0,
            no_new_privs: false,
        }
    }
}

impl<G: AsRef<[u32]> + Clone> Cred<G> {
    /// Whether `cap` is in the effective set (`capable`).
    pub fn capable(&self, cap: u32) -> bool {
        self.caps.effective & bit(cap) != 0
    }

    /// Whether `gid` is the file-system group or a supplementary group
    /// (`in_group_p`).
    pub fn in_group(&self, gid: u32) -> bool {
        gid == self.fsgid || self.groups.as_ref().binary_search(&gid).is_ok()
    }

    fn is_set(&self, which: u32) -> bool {
        secure(self.securebits, which)
    }

    /// Capability changes that follow a change of the real, effective or
    /// saved uid (`cap_emulate_setxuid`): leaving uid 0 everywhere drops
    /// the permitted and effective sets (unless SECURE_KEEP_CAPS) and the
    /// ambient set; the effective set follows the effective uid.
    fn fix_caps_after_setuid(&mut self, old_uid: u32, old_euid: u32, old_suid: u32) {
        if self.is_set(SECURE_NO_SETUID_FIXUP) {
            return;
        }
        let was_root = old_uid == 0 || old_euid == 0 || old_suid == 0;
        let is_root = self.uid == 0 || self.euid == 0 || self.suid == 0;
        if was_root && !is_root {
            if !self.is_set(SECURE_KEEP_CAPS) {
                self.caps.permitted = 0;
                self.caps.effective = 0;
            }
            self.caps.ambient = 0;
        }
        if old_euid == 0 && self.euid != 0 {
            self.caps.effective = 0;
        }
        if old_euid != 0 && self.euid == 0 {
            self.caps.effective = self.caps.permitted;
        }
    }

    /// setuid(2).
    pub fn set_uid(&mut self, uid: u32) -> Result<(), Errno> {
        if uid == NO_ID {
            return Err(Errno::EINVAL);
        }
        let (r, e, s) = (self.uid, self.euid, self.suid);
        if self.capable(CAP_SETUID) {
            self.uid = uid;
            self.suid = uid;
        } else if uid != self.uid && uid != self.suid {
            return Err(Errno::EPERM);
        }
        self.euid = uid;
        self.fsuid = uid;
        self.fix_caps_after_setuid(r, e, s);
        Ok(())
    }

    /// setgid(2).
    pub fn set_gid(&mut self, gid: u32) -> Result<(), Errno> {
        if gid == NO_ID {
            return Err(Errno::EINVAL);
        }
        if self.capable(CAP_SETGID) {
            self.gid = gid;
            self.sgid = gid;
        } else if gid != self.gid && gid != self.sgid {
            return Err(Errno::EPERM);
        }
        self.egid = gid;
        self.fsgid = gid;
        Ok(())
    }

    /// The rules setreuid and setregid share: the new (real, effective,
    /// saved) ids, or None when the caller may not make the change.
    fn re_ids(cur: (u32, u32, u32), r: u32, e: u32, privileged: bool) -> Option<(u32, u32, u32)> {
        let (old_r, old_e, old_s) = cur;
        let mut new = cur;
        if r != NO_ID {
            if old_r != r && old_e != r && !privileged {
                return None;
            }
            new.0 = r;
        }
        if e != NO_ID {
            if old_r != e && old_e != e && old_s != e && !privileged {
                return None;
            }
            new.1 = e;
        }
        // The saved id follows the effective one whenever the real id is
        // set or the effective one becomes other than the old real id.
        if r != NO_ID || (e != NO_ID && e != old_r) {
            new.2 = new.1;
        }
        Some(new)
    }

    /// setreuid(2).
    pub fn set_reuid(&mut self, r: u32, e: u32) -> Result<(), Errno> {
        let old = (self.uid, self.euid, self.suid);
        let (nr, ne, ns) = Self::re_ids(old, r, e, self.capable(CAP_SETUID)).ok_or(Errno::EPERM)?;
        self.uid = nr;
        self.euid = ne;
        self.suid = ns;
        self.fsuid = ne;
        self.fix_caps_after_setuid(old.0, old.1, old.2);
        Ok(())
    }

    /// setregid(2).
    pub fn set_regid(&mut self, r: u32, e: u32) -> Result<(), Errno> {
        let old = (self.gid, self.egid, self.sgid);
        let (nr, ne, ns) = Self::re_ids(old, r, e, self.capable(CAP_SETGID)).ok_or(Errno::EPERM)?;
        self.gid = nr;
        self.egid = ne;
        self.sgid = ns;
        self.fsgid = ne;
        Ok(())
    }

    /// Whether an unprivileged setres*id may pick each given id: every
    /// one must be the current real, effective or saved id.
    fn res_allowed(cur: (u32, u32, u32), ids: [u32; 3]) -> bool {
        ids.iter().all(|&id| id == NO_ID || id == cur.0 || id == cur.1 || id == cur.2)
    }

    /// setresuid(2). A call that changes nothing (the effective id given
    /// equal to both the effective and the file-system id) leaves the
    /// credentials alone, as Linux does.
    pub fn set_resuid(&mut self, r: u32, e: u32, s: u32) -> Result<(), Errno> {
        if (r == NO_ID || r == self.uid)
            && (e == NO_ID || (e == self.euid && e == self.fsuid))
            && (s == NO_ID || s == self.suid)
        {
            return Ok(());
        }
        let old = (self.uid, self.euid, self.suid);
        if !self.capable(CAP_SETUID) && !Self::res_allowed(old, [r, e, s]) {
            return Err(Errno::EPERM);
        }
        if r != NO_ID {
            self.uid = r;
        }
        if e != NO_ID {
            self.euid = e;
        }
        if s != NO_ID {
            self.suid = s;
        }
        self.fsuid = self.euid;
        self.fix_caps_after_setuid(old.0, old.1, old.2);
        Ok(())
    }

    /// setresgid(2).
    pub fn set_resgid(&mut self, r: u32, e: u32, s: u32) -> Result<(), Errno> {
        if (r == NO_ID || r == self.gid)
            && (e == NO_ID || (e == self.egid && e == self.fsgid))
            && (s == NO_ID || s == self.sgid)
        {
            return Ok(());
        }
        let old = (self.gid, self.egid, self.sgid);
        if !self.capable(CAP_SETGID) && !Self::res_allowed(old, [r, e, s]) {
            return Err(Errno::EPERM);
        }
        if r != NO_ID {
            self.gid = r;
        }
        if e != NO_ID {
            self.egid = e;
        }
        if s != NO_ID {
            self.sgid = s;
        }
        self.fsgid = self.egid;
        Ok(())
    }

    /// setfsuid(2): returns the old file-system uid whether or not the
    /// change was allowed (-1 only asks). Moving the file-system uid off
    /// or onto 0 drops or raises the file-system capabilities.
    pub fn set_fsuid(&mut self, uid: u32) -> u32 {
        let old = self.fsuid;
        if uid == NO_ID {
            return old;
        }
        let allowed =
            uid == self.uid || uid == self.euid || uid == self.suid || uid == self.fsuid || self.capable(CAP_SETUID);
        if allowed && uid != old {
            self.fsuid = uid;
            if !self.is_set(SECURE_NO_SETUID_FIXUP) {
                if old == 0 && uid != 0 {
                    self.caps.effective &= !CAP_FS_SET;
                }
                if old != 0 && uid == 0 {
                    self.caps.effective |= self.caps.permitted & CAP_FS_SET;
                }
            }
        }
        old
    }

    /// setfsgid(2): like `set_fsuid`, without capability changes.
    pub fn set_fsgid(&mut self, gid: u32) -> u32 {
        let old = self.fsgid;
        if gid == NO_ID {
            return old;
        }
        let allowed =
            gid == self.gid || gid == self.egid || gid == self.sgid || gid == self.fsgid || self.capable(CAP_SETGID);
        if allowed {
            self.fsgid = gid;
        }
        old
    }

    /// Whether setgroups(2) is allowed.
    pub fn may_set_groups(&self) -> bool {
        self.capable(CAP_SETGID)
    }

    /// capset(2) on oneself, with the sets already masked to the known
    /// capabilities: the inheritable set may only gain what is permitted
    /// (without CAP_SETPCAP) and never leave the bounding set, the
    /// permitted set only shrinks, the effective set stays within it.
    pub fn capset(&mut self, effective: u64, permitted: u64, inheritable: u64) -> Result<(), Errno> {
        let c = &self.caps;
        if !self.capable(CAP_SETPCAP) && inheritable & !(c.inheritable | c.permitted) != 0 {
            return Err(Errno::EPERM);
        }
        if inheritable & !(c.inheritable | c.bounding) != 0 {
            return Err(Errno::EPERM);
        }
        if permitted & !c.permitted != 0 || effective & !permitted != 0 {
            return Err(Errno::EPERM);
        }
        self.caps.effective = effective;
        self.caps.permitted = permitted;
        self.caps.inheritable = inheritable;
        // Ambient capabilities must stay permitted and inheritable.
        self.caps.ambient &= permitted & inheritable;
        Ok(())
    }

    /// PR_CAPBSET_DROP.
    pub fn drop_bounding(&mut self, cap: u64) -> Result<(), Errno> {
        if !self.capable(CAP_SETPCAP) {
            return Err(Errno::EPERM);
        }
        if !cap_valid(cap) {
            return Err(Errno::EINVAL);
        }
        self.caps.bounding &= !(1u64 << cap);
        Ok(())
    }

    /// PR_SET_SECUREBITS: needs CAP_SETPCAP, cannot change a locked bit,
    /// unlock a lock or set an unknown bit.
    pub fn set_securebits(&mut self, bits: u64) -> Result<(), Errno> {
        let old = u64::from(self.securebits);
        let locks = u64::from(SECURE_ALL_LOCKS);
        if ((old & locks) >> 1) & (old ^ bits) != 0
            || old & locks & !bits != 0
            || bits & !u64::from(SECURE_ALL_LOCKS | SECURE_ALL_BITS) != 0
            || !self.capable(CAP_SETPCAP)
        {
            return Err(Errno::EPERM);
        }
        self.securebits = bits as u32;
        Ok(())
    }

    pub fn keep_caps(&self) -> bool {
        self.is_set(SECURE_KEEP_CAPS)
    }

    /// PR_SET_KEEPCAPS.
    pub fn set_keep_caps(&mut self, on: u64) -> Result<(), Errno> {
        if on > 1 {
            return Err(Errno::EINVAL);
        }
        if self.is_set(SECURE_KEEP_CAPS_LOCKED) {
            return Err(Errno::EPERM);
        }
        if on == 1 {
            self.securebits |= 1 << SECURE_KEEP_CAPS;
        } else {
            self.securebits &= !(1 << SECURE_KEEP_CAPS);
        }
        Ok(())
    }

    /// PR_CAP_AMBIENT with its four sub-commands; returns prctl's value
    /// (0/1 for IS_SET, 0 otherwise).
    pub fn ambient(&mut self, op: u64, cap: u64, arg4: u64, arg5: u64) -> Result<u64, Errno> {
        if op == PR_CAP_AMBIENT_CLEAR_ALL {
            if cap | arg4 | arg5 != 0 {
                return Err(Errno::EINVAL);
            }
            self.caps.ambient = 0;
            return Ok(0);
        }
        if !cap_valid(cap) || arg4 | arg5 != 0 {
            return Err(Errno::EINVAL);
        }
        let mask = 1u64 << cap;
        match op {
            PR_CAP_AMBIENT_IS_SET => Ok(u64::from(self.caps.ambient & mask != 0)),
            PR_CAP_AMBIENT_RAISE => {
                if self.caps.permitted & mask == 0
                    || self.caps.inheritable & mask == 0
                    || self.is_set(SECURE_NO_CAP_AMBIENT_RAISE)
                {
                    return Err(Errno::EPERM);
                }
                self.caps.ambient |= mask;
                Ok(0)
            }
            PR_CAP_AMBIENT_LOWER => {
                self.caps.ambient &= !mask;
                Ok(0)
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// The credentials execve gives for `file` (`bprm_fill_uid` and
    /// `cap_bprm_creds_from_file`, without file capabilities): set-id
    /// bits set the effective ids unless the mount is nosuid or
    /// no_new_privs is on; root (real or effective, unless
    /// SECURE_NOROOT) gets the bounding set, the effective set too if the
    /// effective uid is 0; everyone keeps the ambient set unless the
    /// exec changes ids. With no_new_privs a change of ids is undone and
    /// the permitted set cannot grow.
    pub fn exec(&self, file: &ExecFile) -> ExecCreds<G> {
        let old = self;
        let mut new = self.clone();
        let mode = file.attrs.mode;
        if !file.nosuid && !old.no_new_privs {
            if mode & S_ISUID != 0 {
                new.euid = file.attrs.uid;
            }
            if mode & (S_ISGID | S_IXGRP) == S_ISGID | S_IXGRP {
                new.egid = file.attrs.gid;
            }
        }
        new.caps.permitted = 0;
        let mut effective = false;
        if !old.is_set(SECURE_NOROOT) {
            if new.euid == 0 || new.uid == 0 {
                new.caps.permitted = old.caps.bounding | old.caps.inheritable;
            }
            if new.euid == 0 {
                effective = true;
            }
        }
        let is_setid = new.euid != old.uid || new.egid != old.gid;
        let gained = new.caps.permitted & !old.caps.permitted != 0;
        if (is_setid || gained) && old.no_new_privs {
            new.euid = new.uid;
            new.egid = new.gid;
            new.caps.permitted &= old.caps.permitted;
        }
        new.suid = new.euid;
        new.fsuid = new.euid;
        new.sgid = new.egid;
        new.fsgid = new.egid;
        if is_setid {
            new.caps.ambient = 0;
        }
        new.caps.permitted |= new.caps.ambient;
        new.caps.effective = if effective { new.caps.permitted } else { new.caps.ambient };
        new.securebits &= !(1 << SECURE_KEEP_CAPS);
        let secure = is_setid || (new.uid != 0 && (effective || new.caps.permitted & !new.caps.ambient != 0));
        ExecCreds { cred: new, secure }
    }

    /// The credentials access(2) and faccessat(2) without AT_EACCESS
    /// check with: the real ids as file-system ids, and the permitted set
    /// as effective for a real root (none otherwise).
    pub fn for_access(&self) -> Cred<G> {
        let mut c = self.clone();
        c.fsuid = c.uid;
        c.fsgid = c.gid;
        if !c.is_set(SECURE_NO_SETUID_FIXUP) {
            c.caps.effective = if c.uid == 0 { c.caps.permitted } else { 0 };
        }
        c
    }

    /// Whether a commit of `new` over `self` makes the process
    /// non-dumpable: an effective or file-system id changed, or the
    /// permitted set grew.
    pub fn change_drops_dumpable(&self, new: &Cred<G>) -> bool {
        self.euid != new.euid
            || self.egid != new.egid
            || self.fsuid != new.fsuid
            || self.fsgid != new.fsgid
            || new.caps.permitted & !self.caps.permitted != 0
    }

    /// Linux's `generic_permission`: the owner's, group's or others'
    /// bits decide, then the capabilities that override them:
    /// CAP_DAC_READ_SEARCH reads any file and searches any directory,
    /// CAP_DAC_OVERRIDE does everything but execute a file that has no
    /// execute bit at all.
    pub fn permission(&self, f: FileAttrs, mask: u32) -> bool {
        self.permission_acl(f, None, mask)
    }

    /// `generic_permission` for a file that may carry a POSIX access ACL
    /// (its canonical xattr bytes, see `crate::acl`): for anyone but the
    /// owner, an ACL decides in place of the group and other bits when
    /// the mode has group bits (`acl_permission_check`); the capability
    /// overrides follow as for `permission`.
    pub fn permission_acl(&self, f: FileAttrs, acl: Option<&[u8]>, mask: u32) -> bool {
        let mask = mask & (MAY_READ | MAY_WRITE | MAY_EXEC);
        let allowed = match acl {
            Some(acl) if self.fsuid != f.uid && f.mode & 0o070 != 0 => {
                let in_group = |g: u32| self.in_group(g);
                let who = crate::acl::Requester { fsuid: self.fsuid, in_group: &in_group };
                crate::acl::permission(acl, &who, f.uid, f.gid, mask)
            }
            _ => self.mode_allows(f, mask),
        };
        if allowed {
            return true;
        }
        if f.is_dir() {
            if mask & MAY_WRITE == 0 && self.capable(CAP_DAC_READ_SEARCH) {
                return true;
            }
            return self.capable(CAP_DAC_OVERRIDE);
        }
        if mask == MAY_READ && self.capable(CAP_DAC_READ_SEARCH) {
            return true;
        }
        if mask & MAY_EXEC == 0 || f.mode & S_IXUGO != 0 {
            return self.capable(CAP_DAC_OVERRIDE);
        }
        false
    }

    /// Whether a permission check could need the file's attributes at
    /// all: a caller with CAP_DAC_OVERRIDE passes every check but execute
    /// of a non-directory (which needs an execute bit), so the VFS may
    /// skip reading the file's metadata for it.
    pub fn overrides(&self, mask: u32, is_dir: bool) -> bool {
        self.capable(CAP_DAC_OVERRIDE) && (is_dir || mask & MAY_EXEC == 0)
    }

    /// The mode bits alone (`acl_permission_check`): the owner class if
    /// the file-system uid owns the file, else the group class if the
    /// bits differ and the caller is in the file's group, else others.
    fn mode_allows(&self, f: FileAttrs, mask: u32) -> bool {
        let mut mode = f.mode;
        if self.fsuid == f.uid {
            mode >>= 6;
        } else if mask & (mode ^ (mode >> 3)) != 0 && self.in_group(f.gid) {
            mode >>= 3;
        }
        mask & !mode & 7 == 0
    }

    /// The owner or CAP_FOWNER (`inode_owner_or_capable`): who may
    /// chmod, set times, or open with O_NOATIME.
    pub fn owns_or_capable(&self, f: FileAttrs) -> bool {
        self.fsuid == f.uid || self.capable(CAP_FOWNER)
    }

    /// In the group, or CAP_FSETID (`in_group_or_capable`): who keeps a
    /// set-group-ID bit.
    pub fn in_group_or_capable(&self, gid: u32) -> bool {
        self.in_group(gid) || self.capable(CAP_FSETID)
    }

    /// The sticky bit of `dir` keeps `victim` from being removed or
    /// renamed by anyone but its owner, the directory's owner or a holder
    /// of CAP_FOWNER.
    pub fn sticky_forbids(&self, dir: FileAttrs, victim: FileAttrs) -> bool {
        dir.mode & S_ISVTX != 0 && self.fsuid != victim.uid && self.fsuid != dir.uid && !self.capable(CAP_FOWNER)
    }

    /// The mode chmod stores: the owner or CAP_FOWNER may chmod (else
    /// EPERM); the set-group-ID bit is dropped for a caller outside the
    /// file's group without CAP_FSETID.
    pub fn chmod_mode(&self, f: FileAttrs, mode: u32) -> Result<u32, Errno> {
        if !self.owns_or_capable(f) {
            return Err(Errno::EPERM);
        }
        let mut mode = mode & 0o7777;
        if !self.in_group_or_capable(f.gid) {
            mode &= !S_ISGID;
        }
        Ok(mode)
    }

    /// chown's permission (`chown_ok`, `chgrp_ok`): changing the owner
    /// needs CAP_CHOWN (giving it to oneself again is free), changing the
    /// group needs ownership and membership of the new group, or
    /// CAP_CHOWN.
    pub fn may_chown(&self, f: FileAttrs, uid: Option<u32>, gid: Option<u32>) -> bool {
        let chown_cap = self.capable(CAP_CHOWN);
        if let Some(u) = uid {
            if !(chown_cap || (self.fsuid == f.uid && u == f.uid)) {
                return false;
            }
        }
        if let Some(g) = gid {
            let owner = self.fsuid == f.uid;
            if !(chown_cap || (owner && (g == f.gid || self.in_group(g)))) {
                return false;
            }
        }
        true
    }

    /// The set-id bits a write, truncate or chown by this caller removes
    /// from a regular file (`setattr_should_drop_suidgid`): set-user-ID
    /// always, set-group-ID when group-executable or when the caller is
    /// outside the group; nothing for a holder of CAP_FSETID.
    pub fn setid_bits_to_drop(&self, f: FileAttrs) -> u32 {
        if !f.is_regular() || self.capable(CAP_FSETID) {
            return 0;
        }
        self.setid_bits_chown_drops(f)
    }

    /// The set-id bits chown removes from a non-directory (capability or
    /// not, set-user-ID always goes; set-group-ID as for a write).
    pub fn setid_bits_chown_drops(&self, f: FileAttrs) -> u32 {
        let mut drop = f.mode & S_ISUID;
        if f.mode & S_ISGID != 0 && (f.mode & S_IXGRP != 0 || !self.in_group_or_capable(f.gid)) {
            drop |= S_ISGID;
        }
        drop
    }

    /// The owner, group and mode of a new file created in `dir` with the
    /// requested `mode` (type bits included, umask already applied): the
    /// file-system ids own it, except that a set-group-ID directory gives
    /// its group (and, to a new directory, its set-group-ID bit); a new
    /// file that would be set-group-ID and group-executable in such a
    /// directory loses the bit unless its creator is in that group or
    /// holds CAP_FSETID.
    pub fn new_file(&self, dir: FileAttrs, mode: u32) -> (u32, u32, u32) {
        let mut mode = mode;
        let is_dir = mode & S_IFMT == S_IFDIR;
        if dir.mode & S_ISGID == 0 {
            return (self.fsuid, self.fsgid, mode);
        }
        if is_dir {
            mode |= S_ISGID;
        } else if mode & (S_ISGID | S_IXGRP) == S_ISGID | S_IXGRP && !self.in_group_or_capable(dir.gid) {
            mode &= !S_ISGID;
        }
        (self.fsuid, dir.gid, mode)
    }

    /// Whether a signal from this caller may reach a thread with
    /// credentials `target` (`kill_ok_by_cred`).
    pub fn may_signal(&self, target: &Cred<G>) -> bool {
        self.euid == target.suid
            || self.euid == target.uid
            || self.uid == target.suid
            || self.uid == target.uid
            || self.capable(CAP_KILL)
    }

    /// Whether this caller may trace or inspect a thread of another
    /// thread group with credentials `target` (Linux's
    /// `__ptrace_may_access`, then the capability module's
    /// `cap_ptrace_access_check`; no Yama). The caller's real ids, or its
    /// file-system ids under `mode.fscreds`, must equal all three of the
    /// target's user and group ids, and a target that still has memory
    /// (`target_dumpable` is its PR_GET_DUMPABLE then) must be dumpable;
    /// and the target's permitted capabilities must be within the
    /// caller's permitted set (effective under `fscreds`). CAP_SYS_PTRACE
    /// overrides each. The caller's own thread group is the caller's
    /// business: it passes before this is asked.
    pub fn may_ptrace(&self, target: &Cred<G>, target_dumpable: Option<u8>, mode: PtraceMode) -> bool {
        let override_cap = self.capable(CAP_SYS_PTRACE);
        let (uid, gid) = if mode.fscreds { (self.fsuid, self.fsgid) } else { (self.uid, self.gid) };
        let same_ids = uid == target.euid
            && uid == target.suid
            && uid == target.uid
            && gid == target.egid
            && gid == target.sgid
            && gid == target.gid;
        if !same_ids && !override_cap {
            return false;
        }
        if target_dumpable.is_some_and(|d| d != SUID_DUMP_USER) && !override_cap {
            return false;
        }
        let caller_caps = if mode.fscreds { self.caps.effective } else { self.caps.permitted };
        target.caps.permitted & !caller_caps == 0 || override_cap
    }

    /// Whether a parent with credentials `parent` may become this
    /// thread's tracer through PTRACE_TRACEME (`cap_ptrace_traceme`): the
    /// child's permitted capabilities are within the parent's permitted
    /// set, or the parent has CAP_SYS_PTRACE.
    pub fn may_be_traced_by(&self, parent: &Cred<G>) -> bool {
        self.caps.permitted & !parent.caps.permitted == 0 || parent.capable(CAP_SYS_PTRACE)
    }

    /// Whether prlimit may read or change `target`'s limits: all its ids
    /// equal the caller's real ones, or CAP_SYS_RESOURCE.
    pub fn may_prlimit(&self, target: &Cred<G>) -> bool {
        let same = self.uid == target.uid
            && self.uid == target.euid
            && self.uid == target.suid
            && self.gid == target.gid
            && self.gid == target.egid
            && self.gid == target.sgid;
        same || self.capable(CAP_SYS_RESOURCE)
    }

    /// Whether scheduling changes may reach `target` (`check_same_owner`
    /// or CAP_SYS_NICE).
    pub fn may_renice(&self, target: &Cred<G>) -> bool {
        self.euid == target.euid || self.euid == target.uid || self.capable(CAP_SYS_NICE)
    }
}

#[cfg(test)]
mod tests;
