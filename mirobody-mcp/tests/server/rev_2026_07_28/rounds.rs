//! Multi-round-trip calls through the one `ctx.request` API: a question becomes an
//! `input_required` result and the retry resumes, a client without the capability is never
//! asked, a state tampered with or from another caller or tool is refused, questions in turn take
//! a round each, -32021 for a capability the client did not declare, and `ask_user` on both
//! revisions.

use super::*;

#[tokio::test]
async fn a_question_becomes_input_required_and_the_retry_resumes() {
    let server = TestServer::new();
    let client = MetaClient::of(&server).with_capabilities(json!({"elicitation": {}}));
    let first = client.call_tool("elicit", json!({})).await;
    assert_eq!(first.status, StatusCode::OK);
    let result = first.result();
    assert_eq!(result["resultType"], "input_required", "{result}");
    let question = &result["inputRequests"]["elicitation-1"];
    assert_eq!(question["method"], "elicitation/create", "{result}");
    assert_eq!(question["params"]["message"], "What is your name?");
    let state = result["requestState"].as_str().expect("a request state").to_owned();

    let retry = client
        .call(
            "tools/call",
            json!({"name": "elicit", "arguments": {}, "requestState": state,
                   "inputResponses": {"elicitation-1": {"action": "accept", "content": {"name": "Ada"}}}}),
        )
        .await;
    let result = assert_complete(&retry);
    assert_eq!(result["structuredContent"]["answer"]["content"]["name"], "Ada");
}

#[tokio::test]
async fn a_client_without_the_capability_is_never_asked() {
    let server = TestServer::new();
    let reply = MetaClient::of(&server).call_tool("elicit", json!({})).await;
    assert_eq!(assert_complete(&reply)["structuredContent"]["unsupported"], "elicitation/create");
}

#[tokio::test]
async fn a_tampered_or_foreign_state_is_refused() {
    let server = TestServer::new();
    let alice = MetaClient::of(&server)
        .with_capabilities(json!({"elicitation": {}}))
        .acting_as(UserInfo::authenticated("alice"));
    let first = alice.call_tool("elicit", json!({})).await;
    let state = first.result()["requestState"].as_str().unwrap().to_owned();
    let answers = json!({"elicitation-1": {"action": "accept", "content": {"name": "Ada"}}});
    let retry = |client: &MetaClient, state: String, name: &'static str| {
        let params = json!({"name": name, "arguments": {}, "requestState": state, "inputResponses": answers.clone()});
        client.request("tools/call", params)
    };
    let tampered = json_reply(alice.send(retry(&alice, format!("{state}-TAMPERED"), "elicit")).await).await;
    assert_eq!((tampered.status, tampered.error_code()), (StatusCode::BAD_REQUEST, -32602), "{}", tampered.body);
    // The same state from another caller, or on another tool, is refused too.
    let bob =
        MetaClient::of(&server).with_capabilities(json!({"elicitation": {}})).acting_as(UserInfo::authenticated("bob"));
    assert_eq!(json_reply(bob.send(retry(&bob, state.clone(), "elicit")).await).await.error_code(), -32602);
    assert_eq!(json_reply(alice.send(retry(&alice, state.clone(), "echo")).await).await.error_code(), -32602);
    // The genuine retry still works.
    let genuine = json_reply(alice.send(retry(&alice, state, "elicit")).await).await;
    assert_complete(&genuine);
}

#[tokio::test]
async fn questions_in_turn_take_a_round_each_and_earlier_answers_ride_in_the_state() {
    let client = MetaClient::new(extra_router()).with_capabilities(json!({"elicitation": {}}));
    let call = |extra: Value| {
        let mut params = json!({"name": "two_steps", "arguments": {}});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        client.call("tools/call", params)
    };
    let before = runs().load(Ordering::SeqCst);
    let round1 = call(json!({})).await;
    let r1 = round1.result();
    assert!(r1["inputRequests"].get("step1").is_some(), "{r1}");
    let state1 = r1["requestState"].as_str().unwrap().to_owned();

    let round2 = call(
        json!({"requestState": state1, "inputResponses": {"step1": {"action": "accept", "content": {"name": "Ada"}}}}),
    )
    .await;
    let r2 = round2.result();
    assert_eq!(r2["resultType"], "input_required");
    assert!(r2["inputRequests"].get("step2").is_some() && r2["inputRequests"].get("step1").is_none(), "{r2}");
    let state2 = r2["requestState"].as_str().unwrap().to_owned();
    assert_ne!(state2, state1);

    // Only step2 is answered now: step1's answer comes from the state.
    let round3 = call(json!({"requestState": state2,
        "inputResponses": {"step2": {"action": "accept", "content": {"color": "blue"}}}}))
    .await;
    assert_eq!(assert_complete(&round3)["structuredContent"], json!({"name": "Ada", "color": "blue"}));
    assert!(runs().load(Ordering::SeqCst) - before >= 3, "each round runs the handler from the start");

    // An answer of the wrong shape is invalid params.
    let wrong = call(json!({"inputResponses": {"step1": 12345}})).await;
    assert_eq!(wrong.error_code(), -32602);
    let null = call(json!({"inputResponses": null})).await;
    assert_eq!(null.error_code(), -32602);
}

#[tokio::test]
async fn a_tool_that_needs_an_undeclared_capability_gets_32021() {
    let client = MetaClient::new(extra_router());
    let reply = client.call_tool("summarize", json!({})).await;
    assert_eq!((reply.status, reply.error_code()), (StatusCode::BAD_REQUEST, -32021), "{}", reply.body);
    assert_eq!(reply.body["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}));
    let able = MetaClient::new(extra_router()).with_capabilities(json!({"sampling": {}}));
    let reply = able.call_tool("summarize", json!({})).await;
    assert_eq!(reply.result()["inputRequests"]["sampling-1"]["method"], "sampling/createMessage");
}

#[tokio::test]
async fn ask_user_works_on_both_revisions() {
    let question = json!({"question": "When do you exercise?", "options": ["Morning", "Evening"]});
    let reply = json!({"action": "accept", "content": {"choice": "Evening"}});

    // 2026-07-28: the question comes back as input_required, the retry carries the answer.
    let client = MetaClient::new(extra_router()).with_capabilities(json!({"elicitation": {}}));
    let first = client.call_tool("ask_user", question.clone()).await;
    let result = first.result();
    assert_eq!(result["inputRequests"]["elicitation-1"]["params"]["message"], "When do you exercise?", "{result}");
    let state = result["requestState"].clone();
    let params = json!({"name": "ask_user", "arguments": question, "requestState": state,
                        "inputResponses": {"elicitation-1": reply}});
    let answered = client.call("tools/call", params).await;
    assert_eq!(assert_complete(&answered)["structuredContent"]["answer"], json!({"selected": ["Evening"]}));

    // 2025-11-25: the same tool asks on the call's SSE stream, answered by a second POST.
    let http = extra_http();
    let router = http.router();
    let post = |body: Value, session: Option<String>| {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri("/")
            .header(header::HOST, "localhost")
            .header(header::ACCEPT, support::ACCEPT_BOTH)
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(session) = session {
            builder = builder.header("mcp-session-id", session);
        }
        router.clone().oneshot(builder.body(Body::from(body.to_string())).unwrap())
    };
    let init =
        post(support::rpc(1, "initialize", support::init_params("2025-11-25", json!({"elicitation": {}}))), None);
    let init = within("initialize", init).await.unwrap();
    let session = support::header_str(init.headers(), "mcp-session-id").to_owned();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "ask_user", "arguments": {"question": "When do you exercise?", "options": ["Morning", "Evening"]}}});
    let mut sse = Sse::new(within("the call", post(call, Some(session.clone()))).await.unwrap());
    let asked = sse.next_message().await;
    assert_eq!(asked["method"], "elicitation/create");
    let answer =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"choice": "Evening"}}});
    assert_eq!(within("the answer", post(answer, Some(session))).await.unwrap().status(), StatusCode::ACCEPTED);
    let result = sse.next_message().await;
    assert_eq!(result["result"]["structuredContent"]["answer"], json!({"selected": ["Evening"]}));
}
