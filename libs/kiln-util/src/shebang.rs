//! The `#!` line of an interpreter script, parsed as Linux 6.1's
//! binfmt_script reads it.
//!
//! The kernel looks only at the first [`BUF_SIZE`] bytes of the file (zero
//! padded when the file is shorter). The line is `#!`, optional spaces or
//! tabs, the interpreter path, then optionally spaces or tabs and one
//! argument: everything up to the end of the line, trailing spaces and
//! tabs removed, inner ones kept. A NUL ends the path (and then there is
//! no argument) or the argument. Without a newline in the buffer the path
//! must still end (space, tab or NUL) inside it, or the script is refused
//! rather than run with a truncated path; a truncated argument is fine,
//! the interpreter can read the line itself.

/// Bytes of the file the kernel examines (Linux's BINPRM_BUF_SIZE).
pub const BUF_SIZE: usize = 256;

/// Linux's binfmt rewrites allowed per execve: the interpreter chain may
/// go through this many scripts before the final binary (`exec_binprm`
/// gives up with ELOOP at depth 6, counting from 0).
pub const MAX_NESTING: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shebang<'a> {
    pub interpreter: &'a [u8],
    pub argument: Option<&'a [u8]>,
}

/// Why a buffer is not a script Linux would run (execve: ENOEXEC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotScript {
    /// The file does not start with `#!`.
    NoMagic,
    /// No interpreter path, or one that does not end inside the buffer.
    NoInterpreter,
}

fn spacetab(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// First index in `first..=last` that is not a space or tab.
fn next_non_spacetab(buf: &[u8], first: usize, last: usize) -> Option<usize> {
    (first..=last).find(|&i| !spacetab(buf[i]))
}

/// First index in `first..=last` holding a space, tab or NUL.
fn next_terminator(buf: &[u8], first: usize, last: usize) -> Option<usize> {
    (first..=last).find(|&i| spacetab(buf[i]) || buf[i] == 0)
}

/// Parses the start of a file. `head` is what a read of [`BUF_SIZE`]
/// bytes at offset 0 returned; bytes past it count as zero.
pub fn parse(head: &[u8]) -> Result<Shebang<'_>, NotScript> {
    let mut padded = [0u8; BUF_SIZE];
    let n = head.len().min(BUF_SIZE);
    padded[..n].copy_from_slice(&head[..n]);
    let line = parse_buffer(&padded)?;
    // The result indexes `padded`; give back the same bytes from `head`
    // (both lie inside the first `n` bytes, or are empty).
    let slice = |part: &[u8]| -> &[u8] {
        let start = part.as_ptr() as usize - padded.as_ptr() as usize;
        if part.is_empty() {
            &head[..0]
        } else {
            &head[start..start + part.len()]
        }
    };
    Ok(Shebang { interpreter: slice(line.interpreter), argument: line.argument.map(slice) })
}

fn parse_buffer(buf: &[u8; BUF_SIZE]) -> Result<Shebang<'_>, NotScript> {
    if buf[0] != b'#' || buf[1] != b'!' {
        return Err(NotScript::NoMagic);
    }
    let buf_end = BUF_SIZE - 1;
    let mut i_end = match buf.iter().position(|&c| c == b'\n') {
        Some(newline) => newline,
        None => {
            let first = next_non_spacetab(buf, 2, buf_end).ok_or(NotScript::NoInterpreter)?;
            next_terminator(buf, first, buf_end).ok_or(NotScript::NoInterpreter)?;
            buf_end
        }
    };
    while i_end > 2 && spacetab(buf[i_end - 1]) {
        i_end -= 1;
    }
    let i_name = match next_non_spacetab(buf, 2, i_end) {
        Some(i) if i != i_end => i,
        _ => return Err(NotScript::NoInterpreter),
    };
    let i_sep = next_terminator(buf, i_name, i_end);
    let i_arg = match i_sep {
        Some(sep) if buf[sep] != 0 => next_non_spacetab(buf, sep, i_end),
        _ => None,
    };
    // The kernel writes NULs at i_end and (with an argument) at i_sep.
    let name_end = match (i_sep, i_arg) {
        (Some(sep), Some(_)) => sep,
        (Some(sep), None) if buf[sep] == 0 => sep,
        _ => i_end,
    };
    let argument = i_arg.map(|a| {
        let end = (a..i_end).find(|&i| buf[i] == 0).unwrap_or(i_end);
        &buf[a..end]
    });
    Ok(Shebang { interpreter: &buf[i_name..name_end], argument })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &[u8]) -> (String, Option<String>) {
        let s = parse(text).unwrap_or_else(|e| panic!("{:?} for {:?}", e, String::from_utf8_lossy(text)));
        (String::from_utf8(s.interpreter.to_vec()).unwrap(), s.argument.map(|a| String::from_utf8(a.to_vec()).unwrap()))
    }

    fn pair(name: &str, arg: Option<&str>) -> (String, Option<String>) {
        (name.to_string(), arg.map(str::to_string))
    }

    #[test]
    fn path_and_optional_argument() {
        assert_eq!(ok(b"#!/bin/sh\necho hi\n"), pair("/bin/sh", None));
        assert_eq!(ok(b"#! /bin/sh -e\n"), pair("/bin/sh", Some("-e")));
        assert_eq!(ok(b"#!\t/usr/bin/env  python3 -u \t\nx"), pair("/usr/bin/env", Some("python3 -u")));
        // No newline at all: the file is shorter than the buffer.
        assert_eq!(ok(b"#!/bin/sh"), pair("/bin/sh", None));
        assert_eq!(ok(b"#!/bin/sh -x"), pair("/bin/sh", Some("-x")));
        // A carriage return is part of the path, as on Linux.
        assert_eq!(ok(b"#!/bin/sh\r\n"), pair("/bin/sh\r", None));
    }

    #[test]
    fn nul_ends_the_path_or_the_argument() {
        assert_eq!(ok(b"#!/bin/sh\0 -e\n"), pair("/bin/sh", None));
        assert_eq!(ok(b"#!/bin/sh -e\0junk\n"), pair("/bin/sh", Some("-e")));
        // A space then a NUL: an empty argument, which Linux passes on.
        assert_eq!(ok(b"#!/bin/sh \0x\n"), pair("/bin/sh", Some("")));
    }

    #[test]
    fn refused_lines() {
        assert_eq!(parse(b"#/bin/sh\n"), Err(NotScript::NoMagic));
        assert_eq!(parse(b"\x7fELF"), Err(NotScript::NoMagic));
        assert_eq!(parse(b""), Err(NotScript::NoMagic));
        assert_eq!(parse(b"#!\n/bin/sh\n"), Err(NotScript::NoInterpreter));
        assert_eq!(parse(b"#!   \t \n"), Err(NotScript::NoInterpreter));
    }

    #[test]
    fn the_line_limit() {
        // A path that fills the buffer without ending is refused...
        let mut long = b"#!/".to_vec();
        long.resize(BUF_SIZE + 10, b'a');
        assert_eq!(parse(&long), Err(NotScript::NoInterpreter));
        // ...but one that ends inside it runs, with its argument cut at
        // the buffer's last byte.
        let mut cut = b"#!/bin/sh ".to_vec();
        cut.resize(BUF_SIZE + 10, b'x');
        let (name, arg) = ok(&cut);
        assert_eq!(name, "/bin/sh");
        assert_eq!(arg.unwrap().len(), BUF_SIZE - 1 - 10);
        // The longest path that still runs ends at the buffer's last byte.
        let mut edge = b"#!/".to_vec();
        edge.resize(BUF_SIZE - 1, b'b');
        edge.push(b' ');
        let (name, arg) = ok(&edge);
        assert_eq!(name.len(), BUF_SIZE - 3);
        assert_eq!(arg, None);
    }
}
