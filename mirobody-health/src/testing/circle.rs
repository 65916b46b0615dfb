//! The `circle` family of the store contract suite.

use crate::records::{CircleInvite, CircleOverview};
use crate::store::HealthData;

use super::support::{ok, unique_id};

const FAMILY: &str = "circle";

/// The care circle: invitations by user id and by email (when `upsert_user` set the email),
/// accepted with or without a nickname, declined by the invitee and withdrawn by the owner, and by
/// nobody else (someone else's invitation is "not found"); the overview both ways.
///
/// Panics, naming the family and the promise, at the first one the store breaks.
pub async fn circle(store: &dyn HealthData) {
    invitations_reach_their_invitee(store).await;
    only_the_invitee_accepts(store).await;
    declined_and_withdrawn_by_the_right_people(store).await;
}

async fn overview(store: &dyn HealthData, user: &str) -> CircleOverview {
    ok(FAMILY, "circle", store.circle(user).await)
}

fn find(invites: &[CircleInvite], id: i64) -> Option<&CircleInvite> {
    invites.iter().find(|invite| invite.id == id)
}

async fn invitations_reach_their_invitee(store: &dyn HealthData) {
    let (owner, invitee, by_mail) =
        (unique_id("circle-owner"), unique_id("circle-invitee"), unique_id("circle-bymail"));
    let email = format!("{by_mail}@example.test");
    ok(FAMILY, "upsert_user", store.upsert_user(&by_mail, Some("Bob"), Some(&email)).await);

    let by_id = ok(FAMILY, "invite_to_circle", store.invite_to_circle(&owner, &invitee, Some("Al")).await);
    let again = ok(FAMILY, "invite_to_circle", store.invite_to_circle(&owner, &invitee, Some("Alice")).await);
    assert_eq!(again, by_id, "store contract `{FAMILY}`: inviting the same person again keeps one invitation");
    let sent = overview(store, &owner).await.invites_sent;
    let ours: Vec<&CircleInvite> = sent.iter().filter(|i| i.invitee == invitee).collect();
    assert_eq!(ours.len(), 1, "store contract `{FAMILY}`: the owner's invitations sent: {sent:?}");
    assert_eq!(
        ours[0].nickname.as_deref(),
        Some("Alice"),
        "store contract `{FAMILY}`: inviting again replaces the nickname"
    );
    let received = overview(store, &invitee).await.invites_received;
    let invite = find(&received, by_id).unwrap_or_else(|| {
        panic!("store contract `{FAMILY}`: the invitee does not see an invitation by user id: {received:?}")
    });
    assert_eq!(
        (invite.owner.as_str(), invite.nickname.as_deref()),
        (owner.as_str(), Some("Alice")),
        "store contract `{FAMILY}`: the invitation the invitee sees"
    );

    let by_email = ok(FAMILY, "invite_to_circle", store.invite_to_circle(&owner, &email, None).await);
    let received = overview(store, &by_mail).await.invites_received;
    assert!(
        find(&received, by_email).is_some(),
        "store contract `{FAMILY}`: an invitation by email does not reach the user with that email: {received:?}"
    );
    let strangers = overview(store, &unique_id("circle-stranger")).await;
    assert_eq!(
        strangers,
        CircleOverview::default(),
        "store contract `{FAMILY}`: a stranger's circle holds someone else's invitations"
    );
}

async fn only_the_invitee_accepts(store: &dyn HealthData) {
    let (owner, invitee, stranger) =
        (unique_id("circle-owner"), unique_id("circle-invitee"), unique_id("circle-stranger"));
    let email = format!("{owner}@example.test");
    ok(FAMILY, "upsert_user", store.upsert_user(&owner, Some("Ann"), Some(&email)).await);
    let id = ok(FAMILY, "invite_to_circle", store.invite_to_circle(&owner, &invitee, Some("Ann")).await);

    for (who, name) in [(&stranger, "a stranger"), (&owner, "the owner")] {
        let accepted = ok(FAMILY, "accept_invite", store.accept_invite(who, id, None).await);
        assert_eq!(
            accepted, None,
            "store contract `{FAMILY}`: {name} accepted an invitation addressed to someone else"
        );
    }
    assert!(
        !ok(FAMILY, "can_read_health", store.can_read_health(&stranger, &owner).await),
        "store contract `{FAMILY}`: a stranger reads the owner's data after a refused accept"
    );
    let accepted = ok(FAMILY, "accept_invite", store.accept_invite(&invitee, id, Some("Mum")).await);
    assert_eq!(
        accepted.as_deref(),
        Some(owner.as_str()),
        "store contract `{FAMILY}`: accepting answers the owner's id"
    );
    assert!(
        ok(FAMILY, "can_read_health", store.can_read_health(&invitee, &owner).await),
        "store contract `{FAMILY}`: an accepted invitation shares the owner's data"
    );
    assert!(
        !ok(FAMILY, "can_read_health", store.can_read_health(&owner, &invitee).await),
        "store contract `{FAMILY}`: accepting shared the invitee's data with the owner"
    );
    let sharers = ok(FAMILY, "health_sharers", store.health_sharers(&invitee).await);
    let member = sharers.iter().find(|m| m.user_id == owner).unwrap_or_else(|| {
        panic!("store contract `{FAMILY}`: the owner is not among the invitee's sharers: {sharers:?}")
    });
    assert_eq!(
        member.nickname.as_deref(),
        Some("Mum"),
        "store contract `{FAMILY}`: the nickname the invitee chose when accepting"
    );
    assert_eq!(
        member.email.as_deref(),
        Some(email.as_str()),
        "store contract `{FAMILY}`: a sharer's email, as upsert_user set it"
    );
    let twice = ok(FAMILY, "accept_invite", store.accept_invite(&invitee, id, None).await);
    assert_eq!(twice, None, "store contract `{FAMILY}`: an invitation is accepted once");

    let owners = overview(store, &owner).await;
    assert!(
        find(&owners.invites_sent, id).is_none(),
        "store contract `{FAMILY}`: an accepted invitation still waits: {owners:?}"
    );
    assert!(
        owners.my_readers.iter().any(|m| m.user_id == invitee),
        "store contract `{FAMILY}`: the owner's readers lack the invitee: {owners:?}"
    );
    let invitees = overview(store, &invitee).await;
    assert!(
        invitees.shared_with_me.iter().any(|m| m.user_id == owner),
        "store contract `{FAMILY}`: the invitee's circle lacks the owner: {invitees:?}"
    );
    assert!(
        invitees.invites_received.is_empty(),
        "store contract `{FAMILY}`: an accepted invitation is still received: {invitees:?}"
    );

    // Without a nickname of their own, the invitee knows the owner as the owner suggested.
    let (second, reader) = (unique_id("circle-owner"), unique_id("circle-reader"));
    let id = ok(FAMILY, "invite_to_circle", store.invite_to_circle(&second, &reader, Some("Suggested")).await);
    ok(FAMILY, "accept_invite", store.accept_invite(&reader, id, None).await);
    let sharers = ok(FAMILY, "health_sharers", store.health_sharers(&reader).await);
    let names: Vec<Option<&str>> = sharers.iter().map(|m| m.nickname.as_deref()).collect();
    assert_eq!(names, [Some("Suggested")], "store contract `{FAMILY}`: accepted without a nickname: {sharers:?}");

    // Either side ends it; then there is nothing to end.
    assert!(
        ok(FAMILY, "leave_circle", store.leave_circle(&invitee, &owner).await),
        "store contract `{FAMILY}`: leave_circle found no share"
    );
    assert!(
        !ok(FAMILY, "leave_circle", store.leave_circle(&owner, &invitee).await),
        "store contract `{FAMILY}`: leave_circle ended a share twice"
    );
    let owners = overview(store, &owner).await;
    assert!(owners.my_readers.is_empty(), "store contract `{FAMILY}`: the owner's readers after leaving: {owners:?}");
}

async fn declined_and_withdrawn_by_the_right_people(store: &dyn HealthData) {
    let (owner, invitee, stranger) =
        (unique_id("circle-owner"), unique_id("circle-invitee"), unique_id("circle-stranger"));
    let email = format!("{invitee}@example.test");
    ok(FAMILY, "upsert_user", store.upsert_user(&invitee, None, Some(&email)).await);
    let by_id = ok(FAMILY, "invite_to_circle", store.invite_to_circle(&owner, &invitee, None).await);
    let by_email = ok(FAMILY, "invite_to_circle", store.invite_to_circle(&owner, &email, None).await);
    let withdrawn = ok(FAMILY, "invite_to_circle", store.invite_to_circle(&owner, &stranger, None).await);

    for id in [by_id, by_email, withdrawn] {
        let dropped = ok(FAMILY, "drop_invite", store.drop_invite(&unique_id("circle-other"), id).await);
        assert!(!dropped, "store contract `{FAMILY}`: someone else dropped invitation {id}");
    }
    let dropped = ok(FAMILY, "drop_invite", store.drop_invite(&stranger, by_id).await);
    assert!(!dropped, "store contract `{FAMILY}`: the invitee of one invitation dropped another's");
    let received = overview(store, &invitee).await.invites_received;
    assert!(
        find(&received, by_id).is_some() && find(&received, by_email).is_some(),
        "store contract `{FAMILY}`: invitations went when someone else tried to drop them: {received:?}"
    );

    for (id, how) in [(by_id, "by user id"), (by_email, "by email")] {
        assert!(
            ok(FAMILY, "drop_invite", store.drop_invite(&invitee, id).await),
            "store contract `{FAMILY}`: the invitee cannot decline an invitation {how}"
        );
        assert!(
            !ok(FAMILY, "drop_invite", store.drop_invite(&invitee, id).await),
            "store contract `{FAMILY}`: an invitation {how} declined twice"
        );
        let accepted = ok(FAMILY, "accept_invite", store.accept_invite(&invitee, id, None).await);
        assert_eq!(accepted, None, "store contract `{FAMILY}`: a declined invitation {how} was accepted");
    }
    assert!(
        ok(FAMILY, "drop_invite", store.drop_invite(&owner, withdrawn).await),
        "store contract `{FAMILY}`: the owner cannot withdraw their invitation"
    );
    assert!(
        overview(store, &stranger).await.invites_received.is_empty(),
        "store contract `{FAMILY}`: a withdrawn invitation is still received"
    );
    assert!(
        overview(store, &owner).await.invites_sent.is_empty(),
        "store contract `{FAMILY}`: invitations declined or withdrawn still wait"
    );
    assert!(
        !ok(FAMILY, "can_read_health", store.can_read_health(&invitee, &owner).await),
        "store contract `{FAMILY}`: a declined invitation shared data"
    );
}
