//! Multi-round-trip requests (MRTR, MCP 2026-07-28): a handler's questions to the client become
//! an `input_required` result, and the client's retry brings the answers back.
//!
//! A handler asks with the one context API it uses on every revision
//! ([`ToolContext::request`](mirobody_core::ToolContext::request)). On 2026-07-28 its client is
//! an `MrtrPeer`: a question whose answer the retry carries returns that answer at once; a
//! question without one is recorded and never resolves. `run_round` polls the handler and, as
//! soon as it is stuck with a question recorded, drops it and reports every question recorded
//! in that poll (so questions asked together with `join!` travel together). The retry runs the
//! handler again from the start, with the answers so far. Handlers must therefore ask
//! deterministically (the same questions, in the same order, for the same arguments).
//!
//! The answers of earlier rounds travel in the `requestState`, `<answers>.<expiry>.<signature>`:
//! a token of core's signed-token type ([`mirobody_core::signed::Signer`]) whose signature binds
//! the answers to the method, the tool (or prompt, or resource), a digest of the arguments, the
//! caller and the expiry. A state that fails any of these is refused with -32602. It is signed,
//! not encrypted: it holds only the client's own answers (base64url JSON) and the expiry; the
//! key, the caller's identity and the binding are never in it.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mirobody_core::signed::{Purpose, ShortKey, Signer, TokenError};
use mirobody_core::{ClientPeer, PeerError};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::jsonrpc::RpcError;
use crate::protocol::peer::{Notifications, check_answer, declares, input_capability};
use crate::session::lock;

// What a request state's signature is for. v1 was an HMAC of this module's own over a JSON
// payload holding the expiry; v2 is core's signed token, the expiry outside the answers.
const REQUEST_STATE: Purpose = Purpose::new("mirobody-mrtr-state-v2");

/// The secret that signs `requestState`s (and that shared sessions derive their keys from).
/// Never printed.
#[derive(Clone)]
pub struct StateKey(Signer);

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateKey(<redacted>)")
    }
}

impl StateKey {
    /// The shortest key accepted, in bytes (the signed-token type's).
    pub const MIN_LEN: usize = Signer::MIN_KEY_LEN;

    /// A key from secret bytes (at least [`StateKey::MIN_LEN`]): share one key across every
    /// instance behind a load balancer.
    ///
    /// ```
    /// use mirobody_mcp::StateKey;
    ///
    /// assert!(StateKey::new(vec![7u8; 32]).is_ok());
    /// assert!(StateKey::new(b"short".to_vec()).is_err());
    /// ```
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<StateKey, ShortKey> {
        Signer::new(bytes).map(StateKey)
    }

    /// A random key of 32 bytes from the OS-seeded CSPRNG, for one process.
    pub fn random() -> StateKey {
        use rand::RngCore;
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        StateKey(Signer::new(bytes).expect("32 bytes is the shortest key"))
    }

    /// A key of its own for `purpose` (HMAC-SHA256 of the label under this key, as it always
    /// was, so instances of older releases derive the same), so that another use of the shared
    /// secret never shares a key with request states.
    pub(crate) fn derive(&self, purpose: &'static str) -> [u8; 32] {
        self.0.derive_key(Purpose::new(purpose))
    }
}

/// What a request state is bound to: it is accepted only on a retry of the same request by the
/// same caller.
pub(crate) struct Binding<'a> {
    /// The method (`tools/call`, `prompts/get`, `resources/read`).
    pub(crate) method: &'a str,
    /// The tool or prompt name, or the resource URI.
    pub(crate) target: &'a str,
    /// The request's arguments.
    pub(crate) arguments: Arguments<'a>,
    /// The verified caller.
    pub(crate) user: Option<&'a str>,
}

/// A request's arguments, parsed or as sent.
#[derive(Clone, Copy)]
pub(crate) enum Arguments<'a> {
    /// Parsed.
    Value(&'a Value),
    /// The JSON text of the `arguments` member, if any (absent reads as null).
    Raw(Option<&'a str>),
}

impl Arguments<'_> {
    fn digest(&self) -> [u8; 32] {
        match self {
            Arguments::Value(value) => arguments_digest(value),
            Arguments::Raw(None) => arguments_digest(&Value::Null),
            Arguments::Raw(Some(raw)) => arguments_digest(&serde_json::from_str(raw).unwrap_or_default()),
        }
    }
}

/// Why a `requestState` was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StateError {
    /// Not a state this server wrote, or altered, or made for another request or caller.
    Invalid,
    /// Its time has passed.
    Expired,
}

impl StateError {
    pub(crate) fn into_rpc(self) -> RpcError {
        match self {
            StateError::Invalid => RpcError::invalid_params(
                "Invalid requestState: it was altered, or belongs to another request; call again without it",
            ),
            StateError::Expired => RpcError::invalid_params("Expired requestState: call again without it"),
        }
    }
}

/// Seals and opens request states.
pub(crate) struct Sealer {
    key: StateKey,
    ttl: Duration,
}

// What a state's signature covers: the binding, then the answers' JSON. Length-prefixed
// fields, so that no two bindings (nor a binding and the answers) sign alike.
fn signed_subject(binding: &Binding<'_>, answers: &[u8]) -> Vec<u8> {
    let user = match binding.user {
        Some(user) => format!("user:{user}"),
        None => "anonymous".to_owned(),
    };
    let digest = binding.arguments.digest();
    let fields = [binding.method.as_bytes(), binding.target.as_bytes(), &digest, user.as_bytes()];
    let mut subject = Vec::with_capacity(fields.iter().map(|f| 8 + f.len()).sum::<usize>() + answers.len());
    for field in fields {
        subject.extend_from_slice(&(field.len() as u64).to_be_bytes());
        subject.extend_from_slice(field);
    }
    subject.extend_from_slice(answers);
    subject
}

impl Sealer {
    pub(crate) fn new(key: StateKey, ttl: Duration) -> Self {
        Sealer { key, ttl }
    }

    /// A state carrying `answers`, valid for this binding until the time to live passes.
    pub(crate) fn seal(&self, binding: &Binding<'_>, answers: Map<String, Value>) -> String {
        let expires_at = Signer::expires_in(self.ttl);
        // Serializing a map of values cannot fail.
        let answers = serde_json::to_vec(&answers).unwrap_or_default();
        let signature = self.key.0.sign(REQUEST_STATE, &signed_subject(binding, &answers), expires_at);
        format!("{}.{expires_at}.{}", URL_SAFE_NO_PAD.encode(&answers), URL_SAFE_NO_PAD.encode(signature))
    }

    /// The answers a state carries, if it is one this server sealed for this binding and has
    /// not expired.
    pub(crate) fn open(&self, binding: &Binding<'_>, state: &str) -> Result<Map<String, Value>, StateError> {
        let mut parts = state.splitn(3, '.');
        let (Some(answers), Some(expires_at), Some(signature)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(StateError::Invalid);
        };
        let answers = URL_SAFE_NO_PAD.decode(answers).map_err(|_| StateError::Invalid)?;
        let expires_at = expires_at.parse::<u64>().map_err(|_| StateError::Invalid)?;
        let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| StateError::Invalid)?;
        match self.key.0.verify(REQUEST_STATE, &signed_subject(binding, &answers), expires_at, &signature) {
            Ok(()) => serde_json::from_slice(&answers).map_err(|_| StateError::Invalid),
            Err(TokenError::Expired) => Err(StateError::Expired),
            Err(_) => Err(StateError::Invalid),
        }
    }
}

/// SHA-256 of the arguments in a canonical form (object keys sorted), so a retry that sends the
/// same arguments in another key order still matches.
fn arguments_digest(arguments: &Value) -> [u8; 32] {
    let mut canonical = Vec::with_capacity(64);
    write_canonical(arguments, &mut canonical);
    Sha256::digest(&canonical).into()
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            out.push(b'{');
            for (i, (key, item)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let _ = serde_json::to_writer(&mut *out, key);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// The retry members of a request's params: `inputResponses` and `requestState`.
#[derive(Deserialize, Default)]
pub(crate) struct RetryParams {
    #[serde(rename = "inputResponses", default, deserialize_with = "present")]
    pub(crate) input_responses: Option<Value>,
    #[serde(rename = "requestState", default, deserialize_with = "present")]
    pub(crate) request_state: Option<Value>,
}

/// Tells a member given as `null` (`Some(Null)`) from one left out (`None`).
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl RetryParams {
    /// The answers a retry brings: those sealed in its `requestState` (checked against
    /// `binding`), then its `inputResponses`. Malformed members and refused states are -32602.
    pub(crate) fn answers(self, sealer: &Sealer, binding: &Binding<'_>) -> Result<Map<String, Value>, RpcError> {
        let mut answers = match self.request_state {
            None => Map::new(),
            Some(Value::String(state)) => sealer.open(binding, &state).map_err(StateError::into_rpc)?,
            Some(_) => return Err(RpcError::invalid_params("Invalid params: \"requestState\" must be a string")),
        };
        match self.input_responses {
            None => {}
            Some(Value::Object(responses)) => {
                for (key, response) in responses {
                    if !response.is_object() {
                        return Err(RpcError::invalid_params(format!(
                            "Invalid params: inputResponses[\"{key}\"] must be a result object"
                        )));
                    }
                    // An answer sealed in an earlier round stands.
                    answers.entry(key).or_insert(response);
                }
            }
            Some(_) => {
                return Err(RpcError::invalid_params("Invalid params: \"inputResponses\" must be an object"));
            }
        }
        Ok(answers)
    }
}

/// What one round of a call has asked and used so far: what its `input_required` result, or
/// its refusal, is made of. Shared by the clients of calls that may end in a round.
#[derive(Default)]
pub(crate) struct RoundState {
    asked: Vec<(String, Value)>,
    used: Map<String, Value>,
    invalid: Option<RpcError>,
}

impl RoundState {
    /// The answer the retry brought (`answers`) to the question `key`, if it fits; `None`
    /// when the round must end here: the question is recorded for the `input_required`
    /// result, or the answer that does not fit it for the refusal.
    pub(crate) fn ask(
        &mut self,
        answers: &Map<String, Value>,
        key: &str,
        method: &str,
        params: Value,
    ) -> Option<Value> {
        match answers.get(key) {
            Some(answer) => match check_answer(method, answer) {
                Ok(()) => {
                    self.used.insert(key.to_owned(), answer.clone());
                    return Some(answer.clone());
                }
                Err(why) => {
                    self.invalid.get_or_insert_with(|| {
                        RpcError::invalid_params(format!("Invalid params: inputResponses[\"{key}\"] {why} ({method})"))
                    });
                }
            },
            None if !self.asked.iter().any(|(k, _)| k == key) => {
                let params = if params.is_null() { json!({}) } else { params };
                self.asked.push((key.to_owned(), json!({"method": method, "params": params})));
            }
            None => {}
        }
        None
    }

    /// How the round ends, if it does now: an answer that did not fit, or the questions asked
    /// (with the answers used, to seal into the next state).
    pub(crate) fn end<T>(&mut self) -> Option<Round<T>> {
        if let Some(error) = self.invalid.take() {
            return Some(Round::Invalid(error));
        }
        if self.asked.is_empty() {
            return None;
        }
        let requests = std::mem::take(&mut self.asked);
        let answers = std::mem::take(&mut self.used);
        Some(Round::InputRequired { requests, answers })
    }
}

/// The client of one 2026-07-28 call, as its handler sees it: answers from the retry, questions
/// recorded for the `input_required` result, progress and logs on the call's stream.
pub(crate) struct MrtrPeer<'a> {
    answers: Map<String, Value>,
    capabilities: &'a Value,
    notifications: Option<Notifications>,
    round: Mutex<RoundState>,
    unnamed: AtomicUsize,
}

impl<'a> MrtrPeer<'a> {
    pub(crate) fn new(
        answers: Map<String, Value>,
        capabilities: &'a Value,
        notifications: Option<Notifications>,
    ) -> Self {
        MrtrPeer { answers, capabilities, notifications, round: Mutex::default(), unnamed: AtomicUsize::new(0) }
    }

    async fn ask(&self, key: String, method: &str, params: Value) -> Result<Value, PeerError> {
        if let Some(answer) = lock(&self.round).ask(&self.answers, &key, method, params) {
            return Ok(answer);
        }
        // Unanswered (or answered wrongly): this round ends here; see `run_round`.
        std::future::pending().await
    }
}

#[async_trait]
impl ClientPeer for MrtrPeer<'_> {
    async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(n) = &self.notifications {
            n.progress(progress, total, message).await;
        }
    }

    async fn log(&self, level: &str, data: Value) {
        if let Some(n) = &self.notifications {
            n.log(level, data).await;
        }
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, PeerError> {
        let capability = input_capability(method, self.capabilities)?;
        let n = self.unnamed.fetch_add(1, Ordering::Relaxed) + 1;
        self.ask(format!("{capability}-{n}"), method, params).await
    }

    async fn request_keyed(&self, key: &str, method: &str, params: Value) -> Result<Value, PeerError> {
        input_capability(method, self.capabilities)?;
        self.ask(key.to_owned(), method, params).await
    }

    fn supports(&self, capability: &str) -> bool {
        declares(self.capabilities, capability)
    }
}

/// How one round of a multi-round-trip call ended.
pub(crate) enum Round<T> {
    /// The handler finished.
    Done(T),
    /// The handler needs answers: the questions (key and request object, in the order asked)
    /// and the answers it used, to seal into the next state.
    InputRequired { requests: Vec<(String, Value)>, answers: Map<String, Value> },
    /// An answer did not fit its question.
    Invalid(RpcError),
}

/// Runs `future` (a handler using `peer` as its client) until it finishes, or is stuck with a
/// question the client has not answered.
pub(crate) async fn run_round<T>(peer: &MrtrPeer<'_>, future: impl Future<Output = T>) -> Round<T> {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(value) = future.as_mut().poll(cx) {
            return Poll::Ready(Round::Done(value));
        }
        match lock(&peer.round).end() {
            Some(end) => Poll::Ready(end),
            None => Poll::Pending,
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer() -> Sealer {
        Sealer::new(StateKey::new(vec![1u8; 32]).unwrap(), Duration::from_secs(60))
    }

    fn binding<'a>(arguments: &'a Value, user: Option<&'a str>) -> Binding<'a> {
        Binding { method: "tools/call", target: "t", arguments: Arguments::Value(arguments), user }
    }

    #[test]
    fn a_state_opens_only_for_its_own_request_and_caller() {
        let args = json!({"a": 1, "b": [true, null]});
        let answers: Map<String, Value> = serde_json::from_value(json!({"q": {"action": "accept"}})).unwrap();
        let state = sealer().seal(&binding(&args, Some("u1")), answers.clone());
        assert_eq!(sealer().open(&binding(&args, Some("u1")), &state), Ok(answers));
        // The same arguments in another key order.
        let reordered: Value = serde_json::from_str(r#"{"b":[true,null],"a":1}"#).unwrap();
        assert!(sealer().open(&binding(&reordered, Some("u1")), &state).is_ok());
        assert_eq!(sealer().open(&binding(&args, Some("u2")), &state), Err(StateError::Invalid));
        assert_eq!(sealer().open(&binding(&args, None), &state), Err(StateError::Invalid));
        assert_eq!(sealer().open(&binding(&json!({"a": 2}), Some("u1")), &state), Err(StateError::Invalid));
        let other_tool = Binding { target: "u", ..binding(&args, Some("u1")) };
        assert_eq!(sealer().open(&other_tool, &state), Err(StateError::Invalid));
        let other_key = Sealer::new(StateKey::new(vec![2u8; 32]).unwrap(), Duration::from_secs(60));
        assert_eq!(other_key.open(&binding(&args, Some("u1")), &state), Err(StateError::Invalid));
    }

    #[test]
    fn a_tampered_or_expired_state_is_refused() {
        let args = json!({});
        let state = sealer().seal(&binding(&args, None), Map::new());
        let [answers, expires_at, signature] = state.split('.').collect::<Vec<_>>()[..] else { panic!("{state}") };
        let forged = URL_SAFE_NO_PAD.encode(br#"{"q":{"action":"accept"}}"#);
        let open = |state: &str| sealer().open(&binding(&args, None), state);
        assert_eq!(open(&format!("{forged}.{expires_at}.{signature}")), Err(StateError::Invalid), "other answers");
        assert_eq!(open(&format!("{answers}.99999999999.{signature}")), Err(StateError::Invalid), "a later expiry");
        assert_eq!(open(&format!("{state}-TAMPERED")), Err(StateError::Invalid));
        assert_eq!(open(&format!("{answers}.{expires_at}")), Err(StateError::Invalid));
        assert_eq!(open(&format!("{answers}.{signature}")), Err(StateError::Invalid), "a state of the old form");
        let expired = Sealer::new(StateKey::new(vec![1u8; 32]).unwrap(), Duration::ZERO);
        let state = expired.seal(&binding(&args, None), Map::new());
        assert_eq!(expired.open(&binding(&args, None), &state), Err(StateError::Expired));
    }

    #[test]
    fn the_state_carries_no_secret() {
        let args = json!({"password": "hunter2"});
        let state = sealer().seal(&binding(&args, Some("user-secret-id")), Map::new());
        let payload = String::from_utf8(URL_SAFE_NO_PAD.decode(state.split_once('.').unwrap().0).unwrap()).unwrap();
        assert!(!payload.contains("user-secret-id") && !payload.contains("hunter2"), "{payload}");
        assert!(!format!("{:?}", StateKey::new(vec![b'k'; 32]).unwrap()).contains("kkkk"));
    }

    #[tokio::test]
    async fn questions_asked_together_end_the_round_together() {
        let caps = json!({"elicitation": {}, "sampling": {}});
        let peer = MrtrPeer::new(Map::new(), &caps, None);
        let round = run_round(&peer, async {
            let (a, b) = futures::join!(
                peer.request_keyed("name", "elicitation/create", json!({"message": "?"})),
                peer.request("sampling/createMessage", json!({"maxTokens": 1})),
            );
            (a, b)
        })
        .await;
        let Round::InputRequired { requests, answers } = round else { panic!("expected questions") };
        let keys: Vec<&str> = requests.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["name", "sampling-1"]);
        assert_eq!(requests[0].1["method"], "elicitation/create");
        assert!(answers.is_empty());
    }

    #[tokio::test]
    async fn answers_resume_the_handler_and_undeclared_capabilities_are_refused() {
        let caps = json!({"elicitation": {}});
        let answers: Map<String, Value> =
            serde_json::from_value(json!({"name": {"action": "accept", "content": {"n": "Ada"}}, "extra": {}}))
                .unwrap();
        let peer = MrtrPeer::new(answers, &caps, None);
        let round = run_round(&peer, async {
            let sampling = peer.request("sampling/createMessage", json!({})).await;
            assert_eq!(sampling, Err(PeerError::Unsupported("sampling/createMessage".into())));
            peer.request_keyed("name", "elicitation/create", json!({})).await
        })
        .await;
        let Round::Done(Ok(answer)) = round else { panic!("expected the answer") };
        assert_eq!(answer["content"]["n"], "Ada");
    }

    #[tokio::test]
    async fn an_answer_of_the_wrong_shape_is_invalid() {
        let caps = json!({"elicitation": {}});
        let answers: Map<String, Value> = serde_json::from_value(json!({"name": {"nope": 1}})).unwrap();
        let peer = MrtrPeer::new(answers, &caps, None);
        let round = run_round(&peer, peer.request_keyed("name", "elicitation/create", json!({}))).await;
        let Round::Invalid(error) = round else { panic!("expected an error") };
        assert_eq!(error.code, -32602);
    }

    #[test]
    fn retry_params_are_checked() {
        let s = sealer();
        let args = json!({});
        let b = binding(&args, None);
        let parse = |v: Value| serde_json::from_value::<RetryParams>(v).unwrap();
        assert!(parse(json!({"inputResponses": null})).answers(&s, &b).is_err());
        assert!(parse(json!({"inputResponses": {"k": 12345}})).answers(&s, &b).is_err());
        assert!(parse(json!({"requestState": 5})).answers(&s, &b).is_err());
        assert!(parse(json!({"requestState": "x.y"})).answers(&s, &b).is_err());
        let ok = parse(json!({"inputResponses": {"k": {"action": "accept"}}})).answers(&s, &b).unwrap();
        assert_eq!(ok["k"]["action"], "accept");
        assert!(parse(json!({})).answers(&s, &b).unwrap().is_empty());
    }
}
