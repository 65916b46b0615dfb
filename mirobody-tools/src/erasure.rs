//! Deleting one thing a person holds, for the `delete_health_data` tool, the server's
//! `POST /delete` route and its CLI alike: an uploaded file (its index entry, the values
//! imported from it, its objects in storage), one value, or one whole import (the values it
//! stored go, those it replaced are served again: `RecordStore::delete_import`).

use std::sync::Arc;

use mirobody_core::ToolContext;
use mirobody_core::backend::{BackendError, Storage};
use mirobody_health::PersonalData;

/// The longest id a deletion names.
pub const MAX_ID_CHARS: usize = 512;

/// What is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeleteKind {
    /// An uploaded file by its key, with the observations imported from it.
    File,
    /// One observation or chart record by its source id (`Observation/abc`).
    Value,
    /// One whole import, by its id.
    Import,
}

impl DeleteKind {
    /// The kinds, as their names.
    pub const NAMES: [&'static str; 3] = ["file", "value", "import"];

    /// The kind named `name` (`file`, `value`, `import`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "file" => Some(Self::File),
            "value" => Some(Self::Value),
            "import" => Some(Self::Import),
            _ => None,
        }
    }

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::File => "file",
            Self::Value => "value",
            Self::Import => "import",
        }
    }
}

/// The person's data to delete from, as the server puts it in the context's extensions.
pub fn personal_data<'a>(ctx: &ToolContext<'a>) -> Option<&'a dyn PersonalData> {
    ctx.extension::<Arc<dyn PersonalData>>().map(|store| store.as_ref())
}

/// Deletes `owner`'s thing of `kind` named `id`: whether there was one of theirs (another
/// person's is not found, as one that does not exist). A file's objects go from `storage`
/// after its entry: a failure there is logged and leaves only bytes nobody can reach.
pub async fn delete_one(
    store: &dyn PersonalData,
    storage: Option<&dyn Storage>,
    owner: &str,
    kind: DeleteKind,
    id: &str,
) -> Result<bool, BackendError> {
    let id = id.trim();
    if id.is_empty() || id.chars().count() > MAX_ID_CHARS {
        return Err(BackendError::new(format!(
            "Give the {} to delete, at most {MAX_ID_CHARS} characters.",
            what(kind)
        )));
    }
    match kind {
        DeleteKind::Value => store.delete_value(owner, id).await,
        DeleteKind::File => {
            let Some(file) = store.delete_file_entry(owner, id).await? else { return Ok(false) };
            if let Some(storage) = storage {
                let keys: Vec<String> = std::iter::once(file.file_key).chain(file.text_key).collect();
                remove_objects(storage, &keys).await;
            }
            Ok(true)
        }
        DeleteKind::Import => {
            // Import ids are the store's numbers: anything else names none of the person's.
            let Ok(import_id) = id.parse::<i64>() else { return Ok(false) };
            Ok(store.delete_import(owner, import_id).await?.is_some())
        }
    }
}

/// Deletes each of `keys` from `storage` with its sidecars (`.trans` text, `.meta`): how many
/// objects could not be deleted (an object already gone is deleted).
pub async fn remove_objects(storage: &dyn Storage, keys: &[String]) -> usize {
    let mut failed = 0;
    for key in keys {
        for object in [key.clone(), format!("{key}.trans"), format!("{key}.meta")] {
            if let Err(e) = storage.delete(&object).await {
                failed += 1;
                tracing::warn!(error = %e, "an object of a deleted file could not be deleted");
            }
        }
    }
    failed
}

fn what(kind: DeleteKind) -> &'static str {
    match kind {
        DeleteKind::File => "file_key",
        DeleteKind::Value => "value's id (Observation/<id>, Condition/<id>...)",
        DeleteKind::Import => "import's id",
    }
}
