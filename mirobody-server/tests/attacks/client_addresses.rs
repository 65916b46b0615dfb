//! Who an anonymous client is: an attacker cannot choose its bucket with a forwarding header
//! the server does not trust, a trusted proxy's headers name the client, and addresses of one
//! IPv6 /48 share its budget.

use std::time::{Duration, Instant};

use crate::harness::Server;

const LIMITS: [(&str, &str); 3] = [
    ("MIROBODY_HTTP__CALLER_LIMITS__REQUESTS_PER_SECOND", "2"),
    ("MIROBODY_HTTP__CALLER_LIMITS__BURST", "5"),
    ("MIROBODY_SERVE__MAX_CONNECTIONS_PER_ADDRESS", "2"),
];

// The status of an anonymous `GET /circle` on a third connection while two others from this
// address are open: 503 (written at once, before any request) when the server counts them as
// one client's. Nothing is sent until the connection is known to be taken, so that a refused
// one ends cleanly rather than with a reset.
fn beside_two_open_connections(port: u16) -> u16 {
    use std::io::{Read, Write};
    let open: Vec<_> = (0..2).map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut third = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    third.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut reply = Vec::new();
    let _ = third.read_to_end(&mut reply);
    if reply.is_empty() {
        write!(third, "GET /circle HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        third.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let _ = third.read_to_end(&mut reply);
    }
    drop(open);
    let reply = String::from_utf8_lossy(&reply);
    reply.split_whitespace().nth(1).and_then(|status| status.parse().ok()).unwrap_or(0)
}

// How many of anonymous `GET /circle`s with these forwarding headers were refused for the rate.
// A request made while the last one's connection is still counted (two per address here) is
// refused for the connection, not the rate, or reset: it is made again once that one is gone.
fn refused<'a>(port: u16, requests: impl IntoIterator<Item = Vec<(&'a str, String)>>) -> usize {
    requests
        .into_iter()
        .filter(|headers| {
            let headers: Vec<(&str, &str)> = headers.iter().map(|(name, value)| (*name, value.as_str())).collect();
            for _ in 0..50 {
                match get_circle(port, &headers) {
                    Some(status) if status != 503 => return status == 429,
                    _ => std::thread::sleep(Duration::from_millis(50)),
                }
            }
            panic!("GET /circle was never answered but for its connection");
        })
        .count()
}

// An anonymous `GET /circle` with `headers`: its status, or `None` when the connection failed.
fn get_circle(port: u16, headers: &[(&str, &str)]) -> Option<u16> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let mut head = "GET /circle HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n".to_owned();
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).ok()?;
    String::from_utf8_lossy(&reply).split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn forwarding_headers_from_an_untrusted_peer_do_not_pick_the_bucket() {
    let mut server = Server::start("attack-addresses-untrusted", &LIMITS);
    // Forty requests, each claiming another client: all are the one loopback client.
    let spoofed = (0..40)
        .map(|i| vec![("X-Forwarded-For", format!("198.51.100.{i}")), ("Forwarded", format!("for=198.51.100.{i}"))]);
    let refused = refused(server.port, spoofed);
    assert!(refused >= 25, "only {refused} of 40 refused: the headers chose the bucket");
    // The server counts a connection once it has accepted it: on a loaded machine that may come
    // after the third connects, so a few tries; a server that does not count them never says 503.
    let third = (0..5).map(|_| beside_two_open_connections(server.port)).find(|&status| status == 503);
    assert_eq!(third, Some(503), "connections are counted per address");
    // The honest user comes from the same address: the connections just closed are counted
    // until the server has seen them go.
    std::thread::sleep(Duration::from_secs(1));
    server.assert_serves_honest_user();
}

#[test]
fn a_trusted_proxys_headers_name_the_client_and_one_48_shares_a_budget() {
    let mut env = LIMITS.to_vec();
    env.push(("MIROBODY_SERVE__TRUSTED_PROXIES", r#"["127.0.0.1/32"]"#));
    let mut server = Server::start("attack-addresses-trusted", &env);
    let port = server.port;
    // Forty clients behind the proxy: each has its own budget.
    let distinct = (0..40).map(|i| vec![("X-Forwarded-For", format!("203.0.113.200, 198.51.100.{i}"))]);
    assert_eq!(refused(port, distinct), 0, "clients behind the proxy were counted as one");
    // One of them, many times, each time with a `Forwarded` of its own, which a proxy that
    // writes X-Forwarded-For passes on: never read, so its own budget runs out.
    let one = (0..20)
        .map(|i| vec![("X-Forwarded-For", "2001:db8:99::1".to_owned()), ("Forwarded", format!("for=198.51.100.{i}"))]);
    assert!(refused(port, one) >= 10, "one client behind the proxy was not limited");
    // A header that cannot be read leaves the proxy as the client, with a budget of its own.
    let garbage = (0..20).map(|_| vec![("X-Forwarded-For", "not an address".to_owned())]);
    assert!(refused(port, garbage) >= 10);
    // Two hundred /64s of one /48: the /48 may send 16 times a /64's burst (80), and its rate.
    let started = Instant::now();
    let one_48 = (0..200).map(|i| vec![("X-Forwarded-For", format!("2001:db8:42:{i:x}00::1"))]);
    let refused_48 = refused(port, one_48);
    let at_most = 80 + 32 * (started.elapsed().as_secs() + 1) as usize;
    assert!(200 - refused_48 <= at_most, "{} of 200 /64s of one /48 got through", 200 - refused_48);
    assert!(refused_48 > 0);
    // A proxy carries many clients: its connections are not counted per address.
    assert_ne!(beside_two_open_connections(port), 503, "the trusted proxy's connections were counted per address");
    server.assert_serves_honest_user();
}

#[test]
fn a_proxy_that_writes_forwarded_is_read_by_that_header_alone() {
    let mut env = LIMITS.to_vec();
    env.extend([
        ("MIROBODY_SERVE__TRUSTED_PROXIES", r#"["127.0.0.1/32"]"#),
        ("MIROBODY_SERVE__FORWARDED_HEADER", "forwarded"),
    ]);
    let mut server = Server::start("attack-addresses-forwarded", &env);
    let port = server.port;
    // Forty clients named by the proxy's `Forwarded`, its right-most element: one budget each,
    // whatever the client wrote to the left of it.
    let distinct = (0..40).map(|i| vec![("Forwarded", format!("for=\"203.0.113.200, for=198.51.100.{i}"))]);
    assert_eq!(refused(port, distinct), 0, "clients behind the proxy were counted as one");
    // One client, each time with an X-Forwarded-For of its own, which this proxy passes on:
    // never read, so its own budget runs out.
    let one = (0..20)
        .map(|i| vec![("Forwarded", "for=198.51.100.99".to_owned()), ("X-Forwarded-For", format!("192.0.2.{i}"))]);
    assert!(refused(port, one) >= 10, "the client chose its bucket with X-Forwarded-For");
    server.assert_serves_honest_user();
}
