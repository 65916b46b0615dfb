//! The tower layer: every request gets its caller resolved before the inner service sees it.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{BoxFuture, Either};
use http::{Request, Response};
use tower_layer::Layer;
use tower_service::Service;

use crate::authenticator::Authenticator;

/// A tower [`Layer`] that resolves the caller of every request (see
/// [`Authenticator::authenticate`]), inserts a [`UserInfo`](mirobody_core::UserInfo) and an
/// [`AuthMethod`](crate::AuthMethod) into its extensions (except as
/// [`AuthService::unmarked_anonymous_at`] asks), and answers refusals itself (401 with a
/// `WWW-Authenticate` challenge, 400, or 503) so the inner service never sees them.
///
/// Put it around the whole router (it rewrites `/mcp/<secret>` to `/mcp`, which must happen
/// before routing) and outside any layer that logs request paths.
#[derive(Clone, Debug)]
pub struct AuthLayer {
    auth: Authenticator,
}

impl AuthLayer {
    /// The layer for an authenticator.
    pub fn new(auth: Authenticator) -> Self {
        AuthLayer { auth }
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = AuthService<S>;

    fn layer(&self, inner: S) -> AuthService<S> {
        AuthService::new(self.auth.clone(), inner)
    }
}

/// The service [`AuthLayer`] makes. Generic over the inner service, whose response body must
/// be constructible from a `String` (axum's `Body` and `http_body_util::Full` are).
#[derive(Clone, Debug)]
pub struct AuthService<S> {
    auth: Authenticator,
    inner: S,
    unmarked_anonymous_path: Option<Arc<str>>,
}

impl<S> AuthService<S> {
    /// `inner` behind `auth`.
    pub fn new(auth: Authenticator, inner: S) -> Self {
        AuthService { auth, inner, unmarked_anonymous_path: None }
    }

    /// Sends anonymous requests for `path` to the inner service without the `UserInfo` and
    /// `AuthMethod` extensions, for a service there that takes a missing caller as anonymous
    /// (as mirobody-mcp's endpoint does), which saves inserting the two on every anonymous
    /// request. Callers with credentials get both, at `path` as everywhere.
    ///
    /// ```
    /// # async fn run(auth: mirobody_auth::Authenticator) {
    /// let routes: axum::Router = axum::Router::new();
    /// let app = auth.wrap(routes).unmarked_anonymous_at("/mcp");
    /// # }
    /// ```
    pub fn unmarked_anonymous_at(mut self, path: &str) -> Self {
        self.unmarked_anonymous_path = Some(path.into());
        self
    }
}

impl<S, B, ResBody> Service<Request<B>> for AuthService<S>
where
    S: Service<Request<B>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
    ResBody: From<String> + Send + 'static,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = Either<S::Future, BoxFuture<'static, Result<Response<ResBody>, S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        // Most requests carry no credentials: nothing to wait for, so no future to box.
        if self.auth.is_anonymous(&request) {
            if self.unmarked_anonymous_path.as_deref() != Some(request.uri().path()) {
                self.auth.admit_anonymous(&mut request);
            }
            return Either::Left(self.inner.call(request));
        }
        // The clone is not ready; the service that was polled ready goes into the future.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let auth = self.auth.clone();
        Either::Right(Box::pin(async move {
            match auth.authenticate(&mut request).await {
                Ok(_) => inner.call(request).await,
                Err(refusal) => Ok(auth.reject(&refusal)),
            }
        }))
    }
}
