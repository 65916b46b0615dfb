//! Reading a request body whole, within its size limit, its deadline and the endpoint's
//! budget of bodies in flight.

use crate::jsonrpc::code;
use crate::session::limits::BodyBudget;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use http::{HeaderValue, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use super::*;

/// Why a body was not read.
#[derive(Debug)]
pub(super) enum BodyRefused {
    /// Over the size limit, or the stream failed.
    TooLarge,
    /// The endpoint's budget of bodies in flight is spent.
    Busy,
}

// The request's body within the size limit, the body budget and the body timeout, or the
// response that refuses it. A body that is all there at once (nearly every one) is read with no
// timer: one is armed only when the first read has to wait.
pub(super) async fn read_body_in_time<B: RequestBody>(
    inner: &HttpInner,
    body: B,
    budget: &mut Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<Bytes, Response> {
    let limit = inner.options.max_body_bytes;
    let mut read = std::pin::pin!(read_body(body, limit, &inner.body_budget, budget));
    let read = match std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await {
        Poll::Ready(read) => read,
        Poll::Pending => match tokio::time::timeout(inner.options.request_body_timeout, read).await {
            Ok(read) => read,
            Err(_) => {
                let mut response = rpc_error(
                    StatusCode::REQUEST_TIMEOUT,
                    None,
                    code::TRANSPORT,
                    "Request Timeout: the request body did not arrive in time",
                );
                response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
                return Err(response);
            }
        },
    };
    read.map_err(|refused| match refused {
        BodyRefused::TooLarge => rpc_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            code::INVALID_REQUEST,
            format!("Payload Too Large: the limit is {limit} bytes"),
        ),
        BodyRefused::Busy => over_limit(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            "Service Unavailable: too many large requests at once; try again shortly",
            Duration::from_secs(1),
        ),
    })
}

/// Reads a whole request body of at most `limit` bytes, taking each frame's size from
/// `budget` into `held` as it arrives.
///
/// By hand rather than with `collect()`, which queues every frame and then joins them: a
/// request almost always arrives as one data frame, and that frame is returned as it is.
pub(super) async fn read_body<B: RequestBody>(
    body: B,
    limit: usize,
    budget: &BodyBudget,
    held: &mut Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<Bytes, BodyRefused> {
    let mut body = std::pin::pin!(Limited::new(body, limit));
    let mut first = Bytes::new();
    let mut joined: Option<BytesMut> = None;
    while let Some(frame) = body.frame().await {
        // Trailers carry nothing a JSON-RPC message needs.
        let Ok(data) = frame.map_err(|_| BodyRefused::TooLarge)?.into_data() else { continue };
        if !budget.take(held, data.len()) {
            return Err(BodyRefused::Busy);
        }
        match &mut joined {
            Some(buffer) => buffer.extend_from_slice(&data),
            None if first.is_empty() => first = data,
            None => {
                let mut buffer = BytesMut::with_capacity(first.len() + data.len());
                buffer.extend_from_slice(&first);
                buffer.extend_from_slice(&data);
                joined = Some(buffer);
            }
        }
    }
    Ok(joined.map_or(first, BytesMut::freeze))
}

#[cfg(test)]
mod tests {
    use futures::stream;
    use http::HeaderMap;

    use super::*;

    /// A body sent as these frames, then these trailers.
    fn framed(parts: &[&'static str], trailers: bool) -> impl RequestBody {
        let mut frames: Vec<Result<http_body::Frame<Bytes>, Infallible>> =
            parts.iter().map(|p| Ok(http_body::Frame::data(Bytes::from_static(p.as_bytes())))).collect();
        if trailers {
            frames.push(Ok(http_body::Frame::trailers(HeaderMap::new())));
        }
        http_body_util::StreamBody::new(stream::iter(frames))
    }

    #[tokio::test]
    async fn bodies_are_read_whole_in_any_number_of_frames_up_to_the_limit() {
        let budget = BodyBudget::new(0);
        let read = async |parts: &'static [&'static str], trailers, limit| {
            read_body(framed(parts, trailers), limit, &budget, &mut None).await
        };
        assert_eq!(read(&[], false, 10).await.unwrap(), "");
        assert_eq!(read(&["{\"a\":1}"], false, 10).await.unwrap(), "{\"a\":1}");
        assert_eq!(read(&["{\"a\"", ":", "1}"], true, 10).await.unwrap(), "{\"a\":1}");
        assert_eq!(read(&["", "{}", "", "[]"], false, 10).await.unwrap(), "{}[]");
        assert_eq!(read(&["12345", "67890"], false, 10).await.unwrap(), "1234567890", "exactly the limit");
        assert!(read(&["12345", "678901"], false, 10).await.is_err(), "over the limit across frames");
        assert!(read(&["12345678901"], false, 10).await.is_err(), "over the limit in one frame");
    }

    #[tokio::test]
    async fn bodies_draw_on_the_budget_until_their_request_is_answered() {
        let budget = BodyBudget::new(12);
        let mut first = None;
        let body = read_body(framed(&["12345", "678"], false), 100, &budget, &mut first).await.unwrap();
        assert_eq!(body, "12345678");
        assert_eq!(budget.available(), 4, "held while the first request is answered");
        let mut second = None;
        let refused = read_body(framed(&["123", "45"], false), 100, &budget, &mut second).await;
        assert!(matches!(refused, Err(BodyRefused::Busy)), "{refused:?}");
        drop((first, second));
        assert_eq!(budget.available(), 12, "all given back");
    }
}
