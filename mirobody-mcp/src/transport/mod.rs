//! The transports: Streamable HTTP as a tower service, line-delimited stdio on the
//! message-level [`Connection`](messages::Connection) any transport can use, and the HTTP/1
//! accept loop that serves an application with its connection deadlines.

mod connection;
pub mod http;
pub(crate) mod messages;
pub(crate) mod proxies;
pub(crate) mod serve;
pub mod stdio;
