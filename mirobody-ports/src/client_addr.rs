//! The client's address, as the server found it.

use std::net::IpAddr;

/// The client's address: its connection's peer, or when that is a trusted reverse proxy, the
/// client the proxy's header names. `mirobody_mcp::serve` puts it in every request's
/// extensions, where the MCP endpoint's per-caller limits and the sign-in pages' throttles
/// read it; an application serving the routes itself may put it there too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);
