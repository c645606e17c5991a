//! Linux error numbers as returned by x86_64 system calls.
//!
//! A failing system call returns `-errno` in `rax`; user space (libc) turns
//! any value in `-4095..=-1` into `errno`. [`Errno`] lists every number of the
//! generic Linux errno table, which x86_64 uses unchanged, plus the
//! kernel-internal "restart" codes (512..=516) that must never reach user
//! space: the signal-delivery path converts them into `EINTR` or restarts the
//! call. Aliases (`EWOULDBLOCK`, `EDEADLOCK`, `ENOTSUP`) are associated
//! constants because an enum cannot repeat a discriminant.

/// Largest errno value; syscall returns in `-MAX_ERRNO..=-1` are errors.
pub const MAX_ERRNO: usize = 4095;

/// A Linux error number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
#[allow(clippy::upper_case_acronyms, non_camel_case_types)]
pub enum Errno {
    EPERM = 1,
    ENOENT = 2,
    ESRCH = 3,
    EINTR = 4,
    EIO = 5,
    ENXIO = 6,
    E2BIG = 7,
    ENOEXEC = 8,
    EBADF = 9,
    ECHILD = 10,
    EAGAIN = 11,
    ENOMEM = 12,
    EACCES = 13,
    EFAULT = 14,
    ENOTBLK = 15,
    EBUSY = 16,
    EEXIST = 17,
    EXDEV = 18,
    ENODEV = 19,
    ENOTDIR = 20,
    EISDIR = 21,
    EINVAL = 22,
    ENFILE = 23,
    EMFILE = 24,
    ENOTTY = 25,
    ETXTBSY = 26,
    EFBIG = 27,
    ENOSPC = 28,
    ESPIPE = 29,
    EROFS = 30,
    EMLINK = 31,
    EPIPE = 32,
    EDOM = 33,
    ERANGE = 34,
    EDEADLK = 35,
    ENAMETOOLONG = 36,
    ENOLCK = 37,
    ENOSYS = 38,
    ENOTEMPTY = 39,
    ELOOP = 40,
    ENOMSG = 42,
    EIDRM = 43,
    ECHRNG = 44,
    EL2NSYNC = 45,
    EL3HLT = 46,
    EL3RST = 47,
    ELNRNG = 48,
    EUNATCH = 49,
    ENOCSI = 50,
    EL2HLT = 51,
    EBADE = 52,
    EBADR = 53,
    EXFULL = 54,
    ENOANO = 55,
    EBADRQC = 56,
    EBADSLT = 57,
    EBFONT = 59,
    ENOSTR = 60,
    ENODATA = 61,
    ETIME = 62,
    ENOSR = 63,
    ENONET = 64,
    ENOPKG = 65,
    EREMOTE = 66,
    ENOLINK = 67,
    EADV = 68,
    ESRMNT = 69,
    ECOMM = 70,
    EPROTO = 71,
    EMULTIHOP = 72,
    EDOTDOT = 73,
    EBADMSG = 74,
    EOVERFLOW = 75,
    ENOTUNIQ = 76,
    EBADFD = 77,
    EREMCHG = 78,
    ELIBACC = 79,
    ELIBBAD = 80,
    ELIBSCN = 81,
    ELIBMAX = 82,
    ELIBEXEC = 83,
    EILSEQ = 84,
    ERESTART = 85,
    ESTRPIPE = 86,
    EUSERS = 87,
    ENOTSOCK = 88,
    EDESTADDRREQ = 89,
    EMSGSIZE = 90,
    EPROTOTYPE = 91,
    ENOPROTOOPT = 92,
    EPROTONOSUPPORT = 93,
    ESOCKTNOSUPPORT = 94,
    EOPNOTSUPP = 95,
    EPFNOSUPPORT = 96,
    EAFNOSUPPORT = 97,
    EADDRINUSE = 98,
    EADDRNOTAVAIL = 99,
    ENETDOWN = 100,
    ENETUNREACH = 101,
    ENETRESET = 102,
    ECONNABORTED = 103,
    ECONNRESET = 104,
    ENOBUFS = 105,
    EISCONN = 106,
    ENOTCONN = 107,
    ESHUTDOWN = 108,
    ETOOMANYREFS = 109,
    ETIMEDOUT = 110,
    ECONNREFUSED = 111,
    EHOSTDOWN = 112,
    EHOSTUNREACH = 113,
    EALREADY = 114,
    EINPROGRESS = 115,
    ESTALE = 116,
    EUCLEAN = 117,
    ENOTNAM = 118,
    ENAVAIL = 119,
    EISNAM = 120,
    EREMOTEIO = 121,
    EDQUOT = 122,
    ENOMEDIUM = 123,
    EMEDIUMTYPE = 124,
    ECANCELED = 125,
    ENOKEY = 126,
    EKEYEXPIRED = 127,
    EKEYREVOKED = 128,
    EKEYREJECTED = 129,
    EOWNERDEAD = 130,
    ENOTRECOVERABLE = 131,
    ERFKILL = 132,
    EHWPOISON = 133,
    ERESTARTSYS = 512,
    ERESTARTNOINTR = 513,
    ERESTARTNOHAND = 514,
    ENOIOCTLCMD = 515,
    ERESTART_RESTARTBLOCK = 516,
}

impl Errno {
    /// Same as `EAGAIN`.
    pub const EWOULDBLOCK: Errno = Errno::EAGAIN;
    /// Same as `EDEADLK`.
    pub const EDEADLOCK: Errno = Errno::EDEADLK;
    /// libc's `ENOTSUP`; Linux uses the same number as `EOPNOTSUPP`.
    pub const ENOTSUP: Errno = Errno::EOPNOTSUPP;

    /// The symbolic name, e.g. `"ENOENT"`.
    pub fn name(self) -> &'static str {
        match self {
            Errno::EPERM => "EPERM",
            Errno::ENOENT => "ENOENT",
            Errno::ESRCH => "ESRCH",
            Errno::EINTR => "EINTR",
            Errno::EIO => "EIO",
            Errno::ENXIO => "ENXIO",
            Errno::E2BIG => "E2BIG",
            Errno::ENOEXEC => "ENOEXEC",
            Errno::EBADF => "EBADF",
            Errno::ECHILD => "ECHILD",
            Errno::EAGAIN => "EAGAIN",
            Errno::ENOMEM => "ENOMEM",
            Errno::EACCES => "EACCES",
            Errno::EFAULT => "EFAULT",
            Errno::ENOTBLK => "ENOTBLK",
            Errno::EBUSY => "EBUSY",
            Errno::EEXIST => "EEXIST",
            Errno::EXDEV => "EXDEV",
            Errno::ENODEV => "ENODEV",
            Errno::ENOTDIR => "ENOTDIR",
            Errno::EISDIR => "EISDIR",
            Errno::EINVAL => "EINVAL",
            Errno::ENFILE => "ENFILE",
            Errno::EMFILE => "EMFILE",
            Errno::ENOTTY => "ENOTTY",
            Errno::ETXTBSY => "ETXTBSY",
            Errno::EFBIG => "EFBIG",
            Errno::ENOSPC => "ENOSPC",
            Errno::ESPIPE => "ESPIPE",
            Errno::EROFS => "EROFS",
            Errno::EMLINK => "EMLINK",
            Errno::EPIPE => "EPIPE",
            Errno::EDOM => "EDOM",
            Errno::ERANGE => "ERANGE",
            Errno::EDEADLK => "EDEADLK",
            Errno::ENAMETOOLONG => "ENAMETOOLONG",
            Errno::ENOLCK => "ENOLCK",
            Errno::ENOSYS => "ENOSYS",
            Errno::ENOTEMPTY => "ENOTEMPTY",
            Errno::ELOOP => "ELOOP",
            Errno::ENOMSG => "ENOMSG",
            Errno::EIDRM => "EIDRM",
            Errno::ECHRNG => "ECHRNG",
            Errno::EL2NSYNC => "EL2NSYNC",
            Errno::EL3HLT => "EL3HLT",
            Errno::EL3RST => "EL3RST",
            Errno::ELNRNG => "ELNRNG",
            Errno::EUNATCH => "EUNATCH",
            Errno::ENOCSI => "ENOCSI",
            Errno::EL2HLT => "EL2HLT",
            Errno::EBADE => "EBADE",
            Errno::EBADR => "EBADR",
            Errno::EXFULL => "EXFULL",
            Errno::ENOANO => "ENOANO",
            Errno::EBADRQC => "EBADRQC",
            Errno::EBADSLT => "EBADSLT",
            Errno::EBFONT => "EBFONT",
            Errno::ENOSTR => "ENOSTR",
            Errno::ENODATA => "ENODATA",
            Errno::ETIME => "ETIME",
            Errno::ENOSR => "ENOSR",
            Errno::ENONET => "ENONET",
            Errno::ENOPKG => "ENOPKG",
            Errno::EREMOTE => "EREMOTE",
            Errno::ENOLINK => "ENOLINK",
            Errno::EADV => "EADV",
            Errno::ESRMNT => "ESRMNT",
            Errno::ECOMM => "ECOMM",
            Errno::EPROTO => "EPROTO",
            Errno::EMULTIHOP => "EMULTIHOP",
            Errno::EDOTDOT => "EDOTDOT",
            Errno::EBADMSG => "EBADMSG",
            Errno::EOVERFLOW => "EOVERFLOW",
            Errno::ENOTUNIQ => "ENOTUNIQ",
            Errno::EBADFD => "EBADFD",
            Errno::EREMCHG => "EREMCHG",
            Errno::ELIBACC => "ELIBACC",
            Errno::ELIBBAD => "ELIBBAD",
            Errno::ELIBSCN => "ELIBSCN",
            Errno::ELIBMAX => "ELIBMAX",
            Errno::ELIBEXEC => "ELIBEXEC",
            Errno::EILSEQ => "EILSEQ",
            Errno::ERESTART => "ERESTART",
            Errno::ESTRPIPE => "ESTRPIPE",
            Errno::EUSERS => "EUSERS",
            Errno::ENOTSOCK => "ENOTSOCK",
            Errno::EDESTADDRREQ => "EDESTADDRREQ",
            Errno::EMSGSIZE => "EMSGSIZE",
            Errno::EPROTOTYPE => "EPROTOTYPE",
            Errno::ENOPROTOOPT => "ENOPROTOOPT",
            Errno::EPROTONOSUPPORT => "EPROTONOSUPPORT",
            Errno::ESOCKTNOSUPPORT => "ESOCKTNOSUPPORT",
            Errno::EOPNOTSUPP => "EOPNOTSUPP",
            Errno::EPFNOSUPPORT => "EPFNOSUPPORT",
            Errno::EAFNOSUPPORT => "EAFNOSUPPORT",
            Errno::EADDRINUSE => "EADDRINUSE",
            Errno::EADDRNOTAVAIL => "EADDRNOTAVAIL",
            Errno::ENETDOWN => "ENETDOWN",
            Errno::ENETUNREACH => "ENETUNREACH",
            Errno::ENETRESET => "ENETRESET",
            Errno::ECONNABORTED => "ECONNABORTED",
            Errno::ECONNRESET => "ECONNRESET",
            Errno::ENOBUFS => "ENOBUFS",
            Errno::EISCONN => "EISCONN",
            Errno::ENOTCONN => "ENOTCONN",
            Errno::ESHUTDOWN => "ESHUTDOWN",
            Errno::ETOOMANYREFS => "ETOOMANYREFS",
            Errno::ETIMEDOUT => "ETIMEDOUT",
            Errno::ECONNREFUSED => "ECONNREFUSED",
            Errno::EHOSTDOWN => "EHOSTDOWN",
            Errno::EHOSTUNREACH => "EHOSTUNREACH",
            Errno::EALREADY => "EALREADY",
            Errno::EINPROGRESS => "EINPROGRESS",
            Errno::ESTALE => "ESTALE",
            Errno::EUCLEAN => "EUCLEAN",
            Errno::ENOTNAM => "ENOTNAM",
            Errno::ENAVAIL => "ENAVAIL",
            Errno::EISNAM => "EISNAM",
            Errno::EREMOTEIO => "EREMOTEIO",
            Errno::EDQUOT => "EDQUOT",
            Errno::ENOMEDIUM => "ENOMEDIUM",
            Errno::EMEDIUMTYPE => "EMEDIUMTYPE",
            Errno::ECANCELED => "ECANCELED",
            Errno::ENOKEY => "ENOKEY",
            Errno::EKEYEXPIRED => "EKEYEXPIRED",
            Errno::EKEYREVOKED => "EKEYREVOKED",
            Errno::EKEYREJECTED => "EKEYREJECTED",
            Errno::EOWNERDEAD => "EOWNERDEAD",
            Errno::ENOTRECOVERABLE => "ENOTRECOVERABLE",
            Errno::ERFKILL => "ERFKILL",
            Errno::EHWPOISON => "EHWPOISON",
            Errno::ERESTARTSYS => "ERESTARTSYS",
            Errno::ERESTARTNOINTR => "ERESTARTNOINTR",
            Errno::ERESTARTNOHAND => "ERESTARTNOHAND",
            Errno::ENOIOCTLCMD => "ENOIOCTLCMD",
            Errno::ERESTART_RESTARTBLOCK => "ERESTART_RESTARTBLOCK",
        }
    }

    /// The positive error number.
    pub fn as_i32(self) -> i32 {
        self as i32
    }

    /// The system call return value reporting this error: `-errno`.
    pub fn as_neg_isize(self) -> isize {
        -(self as i32 as isize)
    }

    /// Whether this is a kernel-internal restart code (512..=516) that must
    /// be translated before returning to user space.
    pub fn is_kernel_internal(self) -> bool {
        self as i32 >= 512
    }

    /// Looks up a positive error number.
    pub fn from_i32(v: i32) -> Option<Errno> {
        Some(match v {
            1 => Errno::EPERM,
            2 => Errno::ENOENT,
            3 => Errno::ESRCH,
            4 => Errno::EINTR,
            5 => Errno::EIO,
            6 => Errno::ENXIO,
            7 => Errno::E2BIG,
            8 => Errno::ENOEXEC,
            9 => Errno::EBADF,
            10 => Errno::ECHILD,
            11 => Errno::EAGAIN,
            12 => Errno::ENOMEM,
            13 => Errno::EACCES,
            14 => Errno::EFAULT,
            15 => Errno::ENOTBLK,
            16 => Errno::EBUSY,
            17 => Errno::EEXIST,
            18 => Errno::EXDEV,
            19 => Errno::ENODEV,
            20 => Errno::ENOTDIR,
            21 => Errno::EISDIR,
            22 => Errno::EINVAL,
            23 => Errno::ENFILE,
            24 => Errno::EMFILE,
            25 => Errno::ENOTTY,
            26 => Errno::ETXTBSY,
            27 => Errno::EFBIG,
            28 => Errno::ENOSPC,
            29 => Errno::ESPIPE,
            30 => Errno::EROFS,
            31 => Errno::EMLINK,
            32 => Errno::EPIPE,
            33 => Errno::EDOM,
            34 => Errno::ERANGE,
            35 => Errno::EDEADLK,
            36 => Errno::ENAMETOOLONG,
            37 => Errno::ENOLCK,
            38 => Errno::ENOSYS,
            39 => Errno::ENOTEMPTY,
            40 => Errno::ELOOP,
            42 => Errno::ENOMSG,
            43 => Errno::EIDRM,
            44 => Errno::ECHRNG,
            45 => Errno::EL2NSYNC,
            46 => Errno::EL3HLT,
            47 => Errno::EL3RST,
            48 => Errno::ELNRNG,
            49 => Errno::EUNATCH,
            50 => Errno::ENOCSI,
            51 => Errno::EL2HLT,
            52 => Errno::EBADE,
            53 => Errno::EBADR,
            54 => Errno::EXFULL,
            55 => Errno::ENOANO,
            56 => Errno::EBADRQC,
            57 => Errno::EBADSLT,
            59 => Errno::EBFONT,
            60 => Errno::ENOSTR,
            61 => Errno::ENODATA,
            62 => Errno::ETIME,
            63 => Errno::ENOSR,
            64 => Errno::ENONET,
            65 => Errno::ENOPKG,
            66 => Errno::EREMOTE,
            67 => Errno::ENOLINK,
            68 => Errno::EADV,
            69 => Errno::ESRMNT,
            70 => Errno::ECOMM,
            71 => Errno::EPROTO,
            72 => Errno::EMULTIHOP,
            73 => Errno::EDOTDOT,
            74 => Errno::EBADMSG,
            75 => Errno::EOVERFLOW,
            76 => Errno::ENOTUNIQ,
            77 => Errno::EBADFD,
            78 => Errno::EREMCHG,
            79 => Errno::ELIBACC,
            80 => Errno::ELIBBAD,
            81 => Errno::ELIBSCN,
            82 => Errno::ELIBMAX,
            83 => Errno::ELIBEXEC,
            84 => Errno::EILSEQ,
            85 => Errno::ERESTART,
            86 => Errno::ESTRPIPE,
            87 => Errno::EUSERS,
            88 => Errno::ENOTSOCK,
            89 => Errno::EDESTADDRREQ,
            90 => Errno::EMSGSIZE,
            91 => Errno::EPROTOTYPE,
            92 => Errno::ENOPROTOOPT,
            93 => Errno::EPROTONOSUPPORT,
            94 => Errno::ESOCKTNOSUPPORT,
            95 => Errno::EOPNOTSUPP,
            96 => Errno::EPFNOSUPPORT,
            97 => Errno::EAFNOSUPPORT,
            98 => Errno::EADDRINUSE,
            99 => Errno::EADDRNOTAVAIL,
            100 => Errno::ENETDOWN,
            101 => Errno::ENETUNREACH,
            102 => Errno::ENETRESET,
            103 => Errno::ECONNABORTED,
            104 => Errno::ECONNRESET,
            105 => Errno::ENOBUFS,
            106 => Errno::EISCONN,
            107 => Errno::ENOTCONN,
            108 => Errno::ESHUTDOWN,
            109 => Errno::ETOOMANYREFS,
            110 => Errno::ETIMEDOUT,
            111 => Errno::ECONNREFUSED,
            112 => Errno::EHOSTDOWN,
            113 => Errno::EHOSTUNREACH,
            114 => Errno::EALREADY,
            115 => Errno::EINPROGRESS,
            116 => Errno::ESTALE,
            117 => Errno::EUCLEAN,
            118 => Errno::ENOTNAM,
            119 => Errno::ENAVAIL,
            120 => Errno::EISNAM,
            121 => Errno::EREMOTEIO,
            122 => Errno::EDQUOT,
            123 => Errno::ENOMEDIUM,
            124 => Errno::EMEDIUMTYPE,
            125 => Errno::ECANCELED,
            126 => Errno::ENOKEY,
            127 => Errno::EKEYEXPIRED,
            128 => Errno::EKEYREVOKED,
            129 => Errno::EKEYREJECTED,
            130 => Errno::EOWNERDEAD,
            131 => Errno::ENOTRECOVERABLE,
            132 => Errno::ERFKILL,
            133 => Errno::EHWPOISON,
            512 => Errno::ERESTARTSYS,
            513 => Errno::ERESTARTNOINTR,
            514 => Errno::ERESTARTNOHAND,
            515 => Errno::ENOIOCTLCMD,
            516 => Errno::ERESTART_RESTARTBLOCK,
            _ => return None,
        })
    }

    /// Decodes a raw system call return value: `Some(errno)` when `ret` is
    /// in the error range `-4095..=-1` and names a known error.
    pub fn from_syscall_ret(ret: isize) -> Option<Errno> {
        if ret < 0 && ret >= -(MAX_ERRNO as isize) {
            Errno::from_i32((-ret) as i32)
        } else {
            None
        }
    }
}

impl core::fmt::Display for Errno {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_numbers() {
        assert_eq!(Errno::EPERM as i32, 1);
        assert_eq!(Errno::ERANGE as i32, 34);
        assert_eq!(Errno::ENOSYS as i32, 38);
        assert_eq!(Errno::ENOTSUP as i32, 95);
        assert_eq!(Errno::ETIMEDOUT as i32, 110);
        assert_eq!(Errno::ERESTART_RESTARTBLOCK as i32, 516);
        assert_eq!(Errno::EWOULDBLOCK, Errno::EAGAIN);
    }

    #[test]
    fn round_trip_all() {
        let mut count = 0;
        for v in -5..1000 {
            if let Some(e) = Errno::from_i32(v) {
                assert_eq!(e as i32, v);
                assert_eq!(Errno::from_syscall_ret(e.as_neg_isize()), Some(e));
                assert!(e.name().starts_with('E'));
                count += 1;
            }
        }
        // 1..=133 are contiguous except the unused 41 and 58.
        assert_eq!(count, 133 - 2 + 5);
        assert_eq!(Errno::from_i32(41), None);
        assert_eq!(Errno::from_i32(0), None);
    }

    #[test]
    fn neg_and_names() {
        assert_eq!(Errno::ENOENT.as_neg_isize(), -2);
        assert_eq!(Errno::ENOENT.name(), "ENOENT");
        assert_eq!(Errno::EOPNOTSUPP.name(), "EOPNOTSUPP");
        assert!(Errno::ERESTARTSYS.is_kernel_internal());
        assert!(!Errno::EINTR.is_kernel_internal());
        assert_eq!(Errno::from_syscall_ret(0), None);
        assert_eq!(Errno::from_syscall_ret(-4096), None);
        assert_eq!(Errno::from_syscall_ret(5), None);
    }
}
