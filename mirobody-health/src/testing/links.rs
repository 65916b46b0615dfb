//! The `upload_links` family of the store contract suite.

use sha2::{Digest, Sha256};

use crate::store::{HealthData, LinkInsert, UploadLinkRow};
use crate::text::now_ms;

use super::support::{ok, unique_id};

const FAMILY: &str = "upload_links";
/// How long the links made here work.
const LIFETIME_MS: i64 = 600_000;

/// Upload links: a user holds at most `max_live` rows (`LinkInsert::TooMany` past it, the revoked
/// and settled used-up ones making room), a use is taken until none is left and given back, a link
/// is revoked one by one or all of a user's at once, and `live_upload_links` counts the links that
/// still work.
///
/// Panics, naming the family and the promise, at the first one the store breaks.
pub async fn upload_links(store: &dyn HealthData) {
    // Real times: a store deletes everyone's expired links when one is made, so a time in the
    // future would delete other tests' links.
    let now = now_ms();
    uses_are_taken_given_back_and_revoked(store, now).await;
    a_user_holds_at_most_max_live_rows(store, now).await;
}

/// A link id's hash no other call makes.
fn token() -> [u8; 32] {
    let mut hash = [0u8; 32];
    hash.copy_from_slice(&Sha256::digest(unique_id("link").as_bytes()));
    hash
}

async fn insert(
    store: &dyn HealthData,
    hash: &[u8; 32],
    user: &str,
    now: i64,
    uses: u32,
    max_live: u32,
    settled_before: i64,
) -> LinkInsert {
    let call = store.insert_upload_link(hash, user, now, now + LIFETIME_MS, uses, max_live, settled_before);
    ok(FAMILY, "insert_upload_link", call.await)
}

async fn take(store: &dyn HealthData, hash: &[u8; 32], now: i64) -> Option<(String, i64)> {
    ok(FAMILY, "take_upload_link_use", store.take_upload_link_use(hash, now).await)
}

async fn live(store: &dyn HealthData, user: &str, now: i64) -> u64 {
    ok(FAMILY, "live_upload_links", store.live_upload_links(user, now).await)
}

async fn uses_are_taken_given_back_and_revoked(store: &dyn HealthData, now: i64) {
    let (user, other) = (unique_id("links-user"), unique_id("links-other"));
    let (twice, once, theirs) = (token(), token(), token());
    assert_eq!(
        insert(store, &twice, &user, now, 2, 5, now).await,
        LinkInsert::Stored,
        "store contract `{FAMILY}`: a first link refused"
    );
    assert_eq!(
        insert(store, &once, &user, now, 1, 5, now).await,
        LinkInsert::Stored,
        "store contract `{FAMILY}`: a second link refused"
    );
    assert_eq!(
        insert(store, &theirs, &other, now, 1, 5, now).await,
        LinkInsert::Stored,
        "store contract `{FAMILY}`: another user's link refused"
    );
    let row = ok(FAMILY, "upload_link", store.upload_link(&twice).await);
    let expected = UploadLinkRow::new(user.clone(), now + LIFETIME_MS, 2, false);
    assert_eq!(row, Some(expected), "store contract `{FAMILY}`: upload_link reads back the link as stored");
    assert_eq!(live(store, &user, now).await, 2, "store contract `{FAMILY}`: live_upload_links of two new links");

    let user_with = |left: i64| Some((user.clone(), left));
    assert_eq!(take(store, &twice, now).await, user_with(1), "store contract `{FAMILY}`: the first use of two");
    assert_eq!(take(store, &twice, now).await, user_with(0), "store contract `{FAMILY}`: the second use of two");
    assert_eq!(take(store, &twice, now).await, None, "store contract `{FAMILY}`: a use taken of a used-up link");
    assert_eq!(live(store, &user, now).await, 1, "store contract `{FAMILY}`: a used-up link still counted live");
    ok(FAMILY, "give_back_upload_link_use", store.give_back_upload_link_use(&twice).await);
    assert_eq!(
        take(store, &twice, now).await,
        user_with(0),
        "store contract `{FAMILY}`: a use given back is taken again"
    );

    let unknown = token();
    assert_eq!(take(store, &unknown, now).await, None, "store contract `{FAMILY}`: a use of an unknown link");
    assert_eq!(
        ok(FAMILY, "upload_link", store.upload_link(&unknown).await),
        None,
        "store contract `{FAMILY}`: upload_link found an unknown link"
    );
    assert!(
        !ok(FAMILY, "revoke_upload_link", store.revoke_upload_link(&unknown, now).await),
        "store contract `{FAMILY}`: an unknown link revoked"
    );
    ok(FAMILY, "give_back_upload_link_use", store.give_back_upload_link_use(&unknown).await);

    let expired = now + LIFETIME_MS + 1;
    assert_eq!(take(store, &once, expired).await, None, "store contract `{FAMILY}`: a use taken of an expired link");
    assert_eq!(live(store, &user, expired).await, 0, "store contract `{FAMILY}`: expired links counted live");

    assert!(
        ok(FAMILY, "revoke_upload_link", store.revoke_upload_link(&once, now).await),
        "store contract `{FAMILY}`: a working link could not be revoked"
    );
    assert!(
        !ok(FAMILY, "revoke_upload_link", store.revoke_upload_link(&once, now).await),
        "store contract `{FAMILY}`: a link revoked twice"
    );
    assert_eq!(take(store, &once, now).await, None, "store contract `{FAMILY}`: a use taken of a revoked link");
    let row = ok(FAMILY, "upload_link", store.upload_link(&once).await);
    assert!(row.is_some_and(|r| r.revoked), "store contract `{FAMILY}`: upload_link does not say the link was revoked");
    assert_eq!(live(store, &user, now).await, 0, "store contract `{FAMILY}`: used-up and revoked links counted live");
    assert_eq!(live(store, &other, now).await, 1, "store contract `{FAMILY}`: another user's link stopped counting");
    assert_eq!(
        take(store, &theirs, now).await,
        Some((other.clone(), 0)),
        "store contract `{FAMILY}`: another user's link stopped working"
    );
}

async fn a_user_holds_at_most_max_live_rows(store: &dyn HealthData, now: i64) {
    let (user, other) = (unique_id("links-bound"), unique_id("links-other"));
    let (first, second, refused) = (token(), token(), token());
    assert_eq!(
        insert(store, &first, &user, now, 1, 2, now).await,
        LinkInsert::Stored,
        "store contract `{FAMILY}`: a first link refused"
    );
    assert_eq!(
        insert(store, &second, &user, now, 1, 2, now).await,
        LinkInsert::Stored,
        "store contract `{FAMILY}`: a second link refused with max_live 2"
    );
    assert_eq!(
        insert(store, &refused, &user, now, 1, 2, now).await,
        LinkInsert::TooMany(2),
        "store contract `{FAMILY}`: a third link with max_live 2"
    );
    assert_eq!(
        ok(FAMILY, "upload_link", store.upload_link(&refused).await),
        None,
        "store contract `{FAMILY}`: a refused link was stored"
    );
    assert_eq!(
        insert(store, &token(), &other, now, 1, 2, now).await,
        LinkInsert::Stored,
        "store contract `{FAMILY}`: the bound is per user"
    );

    // A revoked link makes room.
    assert!(
        ok(FAMILY, "revoke_upload_link", store.revoke_upload_link(&second, now).await),
        "store contract `{FAMILY}`: revoke_upload_link"
    );
    let third = token();
    assert_eq!(
        insert(store, &third, &user, now, 1, 2, now).await,
        LinkInsert::Stored,
        "store contract `{FAMILY}`: a revoked link still counts against the bound"
    );

    // A used-up link whose upload may be in progress (its last use after `settled_before`) is
    // kept, and counts; once settled it makes room.
    assert_eq!(
        take(store, &first, now).await,
        Some((user.clone(), 0)),
        "store contract `{FAMILY}`: the single use of a link"
    );
    let fourth = token();
    let recent = insert(store, &fourth, &user, now, 1, 2, now - 60_000).await;
    assert_eq!(
        recent,
        LinkInsert::TooMany(1),
        "store contract `{FAMILY}`: a link made while a used-up one may still be uploading"
    );
    ok(FAMILY, "give_back_upload_link_use", store.give_back_upload_link_use(&first).await);
    assert_eq!(
        take(store, &first, now).await,
        Some((user.clone(), 0)),
        "store contract `{FAMILY}`: a used-up link in progress was not kept"
    );
    assert_eq!(
        insert(store, &fourth, &user, now, 1, 2, now + 1).await,
        LinkInsert::Stored,
        "store contract `{FAMILY}`: a settled used-up link still counts against the bound"
    );
    assert_eq!(
        ok(FAMILY, "upload_link", store.upload_link(&first).await),
        None,
        "store contract `{FAMILY}`: a user keeps more than max_live rows"
    );

    assert_eq!(
        ok(FAMILY, "revoke_upload_links", store.revoke_upload_links(&user, now).await),
        2,
        "store contract `{FAMILY}`: revoke_upload_links counts the links that worked"
    );
    assert_eq!(live(store, &user, now).await, 0, "store contract `{FAMILY}`: links counted live after revoking all");
    assert_eq!(take(store, &third, now).await, None, "store contract `{FAMILY}`: a use taken after revoking all");
    assert_eq!(
        ok(FAMILY, "revoke_upload_links", store.revoke_upload_links(&user, now).await),
        0,
        "store contract `{FAMILY}`: revoke_upload_links revoked a link twice"
    );
    assert_eq!(
        live(store, &other, now).await,
        1,
        "store contract `{FAMILY}`: revoking all of one user's links revoked another's"
    );
}
