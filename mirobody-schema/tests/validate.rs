//! Argument validation (`Validator`, `ArgProblem`, `InvalidArguments`) and declaration checks
//! (`ToolSpec::check`, `SpecError`), with proptest properties of `Validator::validate`.

use mirobody_schema::{ArgProblem, Format, InvalidArguments, Param, SpecError, ToolSpec, Type, Validator};
use serde_json::{Map, Value, json};

/// Builds the validator of a parameter table.
fn validator(params: impl IntoIterator<Item = Param>) -> Validator {
    ToolSpec::new("tool", "A tool.").params(params).validator().unwrap()
}

/// Validates a JSON object literal; the arguments after validation, or the error.
fn run(validator: &Validator, args: Value) -> Result<Map<String, Value>, InvalidArguments> {
    let mut map = args.as_object().expect("test arguments must be an object").clone();
    validator.validate(&mut map).map(|()| map)
}

/// The single problem of a failed validation.
fn only_problem(result: Result<Map<String, Value>, InvalidArguments>) -> (ArgProblem, String) {
    let err = result.expect_err("validation should have failed");
    assert_eq!(err.problems.len(), 1, "expected exactly one problem: {err}");
    (err.problems[0].clone(), err.to_string())
}

// =============================================================================================
// Every ArgProblem, and what its message tells the model
// =============================================================================================

mod problems {
    use super::*;

    #[test]
    fn missing_names_the_argument_its_type_and_description() {
        let v = validator([Param::required("city", Type::String, "City name, e.g. \"Boston\"")]);
        let (problem, message) = only_problem(run(&v, json!({})));
        assert_eq!(
            problem,
            ArgProblem::Missing {
                name: "city".into(),
                expected: Type::String,
                description: "City name, e.g. \"Boston\"".into()
            }
        );
        assert_eq!(
            message,
            "Invalid arguments: missing required argument 'city' (string): City name, e.g. \"Boston\". \
             Fix the arguments and call the tool again."
        );
    }

    #[test]
    fn missing_without_description_has_no_dangling_colon() {
        let v = validator([Param::required("n", Type::Integer, "")]);
        let (_, message) = only_problem(run(&v, json!({})));
        assert!(message.contains("missing required argument 'n' (integer). Fix"), "{message}");
    }

    #[test]
    fn explicit_null_for_a_required_argument_is_missing() {
        let v = validator([Param::required("city", Type::String, "")]);
        let (problem, _) = only_problem(run(&v, json!({"city": null})));
        assert!(matches!(problem, ArgProblem::Missing { ref name, .. } if name == "city"), "{problem:?}");
    }

    #[test]
    fn wrong_type_names_the_argument_and_both_types() {
        let v = validator([Param::required("count", Type::Integer, "")]);
        let (problem, message) = only_problem(run(&v, json!({"count": "5"})));
        assert_eq!(problem, ArgProblem::WrongType { name: "count".into(), expected: Type::Integer, got: "string" });
        assert!(message.contains("argument 'count' must be an integer, not string"), "{message}");
        assert!(message.ends_with("Fix the arguments and call the tool again."), "{message}");
    }

    #[test]
    fn wrong_type_uses_the_right_article() {
        let v = validator([Param::required("text", Type::String, "")]);
        let (_, message) = only_problem(run(&v, json!({"text": 1})));
        assert!(message.contains("argument 'text' must be a string, not integer"), "{message}");
        let v = validator([Param::required("list", Type::Array, "")]);
        let (_, message) = only_problem(run(&v, json!({"list": {}})));
        assert!(message.contains("argument 'list' must be an array, not object"), "{message}");
    }

    #[test]
    fn wrong_item_type_names_the_index() {
        let v = validator([Param::required("ids", Type::Array, "").items(Type::Integer)]);
        let (problem, message) = only_problem(run(&v, json!({"ids": [1, 2, "three"]})));
        assert_eq!(
            problem,
            ArgProblem::WrongItemType { name: "ids".into(), index: 2, expected: Type::Integer, got: "string" }
        );
        assert!(message.contains("argument 'ids'[2] must be an integer, not string"), "{message}");
    }

    #[test]
    fn not_allowed_lists_the_allowed_values() {
        let v = validator([Param::required("kind", Type::String, "").one_of(["fact", "preference"])]);
        let (problem, message) = only_problem(run(&v, json!({"kind": "rumour"})));
        assert_eq!(
            problem,
            ArgProblem::NotAllowed {
                name: "kind".into(),
                value: json!("rumour"),
                allowed: vec![json!("fact"), json!("preference")]
            }
        );
        assert!(
            message.contains(r#"argument 'kind' is "rumour", but must be one of "fact", "preference""#),
            "{message}"
        );
    }

    #[test]
    fn not_allowed_applies_to_each_array_element() {
        let v = validator([Param::optional("channels", Type::Array, "").one_of(["email", "sms"])]);
        assert!(run(&v, json!({"channels": ["sms", "email"]})).is_ok());
        let (problem, _) = only_problem(run(&v, json!({"channels": ["sms", "fax"]})));
        assert!(matches!(problem, ArgProblem::NotAllowed { ref value, .. } if *value == json!("fax")), "{problem:?}");
    }

    #[test]
    fn unknown_names_the_known_arguments() {
        let v = validator([Param::required("city", Type::String, ""), Param::optional("unit", Type::String, "")]);
        let (problem, message) = only_problem(run(&v, json!({"city": "Oslo", "town": "Oslo"})));
        assert_eq!(problem, ArgProblem::Unknown { name: "town".into(), known: vec!["city".into(), "unit".into()] });
        assert!(message.contains("unknown argument 'town'; the arguments are 'city', 'unit'"), "{message}");
    }

    #[test]
    fn unknown_on_a_tool_without_parameters() {
        let v = validator([]);
        let (_, message) = only_problem(run(&v, json!({"x": 1})));
        assert!(message.contains("unknown argument 'x'; this tool takes no arguments"), "{message}");
    }

    /// `NotAnObject` is raised by the caller of the validator (the registry) before it runs;
    /// its message is checked here with the others.
    #[test]
    fn not_an_object_message() {
        let err = InvalidArguments { problems: vec![ArgProblem::NotAnObject { got: "string" }] };
        assert_eq!(
            err.to_string(),
            "Invalid arguments: arguments must be a JSON object of named arguments, not string. \
             Fix the arguments and call the tool again."
        );
    }

    #[test]
    fn schema_problem_carries_a_json_pointer_to_the_nested_error() {
        let spec = ToolSpec::new("t", "d").raw_input_schema(json!({
            "type": "object",
            "properties": {
                "filters": {
                    "type": "object",
                    "properties": {"limit": {"type": "integer", "maximum": 100}}
                }
            }
        }));
        let v = spec.validator().unwrap();
        let (problem, message) = only_problem(run(&v, json!({"filters": {"limit": 500}})));
        let ArgProblem::Schema { path, message: detail } = &problem else { panic!("{problem:?}") };
        assert_eq!(path, "/filters/limit");
        assert!(detail.contains("500") && detail.contains("100"), "{detail}");
        assert!(message.contains("at /filters/limit: "), "{message}");
    }

    #[test]
    fn schema_problem_at_the_root_has_no_location_prefix() {
        let spec = ToolSpec::new("t", "d").raw_input_schema(json!({
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"]
        }));
        let v = spec.validator().unwrap();
        let (problem, message) = only_problem(run(&v, json!({})));
        let ArgProblem::Schema { path, message: detail } = &problem else { panic!("{problem:?}") };
        assert_eq!(path, "");
        assert!(detail.contains("\"q\""), "{detail}");
        assert!(message.starts_with("Invalid arguments: ") && !message.contains("at :"), "{message}");
    }

    #[test]
    fn schema_validation_reports_every_error_and_keeps_the_arguments() {
        let spec = ToolSpec::new("t", "d").raw_input_schema(json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "additionalProperties": false
        }));
        let v = spec.validator().unwrap();
        let mut args = json!({"a": 1, "b": "x", "c": true}).as_object().unwrap().clone();
        let before = args.clone();
        let err = v.validate(&mut args).unwrap_err();
        assert_eq!(err.problems.len(), 3, "{err}");
        assert_eq!(args, before, "a failed schema validation must not lose the arguments");
    }
}

// =============================================================================================
// Defaults, nulls and the conversions validation makes
// =============================================================================================

mod conversions {
    use super::*;

    fn with_defaults() -> Validator {
        validator([
            Param::optional("unit", Type::String, "").default("metric"),
            Param::optional("limit", Type::Integer, "").default(20),
            Param::optional("notes", Type::Boolean, "").default(false),
            Param::optional("tags", Type::Array, "").default(json!(["a"])),
            Param::optional("extra", Type::String, ""),
        ])
    }

    #[test]
    fn defaults_fill_absent_arguments() {
        let out = run(&with_defaults(), json!({})).unwrap();
        assert_eq!(Value::Object(out), json!({"unit": "metric", "limit": 20, "notes": false, "tags": ["a"]}));
    }

    #[test]
    fn defaults_replace_explicit_null() {
        let out = run(&with_defaults(), json!({"unit": null, "limit": null, "notes": null})).unwrap();
        assert_eq!(out["unit"], "metric");
        assert_eq!(out["limit"], 20);
        assert_eq!(out["notes"], false);
    }

    #[test]
    fn sent_values_win_over_defaults() {
        let out = run(&with_defaults(), json!({"unit": "imperial", "limit": 3})).unwrap();
        assert_eq!(out["unit"], "imperial");
        assert_eq!(out["limit"], 3);
    }

    #[test]
    fn explicit_null_for_an_optional_argument_without_default_is_removed() {
        let out = run(&with_defaults(), json!({"extra": null})).unwrap();
        assert!(!out.contains_key("extra"), "{out:?}");
    }

    #[test]
    fn whole_float_is_accepted_as_integer_and_stored_as_integer() {
        let v = validator([Param::required("count", Type::Integer, "")]);
        let out = run(&v, json!({"count": 5.0})).unwrap();
        assert_eq!(out["count"], json!(5));
        assert!(out["count"].is_i64(), "stored as {:?}", out["count"]);
        let out = run(&v, json!({"count": -3.0})).unwrap();
        assert_eq!(out["count"].as_i64(), Some(-3));
    }

    #[test]
    fn whole_floats_in_integer_arrays_are_stored_as_integers() {
        let v = validator([Param::required("ids", Type::Array, "").items(Type::Integer)]);
        let out = run(&v, json!({"ids": [1.0, 2]})).unwrap();
        assert_eq!(out["ids"], json!([1, 2]));
        assert!(out["ids"][0].is_i64());
    }

    #[test]
    fn fractional_float_is_rejected_for_integer() {
        let v = validator([Param::required("count", Type::Integer, "")]);
        let (problem, _) = only_problem(run(&v, json!({"count": 5.5})));
        assert_eq!(problem, ArgProblem::WrongType { name: "count".into(), expected: Type::Integer, got: "number" });
    }

    #[test]
    fn huge_float_is_rejected_for_integer_rather_than_rounded() {
        let v = validator([Param::required("count", Type::Integer, "")]);
        let (problem, _) = only_problem(run(&v, json!({"count": 1e300})));
        assert!(matches!(problem, ArgProblem::WrongType { got: "number", .. }), "{problem:?}");
    }

    #[test]
    fn numeric_string_is_rejected_for_integer() {
        let v = validator([Param::required("count", Type::Integer, "")]);
        let (problem, _) = only_problem(run(&v, json!({"count": "5"})));
        assert!(matches!(problem, ArgProblem::WrongType { got: "string", .. }), "{problem:?}");
    }

    #[test]
    fn string_true_is_rejected_for_boolean() {
        let v = validator([Param::required("flag", Type::Boolean, "")]);
        let (problem, message) = only_problem(run(&v, json!({"flag": "true"})));
        assert_eq!(problem, ArgProblem::WrongType { name: "flag".into(), expected: Type::Boolean, got: "string" });
        assert!(message.contains("argument 'flag' must be a boolean, not string"), "{message}");
    }

    #[test]
    fn integer_is_accepted_for_number_and_left_alone() {
        let v = validator([Param::required("ratio", Type::Number, "")]);
        let out = run(&v, json!({"ratio": 2})).unwrap();
        assert_eq!(out["ratio"], json!(2));
    }

    #[test]
    fn json_encoded_object_string_is_decoded_for_an_object_param() {
        let v = validator([Param::required("option", Type::Object, "")]);
        let out = run(&v, json!({"option": "{\"series\": [1, 2], \"title\": \"x\"}"})).unwrap();
        assert_eq!(out["option"], json!({"series": [1, 2], "title": "x"}));
    }

    #[test]
    fn json_encoded_objects_are_decoded_in_object_arrays() {
        let v = validator([Param::required("rows", Type::Array, "").items(Type::Object)]);
        let out = run(&v, json!({"rows": ["{\"a\": 1}", {"b": 2}]})).unwrap();
        assert_eq!(out["rows"], json!([{"a": 1}, {"b": 2}]));
    }

    #[test]
    fn strings_that_are_not_json_objects_are_rejected_for_an_object_param() {
        let v = validator([Param::required("option", Type::Object, "")]);
        for bad in [json!("[1, 2]"), json!("{not json"), json!("plain"), json!(3)] {
            let (problem, _) = only_problem(run(&v, json!({"option": bad.clone()})));
            assert!(matches!(problem, ArgProblem::WrongType { expected: Type::Object, .. }), "{bad}: {problem:?}");
        }
    }

    #[test]
    fn numbers_in_an_enum_compare_by_value() {
        let v = validator([Param::required("level", Type::Integer, "").one_of([1, 2, 3])]);
        assert_eq!(run(&v, json!({"level": 2.0})).unwrap()["level"], json!(2));
        let v = validator([Param::required("ratio", Type::Number, "").one_of([0.5, 1.0])]);
        assert!(run(&v, json!({"ratio": 1})).is_ok());
        assert!(run(&v, json!({"ratio": 0.75})).is_err());
    }

    /// `5` and `5.0` are the same JSON Schema value; the scalar path honours that (see the test
    /// above), so an array of numbers must too.
    #[test]
    fn numbers_in_an_array_enum_compare_by_value() {
        let v = validator([Param::optional("ratios", Type::Array, "").items(Type::Number).one_of([1.0, 2.5])]);
        assert!(run(&v, json!({"ratios": [1, 2.5]})).is_ok());
    }

    /// A raw schema's free-form object is rendered for Gemini as a JSON-encoded string (as a
    /// parameter table's is), so the validator must accept what Gemini was told to send.
    #[test]
    fn raw_schema_free_form_object_accepts_what_gemini_was_asked_to_send() {
        let spec = ToolSpec::new("t", "d").raw_input_schema(json!({
            "type": "object",
            "properties": {"options": {"type": "object", "description": "Free-form options."}}
        }));
        let gemini = spec.render(Format::Gemini);
        assert_eq!(gemini["parameters"]["properties"]["options"]["type"], "string");
        let v = spec.validator().unwrap();
        let out = run(&v, json!({"options": "{\"a\": 1}"})).expect("Gemini's argument was refused");
        assert_eq!(out["options"], json!({"a": 1}));
    }
}

// =============================================================================================
// Reporting
// =============================================================================================

mod reporting {
    use super::*;

    #[test]
    fn every_problem_is_reported_at_once_in_parameter_order() {
        let v = validator([
            Param::required("a", Type::String, ""),
            Param::required("b", Type::Integer, ""),
            Param::optional("c", Type::Array, "").items(Type::Integer),
            Param::optional("d", Type::String, "").one_of(["x"]),
        ]);
        let err = run(&v, json!({"b": "two", "c": [1, "2", 3.5], "d": "y", "e": 0})).unwrap_err();
        let kinds: Vec<&str> = err
            .problems
            .iter()
            .map(|p| match p {
                ArgProblem::Missing { .. } => "missing a",
                ArgProblem::WrongType { .. } => "wrong b",
                ArgProblem::WrongItemType { index: 1, .. } => "item c[1]",
                ArgProblem::WrongItemType { index: 2, .. } => "item c[2]",
                ArgProblem::NotAllowed { .. } => "enum d",
                ArgProblem::Unknown { .. } => "unknown e",
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(kinds, ["missing a", "wrong b", "item c[1]", "item c[2]", "enum d", "unknown e"]);
        let message = err.to_string();
        let joined: Vec<String> = err.problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            message,
            format!("Invalid arguments: {}. Fix the arguments and call the tool again.", joined.join("; "))
        );
        for name in ["'a'", "'b'", "'c'[1]", "'c'[2]", "'d'", "'e'"] {
            assert!(message.contains(name), "{name} missing from {message}");
        }
    }

    #[test]
    fn every_unknown_argument_is_reported() {
        let v = validator([Param::optional("a", Type::String, "")]);
        let err = run(&v, json!({"x": 1, "y": 2})).unwrap_err();
        assert_eq!(err.problems.len(), 2, "{err}");
    }
}

// =============================================================================================
// ToolSpec::check
// =============================================================================================

#[path = "validate/spec_check.rs"]
mod spec_check;

// =============================================================================================
// Properties
// =============================================================================================

mod properties {
    use super::*;
    use proptest::prelude::*;

    const TYPES: [Type; 6] = [Type::String, Type::Integer, Type::Number, Type::Boolean, Type::Array, Type::Object];
    const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

    fn has_type(value: &Value, ty: Type) -> bool {
        match ty {
            Type::String => value.is_string(),
            Type::Integer => value.is_i64() || value.is_u64(),
            Type::Number => value.is_number(),
            Type::Boolean => value.is_boolean(),
            Type::Array => value.is_array(),
            Type::Object => value.is_object(),
        }
    }

    fn any_type() -> impl Strategy<Value = Type> {
        proptest::sample::select(TYPES.to_vec())
    }

    fn scalar() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-3i64..3).prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-3i64..3).prop_map(|n| Value::from(n as f64)),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            proptest::sample::select(vec!["x", "y", "true", "5", "{\"k\": 1}", "{bad", "[1]", ""])
                .prop_map(Value::from),
        ]
    }

    fn any_value() -> impl Strategy<Value = Value> {
        scalar().prop_recursive(2, 8, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-c]", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A value of the given type, for defaults and allowed values.
    fn value_of(ty: Type) -> BoxedStrategy<Value> {
        match ty {
            Type::String => proptest::sample::select(vec!["x", "y", "z"]).prop_map(Value::from).boxed(),
            Type::Integer => (-3i64..3).prop_map(Value::from).boxed(),
            Type::Number => (-3i64..3).prop_map(|n| Value::from(n as f64 / 2.0)).boxed(),
            Type::Boolean => any::<bool>().prop_map(Value::from).boxed(),
            Type::Array => proptest::collection::vec(value_of(Type::String), 0..3).prop_map(Value::Array).boxed(),
            Type::Object => Just(json!({"k": 1})).boxed(),
        }
    }

    /// A parameter with a random type, item type, requiredness and, sometimes, a well-typed
    /// default and an enumeration of scalars.
    fn param(name: &'static str) -> impl Strategy<Value = Param> {
        (any_type(), any_type(), any::<bool>(), 0u8..4).prop_flat_map(move |(ty, items, required, extra)| {
            let base = Param::new(name, ty, required, "").items(items);
            let element = if ty == Type::Array { items } else { ty };
            let scalar_element = !matches!(element, Type::Array | Type::Object);
            match extra {
                // A default of the declared type (for an array: string elements, so only when
                // the element type is string).
                1 if ty != Type::Array || items == Type::String => {
                    value_of(ty).prop_map(move |d| base.clone().default(d)).boxed()
                }
                // An enumeration of element values.
                2 if scalar_element => proptest::collection::vec(value_of(element), 1..4)
                    .prop_map(move |allowed| base.clone().one_of(allowed))
                    .boxed(),
                _ => Just(base).boxed(),
            }
        })
    }

    fn table() -> impl Strategy<Value = Vec<Param>> {
        proptest::sample::subsequence(NAMES.to_vec(), 0..=NAMES.len())
            .prop_flat_map(|names| names.into_iter().map(param).collect::<Vec<_>>())
    }

    /// A value the parameter should accept (modulo its enumeration), in any of the shapes the
    /// validator converts: whole floats for integers, JSON-encoded strings for objects.
    fn fitting(param: &Param) -> BoxedStrategy<Value> {
        let element = |ty: Type| -> BoxedStrategy<Value> {
            match ty {
                Type::Integer => prop_oneof![value_of(ty), (-3i64..3).prop_map(|n| Value::from(n as f64))].boxed(),
                Type::Object => prop_oneof![value_of(ty), Just(Value::from("{\"k\": [1]}"))].boxed(),
                _ => value_of(ty),
            }
        };
        match (param.ty(), param.allowed_values()) {
            (Type::Array, Some(allowed)) => proptest::collection::vec(proptest::sample::select(allowed.to_vec()), 0..3)
                .prop_map(Value::Array)
                .boxed(),
            (_, Some(allowed)) => proptest::sample::select(allowed.to_vec()).boxed(),
            (Type::Array, None) => {
                proptest::collection::vec(element(param.item_type()), 0..3).prop_map(Value::Array).boxed()
            }
            (ty, None) => element(ty),
        }
    }

    /// For each parameter: absent, null, a fitting value or any value; sometimes an unknown key.
    fn arguments_for(params: &[Param]) -> BoxedStrategy<Map<String, Value>> {
        let slots: Vec<BoxedStrategy<Option<(String, Value)>>> = params
            .iter()
            .map(|p| {
                let name = p.name().to_owned();
                prop_oneof![
                    2 => Just(None),
                    1 => Just(Some((name.clone(), Value::Null))),
                    6 => fitting(p).prop_map({
                        let name = name.clone();
                        move |v| Some((name.clone(), v))
                    }),
                    1 => any_value().prop_map(move |v| Some((name.clone(), v))),
                ]
                .boxed()
            })
            .collect();
        let unknown = prop_oneof![9 => Just(None), 1 => any_value().prop_map(|v| Some(("z".to_owned(), v)))];
        (slots, unknown).prop_map(|(slots, unknown)| slots.into_iter().chain([unknown]).flatten().collect()).boxed()
    }

    /// A random table and random arguments for it.
    fn table_and_arguments() -> impl Strategy<Value = (Vec<Param>, Map<String, Value>)> {
        table().prop_flat_map(|params| {
            let args = arguments_for(&params);
            (Just(params), args)
        })
    }

    /// The properties below only say something about `Ok` results; make sure there are many.
    #[test]
    fn the_strategy_produces_both_valid_and_invalid_arguments() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;

        let mut runner = TestRunner::deterministic();
        let strategy = table_and_arguments();
        let (mut ok, mut with_required) = (0, 0);
        let total = 500;
        for _ in 0..total {
            let (params, mut args) = strategy.new_tree(&mut runner).unwrap().current();
            let validator = ToolSpec::new("t", "d").params(params.clone()).validator().unwrap();
            if validator.validate(&mut args).is_ok() {
                ok += 1;
                with_required += usize::from(params.iter().any(Param::is_required));
            }
        }
        assert!(ok > total / 5 && ok < total * 4 / 5, "{ok} of {total} valid");
        assert!(with_required > total / 10, "only {with_required} valid cases had a required parameter");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Validation never panics, and an Ok means the handler can rely on the declaration.
        #[test]
        fn ok_means_every_argument_fits_its_declaration((params, mut args) in table_and_arguments()) {
            let spec = ToolSpec::new("t", "d").params(params.clone());
            // The strategy generates only valid tables.
            let validator = spec.validator().expect("generated table should be valid");
            if validator.validate(&mut args).is_ok() {
                for p in &params {
                    match args.get(p.name()) {
                        None => prop_assert!(
                            !p.is_required() && p.default_value().is_none(),
                            "'{}' absent after Ok (required {}, default {:?})",
                            p.name(),
                            p.is_required(),
                            p.default_value()
                        ),
                        Some(v) => {
                            prop_assert!(has_type(v, p.ty()), "'{}' = {} is not {}", p.name(), v, p.ty());
                            if let Value::Array(items) = v {
                                for item in items {
                                    prop_assert!(
                                        has_type(item, p.item_type()),
                                        "'{}' item {} is not {}",
                                        p.name(),
                                        item,
                                        p.item_type()
                                    );
                                }
                            }
                        }
                    }
                }
                for key in args.keys() {
                    prop_assert!(params.iter().any(|p| p.name() == key), "unknown '{}' kept after Ok", key);
                }
            }
        }

        /// Every key the table does not declare is reported, whatever else is wrong with the
        /// arguments (nulls, missing and defaulted parameters beside it), and nothing else is.
        #[test]
        fn every_undeclared_key_is_reported((params, mut args) in table_and_arguments()) {
            let undeclared: Vec<String> =
                args.keys().filter(|key| !params.iter().any(|p| p.name() == *key)).cloned().collect();
            let validator = ToolSpec::new("t", "d").params(params).validator().unwrap();
            let reported: Vec<String> = match validator.validate(&mut args) {
                Ok(()) => Vec::new(),
                Err(err) => err
                    .problems
                    .iter()
                    .filter_map(|problem| match problem {
                        ArgProblem::Unknown { name, .. } => Some(name.clone()),
                        _ => None,
                    })
                    .collect(),
            };
            prop_assert_eq!(reported, undeclared);
        }

        /// Validating the output of a successful validation succeeds and changes nothing.
        #[test]
        fn validation_is_idempotent((params, mut args) in table_and_arguments()) {
            let validator = ToolSpec::new("t", "d").params(params).validator().unwrap();
            if validator.validate(&mut args).is_ok() {
                let once = args.clone();
                let again = validator.validate(&mut args);
                prop_assert!(again.is_ok(), "second validation failed: {:?} on {:?}", again, once);
                prop_assert_eq!(args, once);
            }
        }

        /// A failed validation reports at least one problem and its message is well formed.
        #[test]
        fn errors_are_never_empty((params, mut args) in table_and_arguments()) {
            let validator = ToolSpec::new("t", "d").params(params).validator().unwrap();
            if let Err(err) = validator.validate(&mut args) {
                prop_assert!(!err.problems.is_empty());
                let message = err.to_string();
                prop_assert!(message.starts_with("Invalid arguments: "), "{}", message);
                prop_assert!(message.ends_with(". Fix the arguments and call the tool again."), "{}", message);
            }
        }
    }
}
