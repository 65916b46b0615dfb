//! The health tools declare an MCP `outputSchema`, and every structured result they give keeps
//! to it: each tool is called over MCP in the shapes its answer takes (values with a source's
//! range and with the catalog's, converted, nothing found, a member's data, an empty profile, a
//! deletion declined and confirmed), on Synthea's and HL7's data, and each `structuredContent`
//! is checked against the schema `tools/list` declared, with the `jsonschema` crate.

use mirobody_core::UserInfo;
use mirobody_health::CircleStore;
use serde_json::{Value, json};

use crate::ranges::import_fixtures;
use crate::support::{Client, Env, Sse, TIMEOUT, rpc};

/// The tools that declare what their structured results hold.
const DECLARING: [&str; 8] = [
    "fetch_health_data",
    "fetch_health_trends",
    "record_health_data",
    "get_user_health_profile",
    "search_health_indicators",
    "family_health",
    "list_data_access",
    "delete_health_data",
];

/// Each declaring tool's `outputSchema`, from `tools/list`, compiled.
async fn declared(client: &Client) -> Vec<(String, Value, jsonschema::Validator)> {
    let listed = client.call("tools/list", json!({})).await.result().clone();
    let tools = listed["tools"].as_array().unwrap();
    DECLARING
        .iter()
        .map(|name| {
            let tool = tools.iter().find(|t| t["name"] == *name).unwrap_or_else(|| panic!("{name} is listed"));
            let schema = tool.get("outputSchema").unwrap_or_else(|| panic!("{name} declares an outputSchema")).clone();
            assert_eq!(schema["type"], "object", "{name}");
            let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{name}'s schema: {e}"));
            ((*name).to_owned(), schema, validator)
        })
        .collect()
}

/// Checks `answer` of `tool` against its declared schema, naming every difference.
fn check(schemas: &[(String, Value, jsonschema::Validator)], tool: &str, answer: &Value) {
    let (_, _, validator) = schemas.iter().find(|(name, ..)| name == tool).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(answer).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{tool}'s answer breaks its outputSchema: {errors:?}\n{answer}");
}

/// The structured content of a `delete_health_data` call from a client that can be asked,
/// answered with `answer`.
async fn delete_answering(env: &Env, user: &str, arguments: Value, answer: Value) -> Value {
    let mut client = env.client().as_user(UserInfo::authenticated(user));
    client.initialize(json!({"elicitation": {}})).await;
    let call = rpc(7, "tools/call", json!({"name": "delete_health_data", "arguments": arguments}));
    let mut stream = Sse::new(client.post(&call).await);
    let question = stream.next_message().await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let reply = json!({"jsonrpc": "2.0", "id": question["id"], "result": answer});
    assert_eq!(client.post(&reply).await.status(), http::StatusCode::ACCEPTED);
    let response = stream.next_message().await;
    assert_eq!(response["result"]["isError"], false, "{response}");
    response["result"]["structuredContent"].clone()
}

#[tokio::test]
async fn every_structured_result_of_a_health_tool_keeps_to_its_declared_schema() {
    let env = Env::sqlite().await;
    import_fixtures(&env, "ramon").await;
    env.backends.sql().share_health("ramon", "nina", Some("Dad")).await.unwrap();
    let (ramon, nina) = (env.user("ramon").await, env.user("nina").await);
    // Records values of his own; nina's profile stays empty.
    let omar = env.user("omar").await;
    let schemas = declared(&ramon).await;

    let calls: Vec<(&Client, &str, Value)> = vec![
        (&ramon, "fetch_health_data", json!({"indicators": ["glucose", "cholesterol", "hdl", "ldl"]})),
        (&ramon, "fetch_health_data", json!({"indicators": ["15074-8", "2093-3"], "unit": "mmol/L"})),
        (&ramon, "fetch_health_data", json!({"indicators": ["glucose", "weight"], "unit": "mg/dL"})),
        (&ramon, "fetch_health_data", json!({"indicators": ["weight"]})),
        (&nina, "fetch_health_data", json!({"indicators": ["cholesterol"], "member": "Dad"})),
        (&ramon, "fetch_health_trends", json!({"indicators": ["glucose", "cholesterol"], "interval": "day"})),
        (
            &ramon,
            "fetch_health_trends",
            json!({"indicators": ["glucose", "weight"], "interval": "month", "unit": "mg/dL"}),
        ),
        (&nina, "fetch_health_trends", json!({"indicators": ["cholesterol"], "interval": "week", "member": "Dad"})),
        (&nina, "fetch_health_trends", json!({"indicators": ["glucose"], "interval": "hour"})),
        (
            &omar,
            "record_health_data",
            json!({"values": [{"indicator": "glucose", "value": 5.4, "unit": "mmol/L", "time": "2026-01-15"},
                              {"indicator": "weight", "value": 61.5, "unit": "kg", "time": "2026-01-15T08:00:00Z"}]}),
        ),
        (
            &omar,
            "record_health_data",
            json!({"values": [{"indicator": "glucose", "value": 5.4, "unit": "mmol/L", "time": "2026-01-15"}]}),
        ),
        (&ramon, "get_user_health_profile", json!({})),
        (&nina, "get_user_health_profile", json!({})),
        (&nina, "get_user_health_profile", json!({"member": "Dad"})),
        (&ramon, "search_health_indicators", json!({"keywords": ["glucose", "cholesterol", "血糖", "nothing"]})),
        (&nina, "search_health_indicators", json!({"keywords": ["glucose"]})),
        (&ramon, "family_health", json!({})),
        (&nina, "family_health", json!({"member": "Dad", "count": 3})),
        (&nina, "family_health", json!({})),
        (&nina, "list_data_access", json!({})),
    ];
    let mut checked: Vec<&str> = Vec::new();
    for (client, tool, arguments) in &calls {
        let reply = client.tool(tool, arguments.clone()).await;
        check(&schemas, tool, reply.ok());
        checked.push(tool);
    }
    // Ramon's list once nina's reads of his data are in it (the log is written off the call's path).
    let reads = tokio::time::timeout(TIMEOUT, async {
        loop {
            let listed = ramon.tool("list_data_access", json!({"count": 2})).await.ok().clone();
            if listed["reads"].as_array().is_some_and(|r| r.len() == 2) {
                return listed;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("nina's reads in ramon's list");
    assert!(reads["next_before"].is_i64(), "a full page names the next: {reads}");
    check(&schemas, "list_data_access", &reads);
    // A deletion declined, then one confirmed.
    let declined =
        delete_answering(&env, "ramon", json!({"kind": "value", "id": "Observation/o1"}), json!({"action": "decline"}))
            .await;
    assert_eq!(declined["deleted"], false);
    check(&schemas, "delete_health_data", &declined);
    let confirmed = json!({"action": "accept", "content": {"confirm": true}});
    let deleted = delete_answering(&env, "ramon", json!({"kind": "value", "id": "Observation/o1"}), confirmed).await;
    assert_eq!(deleted["deleted"], true, "{deleted}");
    check(&schemas, "delete_health_data", &deleted);
    checked.extend(["list_data_access", "delete_health_data"]);
    for tool in DECLARING {
        assert!(checked.contains(&tool), "{tool} was called and checked");
    }
}

/// The schemas say something: answers a client could not read are refused by them.
#[tokio::test]
async fn the_declared_schemas_refuse_answers_of_another_shape() {
    let env = Env::sqlite().await;
    import_fixtures(&env, "ramon").await;
    let ramon = env.user("ramon").await;
    let schemas = declared(&ramon).await;
    let valid = |tool: &str, answer: &Value| {
        let (_, _, validator) = schemas.iter().find(|(name, ..)| name == tool).unwrap();
        validator.is_valid(answer)
    };
    let answer = ramon.tool("fetch_health_data", json!({"indicators": ["15074-8"]})).await.ok().clone();
    assert!(valid("fetch_health_data", &answer), "{answer}");
    let name = answer["indicators"].as_object().unwrap().keys().next().unwrap().clone();
    let broken = [
        ("/data/0/flag", json!("very high")),
        ("/data/0/value", json!({"n": 6.3})),
        ("/reference_range/origin", json!("guess")),
        ("/count", json!(-1)),
    ];
    for (path, value) in broken {
        let mut wrong = answer.clone();
        *wrong["indicators"][&name].pointer_mut(path).unwrap_or_else(|| panic!("{path} in {answer}")) = value;
        assert!(!valid("fetch_health_data", &wrong), "{path} changed must break the schema");
    }
    let mut no_time = answer.clone();
    no_time["indicators"][&name]["data"][0].as_object_mut().unwrap().remove("time");
    assert!(!valid("fetch_health_data", &no_time));
    let profile = ramon.tool("get_user_health_profile", json!({})).await.ok().clone();
    assert!(valid("get_user_health_profile", &profile));
    let mut wrong = profile.clone();
    wrong.as_object_mut().unwrap().remove("latest");
    assert!(!valid("get_user_health_profile", &wrong));
    assert!(!valid("delete_health_data", &json!({"deleted": true})), "a deletion names what it deleted");
    assert!(!valid("search_health_indicators", &json!({"subject": "me", "indicators": [{"code": 1}]})));
    let trends =
        ramon.tool("fetch_health_trends", json!({"indicators": ["15074-8"], "interval": "day"})).await.ok().clone();
    assert!(valid("fetch_health_trends", &trends), "{trends}");
    let name = trends["indicators"].as_object().unwrap().keys().next().unwrap().clone();
    for (path, value) in
        [("/buckets/0/count", json!(0)), ("/buckets/0/mean", json!("high")), ("/summary/low", json!(-1))]
    {
        let mut wrong = trends.clone();
        *wrong["indicators"][&name].pointer_mut(path).unwrap_or_else(|| panic!("{path} in {trends}")) = value;
        assert!(!valid("fetch_health_trends", &wrong), "{path} changed must break the schema");
    }
    let recorded = json!({"recorded": 1, "already_recorded": 0, "source": "told by the user",
        "values": [{"id": "x", "indicator": "Glucose", "code": "15074-8", "value": 5.4, "time": "2026-01-15T00:00:00Z", "stored": "new"}]});
    assert!(valid("record_health_data", &recorded));
    let mut wrong = recorded.clone();
    wrong["values"][0]["stored"] = json!("maybe");
    assert!(!valid("record_health_data", &wrong), "stored is new or already recorded");
    let mut wrong = recorded.clone();
    wrong["source"] = json!({"file": "k"});
    assert!(!valid("record_health_data", &wrong), "a source is the user or a file_key");
}
