#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
//! The wire formats of Kiln's network control plane, kept apart from the
//! kernel so the host can test them against the C headers and against
//! bytes Linux produced:
//!
//! * [`wire`]: netlink framing: `nlmsghdr`, the walk over a request
//!   buffer as Linux's `netlink_rcv_skb` does it, route attributes
//!   (`rtattr`/`nlattr`) and their 4-byte alignment, and a builder for
//!   replies that never panics (a full heap is an error, not an abort);
//! * [`rtnl`]: NETLINK_ROUTE's messages (`ifinfomsg`, `ifaddrmsg`,
//!   `rtmsg`), their attribute numbers and flags;
//! * [`ifreq`]: the `struct ifreq`/`struct ifconf` of the SIOCGIF* and
//!   SIOCSIF* ioctls and the IFF_* interface flags;
//! * [`procnet`]: the exact line formats of /proc/net/{dev,route,tcp,udp,
//!   tcp6,udp6,if_inet6}.
//!
//! Nothing here panics on malformed input: every parser takes a byte
//! slice and answers `None` or an errno-shaped error.

extern crate alloc;

pub mod ifreq;
pub mod procnet;
pub mod rtnl;
pub mod wire;
