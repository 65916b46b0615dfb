//! The client behind a reverse proxy: when a connection comes from a proxy the operator
//! trusts, the client's address is read from the one header the operator says their proxies
//! write ([`ForwardedHeader`]: `X-Forwarded-For` by default, or `Forwarded`, RFC 7239); from
//! anyone else no header is read, so a client cannot choose whose limits it counts against.
//! Only that header is read: most proxies write one and pass the other on as the client sent
//! it, so reading both would let a client name itself.
//!
//! Each proxy appends the address it received the request from, so the list is read from the
//! right, hop by hop, on the header's bytes: the first address that is not itself a trusted
//! proxy is the client, and nothing left of it is ever parsed (the client wrote it, and may
//! have written anything). A right-most hop that cannot be read leaves the connection's peer
//! as the client; one further left, the last trusted proxy read.
//!
//! The headers are read by hand: RFC 7239's grammar (tokens, quoted strings, `[v6]:port`
//! nodes) is small, and no well-kept crate reads a list from the right, lazily, on bytes.

use std::net::IpAddr;
use std::sync::Arc;

use http::HeaderMap;
use ipnet::IpNet;

/// The most hops read from the right of a header: more trusted proxies in a row than any
/// deployment has.
const MAX_HOPS: usize = 32;

/// The header a trusted proxy names the client in. Name the one your proxies write: the
/// other is never read, since a proxy that does not write it passes the client's own on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ForwardedHeader {
    /// `X-Forwarded-For`, which nginx, HAProxy and the cloud load balancers write.
    #[default]
    XForwardedFor,
    /// `Forwarded` (RFC 7239), its `for=` nodes.
    Forwarded,
}

impl ForwardedHeader {
    fn name(self) -> &'static str {
        match self {
            ForwardedHeader::XForwardedFor => "x-forwarded-for",
            ForwardedHeader::Forwarded => "forwarded",
        }
    }
}

/// A forwarded-header name that is neither `x-forwarded-for` nor `forwarded`.
#[derive(Debug, thiserror::Error)]
#[error("'{0}' is not a header a proxy names the client in: use x-forwarded-for or forwarded")]
pub struct BadForwardedHeader(pub String);

impl std::str::FromStr for ForwardedHeader {
    type Err = BadForwardedHeader;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.trim().to_ascii_lowercase().as_str() {
            "x-forwarded-for" => Ok(ForwardedHeader::XForwardedFor),
            "forwarded" => Ok(ForwardedHeader::Forwarded),
            _ => Err(BadForwardedHeader(name.to_owned())),
        }
    }
}

/// The reverse proxies (addresses or CIDR networks) whose forwarded header names the client,
/// and which header that is. No proxy by default: every connection's peer is its client.
///
/// In configuration it is a list of such entries (see [`parse`](Self::parse)).
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(try_from = "Vec<String>")]
pub struct TrustedProxies {
    nets: Arc<[IpNet]>,
    header: ForwardedHeader,
}

/// An entry of a trusted-proxy list that is neither an address nor a CIDR network.
#[derive(Debug, thiserror::Error)]
#[error("'{0}' is neither an IP address nor a network such as 10.0.0.0/8")]
pub struct BadProxy(pub String);

impl TryFrom<Vec<String>> for TrustedProxies {
    type Error = BadProxy;

    fn try_from(list: Vec<String>) -> Result<Self, BadProxy> {
        TrustedProxies::parse(list)
    }
}

impl TrustedProxies {
    /// The proxies in `list`: `10.0.0.0/8`, `2001:db8::/32`, or an address alone (`127.0.0.1`,
    /// `::1`), read as writing `X-Forwarded-For` (see [`reading`](Self::reading)).
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
        Ok(TrustedProxies { nets: nets.into(), header: ForwardedHeader::default() })
    }

    /// These proxies, read as naming the client in `header` only.
    pub fn reading(mut self, header: ForwardedHeader) -> Self {
        self.header = header;
        self
    }

    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }

    /// Whether `addr` is a trusted proxy (an IPv4-mapped IPv6 address as its IPv4 one).
    pub fn contains(&self, addr: IpAddr) -> bool {
        let addr = addr.to_canonical();
        self.nets.iter().any(|net| net.contains(&addr))
    }

    /// The client of a request that came over a connection from `peer`: `peer` itself, unless
    /// it is a trusted proxy whose header names another.
    pub fn client(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.contains(peer) {
            return peer;
        }
        self.client_behind_proxy(headers).unwrap_or(peer)
    }

    // The right-most hop that is not a trusted proxy; when every hop read is one, the
    // left-most read (a request from inside). `None` when there is no header, or its
    // right-most hop cannot be read.
    fn client_behind_proxy(&self, headers: &HeaderMap) -> Option<IpAddr> {
        let hops = Hops {
            values: headers.get_all(self.header.name()).iter().rev(),
            rest: None,
            header: self.header,
            done: false,
        };
        let mut client = None;
        for hop in hops.take(MAX_HOPS) {
            let Some(addr) = hop else { return client };
            if !self.contains(addr) {
                return Some(addr);
            }
            client = Some(addr);
        }
        client
    }
}

// A forwarded header's hops from the right, each read only when asked for: its address, or
// `None` for a hop that cannot be read (after which nothing more is read).
struct Hops<'a> {
    values: std::iter::Rev<http::header::ValueIter<'a, http::HeaderValue>>,
    // What is left of the value being read, right of which every hop was taken.
    rest: Option<&'a [u8]>,
    header: ForwardedHeader,
    done: bool,
}

impl Iterator for Hops<'_> {
    type Item = Option<IpAddr>;

    fn next(&mut self) -> Option<Option<IpAddr>> {
        if self.done {
            return None;
        }
        let value = match self.rest.take() {
            Some(rest) => rest,
            None => self.values.next()?.as_bytes(),
        };
        let (left, hop) = match self.header {
            ForwardedHeader::XForwardedFor => match value.iter().rposition(|b| *b == b',') {
                Some(comma) => (Some(&value[..comma]), Some(&value[comma + 1..])),
                None => (None, Some(value)),
            },
            ForwardedHeader::Forwarded => last_element(value),
        };
        self.rest = left;
        let address = match self.header {
            ForwardedHeader::XForwardedFor => hop.and_then(|hop| node_address(hop.trim_ascii())),
            ForwardedHeader::Forwarded => hop.and_then(forwarded_for).and_then(node_address),
        };
        // Nothing left of an unreadable hop is read.
        self.done = address.is_none();
        Some(address)
    }
}

// The last element of a `Forwarded` value, and what lies left of it (`None` when nothing
// does): the value split at its right-most comma outside a quoted string. The element is
// `None` when a quote is left open: it runs into what the client wrote and cannot be told
// apart from it.
fn last_element(value: &[u8]) -> (Option<&[u8]>, Option<&[u8]>) {
    let mut quoted = false;
    for i in (0..value.len()).rev() {
        match value[i] {
            // A quote escaped inside a quoted string (`\"`): text, not its end.
            b'"' if quoted && escaped(&value[..i]) => {}
            b'"' => quoted = !quoted,
            b',' if !quoted => return (Some(&value[..i]), Some(&value[i + 1..])),
            _ => {}
        }
    }
    if quoted { (None, None) } else { (None, Some(value)) }
}

// Whether what follows `before` is escaped: an odd run of backslashes ends it.
fn escaped(before: &[u8]) -> bool {
    before.iter().rev().take_while(|b| **b == b'\\').count() % 2 == 1
}

// The `for=` node of one `Forwarded` element (its quotes balanced), unquoted; `None` when it
// has none. Nodes are IP literals, which never need an escape, so a quoted one is taken as it
// stands.
fn forwarded_for(element: &[u8]) -> Option<&[u8]> {
    let (mut start, mut quoted, mut escape) = (0, false, false);
    for end in 0..=element.len() {
        match element.get(end) {
            _ if escape => escape = false,
            Some(b'\\') if quoted => escape = true,
            Some(b'"') => quoted = !quoted,
            Some(b';') | None if !quoted => {
                let pair = &element[start..end];
                start = end + 1;
                let Some(equals) = pair.iter().position(|b| *b == b'=') else { continue };
                if !pair[..equals].trim_ascii().eq_ignore_ascii_case(b"for") {
                    continue;
                }
                let value = pair[equals + 1..].trim_ascii();
                return Some(value.strip_prefix(b"\"").and_then(|v| v.strip_suffix(b"\"")).unwrap_or(value));
            }
            _ => {}
        }
    }
    None
}

// The address of a node: `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]`, `[2001:db8::1]:4711`,
// or a bare IPv6 address as X-Forwarded-For writes it. `unknown`, obfuscated `_names` and
// anything not ASCII have none.
fn node_address(node: &[u8]) -> Option<IpAddr> {
    let node = std::str::from_utf8(node).ok()?;
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

    fn forwarded() -> TrustedProxies {
        proxies().reading(ForwardedHeader::Forwarded)
    }

    fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            let value = http::HeaderValue::from_bytes(value).unwrap();
            map.append(http::HeaderName::from_bytes(name.as_bytes()).unwrap(), value);
        }
        map
    }

    fn ip(addr: &str) -> IpAddr {
        addr.parse().unwrap()
    }

    #[test]
    fn headers_from_an_untrusted_peer_are_ignored() {
        let spoofed = headers(&[("x-forwarded-for", b"198.51.100.7"), ("forwarded", b"for=198.51.100.8")]);
        assert_eq!(proxies().client(ip("203.0.113.9"), &spoofed), ip("203.0.113.9"));
        assert_eq!(forwarded().client(ip("203.0.113.9"), &spoofed), ip("203.0.113.9"));
        assert_eq!(TrustedProxies::default().client(ip("127.0.0.1"), &spoofed), ip("127.0.0.1"), "none trusted");
    }

    #[test]
    fn x_forwarded_for_from_a_trusted_peer_names_the_right_most_untrusted_hop() {
        let p = proxies();
        let peer = ip("10.0.0.5");
        // The client wrote the first one itself: it is never read.
        let chain = headers(&[("x-forwarded-for", b"1.2.3.4, 198.51.100.7, 10.1.1.1")]);
        assert_eq!(p.client(peer, &chain), ip("198.51.100.7"));
        // Two headers are one list, in order.
        let split = headers(&[("x-forwarded-for", b"1.2.3.4"), ("x-forwarded-for", b"198.51.100.7")]);
        assert_eq!(p.client(peer, &split), ip("198.51.100.7"));
        let v6 = headers(&[("x-forwarded-for", b"2001:db8::7")]);
        assert_eq!(p.client(peer, &v6), ip("2001:db8::7"));
        // Every hop trusted: the left-most (a request from inside).
        let inside = headers(&[("x-forwarded-for", b"10.9.9.9, 127.0.0.1")]);
        assert_eq!(p.client(peer, &inside), ip("10.9.9.9"));
        // An IPv4-mapped peer is its IPv4 address.
        assert_eq!(p.client(ip("::ffff:10.0.0.5"), &chain), ip("198.51.100.7"));
    }

    #[test]
    fn only_the_header_the_proxies_write_is_read() {
        // nginx writes X-Forwarded-For and passes the client's own `Forwarded` on as it came.
        let behind_nginx = headers(&[("forwarded", b"for=1.2.3.4"), ("x-forwarded-for", b"198.51.100.7")]);
        assert_eq!(proxies().client(ip("10.0.0.5"), &behind_nginx), ip("198.51.100.7"), "the default header");
        // A proxy that writes `Forwarded` passes a client's X-Forwarded-For on just the same.
        let behind_forwarded = headers(&[("x-forwarded-for", b"1.2.3.4"), ("forwarded", b"for=198.51.100.7")]);
        assert_eq!(forwarded().client(ip("10.0.0.5"), &behind_forwarded), ip("198.51.100.7"));
        // The other header alone names no one.
        let other = headers(&[("forwarded", b"for=1.2.3.4")]);
        assert_eq!(proxies().client(ip("10.0.0.5"), &other), ip("10.0.0.5"));
        assert_eq!("X-Forwarded-For".parse::<ForwardedHeader>().unwrap(), ForwardedHeader::XForwardedFor);
        assert_eq!(" forwarded".parse::<ForwardedHeader>().unwrap(), ForwardedHeader::Forwarded);
        let err = "x-real-ip".parse::<ForwardedHeader>().unwrap_err();
        assert!(err.to_string().contains("x-real-ip"), "{err}");
    }

    #[test]
    fn forwarded_names_the_right_most_untrusted_hop_with_quoted_ipv6_and_ports() {
        let p = forwarded();
        let peer = ip("::1");
        let quoted =
            headers(&[("forwarded", br#"for=1.2.3.4;proto=https, for="[2001:db8:cafe::17]:4711";by=10.0.0.1"#)]);
        assert_eq!(p.client(peer, &quoted), ip("2001:db8:cafe::17"));
        let port = headers(&[("forwarded", br#"For="192.0.2.43:47011""#)]);
        assert_eq!(p.client(peer, &port), ip("192.0.2.43"));
        let bracketed = headers(&[("forwarded", br#"for="[2001:db8::1]""#), ("forwarded", b"for=10.2.2.2")]);
        assert_eq!(p.client(peer, &bracketed), ip("2001:db8::1"));
        // A quoted comma is not a separator, nor an escaped quote the end of a string.
        let comma = headers(&[("forwarded", br#"for=192.0.2.1;host="a,b", for=10.0.0.9"#)]);
        assert_eq!(p.client(peer, &comma), ip("192.0.2.1"));
        let escaped = headers(&[("forwarded", br#"for=192.0.2.2;ext="x\",y", for=10.0.0.9"#)]);
        assert_eq!(p.client(peer, &escaped), ip("192.0.2.2"));
    }

    #[test]
    fn what_a_client_wrote_left_of_the_proxys_hop_is_never_parsed() {
        let peer = ip("10.0.0.5");
        let client = ip("198.51.100.7");
        // Bytes that are not visible ASCII, which made the whole header unreadable.
        let binary = headers(&[("x-forwarded-for", b"\xff\xfe garbage, 198.51.100.7")]);
        assert_eq!(proxies().client(peer, &binary), client);
        let binary = headers(&[("forwarded", b"for=\"\xff\", for=198.51.100.7")]);
        assert_eq!(forwarded().client(peer, &binary), client);
        // An element without `for=`, which made the whole header unreadable.
        let no_for = headers(&[("forwarded", b"proto=https, for=198.51.100.7")]);
        assert_eq!(forwarded().client(peer, &no_for), client);
        // An unterminated quote, which swallowed the proxy's element into the client's.
        let open = headers(&[("forwarded", br#"for="1.2.3.4, for=198.51.100.7"#)]);
        assert_eq!(forwarded().client(peer, &open), client);
        let open = headers(&[("forwarded", br#"for=1.2.3.4;x=", for=198.51.100.7"#)]);
        assert_eq!(forwarded().client(peer, &open), client);
        // Garbage behind a trusted hop: the last trusted proxy read, never the garbage.
        let behind_trusted = headers(&[("forwarded", br#"for="1.2.3.4, for=10.1.1.1"#)]);
        assert_eq!(forwarded().client(peer, &behind_trusted), ip("10.1.1.1"));
        let behind_trusted = headers(&[("x-forwarded-for", b"garbage, 10.1.1.1")]);
        assert_eq!(proxies().client(peer, &behind_trusted), ip("10.1.1.1"));
    }

    #[test]
    fn an_unreadable_right_most_hop_leaves_the_peer_as_the_client() {
        let peer = ip("10.0.0.5");
        for bad in [&b"not-an-address"[..], b"198.51.100.7, ", b"198.51.100.7:port", b"\xff"] {
            let p = proxies();
            assert_eq!(p.client(peer, &headers(&[("x-forwarded-for", bad)])), peer, "{bad:?}");
        }
        for bad in [
            &b"for=unknown"[..],
            b"for=_hidden",
            b"proto=https",
            br#"for="[2001:db8::1"#,
            br#"for="[2001:db8::1]:99999999""#,
            br#"for=198.51.100.7, for="10.1.1.1"#,
        ] {
            assert_eq!(forwarded().client(peer, &headers(&[("forwarded", bad)])), peer, "{bad:?}");
        }
        assert_eq!(proxies().client(peer, &HeaderMap::new()), peer, "no header");
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
