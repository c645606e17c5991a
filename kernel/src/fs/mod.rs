//! Files: an in-memory file tree (the initramfs), open file descriptions
//! and per-process descriptor tables.
//!
//! This is the minimal file layer that running programs needs: regular
//! files, directories and symlinks held in memory, and the console. The
//! VFS proper (mounts, tmpfs writes, devfs, procfs) grows from here.

pub mod console;
pub mod fdtable;
pub mod file;
pub mod initramfs;
pub mod ramfs;

pub use fdtable::FdTable;
pub use file::OpenFile;
pub use ramfs::{lookup, Inode, InodeKind};
