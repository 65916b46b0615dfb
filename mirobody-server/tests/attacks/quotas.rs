//! One account storing without end: care-circle invitations and memories stop at the person's
//! quota with a message saying so, racing requests included, and the honest user is served.

use serde_json::{Value, json};

use crate::common::{call, request, session};
use crate::harness::Server;

fn invite(server: &Server, bearer: &str, invitee: &str) -> (u16, Value) {
    let headers = [("Authorization", bearer), ("Content-Type", "application/json")];
    let body = json!({"invitee": invitee}).to_string();
    let (status, _, reply) = request(server.port, "POST", "/circle/invites", &headers, body.as_bytes());
    (status, serde_json::from_slice(&reply).unwrap_or(Value::Null))
}

#[test]
fn invitations_and_memories_stop_at_the_quota() {
    let mut server = Server::start(
        "attack-quotas",
        &[("MIROBODY_QUOTAS__MAX_INVITATIONS_PER_USER", "5"), ("MIROBODY_QUOTAS__MAX_MEMORIES_PER_USER", "3")],
    );
    let greedy = server.token_for("greedy");
    let bearer = format!("Bearer {greedy}");

    // Twenty invitations at once: five are made, the rest told why.
    let racers: Vec<_> = (0..20)
        .map(|i| {
            let (port, bearer) = (server.port, bearer.clone());
            std::thread::spawn(move || {
                let headers = [("Authorization", bearer.as_str()), ("Content-Type", "application/json")];
                let body = json!({"invitee": format!("person-{i}")}).to_string();
                let (status, _, reply) = request(port, "POST", "/circle/invites", &headers, body.as_bytes());
                (status, String::from_utf8_lossy(&reply).into_owned())
            })
        })
        .collect();
    let answers: Vec<(u16, String)> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    // Each is made, refused for the quota, or (under the per-caller turns) told to come back.
    for (status, reply) in &answers {
        assert!([201, 409, 429].contains(status), "{status}: {reply}");
        if *status == 409 {
            assert!(reply.contains("You have 5 invitations waiting for an answer"), "{reply}");
        }
    }
    let made = answers.iter().filter(|(status, _)| *status == 201).count();
    let admitted = answers.iter().filter(|(status, _)| *status != 429).count();
    assert_eq!(made, admitted.min(5), "{answers:#?}");
    // Then one at a time until refused: the quota, exactly.
    for i in made..5 {
        assert_eq!(invite(&server, &bearer, &format!("late-{i}")).0, 201);
    }
    let (status, refusal) = invite(&server, &bearer, "late-refused");
    assert_eq!(status, 409, "{refusal}");
    let (status, _, circle) = request(server.port, "GET", "/circle", &[("Authorization", &bearer)], b"");
    assert_eq!(status, 200);
    let sent = serde_json::from_slice::<Value>(&circle).unwrap()["invites_sent"].as_array().unwrap().clone();
    assert_eq!(sent.len(), 5, "the stored invitations");
    // One withdrawn makes room for one.
    let id = sent[0]["id"].as_i64().unwrap();
    let (status, _, _) =
        request(server.port, "DELETE", &format!("/circle/invites/{id}"), &[("Authorization", &bearer)], b"");
    assert_eq!(status, 200);
    assert_eq!(invite(&server, &bearer, "someone-else").0, 201);
    assert_eq!(invite(&server, &bearer, "one-too-many").0, 409);

    // Memories: three kept, the fourth a tool error saying why.
    let sid = session(server.port, &greedy);
    for i in 0..3 {
        let reply = call(server.port, &greedy, &sid, 10 + i, "remember", json!({"text": format!("note {i}")})).unwrap();
        assert_ne!(reply["result"]["isError"], true, "{reply}");
    }
    let reply = call(server.port, &greedy, &sid, 20, "remember", json!({"text": "one more"})).unwrap();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("You have 3 memories, the most this server keeps per person"), "{reply}");

    // Another person's quota is their own.
    server.assert_serves_honest_user();
}
