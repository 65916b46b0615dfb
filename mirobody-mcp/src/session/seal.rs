//! What lets an instance trust the backplane: every envelope sealed (AES-256-GCM) and signed
//! (HMAC-SHA256 over the sealed bytes) with the time it was sent inside, and every record kept
//! sealed, under keys derived from the secret all instances share. Whoever can write to the
//! backplane without that secret (a `PUBLISH` from anyone who reaches Redis) is heard by no
//! instance, and whoever can read it learns nothing but how many messages went by.
//!
//! Not core's signed token ([`mirobody_core::signed::Signer`]): an envelope is encrypted
//! (AES-256-GCM), carries no expiry of its own but the time it was sent, checked with the
//! replay guard below, and its signed form `mbp1:<mac>:` is what instances of every release
//! read. Its keys are derived from the shared secret through that type
//! ([`Signer::derive_key`](mirobody_core::signed::Signer::derive_key)).

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit as _, Nonce};
use hmac::{Hmac, KeyInit, Mac};
use rand::RngCore;
use sha2::Sha256;

use super::lock;

type HmacSha256 = Hmac<Sha256>;

// What a signed envelope begins with: the format's version, then the MAC in hex, then ':'.
const SIGNED: &[u8] = b"mbp1:";
const MAC_HEX: usize = 64;

/// How old an envelope may be when it is heard: older ones are replays or from a clock gone
/// wrong. Events are heard within milliseconds; this leaves room for a loaded machine.
pub(crate) const MAX_AGE_MS: i64 = 30_000;
/// How far ahead of this instance's clock an envelope may say it was sent.
pub(crate) const MAX_SKEW_MS: i64 = 5_000;
/// The largest envelope read: the instances' own are a few KiB (ids, a session's bounded
/// record); anything larger is dropped before its MAC is computed.
pub(crate) const MAX_ENVELOPE_BYTES: usize = 256 * 1024;
// Envelope ids remembered to refuse replays within their window (some 50 bytes each). Instances
// send a few messages a second; this is thousands a second. Beyond it, new envelopes are
// refused (and counted) rather than ids still within their window forgotten, which would let
// a replay through.
const MAX_REMEMBERED: usize = 200_000;
// Refusals are logged as warnings at most this often; the others at debug.
const WARN_EVERY_MS: i64 = 10_000;

// What an envelope's body is sealed for.
const ENVELOPE: &str = "envelope";
// The sealed form: a 96-bit random nonce, then ciphertext and tag.
const NONCE_LEN: usize = 12;

// The one wall clock (core's), under the name the backplane imports it by.
pub(crate) use mirobody_core::clock::now_ms;

/// The backplane's keys, derived from the shared secret: one signs envelopes, the other seals.
pub(crate) struct BackplaneKeys {
    mac: [u8; 32],
    names: [u8; 32],
    cipher: Aes256Gcm,
}

impl BackplaneKeys {
    /// The keys of the backplane secret `secret` (itself derived from the secret every
    /// instance is configured with, for this use only).
    pub(crate) fn new(secret: &[u8; 32]) -> Self {
        let derive = |label: &str| -> [u8; 32] {
            let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
            mac.update(label.as_bytes());
            mac.finalize().into_bytes().into()
        };
        let seal = derive("mirobody-backplane-v1 seal");
        BackplaneKeys {
            mac: derive("mirobody-backplane-v1 mac"),
            names: derive("mirobody-backplane-v1 names"),
            cipher: Aes256Gcm::new_from_slice(&seal).expect("AES-256 takes a 32-byte key"),
        }
    }

    fn mac_of(&self, body: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.mac).expect("HMAC takes keys of any length");
        mac.update(body);
        mac
    }

    /// `body` signed, as it goes on the channel.
    pub(crate) fn sign(&self, body: &[u8]) -> Vec<u8> {
        let tag = self.mac_of(body).finalize().into_bytes();
        let mut wire = Vec::with_capacity(SIGNED.len() + MAC_HEX + 1 + body.len());
        wire.extend_from_slice(SIGNED);
        for byte in tag {
            wire.extend_from_slice(format!("{byte:02x}").as_bytes());
        }
        wire.push(b':');
        wire.extend_from_slice(body);
        wire
    }

    /// The body of a signed envelope, if its MAC is right (compared in constant time).
    pub(crate) fn verify<'a>(&self, wire: &'a [u8]) -> Result<&'a [u8], Refusal> {
        if wire.len() > MAX_ENVELOPE_BYTES {
            return Err(Refusal::Oversized);
        }
        let rest = wire.strip_prefix(SIGNED).ok_or(Refusal::Unsigned)?;
        if rest.len() <= MAC_HEX || rest[MAC_HEX] != b':' {
            return Err(Refusal::Unsigned);
        }
        let (hex, body) = (&rest[..MAC_HEX], &rest[MAC_HEX + 1..]);
        let mut tag = [0u8; 32];
        // `from_str_radix` alone would take a sign ("+a").
        if !hex.iter().all(u8::is_ascii_hexdigit) {
            return Err(Refusal::Unsigned);
        }
        for (byte, pair) in tag.iter_mut().zip(hex.chunks(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| Refusal::Unsigned)?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| Refusal::Unsigned)?;
        }
        self.mac_of(body).verify_slice(&tag).map_err(|_| Refusal::Forged)?;
        Ok(body)
    }

    /// The name a record is kept under for the id `id`: a keyed hash (128 bits, in hex), so
    /// that the store never holds a session's id, which the client presents.
    pub(crate) fn name(&self, id: &str) -> String {
        let mut mac = HmacSha256::new_from_slice(&self.names).expect("HMAC takes keys of any length");
        mac.update(id.as_bytes());
        mac.finalize().into_bytes()[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// An envelope's `body`, sealed and signed, as it goes on the channel.
    pub(crate) fn wrap(&self, body: &[u8]) -> Vec<u8> {
        self.sign(&self.seal(ENVELOPE, "", body))
    }

    /// The body of an envelope [`wrap`](Self::wrap) made under these keys.
    pub(crate) fn unwrap(&self, wire: &[u8]) -> Result<Vec<u8>, Refusal> {
        let sealed = self.verify(wire)?;
        self.open(ENVELOPE, "", sealed).ok_or(Refusal::Unreadable)
    }

    /// `plain` sealed for `purpose` under `id`: it opens only with the same two.
    pub(crate) fn seal(&self, purpose: &str, id: &str, plain: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let aad = associated(purpose, id);
        let sealed = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), Payload { msg: plain, aad: &aad })
            .expect("AES-GCM encryption of an in-memory buffer cannot fail");
        let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// What [`seal`](Self::seal) sealed for the same `purpose` and `id`; `None` for anything
    /// else (altered, sealed under another key, or for another id or purpose).
    pub(crate) fn open(&self, purpose: &str, id: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, sealed) = sealed.split_at(NONCE_LEN);
        let aad = associated(purpose, id);
        self.cipher.decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: &aad }).ok()
    }
}

// Length-prefixed, so that no two (purpose, id) pairs read alike.
fn associated(purpose: &str, id: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(16 + purpose.len() + id.len());
    aad.extend_from_slice(&(purpose.len() as u64).to_be_bytes());
    aad.extend_from_slice(purpose.as_bytes());
    aad.extend_from_slice(id.as_bytes());
    aad
}

/// Why an envelope heard on the backplane was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not in the signed form (another release, or written by hand).
    Unsigned,
    /// Larger than any envelope an instance sends.
    Oversized,
    /// Signed, but the MAC is wrong: altered, or signed under another key.
    Forged,
    /// Signed, but sent too long ago or too far in the future.
    Stale,
    /// Signed and fresh, but heard before.
    Replayed,
    /// Signed and fresh, but more arrived within the window than can be remembered to tell a
    /// replay: a flood.
    Flooded,
    /// Signed, but not an event this release reads; or a record or payload that does not open.
    Unreadable,
}

/// How many envelopes (and stored records or payloads) this instance refused, by reason, since
/// it started. Any count above zero means someone writes to the backplane who should not, or
/// instances configured with different secrets (or with clocks more than seconds apart).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RefusedEvents {
    /// Envelopes not in the signed form.
    pub unsigned: u64,
    /// Envelopes larger than any an instance sends (256 KiB), dropped unread.
    pub oversized: u64,
    /// Envelopes whose MAC was wrong.
    pub forged: u64,
    /// Envelopes sent more than 30 seconds ago, or more than 5 seconds ahead.
    pub stale: u64,
    /// Envelopes heard a second time.
    pub replayed: u64,
    /// Envelopes refused because more arrived within their window than are remembered
    /// (200,000): a flood, refused rather than let a replay through.
    pub flooded: u64,
    /// Signed envelopes this release cannot read, and records or payloads that did not open.
    pub unreadable: u64,
}

impl RefusedEvents {
    /// All refusals together.
    pub fn total(&self) -> u64 {
        self.unsigned + self.oversized + self.forged + self.stale + self.replayed + self.flooded + self.unreadable
    }
}

/// The refusals counted, and the ids of the envelopes heard within their window.
#[derive(Default)]
pub(crate) struct Guard {
    unsigned: AtomicU64,
    oversized: AtomicU64,
    forged: AtomicU64,
    stale: AtomicU64,
    replayed: AtomicU64,
    flooded: AtomicU64,
    unreadable: AtomicU64,
    last_warned_ms: AtomicI64,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    ids: HashSet<u128>,
    // In the order heard, with the time each was sent, to forget them once out of the window.
    order: VecDeque<(i64, u128)>,
}

impl Guard {
    /// Counts and logs a refusal.
    pub(crate) fn refuse(&self, why: Refusal) {
        let counter = match why {
            Refusal::Unsigned => &self.unsigned,
            Refusal::Oversized => &self.oversized,
            Refusal::Forged => &self.forged,
            Refusal::Stale => &self.stale,
            Refusal::Replayed => &self.replayed,
            Refusal::Flooded => &self.flooded,
            Refusal::Unreadable => &self.unreadable,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        // A flood of forgeries must not become a flood of log lines.
        let now = now_ms();
        let last = self.last_warned_ms.load(Ordering::Relaxed);
        if now - last >= WARN_EVERY_MS
            && self.last_warned_ms.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            tracing::warn!(reason = ?why, refused = ?self.counts(), "dropped a message on the shared session backplane");
        } else {
            tracing::debug!(reason = ?why, "dropped a message on the shared session backplane");
        }
    }

    /// The refusals so far.
    pub(crate) fn counts(&self) -> RefusedEvents {
        RefusedEvents {
            unsigned: self.unsigned.load(Ordering::Relaxed),
            oversized: self.oversized.load(Ordering::Relaxed),
            forged: self.forged.load(Ordering::Relaxed),
            stale: self.stale.load(Ordering::Relaxed),
            replayed: self.replayed.load(Ordering::Relaxed),
            flooded: self.flooded.load(Ordering::Relaxed),
            unreadable: self.unreadable.load(Ordering::Relaxed),
        }
    }

    /// Whether an envelope sent at `at` (ms) under `id` (128 random bits in hex, as
    /// `random_token` makes) may be heard now: fresh, and not heard before. Remembers it.
    pub(crate) fn admit(&self, id: &str, at: i64, now: i64) -> Result<(), Refusal> {
        if at < now - MAX_AGE_MS || at > now + MAX_SKEW_MS {
            return Err(Refusal::Stale);
        }
        // `from_str_radix` alone would take a sign ("+" and 31 digits).
        if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Refusal::Unreadable);
        }
        let id = u128::from_str_radix(id, 16).map_err(|_| Refusal::Unreadable)?;
        let mut seen = lock(&self.seen);
        // Ids sent before the window began are refused as stale anyway: forget them.
        while let Some((sent, _)) = seen.order.front() {
            if *sent >= now - MAX_AGE_MS - MAX_SKEW_MS {
                break;
            }
            let (_, old) = seen.order.pop_front().expect("the front was just read");
            seen.ids.remove(&old);
        }
        if seen.ids.contains(&id) {
            return Err(Refusal::Replayed);
        }
        if seen.order.len() >= MAX_REMEMBERED {
            return Err(Refusal::Flooded);
        }
        seen.ids.insert(id);
        seen.order.push_back((at, id));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(byte: u8) -> BackplaneKeys {
        BackplaneKeys::new(&[byte; 32])
    }

    #[test]
    fn a_signed_body_verifies_and_nothing_else_does() {
        let (ours, theirs) = (keys(1), keys(2));
        let wire = ours.sign(br#"{"kind":"ended"}"#);
        assert_eq!(ours.verify(&wire), Ok(&br#"{"kind":"ended"}"#[..]));
        assert_eq!(theirs.verify(&wire), Err(Refusal::Forged), "another key");

        let mut tampered = wire.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert_eq!(ours.verify(&tampered), Err(Refusal::Forged), "the body altered");
        let mut tampered = wire.clone();
        tampered[SIGNED.len()] = if tampered[SIGNED.len()] == b'0' { b'1' } else { b'0' };
        assert_eq!(ours.verify(&tampered), Err(Refusal::Forged), "the MAC altered");

        for unsigned in [&br#"{"kind":"ended"}"#[..], b"", b"mbp1:", b"mbp1:zz", &wire[..SIGNED.len() + MAC_HEX]] {
            assert_eq!(ours.verify(unsigned), Err(Refusal::Unsigned), "{}", String::from_utf8_lossy(unsigned));
        }
        let mut not_hex = wire.clone();
        not_hex[SIGNED.len()] = b'g';
        assert_eq!(ours.verify(&not_hex), Err(Refusal::Unsigned));
        // A sign before a digit ("+a" reads as 10 to `from_str_radix`): never a MAC's hex.
        let mut signed_pair = wire.clone();
        signed_pair[SIGNED.len()] = b'+';
        assert_eq!(ours.verify(&signed_pair), Err(Refusal::Unsigned));
        let huge = ours.sign(&vec![b' '; MAX_ENVELOPE_BYTES]);
        assert_eq!(ours.verify(&huge), Err(Refusal::Oversized), "even signed, too large to read");
    }

    #[test]
    fn a_wrapped_envelope_is_unreadable_on_the_way_and_unwraps_only_under_its_keys() {
        let (ours, theirs) = (keys(1), keys(2));
        let wire = ours.wrap(br#"{"owner":"user:alice"}"#);
        assert!(!String::from_utf8_lossy(&wire).contains("alice"));
        assert_eq!(ours.unwrap(&wire).as_deref(), Ok(&br#"{"owner":"user:alice"}"#[..]));
        assert_eq!(theirs.unwrap(&wire), Err(Refusal::Forged));
        assert_eq!(ours.unwrap(&ours.sign(b"signed, not sealed")), Err(Refusal::Unreadable));
    }

    #[test]
    fn names_are_keyed_hashes_of_ids() {
        let (ours, theirs) = (keys(1), keys(2));
        let name = ours.name("0123456789abcdef0123456789abcdef");
        assert_eq!(name.len(), 32);
        assert_ne!(name, "0123456789abcdef0123456789abcdef");
        assert_eq!(name, ours.name("0123456789abcdef0123456789abcdef"), "the same id, the same name");
        assert_ne!(name, theirs.name("0123456789abcdef0123456789abcdef"), "unknowable without the key");
        assert_ne!(name, ours.name("0123456789abcdef0123456789abcdee"));
    }

    #[test]
    fn what_is_sealed_opens_only_for_its_purpose_and_id_under_its_key() {
        let (ours, theirs) = (keys(1), keys(2));
        let sealed = ours.seal("answer", "p1", b"Allergic to penicillin");
        assert!(!sealed.windows(8).any(|w| w == b"Allergic"), "not in clear");
        assert_eq!(ours.open("answer", "p1", &sealed).as_deref(), Some(&b"Allergic to penicillin"[..]));
        assert_eq!(ours.open("answer", "p2", &sealed), None, "moved to another id");
        assert_eq!(ours.open("record", "p1", &sealed), None, "read as something else");
        assert_eq!(theirs.open("answer", "p1", &sealed), None, "another key");
        let mut altered = sealed.clone();
        altered[NONCE_LEN] ^= 1;
        assert_eq!(ours.open("answer", "p1", &altered), None);
        assert_eq!(ours.open("answer", "p1", b"short"), None);
        assert_ne!(ours.seal("answer", "p1", b"x"), ours.seal("answer", "p1", b"x"), "a fresh nonce each time");
    }

    #[test]
    fn a_flood_is_refused_rather_than_ids_within_their_window_forgotten() {
        let guard = Guard::default();
        let now = now_ms();
        let id = |n: usize| format!("{n:032x}");
        for n in 0..MAX_REMEMBERED {
            assert_eq!(guard.admit(&id(n), now, now), Ok(()));
        }
        assert_eq!(guard.admit(&id(MAX_REMEMBERED), now, now), Err(Refusal::Flooded), "one too many");
        assert_eq!(guard.admit(&id(0), now, now), Err(Refusal::Replayed), "the first is still remembered");
        // Once the window has passed, the old ids go and new ones are heard again.
        let later = now + MAX_AGE_MS + MAX_SKEW_MS + 1;
        assert_eq!(guard.admit(&id(MAX_REMEMBERED), later, later), Ok(()));
    }

    #[test]
    fn stale_future_and_replayed_envelopes_are_refused_and_counted() {
        let guard = Guard::default();
        let now = now_ms();
        let id = |n: u8| format!("{n:032x}");
        assert_eq!(guard.admit(&id(1), now, now), Ok(()));
        assert_eq!(guard.admit(&id(1), now, now), Err(Refusal::Replayed));
        assert_eq!(guard.admit(&id(2), now - MAX_AGE_MS - 1, now), Err(Refusal::Stale));
        assert_eq!(guard.admit(&id(3), now + MAX_SKEW_MS + 1, now), Err(Refusal::Stale));
        assert_eq!(guard.admit(&id(4), now - MAX_AGE_MS + 1_000, now), Ok(()), "late but within the window");
        for made_up in ["1", "not hex, but thirty-two bytes!!!", &"f".repeat(33)] {
            assert_eq!(guard.admit(made_up, now, now), Err(Refusal::Unreadable), "{made_up}");
        }
        // Out of the window, an id is forgotten: it is refused as stale, never remembered forever.
        let later = now + MAX_AGE_MS + MAX_SKEW_MS + 1;
        assert_eq!(guard.admit(&id(5), later, later), Ok(()));
        assert_eq!(lock(&guard.seen).ids.len(), 1, "only the last is remembered");

        // A sign is not a hex digit, though `from_str_radix` would take one.
        assert_eq!(guard.admit(&format!("+{:031x}", 6), now, now), Err(Refusal::Unreadable));

        let refusals = [Refusal::Unsigned, Refusal::Oversized, Refusal::Forged, Refusal::Forged, Refusal::Stale];
        for why in refusals.into_iter().chain([Refusal::Unreadable]) {
            guard.refuse(why);
        }
        let counts = guard.counts();
        let all = (counts.unsigned, counts.oversized, counts.forged, counts.stale, counts.replayed, counts.unreadable);
        assert_eq!(all, (1, 1, 2, 1, 0, 1));
        assert_eq!(counts.total(), 6);
    }
}
