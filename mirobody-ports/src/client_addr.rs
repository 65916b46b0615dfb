//! The client's address, as the server found it.

use std::net::IpAddr;

/// The client's address: its connection's peer, or when that is a trusted reverse proxy, the
/// client the proxy's header names. `mirobody_mcp::serve` puts it in every request's
/// extensions, where the MCP endpoint's per-caller limits and the sign-in pages' throttles
/// read it; an application serving the routes itself may put it there too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

impl ClientAddr {
    /// The network the address stands for when callers are counted: an IPv4 address (or an
    /// IPv4-mapped IPv6 one) as itself, any other IPv6 address by its /64, which one host
    /// usually holds whole.
    ///
    /// ```
    /// use mirobody_ports::ClientAddr;
    ///
    /// let host = ClientAddr("2001:db8:1:2::10".parse().unwrap());
    /// let neighbour = ClientAddr("2001:db8:1:2:ffff::1".parse().unwrap());
    /// assert_eq!(host.network(), neighbour.network());
    /// assert_eq!(ClientAddr("::ffff:203.0.113.7".parse().unwrap()).network().to_string(), "203.0.113.7");
    /// ```
    pub fn network(self) -> IpAddr {
        match self.0 {
            IpAddr::V4(_) => self.0,
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6((u128::from(v6) & (u128::MAX << 64)).into()),
            },
        }
    }
}
