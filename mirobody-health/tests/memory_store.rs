//! The contract suite on a second implementation of the store traits, plain collections in
//! memory written from the traits' documentation alone: it passes `testing::check_all`, so the
//! suite asks for what the traits promise, not for how `SqlStore` happens to answer.

#![cfg(feature = "testing")]

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use mirobody_core::backend::{BackendError, BackendResult};
use mirobody_health::fhir::{
    self, EntryInput, HealthPoint, ImportItem, NewObservation, NewRecord, Removal, Revision, Target,
};
use mirobody_health::testing::check_all;
use mirobody_health::text::{now_ms, parse_time_ms, rfc3339};
use mirobody_health::{
    CircleInvite, CircleMember, CircleOverview, CircleStore, ClaimedText, DeletedImport, FileIndex, FileQuota,
    FileRecord, HealthRecord, HealthStore, ImportCounts, ImportKind, ImportRecord, ImportSource, IndicatorSummary,
    ItemOutcome, LinkInsert, ObservationPage, QuotaExceeded, RecordStore, Series, SeriesPoint, SeriesValue, TextState,
    UploadLinkRow, UploadLinkStore,
};
use serde_json::Value;

/// The most invitations one owner has waiting.
const MAX_INVITATIONS: usize = 50;

struct Share {
    owner: String,
    reader: String,
    nickname: Option<String>,
}

#[derive(Clone)]
struct StoredObservation {
    subject: String,
    source_id: String,
    id: i64,
    time_ms: i64,
    resource: Value,
    points: Vec<HealthPoint>,
    file_key: Option<String>,
    import_id: i64,
}

#[derive(Clone)]
struct StoredRecord {
    subject: String,
    source_id: String,
    record: HealthRecord,
    time_ms: Option<i64>,
    resource: Value,
    import_id: i64,
}

/// A version no read returns, and the import that replaced or removed it.
struct Ended {
    ended_by: i64,
    version: Version,
}

enum Version {
    Observation(StoredObservation),
    Record(StoredRecord),
}

impl Version {
    fn subject(&self) -> &str {
        match self {
            Version::Observation(o) => &o.subject,
            Version::Record(r) => &r.subject,
        }
    }

    fn import_id(&self) -> i64 {
        match self {
            Version::Observation(o) => o.import_id,
            Version::Record(r) => r.import_id,
        }
    }

    /// What identifies it among the subject's values: table, kind and source id.
    fn key(&self) -> (bool, String, String) {
        match self {
            Version::Observation(o) => (true, String::new(), o.source_id.clone()),
            Version::Record(r) => (false, r.record.kind.clone(), r.source_id.clone()),
        }
    }
}

struct StoredFile {
    owner: String,
    record: FileRecord,
    claimed_until_ms: Option<i64>,
    attempts: u32,
}

struct StoredLink {
    row: UploadLinkRow,
    last_use_ms: Option<i64>,
}

impl StoredLink {
    fn works(&self, now_ms: i64) -> bool {
        self.row.expires_ms > now_ms && self.row.uses_left > 0 && !self.row.revoked
    }
}

#[derive(Default)]
struct Data {
    next_id: i64,
    emails: HashMap<String, String>,
    shares: Vec<Share>,
    invites: Vec<CircleInvite>,
    observations: Vec<StoredObservation>,
    records: Vec<StoredRecord>,
    files: Vec<StoredFile>,
    links: HashMap<[u8; 32], StoredLink>,
    imports: Vec<(String, ImportRecord)>,
    history: Vec<Ended>,
}

impl Data {
    fn next_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    fn may_read(&self, reader: &str, subject: &str) -> bool {
        reader == subject || self.shares.iter().any(|s| s.reader == reader && s.owner == subject)
    }

    /// `subject`'s values with their observation's id and file, when `reader` may read them.
    fn points(&self, reader: &str, subject: &str) -> Option<Vec<(i64, &HealthPoint, Option<&str>)>> {
        let of_subject = self.observations.iter().filter(|o| o.subject == subject);
        let points = of_subject.flat_map(|o| o.points.iter().map(move |p| (o.id, p, o.file_key.as_deref())));
        self.may_read(reader, subject).then(|| points.collect())
    }

    /// Whether `invite` is addressed to `user`, by id or by the email `user` has.
    fn addressed_to(&self, invite: &CircleInvite, user: &str) -> bool {
        match invite.invitee.contains('@') {
            true => self.emails.get(user) == Some(&invite.invitee),
            false => invite.invitee == user,
        }
    }

    /// Stores `o` for `subject` as part of `import_id`: new, a newer version (the stored one to
    /// the history), or nothing.
    fn store_observation(&mut self, subject: &str, o: &NewObservation, import_id: i64) -> (ItemOutcome, i64) {
        let file_key = self.imports.iter().find(|(_, i)| i.id == import_id).and_then(|(_, i)| i.file_key.clone());
        let found = self.observations.iter().position(|s| s.subject == subject && s.source_id == o.source_id);
        let id = match found {
            Some(at) => {
                let stored = &self.observations[at];
                if !Revision::of(&o.resource).supersedes(&Revision::of(&stored.resource), stored.resource == o.resource)
                {
                    return (ItemOutcome::Unchanged, stored.id);
                }
                let old = self.observations.remove(at);
                let id = old.id;
                self.history.push(Ended { ended_by: import_id, version: Version::Observation(old) });
                id
            }
            None => self.next_id(),
        };
        self.observations.push(StoredObservation {
            subject: subject.to_owned(),
            source_id: o.source_id.clone(),
            id,
            time_ms: o.time_ms,
            resource: o.resource.clone(),
            points: o.points.clone(),
            file_key,
            import_id,
        });
        (if found.is_some() { ItemOutcome::Updated } else { ItemOutcome::Created }, id)
    }

    fn store_record(&mut self, subject: &str, r: &NewRecord, import_id: i64) -> ItemOutcome {
        let kind = r.kind.as_str();
        let found = self
            .records
            .iter()
            .position(|s| s.subject == subject && s.record.kind == kind && s.source_id == r.source_id);
        if let Some(at) = found {
            let stored = &self.records[at];
            if !Revision::of(&r.resource).supersedes(&Revision::of(&stored.resource), stored.resource == r.resource) {
                return ItemOutcome::Unchanged;
            }
            let old = self.records.remove(at);
            self.history.push(Ended { ended_by: import_id, version: Version::Record(old) });
        }
        let record = HealthRecord {
            kind: kind.to_owned(),
            display: r.display.clone(),
            status: r.status.clone(),
            time: r.time_ms.map(rfc3339),
            detail: r.detail.clone(),
        };
        let (subject, source_id, resource) = (subject.to_owned(), r.source_id.clone(), r.resource.clone());
        self.records.push(StoredRecord { subject, source_id, record, time_ms: r.time_ms, resource, import_id });
        if found.is_some() { ItemOutcome::Updated } else { ItemOutcome::Created }
    }

    fn remove(&mut self, subject: &str, r: &Removal, import_id: i64) -> ItemOutcome {
        let version = match r.target {
            Target::Observation => self
                .observations
                .iter()
                .position(|s| s.subject == subject && s.source_id == r.source_id)
                .map(|at| Version::Observation(self.observations.remove(at))),
            Target::Record(kind) => self
                .records
                .iter()
                .position(|s| s.subject == subject && s.record.kind == kind.as_str() && s.source_id == r.source_id)
                .map(|at| Version::Record(self.records.remove(at))),
        };
        match version {
            Some(version) => {
                self.history.push(Ended { ended_by: import_id, version });
                ItemOutcome::Removed
            }
            None => ItemOutcome::Unchanged,
        }
    }

    /// The import of the value served under `key`, if any.
    fn served_import(&self, subject: &str, key: &(bool, String, String)) -> Option<i64> {
        if key.0 {
            self.observations.iter().find(|o| o.subject == subject && o.source_id == key.2).map(|o| o.import_id)
        } else {
            let mut of_subject = self.records.iter().filter(|r| r.subject == subject);
            of_subject.find(|r| r.record.kind == key.1 && r.source_id == key.2).map(|r| r.import_id)
        }
    }

    /// Undoes `subject`'s import `import_id`, as the trait says.
    fn delete_import(&mut self, subject: &str, import_id: i64) -> Option<DeletedImport> {
        let at = self.imports.iter().position(|(owner, i)| owner == subject && i.id == import_id)?;
        self.imports.remove(at);
        let mut restored = 0;
        let mut seen = Vec::new();
        let mut index = 0;
        while index < self.history.len() {
            let ended = &self.history[index];
            let mine = ended.version.subject() == subject && ended.ended_by == import_id;
            let key = ended.version.key();
            let served = self.served_import(subject, &key);
            if !mine
                || ended.version.import_id() == import_id
                || seen.contains(&key)
                || served.is_some_and(|i| i != import_id)
            {
                index += 1;
                continue;
            }
            seen.push(key.clone());
            let Ended { version, .. } = self.history.remove(index);
            self.observations.retain(|o| !(key.0 && o.subject == subject && o.source_id == key.2));
            self.records
                .retain(|r| !(!key.0 && r.subject == subject && r.record.kind == key.1 && r.source_id == key.2));
            match version {
                Version::Observation(o) => self.observations.push(o),
                Version::Record(r) => self.records.push(r),
            }
            restored += 1;
        }
        let before = self.observations.len() + self.records.len();
        self.observations.retain(|o| !(o.subject == subject && o.import_id == import_id));
        self.records.retain(|r| !(r.subject == subject && r.import_id == import_id));
        let removed = (before - self.observations.len() - self.records.len()) as u64;
        self.history.retain(|e| !(e.version.subject() == subject && e.version.import_id() == import_id));
        Some(DeletedImport::new(removed, restored))
    }

    fn member(&self, user_id: &str, nickname: Option<String>) -> CircleMember {
        CircleMember { user_id: user_id.to_owned(), nickname, email: self.emails.get(user_id).cloned() }
    }
}

/// The store: every collection behind one lock, each call one step.
#[derive(Default)]
struct MemoryStore(Mutex<Data>);

impl MemoryStore {
    fn data(&self) -> MutexGuard<'_, Data> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn point(p: &HealthPoint, file_key: Option<&str>) -> SeriesPoint {
    SeriesPoint {
        code: p.code.clone(),
        display: p.display.clone(),
        time: rfc3339(p.time_ms),
        value: p.value,
        value_text: p.value_text.clone(),
        unit: p.unit.clone(),
        file_key: file_key.map(str::to_owned),
        range: p.range.clone(),
        interpretation: p.interpretation.clone(),
    }
}

#[async_trait]
impl HealthStore for MemoryStore {
    async fn health_sharers(&self, user_id: &str) -> BackendResult<Vec<CircleMember>> {
        let data = self.data();
        let sharing = data.shares.iter().filter(|s| s.reader == user_id);
        Ok(sharing.map(|s| data.member(&s.owner, s.nickname.clone())).collect())
    }

    async fn can_read_health(&self, reader: &str, subject: &str) -> BackendResult<bool> {
        Ok(self.data().may_read(reader, subject))
    }

    async fn observations(&self, reader: &str, subject: &str, limit: u32) -> BackendResult<Option<ObservationPage>> {
        let data = self.data();
        if !data.may_read(reader, subject) {
            return Ok(None);
        }
        let mut theirs: Vec<&StoredObservation> = data.observations.iter().filter(|o| o.subject == subject).collect();
        theirs.sort_by_key(|o| std::cmp::Reverse((o.time_ms, o.id)));
        let observations = theirs.iter().take(limit as usize).map(|o| o.resource.clone()).collect();
        Ok(Some(ObservationPage { total: theirs.len() as u64, observations }))
    }

    async fn indicators(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<IndicatorSummary>>> {
        let data = self.data();
        let Some(points) = data.points(reader, subject) else { return Ok(None) };
        let mut by_code: HashMap<(String, Option<String>), IndicatorSummary> = HashMap::new();
        let mut spans: HashMap<(String, Option<String>), (i64, i64)> = HashMap::new();
        for (_, p, _) in points {
            let key = (p.code.clone(), p.unit.clone());
            let summary = by_code.entry(key.clone()).or_insert_with(|| IndicatorSummary {
                code: p.code.clone(),
                display: p.display.clone(),
                unit: p.unit.clone(),
                count: 0,
                first: String::new(),
                last: String::new(),
            });
            summary.count += 1;
            let span = spans.entry(key).or_insert((p.time_ms, p.time_ms));
            *span = (span.0.min(p.time_ms), span.1.max(p.time_ms));
        }
        let mut found: Vec<IndicatorSummary> = by_code
            .into_iter()
            .map(|(key, summary)| {
                let (first, last) = spans[&key];
                IndicatorSummary { first: rfc3339(first), last: rfc3339(last), ..summary }
            })
            .collect();
        found.sort_by(|a, b| (&a.code, &a.unit).cmp(&(&b.code, &b.unit)));
        Ok(Some(found))
    }

    async fn series(
        &self,
        reader: &str,
        subject: &str,
        code: &str,
        start_ms: i64,
        end_ms: i64,
        limit: u32,
    ) -> BackendResult<Option<Series>> {
        let data = self.data();
        let Some(points) = data.points(reader, subject) else { return Ok(None) };
        let mut in_range: Vec<_> =
            points.into_iter().filter(|(_, p, _)| p.code == code && (start_ms..end_ms).contains(&p.time_ms)).collect();
        in_range.sort_by_key(|(id, p, _)| std::cmp::Reverse((p.time_ms, *id)));
        let truncated = in_range.len() > limit as usize;
        in_range.truncate(limit as usize);
        in_range.reverse();
        let points = in_range
            .into_iter()
            .map(|(_, p, file_key)| SeriesValue {
                time: rfc3339(p.time_ms),
                value: p.value,
                value_text: p.value_text.clone(),
                unit: p.unit.clone(),
                file_key: file_key.map(str::to_owned),
                range: p.range.clone(),
                interpretation: p.interpretation.clone(),
            })
            .collect();
        Ok(Some(Series { points, truncated }))
    }

    async fn latest_values(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<SeriesPoint>>> {
        let data = self.data();
        let Some(points) = data.points(reader, subject) else { return Ok(None) };
        let mut newest: HashMap<&str, (i64, &HealthPoint, Option<&str>)> = HashMap::new();
        for (id, p, file_key) in points {
            let entry = newest.entry(&p.code).or_insert((id, p, file_key));
            if (p.time_ms, id) > (entry.1.time_ms, entry.0) {
                *entry = (id, p, file_key);
            }
        }
        let mut found: Vec<SeriesPoint> = newest.into_values().map(|(_, p, file_key)| point(p, file_key)).collect();
        found.sort_by(|a, b| a.code.cmp(&b.code));
        Ok(Some(found))
    }

    async fn health_records(&self, reader: &str, subject: &str) -> BackendResult<Option<Vec<HealthRecord>>> {
        let data = self.data();
        if !data.may_read(reader, subject) {
            return Ok(None);
        }
        let mut theirs: Vec<&StoredRecord> = data.records.iter().filter(|r| r.subject == subject).collect();
        theirs.sort_by_key(|r| (r.record.kind.clone(), std::cmp::Reverse(r.time_ms)));
        Ok(Some(theirs.into_iter().map(|r| r.record.clone()).collect()))
    }

    async fn files(&self, owner: &str) -> BackendResult<Vec<FileRecord>> {
        let data = self.data();
        let mut theirs: Vec<&StoredFile> = data.files.iter().filter(|f| f.owner == owner).collect();
        theirs.sort_by_key(|f| std::cmp::Reverse(parse_time_ms(&f.record.uploaded_at)));
        Ok(theirs.into_iter().map(|f| f.record.clone()).collect())
    }

    async fn file(&self, owner: &str, file_key: &str) -> BackendResult<Option<FileRecord>> {
        let data = self.data();
        Ok(data.files.iter().find(|f| f.owner == owner && f.record.file_key == file_key).map(|f| f.record.clone()))
    }

    async fn set_conversation_summary(&self, _owner: &str, _session_id: &str, _summary: &str) -> BackendResult<()> {
        Ok(())
    }
}

#[async_trait]
impl RecordStore for MemoryStore {
    async fn upsert_user(&self, id: &str, _display_name: Option<&str>, email: Option<&str>) -> BackendResult<()> {
        let mut data = self.data();
        match email {
            Some(email) => data.emails.insert(id.to_owned(), email.trim().to_lowercase()),
            None => data.emails.remove(id),
        };
        Ok(())
    }

    async fn begin_import(&self, subject: &str, source: &ImportSource) -> BackendResult<i64> {
        let mut data = self.data();
        let id = data.next_id();
        let record = ImportRecord::new(
            id,
            source.kind,
            source.file_key.clone(),
            source.via.clone(),
            rfc3339(now_ms()),
            ImportCounts::default(),
        );
        data.imports.push((subject.to_owned(), record));
        Ok(id)
    }

    async fn import_batch(
        &self,
        subject: &str,
        import_id: i64,
        items: &[&ImportItem],
    ) -> BackendResult<Result<Vec<ItemOutcome>, QuotaExceeded>> {
        let mut data = self.data();
        if !data.imports.iter().any(|(owner, i)| owner == subject && i.id == import_id) {
            return Err(BackendError::new(format!("There is no import {import_id} of this person's.")));
        }
        let outcomes = items
            .iter()
            .map(|item| match item {
                ImportItem::Observation(o) => data.store_observation(subject, o, import_id).0,
                ImportItem::Record(r) => data.store_record(subject, r, import_id),
                ImportItem::Remove(r) => data.remove(subject, r, import_id),
            })
            .collect();
        Ok(Ok(outcomes))
    }

    async fn finish_import(&self, subject: &str, import_id: i64, counts: &ImportCounts) -> BackendResult<()> {
        let mut data = self.data();
        if let Some((_, record)) = data.imports.iter_mut().find(|(owner, i)| owner == subject && i.id == import_id) {
            record.counts = *counts;
        }
        Ok(())
    }

    async fn imports(&self, subject: &str) -> BackendResult<Vec<ImportRecord>> {
        let data = self.data();
        Ok(data.imports.iter().rev().filter(|(owner, _)| owner == subject).map(|(_, i)| i.clone()).collect())
    }

    async fn delete_import(&self, subject: &str, import_id: i64) -> BackendResult<Option<DeletedImport>> {
        Ok(self.data().delete_import(subject, import_id))
    }

    async fn add_observations(&self, subject: &str, resources: &[Value]) -> BackendResult<Vec<i64>> {
        let mut parsed = Vec::with_capacity(resources.len());
        for (index, resource) in resources.iter().enumerate() {
            let mut resource = resource.clone();
            if let Some(fields) = resource.as_object_mut() {
                fields.entry("resourceType").or_insert_with(|| "Observation".into());
            }
            match fhir::parse_observation(&resource).map(|mut request| request.entries.pop()) {
                Ok(Some(EntryInput::Item(ImportItem::Observation(o)))) => parsed.push(o),
                Ok(Some(EntryInput::Invalid(reason))) | Err(reason) => {
                    return Err(BackendError::new(format!("observation {index}: {reason}")));
                }
                Ok(_) => return Err(BackendError::new(format!("observation {index} is not one to store"))),
            }
        }
        let import_id = self.begin_import(subject, &ImportSource::new(ImportKind::Tool)).await?;
        let mut data = self.data();
        let stored = parsed.iter().map(|o| data.store_observation(subject, o, import_id));
        Ok(stored.filter(|(outcome, _)| *outcome == ItemOutcome::Created).map(|(_, id)| id).collect())
    }
}

#[async_trait]
impl CircleStore for MemoryStore {
    async fn share_health(&self, owner: &str, reader: &str, nickname: Option<&str>) -> BackendResult<()> {
        let mut data = self.data();
        data.shares.retain(|s| !(s.owner == owner && s.reader == reader));
        data.shares.push(Share { owner: owner.into(), reader: reader.into(), nickname: nickname.map(Into::into) });
        Ok(())
    }

    async fn unshare_health(&self, owner: &str, reader: &str) -> BackendResult<bool> {
        let mut data = self.data();
        let before = data.shares.len();
        data.shares.retain(|s| !(s.owner == owner && s.reader == reader));
        Ok(data.shares.len() < before)
    }

    async fn invite_within_quota(
        &self,
        owner: &str,
        invitee: &str,
        nickname: Option<&str>,
    ) -> BackendResult<Result<i64, QuotaExceeded>> {
        let invitee = invitee.trim();
        let invitee = if invitee.contains('@') { invitee.to_lowercase() } else { invitee.to_owned() };
        if invitee.is_empty() || invitee == owner {
            return Err(BackendError::new("Name someone else to invite."));
        }
        let mut data = self.data();
        if let Some(known) = data.invites.iter_mut().find(|i| i.owner == owner && i.invitee == invitee) {
            known.nickname = nickname.map(Into::into);
            return Ok(Ok(known.id));
        }
        if data.invites.iter().filter(|i| i.owner == owner).count() >= MAX_INVITATIONS {
            return Ok(Err(QuotaExceeded::Invitations { max: MAX_INVITATIONS as u64 }));
        }
        let id = data.next_id();
        let created_at = rfc3339(now_ms());
        let invite = CircleInvite { id, owner: owner.into(), invitee, nickname: nickname.map(Into::into), created_at };
        data.invites.push(invite);
        Ok(Ok(id))
    }

    async fn accept_invite(&self, user: &str, id: i64, nickname: Option<&str>) -> BackendResult<Option<String>> {
        let mut data = self.data();
        let Some(at) = data.invites.iter().position(|i| i.id == id && data.addressed_to(i, user)) else {
            return Ok(None);
        };
        let invite = data.invites.remove(at);
        data.shares.retain(|s| !(s.owner == invite.owner && s.reader == user));
        let nickname = nickname.map(str::to_owned).or(invite.nickname);
        data.shares.push(Share { owner: invite.owner.clone(), reader: user.into(), nickname });
        Ok(Some(invite.owner))
    }

    async fn drop_invite(&self, user: &str, id: i64) -> BackendResult<bool> {
        let mut data = self.data();
        let at = data.invites.iter().position(|i| i.id == id && (i.owner == user || data.addressed_to(i, user)));
        Ok(at.map(|at| data.invites.remove(at)).is_some())
    }

    async fn leave_circle(&self, user: &str, other: &str) -> BackendResult<bool> {
        let mut data = self.data();
        let before = data.shares.len();
        data.shares.retain(|s| !((s.owner == user && s.reader == other) || (s.owner == other && s.reader == user)));
        Ok(data.shares.len() < before)
    }

    async fn circle(&self, user: &str) -> BackendResult<CircleOverview> {
        let shared_with_me = self.health_sharers(user).await?;
        let data = self.data();
        let my_readers = data.shares.iter().filter(|s| s.owner == user).map(|s| data.member(&s.reader, None)).collect();
        let invites_sent = data.invites.iter().filter(|i| i.owner == user).cloned().collect();
        let invites_received = data.invites.iter().filter(|i| data.addressed_to(i, user)).cloned().collect();
        Ok(CircleOverview { shared_with_me, my_readers, invites_sent, invites_received })
    }
}

#[async_trait]
impl FileIndex for MemoryStore {
    async fn add_file_within(&self, owner: &str, file: &FileRecord, quota: FileQuota) -> BackendResult<bool> {
        let mut data = self.data();
        if data.files.iter().any(|f| f.record.file_key == file.file_key) {
            return Err(BackendError::new("the record already exists"));
        }
        let theirs: Vec<&StoredFile> = data.files.iter().filter(|f| f.owner == owner).collect();
        let bytes: u64 = theirs.iter().map(|f| f.record.size).sum();
        if theirs.len() as u64 >= quota.max_files || bytes.saturating_add(file.size) > quota.max_bytes {
            return Ok(false);
        }
        data.files.push(StoredFile { owner: owner.into(), record: file.clone(), claimed_until_ms: None, attempts: 0 });
        Ok(true)
    }

    async fn file_usage(&self, owner: &str) -> BackendResult<(u64, u64)> {
        let data = self.data();
        let theirs: Vec<&StoredFile> = data.files.iter().filter(|f| f.owner == owner).collect();
        Ok((theirs.len() as u64, theirs.iter().map(|f| f.record.size).sum()))
    }

    async fn owners_waiting_for_text(&self) -> BackendResult<Vec<String>> {
        let data = self.data();
        let waiting = data.files.iter().filter(|f| f.record.text_state == TextState::Waiting);
        let mut owners: Vec<String> = waiting.map(|f| f.owner.clone()).collect();
        owners.sort();
        owners.dedup();
        Ok(owners)
    }

    async fn claim_text(&self, owner: &str, lease_ms: i64) -> BackendResult<Option<ClaimedText>> {
        let now = now_ms();
        let mut data = self.data();
        let oldest = data
            .files
            .iter_mut()
            .filter(|f| f.owner == owner && f.record.text_state == TextState::Waiting)
            .filter(|f| f.claimed_until_ms.is_none_or(|until| until < now))
            .min_by_key(|f| (parse_time_ms(&f.record.uploaded_at), f.record.file_key.clone()));
        Ok(oldest.map(|file| {
            file.claimed_until_ms = Some(now.saturating_add(lease_ms));
            file.attempts += 1;
            ClaimedText {
                file_key: file.record.file_key.clone(),
                mime_type: file.record.mime_type.clone(),
                attempts: file.attempts,
            }
        }))
    }

    async fn settle_text(&self, owner: &str, file_key: &str, outcome: Result<Option<&str>, &str>) -> BackendResult<()> {
        let mut data = self.data();
        if let Some(file) = data.files.iter_mut().find(|f| f.owner == owner && f.record.file_key == file_key) {
            file.claimed_until_ms = None;
            (file.record.text_state, file.record.text_key) = match outcome {
                Ok(text_key) => (TextState::Settled, text_key.map(str::to_owned)),
                Err(why) => (TextState::Unreadable(why.to_owned()), None),
            };
        }
        Ok(())
    }
}

#[async_trait]
impl UploadLinkStore for MemoryStore {
    async fn insert_upload_link(
        &self,
        token_hash: &[u8; 32],
        user_id: &str,
        now_ms: i64,
        expires_ms: i64,
        uses: u32,
        max_live: u32,
        settled_before_ms: i64,
    ) -> BackendResult<LinkInsert> {
        let mut data = self.data();
        data.links.retain(|_, link| link.row.expires_ms > now_ms);
        let rows = |data: &Data| data.links.values().filter(|link| link.row.user_id == user_id).count();
        if rows(&data) >= max_live as usize {
            data.links.retain(|_, link| {
                let settled = link.row.uses_left <= 0 && link.last_use_ms.is_none_or(|at| at < settled_before_ms);
                link.row.user_id != user_id || !(link.row.revoked || settled)
            });
        }
        if rows(&data) >= max_live as usize {
            let live = data.links.values().filter(|link| link.row.user_id == user_id && link.works(now_ms)).count();
            return Ok(LinkInsert::TooMany(live as u64));
        }
        let row = UploadLinkRow::new(user_id.to_owned(), expires_ms, i64::from(uses), false);
        data.links.insert(*token_hash, StoredLink { row, last_use_ms: None });
        Ok(LinkInsert::Stored)
    }

    async fn upload_link(&self, token_hash: &[u8; 32]) -> BackendResult<Option<UploadLinkRow>> {
        Ok(self.data().links.get(token_hash).map(|link| link.row.clone()))
    }

    async fn take_upload_link_use(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<Option<(String, i64)>> {
        let mut data = self.data();
        let Some(link) = data.links.get_mut(token_hash).filter(|link| link.works(now_ms)) else { return Ok(None) };
        link.row.uses_left -= 1;
        link.last_use_ms = Some(now_ms);
        Ok(Some((link.row.user_id.clone(), link.row.uses_left)))
    }

    async fn give_back_upload_link_use(&self, token_hash: &[u8; 32]) -> BackendResult<()> {
        if let Some(link) = self.data().links.get_mut(token_hash) {
            link.row.uses_left += 1;
        }
        Ok(())
    }

    async fn revoke_upload_link(&self, token_hash: &[u8; 32], now_ms: i64) -> BackendResult<bool> {
        let mut data = self.data();
        let Some(link) = data.links.get_mut(token_hash) else { return Ok(false) };
        let revoked = link.row.expires_ms > now_ms && !link.row.revoked;
        link.row.revoked |= revoked;
        Ok(revoked)
    }

    async fn revoke_upload_links(&self, user_id: &str, now_ms: i64) -> BackendResult<u64> {
        let mut data = self.data();
        let mut revoked = 0;
        for link in data.links.values_mut().filter(|link| link.row.user_id == user_id && link.works(now_ms)) {
            link.row.revoked = true;
            revoked += 1;
        }
        Ok(revoked)
    }

    async fn live_upload_links(&self, user_id: &str, now_ms: i64) -> BackendResult<u64> {
        let data = self.data();
        Ok(data.links.values().filter(|link| link.row.user_id == user_id && link.works(now_ms)).count() as u64)
    }
}

#[tokio::test]
async fn a_store_in_memory_keeps_every_store_contract() {
    let store = MemoryStore::default();
    check_all(&store).await;
    // Twice at once on the same store: the suite's ids never meet.
    tokio::join!(check_all(&store), check_all(&store));
}
