//! `Args`: the typed accessors, presence and raw access, `from_value`, and `parse` into a struct
//! with the names of what did not fit.

use super::*;

fn sample() -> Args {
    Args::from_value(json!({
        "text": "hi",
        "count": 3,
        "ratio": 0.5,
        "flag": true,
        "tags": ["a", 1, "b"],
        "nothing": null,
        "float_count": 5.0,
        "string_flag": "true"
    }))
    .unwrap()
}

#[test]
fn typed_accessors() {
    let args = sample();
    assert_eq!(args.str("text"), Some("hi"));
    assert_eq!(args.str("count"), None);
    assert_eq!(args.str_or("missing", "dflt"), "dflt");
    assert_eq!(args.str_or("text", "dflt"), "hi");
    assert_eq!(args.integer("count", 20), 3);
    assert_eq!(args.integer("missing", 20), 20);
    assert_eq!(args.integer("float_count", 20), 20, "a float is not read as an integer");
    assert_eq!(args.number("ratio", 1.0), 0.5);
    assert_eq!(args.number("count", 1.0), 3.0);
    assert_eq!(args.number("text", 1.0), 1.0);
    assert!(args.boolean("flag", false));
    assert!(!args.boolean("string_flag", false), "\"true\" is not a boolean");
    assert_eq!(args.string_array("tags"), ["a", "b"]);
    assert!(args.string_array("missing").is_empty());
    assert!(args.string_array("text").is_empty());
}

#[test]
fn presence_and_raw_access() {
    let args = sample();
    assert!(args.has("nothing"), "present as null still counts");
    assert!(!args.has("missing"));
    assert_eq!(args.get("nothing"), Some(&Value::Null));
    assert_eq!(args.get("count"), Some(&json!(3)));
    assert_eq!(args.raw().len(), 8);
    let inner = args.clone().into_inner();
    assert_eq!(Args::from(inner.clone()), args);
    assert_eq!(Args::new(inner), args);
}

#[test]
fn from_value_accepts_objects_and_null_only() {
    assert_eq!(Args::from_value(Value::Null).unwrap(), Args::default());
    assert_eq!(Args::from_value(json!("{}")).unwrap_err(), "string");
    assert_eq!(Args::from_value(json!([])).unwrap_err(), "array");
    assert_eq!(Args::from_value(json!(1.5)).unwrap_err(), "number");
}

#[derive(Debug, PartialEq, serde::Deserialize)]
struct Input {
    text: String,
    count: u32,
    #[serde(default)]
    tags: Vec<serde_json::Value>,
}

#[test]
fn parse_reads_a_struct_and_names_what_did_not_fit() {
    let input: Input = sample().parse().unwrap();
    assert_eq!(input, Input { text: "hi".into(), count: 3, tags: vec![json!("a"), json!(1), json!("b")] });

    let err = Args::from_value(json!({"text": "hi", "count": -1})).unwrap().parse::<Input>().unwrap_err();
    assert!(err.message().starts_with("Invalid arguments: "), "{err}");
    assert!(err.message().contains("-1"), "{err}");

    let err = Args::from_value(json!({"count": 1})).unwrap().parse::<Input>().unwrap_err();
    assert!(err.message().contains("missing field `text`"), "{err}");
}
