//! Documents read in a sandboxed child (`mirobody-extract`): hostile PDFs end their reader and
//! nothing else, honest ones are read, and uploads' text follows from a per-person queue that
//! resumes after a restart and serves people in turn.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mirobody_testkit::hostile;
use mirobody_tools::extract::{ExtractError, ExtractLimits, Extractor};
use mirobody_tools::health::{HealthStore, TextState};
use mirobody_tools::reading::TextReader;
use mirobody_tools::uploads::{UploadLimits, Uploader, store_upload};
use serde_json::json;

use crate::support::{Env, router};

/// Readers of the `mirobody-extract` binary with tight limits, so an attack ends quickly.
pub(crate) fn extractor(max_running: usize) -> Extractor {
    let mut limits = ExtractLimits::default();
    limits.memory_bytes = 512 << 20;
    limits.cpu_seconds = 3;
    limits.deadline = Duration::from_secs(10);
    limits.max_running = max_running;
    Extractor::new(env!("CARGO_BIN_EXE_mirobody-extract"), Vec::new(), limits)
}

#[tokio::test]
async fn an_honest_pdf_is_read_in_the_child() {
    let text = extractor(1).extract_document(hostile::text_pdf("Glucose 5.4 mmol/L")).await.unwrap();
    assert!(text.as_deref().is_some_and(|t| t.contains("Glucose 5.4 mmol/L")), "{text:?}");
}

#[tokio::test]
async fn hostile_pdfs_end_their_reader_and_nothing_else() {
    let extractor = extractor(2);
    let attacks = [
        ("a form that draws itself", hostile::self_drawing_form_pdf()),
        ("a double-deflated gigabyte", hostile::deflate_bomb_pdf(1 << 30)),
        ("a ten-fold fan-out 14 levels deep", hostile::fan_out_pdf(14, 10)),
    ];
    for (what, pdf) in attacks {
        let started = Instant::now();
        let outcome = extractor.extract_document(pdf).await;
        eprintln!("{what}: {outcome:?} after {:?}", started.elapsed());
        // The reader is stopped at its limits: well before the deadline plus a margin.
        assert!(started.elapsed() < Duration::from_secs(20), "{what} took {:?}", started.elapsed());
        match outcome {
            Err(ExtractError::CouldNotRead | ExtractError::Damaged(_)) => {}
            other => panic!("{what} was answered {other:?}"),
        }
        // And the next document is read as if nothing had happened.
        let honest = extractor.extract_document(hostile::text_pdf("HbA1c 5.9 %")).await.unwrap();
        assert!(honest.is_some_and(|t| t.contains("HbA1c 5.9 %")), "after {what}");
    }
}

#[tokio::test]
async fn a_reader_that_cannot_start_or_answers_garbage_could_not_read() {
    let mut limits = ExtractLimits::default();
    limits.deadline = Duration::from_secs(5);
    let missing = Extractor::new("/nonexistent/mirobody-extract", Vec::new(), limits.clone());
    assert!(matches!(missing.extract_document(hostile::text_pdf("x")).await, Err(ExtractError::CouldNotRead)));
    // A program that is no reader at all: `true` answers nothing and exits 0.
    let wrong = Extractor::new("true", Vec::new(), limits);
    assert!(matches!(wrong.extract_document(hostile::text_pdf("x")).await, Err(ExtractError::CouldNotRead)));
}

/// An environment whose uploads go through an uploader with text readers.
fn with_reader(env: Env, reader: &TextReader) -> (Env, Uploader) {
    let uploader = Uploader::new(env.backends.clone(), UploadLimits::default()).with_reader(reader.clone());
    let for_tools = uploader.clone();
    let router = router(&env.backends, move |mut b| {
        b.extensions.insert(for_tools);
        b
    });
    (Env { router, ..env }, uploader)
}

#[tokio::test]
async fn an_upload_is_answered_first_and_its_text_follows() {
    let env = Env::sqlite().await;
    let reader = TextReader::new(env.backends.clone(), extractor(1));
    reader.start();
    let (env, uploader) = with_reader(env, &reader);
    let uploaded = uploader.store("alice", "labs.pdf", None, hostile::text_pdf("Glucose 5.4 mmol/L")).await.unwrap();
    assert!(uploaded.text_pending && !uploaded.has_text, "{uploaded:?}");
    // read_file waits for the text of a document read a moment ago.
    let client = env.user("alice").await;
    let read = client.tool("read_file", json!({"file_key": uploaded.file_key})).await;
    assert!(read.ok()["content"].as_str().unwrap().contains("Glucose 5.4 mmol/L"), "{}", read.body);
    let listed = client.tool("list_files", json!({})).await;
    assert_eq!(listed.ok()["files"][0]["has_text"], true);
    assert!(listed.ok()["files"][0].get("text").is_none(), "{}", listed.body);
    // Bob never sees it, waiting or read.
    let bob = env.user("bob").await;
    assert!(bob.tool("read_file", json!({"file_key": uploaded.file_key})).await.tool_error().contains("not found"));
}

#[tokio::test]
async fn a_hostile_upload_is_stored_unreadable_and_says_why() {
    let env = Env::sqlite().await;
    let reader = TextReader::new(env.backends.clone(), extractor(1));
    reader.start();
    let (env, uploader) = with_reader(env, &reader);
    let uploaded = uploader.store("mallory", "x.pdf", None, hostile::self_drawing_form_pdf()).await.unwrap();
    let file = reader.settled("mallory", &uploaded.file_key, Duration::from_secs(30)).await.unwrap();
    let TextState::Unreadable(why) = &file.text_state else { panic!("{file:?}") };
    assert!(why.contains("could not be read") || why.contains("damaged"), "{why}");
    let client = env.user("mallory").await;
    let listed = client.tool("list_files", json!({})).await;
    assert_eq!(listed.ok()["files"][0]["text_error"], json!(why));
    // The file itself is kept, as a link.
    let read = client.tool("read_file", json!({"file_key": uploaded.file_key})).await;
    assert!(read.ok()["url"].is_string(), "{}", read.body);
}

#[tokio::test]
async fn queued_text_is_read_after_a_restart() {
    let env = Env::sqlite().await;
    // Stored while no reader runs (the process ended before it read it).
    let stored = store_upload(
        &env.backends,
        &UploadLimits::default(),
        "alice",
        "visit.pdf",
        None,
        hostile::text_pdf("Blood pressure 120/80"),
    )
    .await
    .unwrap();
    let waiting = env.backends.sql().file("alice", &stored.file_key).await.unwrap().unwrap();
    assert_eq!(waiting.text_state, TextState::Waiting);
    // The store reopened by a new process: its readers find the file on their own.
    let reopened = Arc::new(mirobody_tools::backends::open(&crate::support::config_in(env.dir.path())).await.unwrap());
    let reader = TextReader::new(reopened.clone(), extractor(1));
    reader.start();
    let file = reader.settled("alice", &stored.file_key, Duration::from_secs(30)).await.unwrap();
    assert_eq!(file.text_state, TextState::Settled, "{file:?}");
    let text = reopened.storage().unwrap().get(file.text_key.as_deref().unwrap()).await.unwrap();
    assert!(String::from_utf8_lossy(&text).contains("Blood pressure 120/80"));
}

#[tokio::test]
async fn one_persons_queue_does_not_hold_up_another() {
    let env = Env::sqlite().await;
    // One reader: Mallory's documents each take it to its CPU limit.
    let reader = TextReader::new(env.backends.clone(), extractor(1));
    let (_env, uploader) = with_reader(env, &reader);
    let mut mallory = Vec::new();
    for i in 0..4 {
        let name = format!("slow-{i}.pdf");
        mallory.push(uploader.store("mallory", &name, None, hostile::fan_out_pdf(14, 10)).await.unwrap().file_key);
    }
    let bob = uploader.store("bob", "labs.pdf", None, hostile::text_pdf("LDL 2.1 mmol/L")).await.unwrap();
    reader.start();
    let file = reader.settled("bob", &bob.file_key, Duration::from_secs(60)).await.unwrap();
    assert_eq!(file.text_state, TextState::Settled);
    // Bob was served after at most one of Mallory's four.
    let sql = _env.backends.sql();
    let mut settled = 0;
    for key in &mallory {
        if sql.file("mallory", key).await.unwrap().unwrap().text_state != TextState::Waiting {
            settled += 1;
        }
    }
    assert!(settled <= 1, "{settled} of mallory's documents were read before bob's");
}

/// How long the fuzz run starts new documents; what is running then is waited for.
const FUZZ_TIME: Duration = Duration::from_secs(30);

// One mutation of `original`, chosen and placed by `seed`: bytes flipped, a range zeroed, the
// file cut short, a chunk repeated, or a drawing operator spliced in.
fn mutate(original: &[u8], seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
    let mut next = move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % below.max(1) as u64) as usize
    };
    let mut bytes = original.to_vec();
    let len = bytes.len();
    match seed % 5 {
        0 => {
            for _ in 0..1 + next(16) {
                let at = next(len);
                bytes[at] ^= 1 << next(8);
            }
        }
        1 => {
            let at = next(len);
            let end = (at + 1 + next(4096)).min(len);
            bytes[at..end].fill(0);
        }
        2 => bytes.truncate(next(len).max(1)),
        3 => {
            let at = next(len);
            let chunk: Vec<u8> = bytes[at..(at + 1 + next(2048)).min(len)].to_vec();
            let to = next(len);
            bytes.splice(to..to, chunk.iter().copied().cycle().take(chunk.len() * (1 + next(8))));
        }
        _ => {
            let to = next(len);
            bytes.splice(to..to, b" q /X1 Do /Fm0 Do Q BT /F1 1 Tf (x) Tj ET ".iter().copied());
        }
    }
    bytes
}

#[tokio::test]
async fn mutated_real_documents_never_hurt_the_caller() {
    let peers = mirobody_testkit::Peers::new(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("external"));
    let documents = match peers.real_documents() {
        Ok(documents) => documents,
        Err(why) => return mirobody_testkit::skip(&format!("no real documents: {why}")),
    };
    let extractor = extractor(2);
    // The originals first: the valid ones are read.
    let mut read = 0;
    for (name, bytes) in &documents {
        if let Ok(Some(text)) = extractor.extract_document(bytes.clone()).await {
            read += usize::from(!text.trim().is_empty());
        } else {
            eprintln!("{name}: no text");
        }
    }
    assert!(read >= 3, "only {read} of {} real documents gave text", documents.len());
    // Then mutations of each, two at a time, for a bounded time.
    let started = Instant::now();
    let mut runs = 0u64;
    let mut outcomes = std::collections::BTreeMap::<&str, u32>::new();
    while started.elapsed() < FUZZ_TIME {
        let pair: Vec<_> = (0..2)
            .map(|i| {
                let seed = runs * 2 + i;
                let (_, original) = &documents[(seed as usize / 5) % documents.len()];
                let extractor = extractor.clone();
                let mutated = mutate(original, seed);
                tokio::spawn(async move {
                    let one = Instant::now();
                    (extractor.extract_document(mutated).await, one.elapsed())
                })
            })
            .collect();
        for run in pair {
            let (outcome, took) = run.await.expect("the caller's task survived");
            assert!(took < Duration::from_secs(20), "a reader ran for {took:?}");
            let kind = match outcome {
                Ok(Some(_)) => "text",
                Ok(None) => "no text",
                Err(ExtractError::CouldNotRead) => "could not read",
                Err(_) => "damaged",
            };
            *outcomes.entry(kind).or_default() += 1;
        }
        runs += 1;
    }
    eprintln!("{} mutated documents read in {:?}: {outcomes:?}", runs * 2, started.elapsed());
    assert!(runs >= 4, "only {runs} rounds ran");
    // The readers are still there for an honest document.
    let honest = extractor.extract_document(hostile::text_pdf("LDL 2.1 mmol/L")).await.unwrap();
    assert!(honest.is_some_and(|t| t.contains("LDL 2.1")));
}

#[tokio::test]
async fn poppler_reads_pdfs_in_the_same_sandbox() {
    let Some(pdftotext) =
        ["/usr/bin/pdftotext", "/usr/local/bin/pdftotext"].into_iter().find(|p| std::path::Path::new(p).exists())
    else {
        return mirobody_testkit::skip("poppler's pdftotext is not installed (apt-get install poppler-utils)");
    };
    let mut limits = ExtractLimits::default();
    limits.memory_bytes = 512 << 20;
    limits.cpu_seconds = 3;
    limits.deadline = Duration::from_secs(10);
    limits.pdftotext = Some(pdftotext.into());
    let extractor = Extractor::new(env!("CARGO_BIN_EXE_mirobody-extract"), Vec::new(), limits);
    let text = extractor.extract_document(hostile::text_pdf("Glucose 5.4 mmol/L")).await.unwrap();
    assert!(text.as_deref().is_some_and(|t| t.contains("Glucose 5.4 mmol/L")), "{text:?}");
    for (what, pdf) in [
        ("a form that draws itself", hostile::self_drawing_form_pdf()),
        ("a double-deflated gigabyte", hostile::deflate_bomb_pdf(1 << 30)),
        ("a ten-fold fan-out", hostile::fan_out_pdf(14, 10)),
        ("not a PDF at all", b"%PDF-1.4\n garbage".to_vec()),
    ] {
        let started = Instant::now();
        let outcome = extractor.extract_document(pdf).await;
        eprintln!("pdftotext, {what}: {outcome:?} after {:?}", started.elapsed());
        assert!(started.elapsed() < Duration::from_secs(20), "{what} took {:?}", started.elapsed());
        // Whatever poppler makes of it, an answer comes, and no text out of a bomb's spaces.
        assert!(!matches!(&outcome, Ok(Some(text)) if text.len() > 1 << 20), "{what}");
    }
    let honest = extractor.extract_document(hostile::text_pdf("HbA1c 5.9 %")).await.unwrap();
    assert!(honest.is_some_and(|t| t.contains("HbA1c 5.9 %")));
}

// Eight uploads at once against a quota of two files: two stored, six refused, nothing left of
// the six.
async fn parallel_uploads_past_the_quota(env: &Env) {
    let mut limits = UploadLimits::default();
    limits.max_files_per_user = 2;
    let uploads: Vec<_> = (0..8)
        .map(|i| {
            let backends = env.backends.clone();
            let limits = limits.clone();
            tokio::spawn(async move {
                let name = format!("note-{i}.txt");
                store_upload(&backends, &limits, "alice", &name, None, format!("note {i}").into_bytes()).await
            })
        })
        .collect();
    let mut stored = 0;
    for upload in uploads {
        match upload.await.unwrap() {
            Ok(_) => stored += 1,
            Err(e) => assert!(matches!(e, mirobody_tools::uploads::UploadError::Quota(_)), "{e:?}"),
        }
    }
    assert_eq!(stored, 2);
    assert_eq!(env.backends.sql().files("alice").await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_uploads_past_the_quota_store_exactly_the_quota_on_sqlite() {
    parallel_uploads_past_the_quota(&Env::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_uploads_past_the_quota_store_exactly_the_quota_on_postgres() {
    let Some(env) = Env::postgres("extraction::parallel_uploads_past_the_quota").await else { return };
    parallel_uploads_past_the_quota(&env).await;
}
