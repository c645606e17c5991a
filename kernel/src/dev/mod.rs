//! Character device drivers written against the safe file interface
//! (`fs::file::FileOps`), registered with devfs by device number.

pub mod mymem;
