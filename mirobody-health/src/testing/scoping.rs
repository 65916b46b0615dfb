//! The `scoping` family of the store contract suite.

use crate::FileRecord;
use crate::import::import_fhir;
use crate::store::{HealthData, RecordStore};

use super::support::{batch, condition, observation, ok, unique_id};

const FAMILY: &str = "scoping";
/// The code of the subject's glucose values.
const CODE: &str = "2339-0";

/// Scoping: whose data a reader reads. A subject's observations, indicators, series, latest values
/// and records reach a reader only when it is the subject or the subject shares with them (else
/// `None`, never an empty answer); files reach only their owner, shared or not; and a share ended
/// by unsharing or leaving the circle holds at once.
///
/// Panics, naming the family and the promise, at the first one the store breaks.
pub async fn scoping(store: &dyn HealthData) {
    let owner = unique_id("scoping-owner");
    let reader = unique_id("scoping-reader");
    let stranger = unique_id("scoping-stranger");
    let file_key = seed(store, &owner).await;
    // The reader has data of their own, which the owner never reads: sharing is one way.
    let reader_data = [observation("r1", CODE, 7.0, "mmol/L", "2026-01-05T08:00:00Z")];
    ok(FAMILY, "add_observations", store.add_observations(&reader, &reader_data).await);

    expect_allowed(store, &owner, &owner, "the owner reading their own data").await;
    expect_refused(store, &reader, &owner, "a reader the owner does not share with").await;
    expect_refused(store, &stranger, &owner, "a stranger").await;
    expect_only_owner_reads_file(store, &owner, &file_key, &[&reader, &stranger]).await;

    ok(FAMILY, "share_health", store.share_health(&owner, &reader, Some("Mum")).await);
    expect_allowed(store, &reader, &owner, "a reader the owner shares with").await;
    expect_refused(store, &owner, &reader, "the owner, whom the reader does not share with (sharing is one way)").await;
    expect_refused(store, &stranger, &owner, "a stranger, while the owner shares with someone else").await;
    expect_only_owner_reads_file(store, &owner, &file_key, &[&reader]).await;

    let was_sharing = ok(FAMILY, "unshare_health", store.unshare_health(&owner, &reader).await);
    assert!(was_sharing, "store contract `{FAMILY}`: unshare_health said the owner was not sharing");
    expect_refused(store, &reader, &owner, "a reader right after the owner unshared").await;
    let again = ok(FAMILY, "unshare_health", store.unshare_health(&owner, &reader).await);
    assert!(!again, "store contract `{FAMILY}`: unshare_health said a share ended before was still there");

    // Leaving the circle ends the share from either side.
    for (leaver, other, who) in [(&reader, &owner, "the reader"), (&owner, &reader, "the owner")] {
        ok(FAMILY, "share_health", store.share_health(&owner, &reader, None).await);
        expect_allowed(store, &reader, &owner, "a reader shared with again").await;
        let left = ok(FAMILY, "leave_circle", store.leave_circle(leaver, other).await);
        assert!(left, "store contract `{FAMILY}`: leave_circle by {who} found no share");
        expect_refused(store, &reader, &owner, &format!("a reader right after {who} left the circle")).await;
    }

    expect_empty_is_not_refused(store).await;
}

/// Stores the owner's observations, a condition and a file: the file's key.
async fn seed(store: &dyn HealthData, owner: &str) -> String {
    let resources = [
        observation("o1", CODE, 5.4, "mmol/L", "2026-01-01T08:00:00Z"),
        observation("o2", CODE, 6.1, "mmol/L", "2026-01-02T08:00:00Z"),
    ];
    let added = ok(FAMILY, "add_observations", store.add_observations(owner, &resources).await);
    assert_eq!(
        added.len(),
        2,
        "store contract `{FAMILY}`: add_observations stored {} of 2 new observations",
        added.len()
    );
    let imported = import_fhir(store as &dyn RecordStore, owner, &batch(vec![condition("c1", "Asthma")])).await;
    assert_eq!(imported.summary.created, 1, "store contract `{FAMILY}`: importing a condition: {}", imported.body);
    let file_key = unique_id("scoping-file");
    let file = FileRecord {
        file_key: file_key.clone(),
        filename: "lab.pdf".into(),
        mime_type: "application/pdf".into(),
        size: 10,
        uploaded_at: "2026-01-03T00:00:00Z".into(),
        text_key: None,
        text_state: Default::default(),
    };
    ok(FAMILY, "add_file", store.add_file(owner, &file).await);
    file_key
}

/// Every read of `reader` on `subject`'s data answers, with the data [`seed`] stored.
async fn expect_allowed(store: &dyn HealthData, reader: &str, subject: &str, who: &str) {
    let fail = |what: &str| -> ! { panic!("store contract `{FAMILY}`: {who} could not read {what}") };
    assert!(
        ok(FAMILY, "can_read_health", store.can_read_health(reader, subject).await),
        "store contract `{FAMILY}`: can_read_health is false for {who}"
    );
    let page = ok(FAMILY, "observations", store.observations(reader, subject, 10).await)
        .unwrap_or_else(|| fail("the observations"));
    assert_eq!((page.total, page.observations.len()), (2, 2), "store contract `{FAMILY}`: the observations {who} read");
    let indicators =
        ok(FAMILY, "indicators", store.indicators(reader, subject).await).unwrap_or_else(|| fail("the indicators"));
    assert!(
        indicators.iter().any(|i| i.code == CODE && i.count == 2),
        "store contract `{FAMILY}`: the indicators {who} read: {indicators:?}"
    );
    let series = ok(FAMILY, "series", store.series(reader, subject, CODE, 0, i64::MAX, 10).await)
        .unwrap_or_else(|| fail("a series"));
    assert_eq!(series.points.len(), 2, "store contract `{FAMILY}`: the series {who} read: {series:?}");
    let latest = ok(FAMILY, "latest_values", store.latest_values(reader, subject).await)
        .unwrap_or_else(|| fail("the latest values"));
    assert!(
        latest.iter().any(|p| p.code == CODE && p.value == Some(6.1)),
        "store contract `{FAMILY}`: the latest values {who} read: {latest:?}"
    );
    let records = ok(FAMILY, "health_records", store.health_records(reader, subject).await)
        .unwrap_or_else(|| fail("the records"));
    assert!(
        records.iter().any(|r| r.display == "Asthma"),
        "store contract `{FAMILY}`: the records {who} read: {records:?}"
    );
}

/// Every read of `reader` on `subject`'s data is `None`: not an empty answer, not the data.
async fn expect_refused(store: &dyn HealthData, reader: &str, subject: &str, who: &str) {
    let leaked = |what: &str, found: &dyn std::fmt::Debug| -> String {
        format!("store contract `{FAMILY}`: {who} read another person's {what} (expected None): {found:?}")
    };
    assert!(
        !ok(FAMILY, "can_read_health", store.can_read_health(reader, subject).await),
        "store contract `{FAMILY}`: can_read_health is true for {who}"
    );
    let page = ok(FAMILY, "observations", store.observations(reader, subject, 10).await);
    assert!(page.is_none(), "{}", leaked("observations", &page));
    let indicators = ok(FAMILY, "indicators", store.indicators(reader, subject).await);
    assert!(indicators.is_none(), "{}", leaked("indicators", &indicators));
    let series = ok(FAMILY, "series", store.series(reader, subject, CODE, 0, i64::MAX, 10).await);
    assert!(series.is_none(), "{}", leaked("series", &series));
    let latest = ok(FAMILY, "latest_values", store.latest_values(reader, subject).await);
    assert!(latest.is_none(), "{}", leaked("latest values", &latest));
    let records = ok(FAMILY, "health_records", store.health_records(reader, subject).await);
    assert!(records.is_none(), "{}", leaked("records", &records));
}

/// The file is its owner's alone: listed and found for them, for nobody else.
async fn expect_only_owner_reads_file(store: &dyn HealthData, owner: &str, file_key: &str, others: &[&str]) {
    let own = ok(FAMILY, "files", store.files(owner).await);
    assert!(
        own.iter().any(|f| f.file_key == file_key),
        "store contract `{FAMILY}`: the owner's files lack their file: {own:?}"
    );
    assert!(
        ok(FAMILY, "file", store.file(owner, file_key).await).is_some(),
        "store contract `{FAMILY}`: the owner cannot find their file"
    );
    for other in others {
        let listed = ok(FAMILY, "files", store.files(other).await);
        assert!(
            listed.iter().all(|f| f.file_key != file_key),
            "store contract `{FAMILY}`: another user's files list the owner's file: {listed:?}"
        );
        let found = ok(FAMILY, "file", store.file(other, file_key).await);
        assert!(
            found.is_none(),
            "store contract `{FAMILY}`: another user found the owner's file (files are never shared): {found:?}"
        );
    }
}

/// No data is an empty answer for whoever may read it, and still `None` for anyone else.
async fn expect_empty_is_not_refused(store: &dyn HealthData) {
    let (empty, reader, stranger) =
        (unique_id("scoping-empty"), unique_id("scoping-reader"), unique_id("scoping-stranger"));
    ok(FAMILY, "share_health", store.share_health(&empty, &reader, None).await);
    for (who, name) in [(&empty, "the subject"), (&reader, "a reader shared with")] {
        let none = |what: &str| -> ! {
            panic!(
                "store contract `{FAMILY}`: {name} got None for {what} of someone with no data, instead of an empty answer"
            )
        };
        let page = ok(FAMILY, "observations", store.observations(who, &empty, 10).await)
            .unwrap_or_else(|| none("the observations"));
        assert_eq!((page.total, page.observations.len()), (0, 0), "store contract `{FAMILY}`: observations of no one");
        let indicators =
            ok(FAMILY, "indicators", store.indicators(who, &empty).await).unwrap_or_else(|| none("the indicators"));
        assert!(indicators.is_empty(), "store contract `{FAMILY}`: indicators of no data: {indicators:?}");
        let series = ok(FAMILY, "series", store.series(who, &empty, CODE, 0, i64::MAX, 10).await)
            .unwrap_or_else(|| none("a series"));
        assert!(
            series.points.is_empty() && !series.truncated,
            "store contract `{FAMILY}`: a series of no data: {series:?}"
        );
        let latest = ok(FAMILY, "latest_values", store.latest_values(who, &empty).await)
            .unwrap_or_else(|| none("the latest values"));
        assert!(latest.is_empty(), "store contract `{FAMILY}`: latest values of no data: {latest:?}");
        let records = ok(FAMILY, "health_records", store.health_records(who, &empty).await)
            .unwrap_or_else(|| none("the records"));
        assert!(records.is_empty(), "store contract `{FAMILY}`: records of no data: {records:?}");
    }
    expect_refused(store, &stranger, &empty, "a stranger reading someone with no data").await;
}
