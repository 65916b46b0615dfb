//! Documents read in a sandboxed child (`mirobody-extract`): hostile PDFs end their reader and
//! nothing else, honest ones are read, and uploads' text follows from a per-person queue that
//! resumes after a restart and serves people in turn.

use mirobody_health::prelude::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mirobody_health::{HealthStore, TextState};
use mirobody_testkit::hostile;
use mirobody_tools::extract::{ExtractError, ExtractLimits, Extractor};
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
    let reopened = Arc::new(mirobody_store::open(&crate::support::config_in(env.dir.path())).await.unwrap());
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

/// A PDF of `pages` pages of 60 lines each (about 4 KiB of text a page), with offsets right.
fn long_pdf(pages: usize) -> Vec<u8> {
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            (0..pages).map(|p| format!("{} 0 R", 4 + 2 * p)).collect::<Vec<_>>().join(" ")
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
    ];
    for p in 0..pages {
        let lines: String = (0..60)
            .map(|l| format!("(Page {p} line {l}: Glucose 5.4 mmol/L, HbA1c 5.9 %, LDL 2.1 mmol/L) Tj T*\n"))
            .collect();
        let content = format!("BT /F1 9 Tf 40 780 Td 12 TL\n{lines}ET");
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> \
             /Contents {} 0 R >>",
            5 + 2 * p
        ));
        objects.push(format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()));
    }
    hostile::pdf(&objects)
}

#[tokio::test]
async fn a_reader_past_the_text_cap_is_stopped_and_its_text_so_far_is_the_answer() {
    let Some(pdftotext) = pdftotext() else {
        return mirobody_testkit::skip("poppler's pdftotext is not installed (apt-get install poppler-utils)");
    };
    // About 160 KiB of text: past the cap, what the status line may take and a full pipe, so a
    // reader left to write on blocks until its deadline.
    let pdf = long_pdf(40);
    for poppler in [Some(pdftotext), None] {
        let mut limits = ExtractLimits::default();
        limits.deadline = Duration::from_secs(20);
        limits.max_text_bytes = 1000;
        limits.pdftotext = poppler.map(Into::into);
        let extractor = Extractor::new(env!("CARGO_BIN_EXE_mirobody-extract"), Vec::new(), limits);
        let started = Instant::now();
        let text = extractor.extract_document(pdf.clone()).await.unwrap().expect("text");
        let took = started.elapsed();
        assert!(took < Duration::from_secs(10), "{poppler:?}: answered after {took:?}, at the deadline");
        assert!(text.len() <= 1000 && text.len() > 500, "{poppler:?}: {} bytes", text.len());
        assert!(text.contains("Page 0 line 0: Glucose 5.4 mmol/L"), "{poppler:?}: {text:?}");
        // The cap is the only thing that stopped it: all the text is there below it.
        limits_allow_all(&extractor, &pdf, poppler).await;
    }
}

// With the default cap, the whole of the long PDF's text is read.
async fn limits_allow_all(capped: &Extractor, pdf: &[u8], poppler: Option<&str>) {
    let mut limits = capped.limits().clone();
    limits.max_text_bytes = ExtractLimits::default().max_text_bytes;
    let extractor = Extractor::new(env!("CARGO_BIN_EXE_mirobody-extract"), Vec::new(), limits);
    let text = extractor.extract_document(pdf.to_vec()).await.unwrap().expect("text");
    assert!(text.len() > 100_000 && text.contains("Page 39 line 59"), "{poppler:?}: {} bytes", text.len());
}

#[tokio::test]
async fn a_pdftotext_installed_outside_the_system_directories_runs_in_the_sandbox() {
    let Some(pdftotext) = pdftotext() else {
        return mirobody_testkit::skip("poppler's pdftotext is not installed (apt-get install poppler-utils)");
    };
    // As under /opt: only its own directory is opened to it, beside the system's libraries.
    let home = tempfile::tempdir().unwrap();
    let copy = home.path().join("pdftotext");
    std::fs::copy(pdftotext, &copy).unwrap();
    let mut limits = ExtractLimits::default();
    limits.deadline = Duration::from_secs(20);
    limits.pdftotext = Some(copy);
    let extractor = Extractor::new(env!("CARGO_BIN_EXE_mirobody-extract"), Vec::new(), limits);
    let text = extractor.extract_document(hostile::text_pdf("Glucose 5.4 mmol/L")).await.unwrap();
    assert!(text.as_deref().is_some_and(|t| t.contains("Glucose 5.4 mmol/L")), "{text:?}");
}

fn pdftotext() -> Option<&'static str> {
    ["/usr/bin/pdftotext", "/usr/local/bin/pdftotext"].into_iter().find(|p| std::path::Path::new(p).exists())
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

#[tokio::test]
async fn a_file_no_one_announced_is_found_by_the_timed_rescan() {
    let env = Env::sqlite().await;
    let reader = TextReader::new(env.backends.clone(), extractor(1)).with_rescan(Duration::from_millis(200));
    reader.start();
    // Let the first rescan pass, then store a file no reader is told of, claimed by a
    // process that is gone (its lease already lapsed).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let limits = UploadLimits::default();
    let pdf = hostile::text_pdf("Ferritin 80 ug/L");
    let stored = store_upload(&env.backends, &limits, "alice", "iron.pdf", None, pdf).await.unwrap();
    let claimed = env.backends.sql().claim_text("alice", -1).await.unwrap().expect("claimed");
    assert_eq!(claimed.file_key, stored.file_key);
    // Read well before the default 30 s rescan would find it.
    let file = reader.settled("alice", &stored.file_key, Duration::from_secs(15)).await.unwrap();
    assert_eq!(file.text_state, TextState::Settled, "{file:?}");
}

// Readers of several instances claiming one person's queue at once each take a file of their
// own while any is unclaimed: none loses a race and sees an empty queue.
async fn racing_claims_each_take_a_file(env: &Env) {
    let limits = UploadLimits::default();
    for i in 0..6 {
        let pdf = hostile::text_pdf(&format!("note {i}"));
        store_upload(&env.backends, &limits, "alice", &format!("n{i}.pdf"), None, pdf).await.unwrap();
    }
    let claims: Vec<_> = (0..6)
        .map(|_| {
            let sql = env.backends.sql().clone();
            tokio::spawn(async move { sql.claim_text("alice", 60_000).await })
        })
        .collect();
    let mut keys = std::collections::HashSet::new();
    for claim in claims {
        let claimed = claim.await.unwrap().unwrap().expect("a file for every reader");
        assert!(keys.insert(claimed.file_key), "one file claimed twice");
    }
    assert_eq!(env.backends.sql().claim_text("alice", 60_000).await.unwrap(), None, "all claimed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_claims_each_take_a_file_on_sqlite() {
    racing_claims_each_take_a_file(&Env::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_claims_each_take_a_file_on_postgres() {
    let Some(env) = Env::postgres("extraction::racing_claims_each_take_a_file").await else { return };
    racing_claims_each_take_a_file(&env).await;
}

#[tokio::test]
async fn a_file_storage_fails_to_give_stays_waiting_to_be_tried_again() {
    let env = Env::sqlite().await;
    let limits = UploadLimits::default();
    let pdf = |text: &str| hostile::text_pdf(text);
    let lost = store_upload(&env.backends, &limits, "alice", "a.pdf", None, pdf("Iron 12")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let next = store_upload(&env.backends, &limits, "alice", "b.pdf", None, pdf("Zinc 14")).await.unwrap();
    // Storage cannot give the first back (an outage, as far as the reader can tell).
    env.backends.storage().unwrap().delete(&lost.file_key).await.unwrap();
    let reader = TextReader::new(env.backends.clone(), extractor(1));
    reader.start();
    // The reader goes past it to the next file, which it reads.
    let read = reader.settled("alice", &next.file_key, Duration::from_secs(15)).await.unwrap();
    assert_eq!(read.text_state, TextState::Settled, "{read:?}");
    // The first is not written off: it waits, claimed, to be tried again when its claim lapses.
    let waiting = env.backends.sql().file("alice", &lost.file_key).await.unwrap().unwrap();
    assert_eq!(waiting.text_state, TextState::Waiting, "{waiting:?}");
    assert_eq!(env.backends.sql().claim_text("alice", 60_000).await.unwrap(), None, "still claimed");
}
