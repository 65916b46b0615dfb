//! MCP Apps views in a real browser: a test host built on the official host SDK
//! (`@modelcontextprotocol/ext-apps`' AppBridge, with the official TypeScript SDK's client) runs
//! in headless Chromium, connects to the real server, calls `render_chart` (bars and a line, a
//! pie, a scatter) and `fetch_health_data`, renders each tool's view in a sandboxed iframe under
//! the default view policy, and reports what a person sees. `tests/browser/setup.sh` installs
//! Chromium (Debian) and the npm packages; without them the test says `SKIPPED: <why>`, and with
//! `MIROBODY_REQUIRE_EXTERNAL=1` (as `.ci/run` sets) fails instead.

mod common;

use std::path::Path;
use std::process::Command;

use common::{clean_command, fresh_data_dir, server_port, start, token};
use serde_json::{Value, json};

fn browser_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser"))
}

fn set_up() -> Result<(), String> {
    mirobody_testkit::peers_off()?;
    let output = Command::new("bash").arg("setup.sh").current_dir(browser_dir()).output().map_err(|e| e.to_string())?;
    if output.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()) }
}

// What the view showed for one call.
fn case<'a>(seen: &'a [Value], tool: &str) -> &'a Value {
    seen.iter().find(|c| c["tool"] == tool).unwrap_or_else(|| panic!("no {tool} in {seen:?}"))
}

fn marks_of<'a>(marks: &'a Value, series: &str) -> Vec<(&'a str, f64)> {
    marks
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["series"] == series)
        .map(|m| (m["label"].as_str().unwrap(), m["value"].as_f64().unwrap()))
        .collect()
}

// The checks every view passes: its resource, the size it asked for honoured, a picture that
// is not blank, no request outside the page, no script error.
fn common_checks(view: &Value, uri: &str) {
    assert_eq!(view["resourceUri"], uri, "{view}");
    assert_eq!(view["mimeType"], "text/html;profile=mcp-app");
    assert!(view["viewMeta"]["ui"].get("csp").is_none(), "no network declared: {view}");
    assert_eq!(view["errors"], json!([]), "{view}");
    assert_eq!(view["requests"], json!([]), "the view reached nothing outside the page: {view}");
    let requested = view["requested"].as_f64().expect("the view asked for a height");
    assert!(requested > 80.0, "{view}");
    assert_eq!(view["iframeHeight"].as_f64(), Some(requested), "the host honoured the size the view asked for");
    let (shot, blank) = (view["screenshotBytes"].as_u64().unwrap(), view["blankBytes"].as_u64().unwrap());
    let call = &view["label"];
    assert!(shot > blank * 4, "the picture is not blank ({call}): {shot} bytes against {blank} for a blank box");
}

#[test]
fn views_render_and_upload_in_a_host_built_on_the_official_sdk() {
    if let Err(why) = set_up() {
        if std::env::var("MIROBODY_REQUIRE_EXTERNAL").as_deref() == Ok("1") {
            panic!("the browser test could not be set up, and MIROBODY_REQUIRE_EXTERNAL=1 requires it: {why}");
        }
        println!("SKIPPED: views in a browser: {why}");
        return;
    }
    let data_dir = fresh_data_dir("views");
    let csv = data_dir.join("watch.csv");
    std::fs::write(
        &csv,
        "indicator,time,value,unit\nheart rate,2026-02-01T06:00:00Z,58,bpm\nheart rate,2026-02-02T06:00:00Z,61,bpm\n\
         heart rate,2026-02-03T06:00:00Z,57,bpm\n",
    )
    .unwrap();
    let import = clean_command()
        .args(["import", "csv", csv.to_str().unwrap(), "--user", "alice"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .output()
        .unwrap();
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stdout));
    // HL7's glucose example, with the laboratory's range (3.1-6.2 mmol/L) and its `H`.
    let hl7 = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fhir/hl7_examples.json");
    let import = clean_command()
        .args(["import", "fhir", hl7, "--user", "alice"])
        .env("MIROBODY_BACKENDS__DATA_DIR", &data_dir)
        .output()
        .unwrap();
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stdout));

    let port = server_port();
    let alice = token(&data_dir, port, "alice");
    let _server = common::KillOnDrop(start(&data_dir, port));
    let option = json!({
        "xAxis": {"type": "category", "data": ["Mon", "Tue", "Wed"]},
        "yAxis": {"type": "value"},
        "legend": {},
        "series": [
            {"name": "Steps", "type": "bar", "data": [5200, 8100, 7600]},
            {"name": "Sleep hours", "type": "line", "data": [7.5, 6.25, 8]},
        ],
    });
    let report = data_dir.join("lab report.pdf");
    std::fs::write(&report, include_bytes!("../../mirobody-tools/assets/lab-report.pdf")).unwrap();
    let pie = json!({"series": [{"name": "Sleep stages", "type": "pie",
        "data": [{"name": "Deep", "value": 90}, {"name": "Light", "value": 240}, {"name": "REM", "value": 100}]}]});
    // Enough points that the picture is not mostly blank.
    let pairs: Vec<[u32; 2]> = (0..40).map(|i| [3000 + i * 250, 75 - i / 2 - (i % 7)]).collect();
    let scatter = json!({"xAxis": {"type": "value"}, "yAxis": {"type": "value"},
        "series": [{"name": "HR by steps", "type": "scatter", "data": pairs}]});
    let calls = json!([
        {"name": "render_chart", "arguments": {"option": option, "title": "This week"}},
        {"name": "render_chart", "label": "pie", "arguments": {"option": pie}},
        {"name": "render_chart", "label": "scatter", "arguments": {"option": scatter}},
        {"name": "fetch_health_data", "arguments": {"indicators": ["heart rate"]}},
        {"name": "fetch_health_data", "label": "range", "arguments": {"indicators": ["15074-8"]}},
        {"name": "fetch_health_data", "label": "two", "arguments": {"indicators": ["15074-8", "heart rate"]}},
        {"name": "family_health", "arguments": {}},
        {"name": "upload_link", "arguments": {}, "upload": report},
    ]);
    let output = Command::new("node")
        .arg("views.mjs")
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .arg(&alice)
        .arg(&data_dir)
        .arg(calls.to_string())
        .current_dir(browser_dir())
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Vec<Value> = serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("one line of JSON");

    let chart = case(&seen, "render_chart");
    common_checks(chart, "ui://mirobody/chart.html");
    assert_eq!(chart["before"]["title"], "This week");
    assert_eq!(
        chart["before"]["legend"],
        json!([{"name": "Steps", "on": true}, {"name": "Sleep hours", "on": true}]),
        "{chart}"
    );
    assert_eq!(marks_of(&chart["before"]["marks"], "Steps"), [("Mon", 5200.0), ("Tue", 8100.0), ("Wed", 7600.0)]);
    assert_eq!(marks_of(&chart["before"]["marks"], "Sleep hours"), [("Mon", 7.5), ("Tue", 6.25), ("Wed", 8.0)]);
    // Drawn to the host's width, and again when the host narrows it.
    let widths: Vec<f64> = chart["widths"].as_array().unwrap().iter().map(|w| w.as_f64().unwrap()).collect();
    assert!(widths[0] > 600.0 && widths[1] < 450.0 && widths[1] > 380.0, "{widths:?}");
    assert_eq!(chart["hover"], "Sleep hours · Wed: 8", "hovering the last mark shows its value");
    // The legend toggles a series off, and only that one.
    assert_eq!(chart["toggled"]["legend"][0], json!({"name": "Steps", "on": false}));
    assert!(marks_of(&chart["toggled"]["marks"], "Steps").is_empty());
    assert_eq!(marks_of(&chart["toggled"]["marks"], "Sleep hours").len(), 3);
    // Every other client still gets the picture in the result.
    let content = chart["result"]["content"].as_array().unwrap();
    assert!(content.iter().any(|c| c["type"] == "image" && c["mimeType"] == "image/png"), "{chart}");

    // A pie is drawn as wedges, a scatter as points with no line through them.
    let labelled = |label: &str| seen.iter().find(|c| c["label"] == label).unwrap_or_else(|| panic!("no {label}"));
    let pie = labelled("pie");
    common_checks(pie, "ui://mirobody/chart.html");
    let wedges: Vec<(&str, &str, f64)> = pie["before"]["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["kind"].as_str().unwrap(), m["label"].as_str().unwrap(), m["value"].as_f64().unwrap()))
        .collect();
    assert_eq!(wedges, [("wedge", "Deep", 90.0), ("wedge", "Light", 240.0), ("wedge", "REM", 100.0)], "{pie}");
    assert!(pie["before"]["marks"].as_array().unwrap().iter().all(|m| m["tag"] == "path"), "{pie}");
    let scatter = labelled("scatter");
    common_checks(scatter, "ui://mirobody/chart.html");
    let points = scatter["before"]["marks"].as_array().unwrap();
    assert_eq!(points.len(), 40, "{scatter}");
    assert!(points.iter().all(|m| m["kind"] == "point" && m["tag"] == "circle"), "{scatter}");
    assert_eq!(scatter["before"]["lines"], 0, "no line joins a scatter's points: {scatter}");

    let health = case(&seen, "fetch_health_data");
    common_checks(health, "ui://mirobody/chart.html");
    // A series per indicator, named as the result names it, with its unit.
    let indicators = health["result"]["structuredContent"]["indicators"].as_object().unwrap();
    let (name, indicator) = indicators.iter().next().expect("an indicator");
    let series = format!("{name} ({})", indicator["unit"].as_str().unwrap());
    assert_eq!(health["before"]["legend"], json!([{"name": series, "on": true}]), "{health}");
    // The values the model saw, as the person sees them.
    let model_saw = &indicator["data"];
    let expected: Vec<(String, f64)> = model_saw
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["time"].as_str().unwrap()[..10].to_owned(), p["value"].as_f64().unwrap()))
        .collect();
    let shown: Vec<(String, f64)> =
        marks_of(&health["before"]["marks"], &series).into_iter().map(|(l, v)| (l.to_owned(), v)).collect();
    assert_eq!(shown, expected, "{health}");
    assert_eq!(shown.iter().map(|(_, v)| *v).collect::<Vec<_>>(), [58.0, 61.0, 57.0]);

    // One indicator with its source's range: the range is shaded, where the result puts it.
    let ranged = labelled("range");
    common_checks(ranged, "ui://mirobody/chart.html");
    let glucose = ranged["result"]["structuredContent"]["indicators"].as_object().unwrap().values().next().unwrap();
    assert_eq!(glucose["reference_range"]["origin"], "source", "{ranged}");
    let bands = ranged["before"]["bands"].as_array().unwrap();
    assert_eq!(bands.len(), 1, "one band: {ranged}");
    let band = &bands[0];
    assert_eq!((band["low"].as_f64(), band["high"].as_f64()), (Some(3.1), Some(6.2)), "{ranged}");
    assert_eq!(band["origin"], "source");
    assert!(band["height"].as_f64().unwrap() > 10.0, "the band is seen: {band}");
    // 6.3 mmol/L is above the band: its mark sits higher on the page than the band's top.
    let mark_y = ranged["before"]["markYs"].as_array().unwrap()[0].as_f64().unwrap();
    assert!(mark_y < band["y"].as_f64().unwrap(), "the high value is above the range: {ranged}");
    // Two indicators on one chart: no range is shaded, as two would mislead.
    let two = labelled("two");
    common_checks(two, "ui://mirobody/chart.html");
    assert_eq!(two["before"]["legend"].as_array().unwrap().len(), 2, "{two}");
    assert_eq!(two["before"]["bands"], json!([]), "{two}");

    // family_health's recent observations, as text the model read, become the same trend.
    let family = case(&seen, "family_health");
    common_checks(family, "ui://mirobody/chart.html");
    // Her heart rate, and the glucose the range case above imported for her.
    let legend = family["before"]["legend"].as_array().unwrap();
    assert_eq!(legend.len(), 2, "two indicators: {family}");
    let name = legend
        .iter()
        .filter_map(|entry| entry["name"].as_str())
        .find(|name| name.starts_with("heart rate"))
        .unwrap_or_else(|| panic!("heart rate drawn: {family}"));
    let mut values: Vec<f64> = marks_of(&family["before"]["marks"], name).into_iter().map(|(_, v)| v).collect();
    values.sort_by(f64::total_cmp);
    assert_eq!(values, [57.0, 58.0, 61.0], "{family}");

    // The upload view: the person picks a lab report, the view sends it through the host, and
    // the server holds it as the caller's file, its text read.
    let upload = case(&seen, "upload_link");
    common_checks(upload, "ui://mirobody/upload.html");
    let uploaded = &upload["uploaded"];
    assert_eq!(uploaded["error"], false, "{upload}");
    let key = uploaded["fileKey"].as_str().expect("a file key").to_owned();
    assert!(uploaded["text"].as_str().unwrap().contains("lab report.pdf"), "{uploaded}");
    let sid = common::session(port, &alice);
    let read = common::tool(port, &alice, &sid, "read_file", json!({"file_key": key}));
    assert!(read["content"].as_str().unwrap_or_default().contains("Glucose"), "the report's text: {read}");
    // Only alice's: bob does not see it.
    let bob = token(&data_dir, port, "bob");
    let bobs = common::tool(port, &bob, &common::session(port, &bob), "list_files", json!({}));
    assert_eq!(bobs["files"], json!([]), "{bobs}");
}
