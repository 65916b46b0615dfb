//! `ToolSpec::check`: the names it accepts and the declarations it refuses (tool and parameter
//! names, duplicate and `user_id` parameters, enum values and defaults, verbatim input and
//! output schemas, a table and a schema together), each with its `SpecError`.

use super::*;

fn check(spec: ToolSpec) -> SpecError {
    spec.check().expect_err("the declaration should have been refused")
}

#[test]
fn valid_names_pass() {
    let longest = "x".repeat(64);
    for name in ["a", "_private", "get_weather", "get-weather", "A1", longest.as_str()] {
        ToolSpec::new(name.to_owned(), "d").check().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    ToolSpec::new("t", "d")
        .params([
            Param::optional("a.b", Type::String, ""),
            Param::optional("1st", Type::String, ""),
            Param::optional("x-y_z", Type::String, ""),
            Param::optional("p".repeat(64), Type::String, ""),
        ])
        .check()
        .unwrap();
}

#[test]
fn invalid_tool_names_are_refused() {
    for name in [
        String::new(),
        "x".repeat(65),
        "get weather".into(),
        "get.weather".into(),
        "1tool".into(),
        "tool/x".into(),
        "héllo".into(),
    ] {
        let err = check(ToolSpec::new(name.clone(), "d"));
        assert_eq!(err, SpecError::InvalidToolName(name.clone()));
        let message = err.to_string();
        assert!(message.contains(&format!("invalid tool name '{name}'")), "{message}");
        assert!(message.contains("1 to 64 of A-Z a-z 0-9 _ -, starting with a letter or _"), "{message}");
    }
}

#[test]
fn invalid_param_names_are_refused() {
    for name in [String::new(), "p".repeat(65), "has space".into(), "a/b".into(), "$x".into()] {
        let err = check(ToolSpec::new("t", "d").param(Param::optional(name.clone(), Type::String, "")));
        assert_eq!(err, SpecError::InvalidParamName { tool: "t".into(), param: name.clone() });
        assert!(err.to_string().contains(&format!("invalid parameter name '{name}'")), "{err}");
    }
}

#[test]
fn duplicate_param_is_refused() {
    let err = check(
        ToolSpec::new("t", "d")
            .params([Param::required("city", Type::String, ""), Param::optional("city", Type::Integer, "")]),
    );
    assert_eq!(err, SpecError::DuplicateParam { tool: "t".into(), param: "city".into() });
    assert_eq!(err.to_string(), "tool 't': parameter 'city' is declared twice");
}

fn assert_user_id_refusal(err: SpecError) {
    assert_eq!(err, SpecError::ReservedUserId { tool: "t".into() });
    let message = err.to_string();
    assert!(message.contains("'user_id'"), "{message}");
    assert!(message.contains("UserInfo"), "the message must say identity comes from UserInfo: {message}");
}

#[test]
fn user_id_param_is_refused() {
    assert_user_id_refusal(check(ToolSpec::new("t", "d").param(Param::required("user_id", Type::String, ""))));
}

#[test]
fn user_id_in_a_raw_schema_is_refused() {
    assert_user_id_refusal(check(ToolSpec::new("t", "d").raw_input_schema(json!({
        "type": "object",
        "properties": {"user_id": {"type": "integer"}, "q": {"type": "string"}}
    }))));
}

#[test]
fn default_of_the_wrong_type_is_refused() {
    let err = check(ToolSpec::new("t", "d").param(Param::optional("limit", Type::Integer, "").default("20")));
    assert_eq!(
        err,
        SpecError::BadParamValue {
            tool: "t".into(),
            param: "limit".into(),
            problem: "default \"20\" is not of type integer".into()
        }
    );
    assert_eq!(err.to_string(), "tool 't': parameter 'limit': default \"20\" is not of type integer");
}

#[test]
fn enum_value_of_the_wrong_type_is_refused() {
    let err =
        check(ToolSpec::new("t", "d").param(Param::optional("kind", Type::String, "").one_of([json!("a"), json!(1)])));
    let SpecError::BadParamValue { problem, .. } = &err else { panic!("{err:?}") };
    assert_eq!(problem, "allowed value 1 is not of type string");
    // For an array, the values constrain the elements.
    let err = check(
        ToolSpec::new("t", "d").param(Param::optional("ids", Type::Array, "").items(Type::Integer).one_of(["x"])),
    );
    assert!(err.to_string().contains("allowed value \"x\" is not of type integer"), "{err}");
}

#[test]
fn empty_enum_is_refused() {
    let err =
        check(ToolSpec::new("t", "d").param(Param::optional("kind", Type::String, "").one_of(Vec::<Value>::new())));
    assert!(err.to_string().contains("the list of allowed values is empty"), "{err}");
}

#[test]
fn default_outside_the_allowed_values_is_refused() {
    let err = check(
        ToolSpec::new("t", "d")
            .param(Param::optional("kind", Type::String, "").one_of(["fact", "episode"]).default("rumour")),
    );
    assert!(err.to_string().contains("default \"rumour\" is not one of the allowed values"), "{err}");
    let err = check(
        ToolSpec::new("t", "d")
            .param(Param::optional("tags", Type::Array, "").one_of(["a", "b"]).default(json!(["a", "c"]))),
    );
    assert!(err.to_string().contains("default \"c\" is not one of the allowed values"), "{err}");
    ToolSpec::new("t", "d")
        .param(Param::optional("tags", Type::Array, "").one_of(["a", "b"]).default(json!(["b", "a"])))
        .check()
        .unwrap();
}

/// A default the validator would accept as an argument must be accepted as a default.
#[test]
fn default_membership_compares_numbers_by_value() {
    ToolSpec::new("t", "d")
        .param(Param::optional("ratio", Type::Number, "").one_of([1.0, 2.0]).default(1))
        .check()
        .unwrap();
}

#[test]
fn raw_schema_that_is_not_an_object_schema_is_refused() {
    for schema in [json!({"type": "array"}), json!("object"), json!(true), json!({"properties": {}})] {
        let err = check(ToolSpec::new("t", "d").raw_input_schema(schema.clone()));
        assert!(matches!(err, SpecError::InvalidInputSchema { .. }), "{schema}: {err:?}");
        assert!(err.to_string().contains("the root must be {\"type\": \"object\", ...}"), "{err}");
    }
}

#[test]
fn raw_schema_that_does_not_compile_is_refused() {
    let err = check(ToolSpec::new("t", "d").raw_input_schema(json!({
        "type": "object",
        "properties": {"a": {"type": "integer", "minimum": "zero"}}
    })));
    let SpecError::InvalidInputSchema { tool, problem } = &err else { panic!("{err:?}") };
    assert_eq!(tool, "t");
    assert!(!problem.is_empty());
    assert!(err.to_string().starts_with("tool 't': invalid input schema: "), "{err}");
}

#[test]
fn params_and_raw_schema_together_are_refused() {
    let err = check(
        ToolSpec::new("t", "d")
            .param(Param::optional("a", Type::String, ""))
            .raw_input_schema(json!({"type": "object", "properties": {"b": {"type": "string"}}})),
    );
    assert!(matches!(err, SpecError::InvalidInputSchema { .. }), "{err:?}");
    assert!(err.to_string().contains("declare one or the other"), "{err}");
}

#[test]
fn output_schema_must_be_an_object_schema() {
    let err = check(ToolSpec::new("t", "d").output_schema(json!({"type": "array"})));
    assert_eq!(
        err,
        SpecError::InvalidOutputSchema {
            tool: "t".into(),
            problem: "the root must be {\"type\": \"object\", ...}".into()
        }
    );
    ToolSpec::new("t", "d").output_schema(json!({"type": "object"})).check().unwrap();
}

#[test]
fn a_default_makes_a_param_optional() {
    let p = Param::required("page", Type::Integer, "").default(1);
    assert!(!p.is_required());
    let v = validator([p]);
    assert_eq!(run(&v, json!({})).unwrap()["page"], 1);
}
