//! Demo data: a user with a care circle, two weeks of observations, uploaded files and
//! memories, so that every tool has something to show a minute after install.
//!
//! [`load_demo`] is idempotent: run again, it finds the data and adds nothing.

use crate::health::FileRecord;
use mirobody_core::backend::NewMemory;
use serde::Serialize;
use serde_json::{Value, json};

use crate::backends::OpenedBackends;
use crate::text::{now_ms, rfc3339};

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
            {"code": {"text": "Systolic"}, "valueQuantity": {"value": systolic, "unit": "mmHg"}},
            {"code": {"text": "Diastolic"}, "valueQuantity": {"value": diastolic, "unit": "mmHg"}},
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

// A one-page PDF whose text the demo "extracted" into the `.trans` sidecar.
const PDF: &str = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n\
2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n\
3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 144]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>endobj\n\
4 0 obj<</Length 59>>stream\nBT /F1 14 Tf 20 100 Td (Complete blood count: normal) Tj ET\nendstream endobj\n\
5 0 obj<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";

const PDF_TEXT: &str = "Complete blood count, 2026-01-15\n\
Hemoglobin: 14.1 g/dL (13.5-17.5)\nWhite cells: 6.2 x10^9/L (4.5-11.0)\nPlatelets: 250 x10^9/L (150-450)\n\
Summary: complete blood count normal.\n";

/// Loads the demo user `demo`, their care circle (Mom and Dad share with them, Sam does not),
/// two weeks of observations, three files (text, a PDF with extracted text, a PNG chart) and a
/// few memories. Needs object storage for the files (they are skipped without it).
pub async fn load_demo(backends: &OpenedBackends) -> Result<DemoInfo, mirobody_core::BackendError> {
    let sql = backends.sql();
    let members = vec![
        ("demo-mom".to_owned(), "Mom".to_owned(), true),
        ("demo-dad".to_owned(), "Dad".to_owned(), true),
        ("demo-sam".to_owned(), "Sam".to_owned(), false),
    ];
    let file_keys = vec!["demo-lab-results".to_owned(), "demo-blood-count".to_owned(), "demo-steps-chart".to_owned()];
    let db = backends.db();
    if db.file(DEMO_USER, &file_keys[0]).await?.is_some() || !sql.memory_ids(DEMO_USER).await?.is_empty() {
        return Ok(DemoInfo {
            user_id: DEMO_USER.into(),
            members,
            observations: 0,
            files: file_keys,
            memories: 0,
            already_loaded: true,
        });
    }

    sql.upsert_user(DEMO_USER, Some("Alex Demo"), Some("alex@example.com")).await?;
    for (id, name, email) in [
        ("demo-mom", "Ann Demo", "ann@example.com"),
        ("demo-dad", "Bob Demo", "bob@example.com"),
        ("demo-sam", "Sam Demo", "sam@example.com"),
    ] {
        sql.upsert_user(id, Some(name), Some(email)).await?;
    }
    for (id, nickname, shares) in &members {
        if *shares {
            sql.share_health(id, DEMO_USER, Some(nickname)).await?;
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
    observations += sql.add_observations(DEMO_USER, &mine).await?.len();
    let mom: Vec<Value> = (0..7i64)
        .map(|d| blood_pressure(128.0 + (d % 3) as f64 * 4.0, 82.0 + (d % 2) as f64 * 3.0, now - d * DAY_MS))
        .chain((0..7i64).map(|d| quantity("2339-0", "Glucose", 96.0 + (d * 5 % 13) as f64, "mg/dL", now - d * DAY_MS)))
        .collect();
    observations += sql.add_observations("demo-mom", &mom).await?.len();
    let dad: Vec<Value> = (0..7i64)
        .map(|d| quantity("8867-4", "Heart rate", 70.0 + d as f64, "beats/minute", now - d * DAY_MS))
        .collect();
    observations += sql.add_observations("demo-dad", &dad).await?.len();
    let sam = vec![quantity("8867-4", "Heart rate", 58.0, "beats/minute", now)];
    observations += sql.add_observations("demo-sam", &sam).await?.len();

    let mut files = Vec::new();
    if let Some(storage) = backends.storage() {
        let chart = json!({
            "xAxis": {"type": "category", "data": (0..14).rev().map(|d| format!("-{d}d")).collect::<Vec<_>>()},
            "yAxis": {"type": "value"},
            "series": [{"name": "Steps", "type": "bar", "data": steps.iter().rev().collect::<Vec<_>>()}],
        });
        let png = crate::chart::svg(&chart, Some("Steps, last 14 days"))
            .and_then(|svg| crate::chart::png(&svg))
            .unwrap_or_default();
        let uploads = [
            (file_keys[0].as_str(), "lab-results.txt", "text/plain", LAB_TEXT.as_bytes().to_vec(), None),
            (file_keys[1].as_str(), "blood-count.pdf", "application/pdf", PDF.as_bytes().to_vec(), Some(PDF_TEXT)),
            (file_keys[2].as_str(), "steps.png", "image/png", png, None),
        ];
        for (i, (key, name, mime, bytes, text)) in uploads.into_iter().enumerate() {
            let size = bytes.len() as u64;
            storage.put(key, bytes, mime).await?;
            let text_key = match text {
                Some(text) => {
                    let text_key = format!("{key}.trans");
                    storage.put(&text_key, text.as_bytes().to_vec(), "text/plain").await?;
                    Some(text_key)
                }
                None => None,
            };
            let record = FileRecord {
                file_key: key.to_owned(),
                filename: name.to_owned(),
                mime_type: mime.to_owned(),
                size,
                uploaded_at: rfc3339(now - (i as i64 + 1) * DAY_MS),
                text_key,
            };
            sql.add_file(DEMO_USER, &record).await?;
            files.push(key.to_owned());
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
