//! Inter-process communication objects: System V message queues,
//! semaphore sets and shared memory segments, POSIX message queues, and
//! memfd files. Each family keeps its objects here; `syscall/` reads the
//! arguments and calls in. Credentials checks go through `creds`.

pub mod creds;
