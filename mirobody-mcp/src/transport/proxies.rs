//! The client behind a reverse proxy: when a connection comes from a proxy the operator
//! trusts, the client's address is read from the `Forwarded` header (RFC 7239) or else
//! `X-Forwarded-For`; from anyone else those headers are ignored, so a client cannot choose
//! whose limits it counts against.
//!
//! Each proxy appends the address it received the request from, so the list is read from the
//! right: the first address that is not itself a trusted proxy is the client. What stands to
//! the left of it was written by the client and is never read. A header our own proxies wrote
//! that cannot be read leaves the connection's peer as the client.
//!
//! The headers are read by hand: RFC 7239's grammar (tokens, quoted strings, `[v6]:port`
//! nodes) is small, and no well-kept crate reads `for=` nodes into addresses.

use std::net::IpAddr;
use std::sync::Arc;

use http::HeaderMap;
use ipnet::IpNet;

/// The most hops read from the right of a header: more trusted proxies in a row than any
/// deployment has.
const MAX_HOPS: usize = 32;

/// The reverse proxies (addresses or CIDR networks) whose `Forwarded` and `X-Forwarded-For`
/// headers name the client. Empty by default: every connection's peer is its client.
#[derive(Clone, Debug, Default)]
pub struct TrustedProxies(Arc<[IpNet]>);

/// An entry of a trusted-proxy list that is neither an address nor a CIDR network.
#[derive(Debug, thiserror::Error)]
#[error("'{0}' is neither an IP address nor a network such as 10.0.0.0/8")]
pub struct BadProxy(pub String);

impl TrustedProxies {
    /// The proxies in `list`: `10.0.0.0/8`, `2001:db8::/32`, or an address alone (`127.0.0.1`,
    /// `::1`).
    ///
    /// # Errors
    ///
    /// An entry that is neither an address nor a network.
    pub fn parse<I>(list: I) -> Result<TrustedProxies, BadProxy>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let nets = list
            .into_iter()
            .map(|entry| {
                let entry = entry.as_ref().trim();
                entry
                    .parse::<IpNet>()
                    .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                    .map(|net| net.trunc())
                    .map_err(|_| BadProxy(entry.to_owned()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TrustedProxies(nets.into()))
    }

    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `addr` is a trusted proxy (an IPv4-mapped IPv6 address as its IPv4 one).
    pub fn contains(&self, addr: IpAddr) -> bool {
        let addr = addr.to_canonical();
        self.0.iter().any(|net| net.contains(&addr))
    }

    /// The client of a request that came over a connection from `peer`: `peer` itself, unless
    /// it is a trusted proxy whose headers name another.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.contains(peer) {
            return peer;
        }
        self.client_behind_proxy(headers).unwrap_or(peer)
    }

    // The right-most hop that is not a trusted proxy; the left-most one read when all are.
    // `None` when there is no header, or a hop our proxies wrote cannot be read.
    fn client_behind_proxy(&self, headers: &HeaderMap) -> Option<IpAddr> {
        let forwarded = values(headers, "forwarded")?;
        let hops: Vec<&str> = if forwarded.is_empty() {
            values(headers, "x-forwarded-for")?.into_iter().flat_map(|value| value.split(',')).collect()
        } else {
            forwarded.into_iter().flat_map(split_unquoted(',')).map(forwarded_for).collect::<Option<_>>()?
        };
        let mut client = None;
        for hop in hops.iter().rev().take(MAX_HOPS) {
            let addr = node_address(hop.trim())?;
            if !self.contains(addr) {
                return Some(addr);
            }
            client = Some(addr);
        }
        client
    }
}

// The values of every `name` header, in order; `None` if one is not text.
fn values<'a>(headers: &'a HeaderMap, name: &str) -> Option<Vec<&'a str>> {
    headers.get_all(name).iter().map(|value| value.to_str().ok()).collect()
}

// `text` split at each `separator` outside a quoted string.
fn split_unquoted(separator: char) -> impl Fn(&str) -> Vec<&str> {
    move |text| {
        let (mut parts, mut start, mut quoted, mut escaped) = (Vec::new(), 0, false, false);
        for (i, c) in text.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                c if c == separator && !quoted => {
                    parts.push(&text[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&text[start..]);
        parts
    }
}

// The `for=` node of one `Forwarded` element, unquoted; `None` when it has none. Nodes are IP
// literals, which never need an escape, so a quoted one is taken as it stands.
fn forwarded_for(element: &str) -> Option<&str> {
    split_unquoted(';')(element).into_iter().find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("for") {
            return None;
        }
        let value = value.trim();
        Some(value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value))
    })
}

// The address of a node: `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]`, `[2001:db8::1]:4711`,
// or a bare IPv6 address as X-Forwarded-For writes it. `unknown` and obfuscated `_names` have
// none.
fn node_address(node: &str) -> Option<IpAddr> {
    let addr = if let Some(rest) = node.strip_prefix('[') {
        let (v6, port) = rest.split_once(']')?;
        if !(port.is_empty() || port.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        IpAddr::V6(v6.parse().ok()?)
    } else if let Ok(addr) = node.parse::<IpAddr>() {
        addr
    } else {
        let (v4, port) = node.split_once(':')?;
        if !is_port(port) {
            return None;
        }
        IpAddr::V4(v4.parse().ok()?)
    };
    Some(addr.to_canonical())
}

// A port as RFC 7239 writes one: digits, or an obfuscated `_name`.
fn is_port(port: &str) -> bool {
    let digits = !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
    let obfuscated = port.len() > 1
        && port.starts_with('_')
        && port.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    digits || obfuscated
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies() -> TrustedProxies {
        TrustedProxies::parse(["127.0.0.1/32", "10.0.0.0/8", "::1", "fd00::/8"]).unwrap()
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(http::HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
        }
        map
    }

    fn ip(addr: &str) -> IpAddr {
        addr.parse().unwrap()
    }

    #[test]
    fn headers_from_an_untrusted_peer_are_ignored() {
        let spoofed = headers(&[("x-forwarded-for", "198.51.100.7"), ("forwarded", "for=198.51.100.8")]);
        assert_eq!(proxies().client(ip("203.0.113.9"), &spoofed), ip("203.0.113.9"));
        assert_eq!(TrustedProxies::default().client(ip("127.0.0.1"), &spoofed), ip("127.0.0.1"), "none trusted");
    }

    #[test]
    fn x_forwarded_for_from_a_trusted_peer_names_the_right_most_untrusted_hop() {
        let p = proxies();
        let peer = ip("10.0.0.5");
        // The client wrote the first one itself: it is never read.
        let chain = headers(&[("x-forwarded-for", "1.2.3.4, 198.51.100.7, 10.1.1.1")]);
        assert_eq!(p.client(peer, &chain), ip("198.51.100.7"));
        // Two headers are one list, in order.
        let split = headers(&[("x-forwarded-for", "1.2.3.4"), ("x-forwarded-for", "198.51.100.7")]);
        assert_eq!(p.client(peer, &split), ip("198.51.100.7"));
        let v6 = headers(&[("x-forwarded-for", "2001:db8::7")]);
        assert_eq!(p.client(peer, &v6), ip("2001:db8::7"));
        // Every hop trusted: the left-most (a request from inside).
        let inside = headers(&[("x-forwarded-for", "10.9.9.9, 127.0.0.1")]);
        assert_eq!(p.client(peer, &inside), ip("10.9.9.9"));
        // An IPv4-mapped peer is its IPv4 address.
        assert_eq!(p.client(ip("::ffff:10.0.0.5"), &chain), ip("198.51.100.7"));
    }

    #[test]
    fn forwarded_is_read_before_x_forwarded_for_with_quoted_ipv6_and_ports() {
        let p = proxies();
        let peer = ip("::1");
        let quoted = headers(&[
            ("forwarded", r#"for=1.2.3.4;proto=https, for="[2001:db8:cafe::17]:4711";by=10.0.0.1"#),
            ("x-forwarded-for", "198.51.100.99"),
        ]);
        assert_eq!(p.client(peer, &quoted), ip("2001:db8:cafe::17"));
        let port = headers(&[("forwarded", r#"For="192.0.2.43:47011""#)]);
        assert_eq!(p.client(peer, &port), ip("192.0.2.43"));
        let bracketed = headers(&[("forwarded", r#"for="[2001:db8::1]""#), ("forwarded", "for=10.2.2.2")]);
        assert_eq!(p.client(peer, &bracketed), ip("2001:db8::1"));
        // A quoted comma is not a separator.
        let comma = headers(&[("forwarded", r#"for=192.0.2.1;host="a,b", for=10.0.0.9"#)]);
        assert_eq!(p.client(peer, &comma), ip("192.0.2.1"));
    }

    #[test]
    fn malformed_headers_leave_the_peer_as_the_client() {
        let p = proxies();
        let peer = ip("10.0.0.5");
        for bad in [
            ("x-forwarded-for", "not-an-address"),
            ("x-forwarded-for", "198.51.100.7, "),
            ("x-forwarded-for", "198.51.100.7:port"),
            ("forwarded", "for=unknown"),
            ("forwarded", "for=_hidden"),
            ("forwarded", "proto=https"),
            ("forwarded", r#"for="[2001:db8::1"#),
            ("forwarded", r#"for="[2001:db8::1]:99999999""#),
        ] {
            assert_eq!(p.client(peer, &headers(&[bad])), peer, "{bad:?}");
        }
        assert_eq!(p.client(peer, &HeaderMap::new()), peer, "no header");
        // Garbage the client wrote to the left of what our proxy wrote is never reached.
        let left = headers(&[("x-forwarded-for", "garbage, 198.51.100.7")]);
        assert_eq!(p.client(peer, &left), ip("198.51.100.7"));
    }

    #[test]
    fn a_list_is_addresses_and_networks() {
        let p = proxies();
        assert!(p.contains(ip("10.200.0.1")) && p.contains(ip("::1")) && p.contains(ip("fd12::1")));
        assert!(!p.contains(ip("11.0.0.1")) && !p.contains(ip("127.0.0.2")));
        assert!(TrustedProxies::default().is_empty());
        let err = TrustedProxies::parse(["10.0.0.0/8", "proxy.example"]).unwrap_err();
        assert!(err.to_string().contains("proxy.example"), "{err}");
        assert!(TrustedProxies::parse(["10.0.0.0/33"]).is_err());
    }
}
