//! Demo data: a user with a care circle, two weeks of observations, uploaded files and
//! memories, so that every tool has something to show a minute after install.
//!
//! [`load_demo`] is idempotent: run again, it finds the data and adds nothing.

use mirobody_core::backend::NewMemory;
use serde::Serialize;
use serde_json::{Value, json};

use mirobody_health::text::{now_ms, rfc3339};
use mirobody_store::OpenedBackends;

/// The demo user's id.
pub const DEMO_USER: &str = "demo";

/// What [`load_demo`] loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DemoInfo {
    /// The demo user's id: sign a token (or mint a personal MCP secret) for it.
    pub user_id: String,
    /// The care circle: `(user id, nickname, shares health data with the demo user)`.
    pub members: Vec<(String, String, bool)>,
    /// Observations stored (for the demo user and the members who share).
    pub observations: usize,
    /// The demo user's uploaded files (`file_key`s).
    pub files: Vec<String>,
    /// Memories stored.
    pub memories: usize,
    /// True when the data was already there and nothing was added.
    pub already_loaded: bool,
}

fn quantity(code: &str, display: &str, value: f64, unit: &str, at_ms: i64) -> Value {
    json!({
        "resourceType": "Observation",
        "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": code, "display": display}], "text": display},
        "valueQuantity": {"value": value, "unit": unit},
        "effectiveDateTime": rfc3339(at_ms),
    })
}

fn blood_pressure(systolic: f64, diastolic: f64, at_ms: i64) -> Value {
    json!({
        "resourceType": "Observation",
        "status": "final",
        "code": {"coding": [{"system": "http://loinc.org", "code": "85354-9", "display": "Blood pressure"}], "text": "Blood pressure"},
        "component": [
            {"code": {"coding": [{"system": "http://loinc.org", "code": "8480-6", "display": "Systolic blood pressure"}]},
             "valueQuantity": {"value": systolic, "unit": "mmHg"}},
            {"code": {"coding": [{"system": "http://loinc.org", "code": "8462-4", "display": "Diastolic blood pressure"}]},
             "valueQuantity": {"value": diastolic, "unit": "mmHg"}},
        ],
        "effectiveDateTime": rfc3339(at_ms),
    })
}

const DAY_MS: i64 = 24 * 3600 * 1000;

const LAB_TEXT: &str = "Lipid panel, 2026-02-03\n\
Total cholesterol: 182 mg/dL (desirable < 200)\n\
LDL: 104 mg/dL (near optimal 100-129)\n\
HDL: 58 mg/dL (good > 40)\n\
Triglycerides: 98 mg/dL (normal < 150)\n\
Comment: results within reference ranges; recheck in 12 months.\n";

/// A one-page lab report, made as `assets/README.md` says; the demo uploads it as a person
/// would, and its text is read from it.
const LAB_PDF: &[u8] = include_bytes!("../assets/lab-report.pdf");

// What the demo user's clinic export holds beside the measurements.
fn clinic_records() -> Vec<Value> {
    vec![
        json!({"resourceType": "Condition", "id": "demo-asthma", "code": {"text": "Mild asthma"},
            "clinicalStatus": {"coding": [{"code": "active"}]}, "onsetDateTime": "2015-04-01"}),
        json!({"resourceType": "MedicationStatement", "id": "demo-salbutamol", "status": "active",
            "medicationCodeableConcept": {"text": "Salbutamol inhaler, as needed"}}),
        json!({"resourceType": "AllergyIntolerance", "id": "demo-penicillin", "code": {"text": "Penicillin"},
            "clinicalStatus": {"coding": [{"code": "active"}]}}),
    ]
}

/// Loads the demo user `demo`, their care circle (Mom and Dad share with them, Sam does not),
/// two weeks of observations (the demo user's arrive as a FHIR transaction, as a clinic's
/// export would), three uploaded files (text, a PDF whose text is read from it, a PNG chart)
/// and a few memories. Needs object storage for the files (they are skipped without it).
pub async fn load_demo(backends: &OpenedBackends) -> Result<DemoInfo, mirobody_core::BackendError> {
    let sql = backends.sql();
    let health = backends.health();
    let members = vec![
        ("demo-mom".to_owned(), "Mom".to_owned(), true),
        ("demo-dad".to_owned(), "Dad".to_owned(), true),
        ("demo-sam".to_owned(), "Sam".to_owned(), false),
    ];
    if !sql.memory_ids(DEMO_USER).await?.is_empty() {
        let files = backends.db().files(DEMO_USER).await?.into_iter().map(|f| f.file_key).collect();
        return Ok(DemoInfo {
            user_id: DEMO_USER.into(),
            members,
            observations: 0,
            files,
            memories: 0,
            already_loaded: true,
        });
    }

    health.upsert_user(DEMO_USER, Some("Alex Demo"), Some("alex@example.com")).await?;
    for (id, name, email) in [
        ("demo-mom", "Ann Demo", "ann@example.com"),
        ("demo-dad", "Bob Demo", "bob@example.com"),
        ("demo-sam", "Sam Demo", "sam@example.com"),
    ] {
        health.upsert_user(id, Some(name), Some(email)).await?;
    }
    for (id, nickname, shares) in &members {
        if *shares {
            health.share_health(id, DEMO_USER, Some(nickname)).await?;
        }
    }

    let now = now_ms() - now_ms() % DAY_MS + 8 * 3600 * 1000;
    let mut observations = 0;
    let mut mine = Vec::new();
    let mut steps = Vec::new();
    for day in 0..14i64 {
        let at = now - day * DAY_MS;
        let wiggle = ((day * 37) % 11) as f64;
        mine.push(quantity("8867-4", "Heart rate", 62.0 + wiggle, "beats/minute", at));
        let count = 6000.0 + ((day * 1733) % 5000) as f64;
        steps.push(count);
        mine.push(quantity("55423-8", "Step count", count, "steps", at - 3600 * 1000));
        if day % 7 == 0 {
            mine.push(quantity("29463-7", "Body weight", 72.4 - day as f64 * 0.1, "kg", at));
        }
    }
    // Through the import a person's application uses (`POST /fhir`).
    let export: Vec<Value> = mine.into_iter().chain(clinic_records()).map(|r| json!({"resource": r})).collect();
    let export = json!({"resourceType": "Bundle", "type": "transaction", "entry": export});
    let imported = mirobody_health::import::import_fhir(health.as_ref(), DEMO_USER, &export).await;
    if imported.status >= 400 {
        return Err(mirobody_core::BackendError::new(format!("the demo's FHIR import failed: {}", imported.body)));
    }
    observations += imported.summary.created.saturating_sub(clinic_records().len());
    let mom: Vec<Value> = (0..7i64)
        .map(|d| blood_pressure(128.0 + (d % 3) as f64 * 4.0, 82.0 + (d % 2) as f64 * 3.0, now - d * DAY_MS))
        .chain((0..7i64).map(|d| quantity("2339-0", "Glucose", 96.0 + (d * 5 % 13) as f64, "mg/dL", now - d * DAY_MS)))
        .collect();
    observations += health.add_observations("demo-mom", &mom).await?.len();
    let dad: Vec<Value> = (0..7i64)
        .map(|d| quantity("8867-4", "Heart rate", 70.0 + d as f64, "beats/minute", now - d * DAY_MS))
        .collect();
    observations += health.add_observations("demo-dad", &dad).await?.len();
    let sam = vec![quantity("8867-4", "Heart rate", 58.0, "beats/minute", now)];
    observations += health.add_observations("demo-sam", &sam).await?.len();

    let mut files = Vec::new();
    if backends.storage().is_some() {
        #[cfg_attr(not(feature = "charts"), expect(unused_mut))]
        let mut uploads: Vec<(&str, &str, Vec<u8>)> = vec![
            ("lab-results.txt", "text/plain", LAB_TEXT.as_bytes().to_vec()),
            ("blood-count.pdf", "application/pdf", LAB_PDF.to_vec()),
        ];
        // The steps drawn as a chart, when this build draws charts.
        #[cfg(feature = "charts")]
        {
            let chart = json!({
                "xAxis": {"type": "category", "data": (0..14).rev().map(|d| format!("-{d}d")).collect::<Vec<_>>()},
                "yAxis": {"type": "value"},
                "series": [{"name": "Steps", "type": "bar", "data": steps.iter().rev().collect::<Vec<_>>()}],
            });
            let png = crate::chart::svg(&chart, Some("Steps, last 14 days"))
                .and_then(|drawing| crate::chart::png(&drawing.svg))
                .unwrap_or_default();
            uploads.push(("steps.png", "image/png", png));
        }
        // Through the path `POST /files` takes: checked, stored, its text read.
        let limits = crate::uploads::UploadLimits::default();
        for (name, mime, bytes) in uploads {
            let uploaded = crate::uploads::store_upload(backends, &limits, DEMO_USER, name, Some(mime), bytes)
                .await
                .map_err(|e| mirobody_core::BackendError::new(format!("the demo's upload of {name} failed: {e}")))?;
            files.push(uploaded.file_key);
        }
    }

    let memories: Vec<NewMemory> = [
        ("Allergic to penicillin.", "fact"),
        ("Prefers metric units (kg, km).", "preference"),
        ("Training for a half marathon in May.", "fact"),
        ("Likes short answers with the numbers first.", "preference"),
        ("Ran 12 km on Sunday and felt a sore left knee afterwards.", "episode"),
        ("Mom (Ann) was told to watch her blood pressure.", "fact"),
    ]
    .into_iter()
    .map(|(text, kind)| NewMemory { text: text.into(), kind: kind.into(), session_id: None })
    .collect();
    let stored = sql.add_memories(DEMO_USER, &memories).await?.len();

    Ok(DemoInfo { user_id: DEMO_USER.into(), members, observations, files, memories: stored, already_loaded: false })
}
