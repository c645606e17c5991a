//! POSIX access control lists, kept in the form user space reads and
//! writes them (`system.posix_acl_access` and `system.posix_acl_default`):
//! a 4-byte version header, then 8-byte entries `(tag u16, perm u16, id
//! u32)`, little-endian. A file system stores the canonical bytes
//! [`from_xattr`] produces and hands them to these functions, which are
//! Linux's `fs/posix_acl.c` rules: parsing and validation (with their
//! errnos), whether an ACL says no more than the mode bits
//! (`posix_acl_equiv_mode`), the permission check (`posix_acl_permission`),
//! and the two ways an ACL and a mode change each other: a new file's ACL
//! from its directory's default ACL (`posix_acl_create_masq`) and chmod
//! (`__posix_acl_chmod_masq`). Everything works in place on byte slices.

use linux_abi::errno::Errno;
use linux_abi::fs::{
    ACL_GROUP, ACL_GROUP_OBJ, ACL_MASK, ACL_OTHER, ACL_UNDEFINED_ID, ACL_USER, ACL_USER_OBJ,
    POSIX_ACL_XATTR_ENTRY_SIZE as ENTRY, POSIX_ACL_XATTR_HEADER_SIZE as HEADER, POSIX_ACL_XATTR_VERSION,
};

use crate::bytes::{u16_at, u32_at};

const S_IRWXU: u32 = 0o700;
const S_IRWXG: u32 = 0o070;
const S_IRWXO: u32 = 0o007;
const S_IRWXUGO: u32 = 0o777;

/// One entry of an ACL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub tag: u16,
    pub perm: u16,
    pub id: u32,
}

/// The entries of a canonical ACL (as [`from_xattr`] left it).
pub fn entries(acl: &[u8]) -> impl Iterator<Item = Entry> + '_ {
    acl.get(HEADER..).unwrap_or(&[]).chunks_exact(ENTRY).map(|e| Entry {
        tag: u16::from_le_bytes([e[0], e[1]]),
        perm: u16::from_le_bytes([e[2], e[3]]),
        id: u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
    })
}

fn set_perm(acl: &mut [u8], index: usize, perm: u16) {
    let at = HEADER + index * ENTRY + 2;
    acl[at..at + 2].copy_from_slice(&perm.to_le_bytes());
}

/// Reads an ACL written by user space (`posix_acl_from_xattr`) and puts
/// it in canonical form in place: the ids of entries that name nobody
/// become ACL_UNDEFINED_ID, as getxattr reports them. Returns false for
/// an ACL without entries, which removes the ACL. Errors: shorter than
/// the header or not a whole number of entries EINVAL, another version
/// EOPNOTSUPP, an unknown tag or the id -1 for a named entry EINVAL.
pub fn from_xattr(value: &mut [u8]) -> Result<bool, Errno> {
    let version = u32_at(value, 0).ok_or(Errno::EINVAL)?;
    if version != POSIX_ACL_XATTR_VERSION {
        return Err(Errno::EOPNOTSUPP);
    }
    let body = value.len() - HEADER;
    if !body.is_multiple_of(ENTRY) {
        return Err(Errno::EINVAL);
    }
    if body == 0 {
        return Ok(false);
    }
    for e in value[HEADER..].chunks_exact_mut(ENTRY) {
        let tag = u16::from_le_bytes([e[0], e[1]]);
        let id = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
        match tag {
            ACL_USER_OBJ | ACL_GROUP_OBJ | ACL_MASK | ACL_OTHER => {
                e[4..8].copy_from_slice(&ACL_UNDEFINED_ID.to_le_bytes());
            }
            ACL_USER | ACL_GROUP if id != ACL_UNDEFINED_ID => {}
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(true)
}

/// `posix_acl_valid`: permissions within rwx, the owner, named users,
/// owning group, named groups, mask and others in that order, exactly
/// one of each object entry, and a mask whenever named entries exist.
pub fn valid(acl: &[u8]) -> Result<(), Errno> {
    #[derive(PartialEq)]
    enum State {
        UserObj,
        User,
        Group,
        Other,
        Done,
    }
    let mut state = State::UserObj;
    let mut needs_mask = false;
    for e in entries(acl) {
        if e.perm & !7 != 0 {
            return Err(Errno::EINVAL);
        }
        state = match (e.tag, &state) {
            (ACL_USER_OBJ, State::UserObj) => State::User,
            (ACL_USER, State::User) => {
                needs_mask = true;
                State::User
            }
            (ACL_GROUP_OBJ, State::User) => State::Group,
            (ACL_GROUP, State::Group) => {
                needs_mask = true;
                State::Group
            }
            (ACL_MASK, State::Group) => State::Other,
            (ACL_OTHER, State::Other) => State::Done,
            (ACL_OTHER, State::Group) if !needs_mask => State::Done,
            _ => return Err(Errno::EINVAL),
        };
    }
    if state == State::Done {
        Ok(())
    } else {
        Err(Errno::EINVAL)
    }
}

/// `posix_acl_equiv_mode`: the permission bits the ACL gives `mode`
/// (the owner, group class (the mask when there is one) and others),
/// and whether the ACL says more than mode bits can (named entries or a
/// mask), in which case it must be kept.
pub fn equiv_mode(acl: &[u8], mode: u32) -> (u32, bool) {
    let mut bits = 0;
    let mut not_equiv = false;
    for e in entries(acl) {
        let p = u32::from(e.perm) & S_IRWXO;
        match e.tag {
            ACL_USER_OBJ => bits |= p << 6,
            ACL_GROUP_OBJ => bits |= p << 3,
            ACL_OTHER => bits |= p,
            ACL_MASK => {
                bits = (bits & !S_IRWXG) | (p << 3);
                not_equiv = true;
            }
            _ => not_equiv = true,
        }
    }
    ((mode & !S_IRWXUGO) | bits, not_equiv)
}

/// `posix_acl_create_masq`: a new file's ACL, a copy of its directory's
/// default ACL, and its mode limit each other: the owner, group class
/// (the mask, or the owning group without one) and others keep only
/// what both allow. Returns the new mode and whether the ACL must be
/// kept (it says more than the mode). EIO for an ACL without an owning
/// group and no mask (cannot happen to a valid one).
pub fn create_masq(acl: &mut [u8], mode: u32) -> Result<(u32, bool), Errno> {
    let mut m = mode;
    let mut group_obj = None;
    let mut mask_obj = None;
    let mut not_equiv = false;
    let count = (acl.len().saturating_sub(HEADER)) / ENTRY;
    for i in 0..count {
        let at = HEADER + i * ENTRY;
        let tag = u16_at(acl, at).ok_or(Errno::EIO)?;
        let perm = u32::from(u16_at(acl, at + 2).ok_or(Errno::EIO)?);
        match tag {
            ACL_USER_OBJ => {
                let p = perm & ((m >> 6) | !S_IRWXO);
                set_perm(acl, i, p as u16);
                m &= (p << 6) | !S_IRWXU;
            }
            ACL_USER | ACL_GROUP => not_equiv = true,
            ACL_GROUP_OBJ => group_obj = Some((i, perm)),
            ACL_OTHER => {
                let p = perm & (m | !S_IRWXO);
                set_perm(acl, i, p as u16);
                m &= p | !S_IRWXO;
            }
            ACL_MASK => {
                mask_obj = Some((i, perm));
                not_equiv = true;
            }
            _ => return Err(Errno::EIO),
        }
    }
    let (i, perm) = mask_obj.or(group_obj).ok_or(Errno::EIO)?;
    let p = perm & ((m >> 3) | !S_IRWXO);
    set_perm(acl, i, p as u16);
    m &= (p << 3) | !S_IRWXG;
    Ok(((mode & !S_IRWXUGO) | (m & S_IRWXUGO), not_equiv))
}

/// `__posix_acl_chmod_masq`: a chmod rewrites the owner, group class
/// (the mask, or the owning group without one) and other entries from
/// the new mode; named entries stay.
pub fn chmod_masq(acl: &mut [u8], mode: u32) -> Result<(), Errno> {
    let count = (acl.len().saturating_sub(HEADER)) / ENTRY;
    let mut group_obj = None;
    let mut mask_obj = None;
    for i in 0..count {
        let tag = u16_at(acl, HEADER + i * ENTRY).ok_or(Errno::EIO)?;
        match tag {
            ACL_USER_OBJ => set_perm(acl, i, ((mode & S_IRWXU) >> 6) as u16),
            ACL_USER | ACL_GROUP => {}
            ACL_GROUP_OBJ => group_obj = Some(i),
            ACL_MASK => mask_obj = Some(i),
            ACL_OTHER => set_perm(acl, i, (mode & S_IRWXO) as u16),
            _ => return Err(Errno::EIO),
        }
    }
    let i = mask_obj.or(group_obj).ok_or(Errno::EIO)?;
    set_perm(acl, i, ((mode & S_IRWXG) >> 3) as u16);
    Ok(())
}

/// Who asks, for [`permission`]: the file-system uid and a group test.
pub struct Requester<'a> {
    pub fsuid: u32,
    pub in_group: &'a dyn Fn(u32) -> bool,
}

/// `posix_acl_permission`: whether the access ACL grants `want` (rwx
/// bits) to the requester. The owner entry applies to the file's owner;
/// a named user entry, then any matching group entry (the owning group
/// or a named group) that grants everything, is limited by the mask;
/// a requester in a matching group none of which grants `want` is
/// refused; everyone else gets the other entry.
pub fn permission(acl: &[u8], who: &Requester, owner: u32, group: u32, want: u32) -> bool {
    let want = want & 7;
    let list = || entries(acl);
    let mask = list().find(|e| e.tag == ACL_MASK).map(|e| u32::from(e.perm));
    let masked = |perm: u32| {
        let eff = match mask {
            Some(m) => perm & m,
            None => perm,
        };
        eff & want == want
    };
    let mut found = false;
    for e in list() {
        let perm = u32::from(e.perm);
        match e.tag {
            ACL_USER_OBJ => {
                if owner == who.fsuid {
                    return perm & want == want;
                }
            }
            ACL_USER => {
                if e.id == who.fsuid {
                    return masked(perm);
                }
            }
            ACL_GROUP_OBJ | ACL_GROUP => {
                let gid = if e.tag == ACL_GROUP_OBJ { group } else { e.id };
                if (who.in_group)(gid) {
                    found = true;
                    if perm & want == want {
                        return masked(perm);
                    }
                }
            }
            ACL_MASK => {}
            ACL_OTHER => return !found && perm & want == want,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(entries: &[(u16, u16, u32)]) -> std::vec::Vec<u8> {
        let mut v = POSIX_ACL_XATTR_VERSION.to_le_bytes().to_vec();
        for (t, p, id) in entries {
            v.extend_from_slice(&t.to_le_bytes());
            v.extend_from_slice(&p.to_le_bytes());
            v.extend_from_slice(&id.to_le_bytes());
        }
        v
    }

    const U: u32 = ACL_UNDEFINED_ID;

    #[test]
    fn parse_errors_in_linux_order() {
        assert_eq!(from_xattr(&mut [2, 0, 0]), Err(Errno::EINVAL));
        assert_eq!(from_xattr(&mut [3, 0, 0, 0]), Err(Errno::EOPNOTSUPP));
        assert_eq!(from_xattr(&mut [3, 0, 0, 0, 1]), Err(Errno::EOPNOTSUPP));
        assert_eq!(from_xattr(&mut [2, 0, 0, 0, 1]), Err(Errno::EINVAL));
        assert_eq!(from_xattr(&mut [2, 0, 0, 0]), Ok(false));
        let mut bad_tag = acl(&[(0x40, 7, 0)]);
        assert_eq!(from_xattr(&mut bad_tag), Err(Errno::EINVAL));
        let mut bad_id = acl(&[(ACL_USER, 7, U)]);
        assert_eq!(from_xattr(&mut bad_id), Err(Errno::EINVAL));
    }

    #[test]
    fn canonical_form_undefines_object_ids() {
        let mut a = acl(&[
            (ACL_USER_OBJ, 7, 5),
            (ACL_USER, 5, 1000),
            (ACL_GROUP_OBJ, 5, 7),
            (ACL_MASK, 7, 9),
            (ACL_OTHER, 4, 1),
        ]);
        assert_eq!(from_xattr(&mut a), Ok(true));
        assert_eq!(
            a,
            acl(&[
                (ACL_USER_OBJ, 7, U),
                (ACL_USER, 5, 1000),
                (ACL_GROUP_OBJ, 5, U),
                (ACL_MASK, 7, U),
                (ACL_OTHER, 4, U)
            ])
        );
        assert_eq!(valid(&a), Ok(()));
    }

    #[test]
    fn validity_rules() {
        let ok = |e: &[(u16, u16, u32)]| valid(&acl(e));
        assert_eq!(ok(&[(ACL_USER_OBJ, 7, U), (ACL_GROUP_OBJ, 5, U), (ACL_OTHER, 4, U)]), Ok(()));
        // A named user needs a mask.
        assert_eq!(
            ok(&[(ACL_USER_OBJ, 7, U), (ACL_USER, 5, 1), (ACL_GROUP_OBJ, 5, U), (ACL_OTHER, 4, U)]),
            Err(Errno::EINVAL)
        );
        // Out of order.
        assert_eq!(
            ok(&[(ACL_USER_OBJ, 7, U), (ACL_GROUP_OBJ, 5, U), (ACL_OTHER, 4, U), (ACL_MASK, 7, U)]),
            Err(Errno::EINVAL)
        );
        // Permissions beyond rwx.
        assert_eq!(ok(&[(ACL_USER_OBJ, 8, U), (ACL_GROUP_OBJ, 5, U), (ACL_OTHER, 4, U)]), Err(Errno::EINVAL));
        // Duplicate named entries are allowed (Linux does not sort or dedupe).
        assert_eq!(
            ok(&[
                (ACL_USER_OBJ, 7, U),
                (ACL_USER, 5, 5),
                (ACL_USER, 5, 5),
                (ACL_GROUP_OBJ, 5, U),
                (ACL_MASK, 7, U),
                (ACL_OTHER, 4, U)
            ]),
            Ok(())
        );
        // Missing the others entry.
        assert_eq!(ok(&[(ACL_USER_OBJ, 7, U), (ACL_GROUP_OBJ, 5, U)]), Err(Errno::EINVAL));
    }

    #[test]
    fn equivalent_mode() {
        let minimal = acl(&[(ACL_USER_OBJ, 6, U), (ACL_GROUP_OBJ, 4, U), (ACL_OTHER, 0, U)]);
        assert_eq!(equiv_mode(&minimal, 0o100774), (0o100640, false));
        let named = acl(&[
            (ACL_USER_OBJ, 7, U),
            (ACL_USER, 5, 1000),
            (ACL_GROUP_OBJ, 5, U),
            (ACL_MASK, 7, U),
            (ACL_OTHER, 4, U),
        ]);
        assert_eq!(equiv_mode(&named, 0o100640), (0o100774, true));
    }

    #[test]
    fn inheritance_limits_both() {
        // The host's answer: default u::rwx,u:1000:r-x,g::r-x,m::r-x,o::---,
        // open(0666) gives mode 0640 and mask r--.
        let mut a = acl(&[
            (ACL_USER_OBJ, 7, U),
            (ACL_USER, 5, 1000),
            (ACL_GROUP_OBJ, 5, U),
            (ACL_MASK, 5, U),
            (ACL_OTHER, 0, U),
        ]);
        assert_eq!(create_masq(&mut a, 0o100666), Ok((0o100640, true)));
        assert_eq!(
            a,
            acl(&[
                (ACL_USER_OBJ, 6, U),
                (ACL_USER, 5, 1000),
                (ACL_GROUP_OBJ, 5, U),
                (ACL_MASK, 4, U),
                (ACL_OTHER, 0, U)
            ])
        );
        let mut d = acl(&[
            (ACL_USER_OBJ, 7, U),
            (ACL_USER, 5, 1000),
            (ACL_GROUP_OBJ, 5, U),
            (ACL_MASK, 5, U),
            (ACL_OTHER, 0, U),
        ]);
        assert_eq!(create_masq(&mut d, 0o040777), Ok((0o040750, true)));
        let mut minimal = acl(&[(ACL_USER_OBJ, 7, U), (ACL_GROUP_OBJ, 5, U), (ACL_OTHER, 0, U)]);
        assert_eq!(create_masq(&mut minimal, 0o100666), Ok((0o100640, false)));
    }

    #[test]
    fn chmod_rewrites_object_entries() {
        let mut a = acl(&[
            (ACL_USER_OBJ, 7, U),
            (ACL_USER, 5, 1000),
            (ACL_GROUP_OBJ, 5, U),
            (ACL_MASK, 7, U),
            (ACL_OTHER, 4, U),
        ]);
        chmod_masq(&mut a, 0o700).unwrap();
        assert_eq!(
            a,
            acl(&[
                (ACL_USER_OBJ, 7, U),
                (ACL_USER, 5, 1000),
                (ACL_GROUP_OBJ, 5, U),
                (ACL_MASK, 0, U),
                (ACL_OTHER, 0, U)
            ])
        );
    }

    #[test]
    fn permission_walk() {
        let a = acl(&[
            (ACL_USER_OBJ, 7, U),
            (ACL_USER, 6, 1000),
            (ACL_GROUP_OBJ, 5, U),
            (ACL_GROUP, 2, 50),
            (ACL_MASK, 4, U),
            (ACL_OTHER, 7, U),
        ]);
        let groups = |g: &[u32]| {
            let v = g.to_vec();
            move |x: u32| v.contains(&x)
        };
        let g_none = groups(&[]);
        let user = Requester { fsuid: 1000, in_group: &g_none };
        // Named user: rw- limited by the mask r--.
        assert!(permission(&a, &user, 0, 100, 4));
        assert!(!permission(&a, &user, 0, 100, 2));
        // Owner: its own entry, no mask.
        let owner = Requester { fsuid: 0, in_group: &g_none };
        assert!(permission(&a, &owner, 0, 100, 7));
        // In group 50, whose entry (-w-) is masked away; group 100 (r-x) grants read.
        let g50 = groups(&[50]);
        let member = Requester { fsuid: 2000, in_group: &g50 };
        assert!(!permission(&a, &member, 0, 100, 2));
        assert!(!permission(&a, &member, 0, 100, 4), "a matching group that does not grant refuses");
        let g100 = groups(&[100]);
        let owning = Requester { fsuid: 2000, in_group: &g100 };
        assert!(permission(&a, &owning, 0, 100, 4));
        assert!(!permission(&a, &owning, 0, 100, 1), "r-x masked to r--");
        // Nobody else: others (rwx) apply, no mask.
        let other = Requester { fsuid: 3000, in_group: &g_none };
        assert!(permission(&a, &other, 0, 100, 7));
    }
}
