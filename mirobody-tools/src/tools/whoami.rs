//! `whoami`: confirms the caller is signed in and names their session.
//!
//! Like upstream it does not return the user id (a model has no use for it, and it should not
//! echo identifiers into transcripts); unlike upstream the session id is the real one when the
//! transport or auth layer sets it, and `null` rather than `""` when there is none.

use mirobody_core::{ToolError, ToolResult, UserInfo, tool};
use serde_json::{Map, Value, json};

use super::caller;

/// Confirm the caller is authenticated and return their session identifier.
#[tool(annotations(read_only, idempotent))]
async fn whoami(user: &UserInfo) -> Result<ToolResult, ToolError> {
    caller(user)?;
    let mut out = Map::new();
    out.insert("authenticated".into(), json!(true));
    out.insert("session_id".into(), user.session_id().map_or(Value::Null, Value::from));
    if user.subject_user_id().is_some() {
        out.insert("acting_for_member".into(), json!(true));
    }
    Ok(ToolResult::structured(out))
}

#[cfg(test)]
mod tests {
    use futures::executor::block_on;
    use mirobody_core::{CallError, Registry, ToolContext, UserInfo};
    use serde_json::json;

    fn call(user: &UserInfo) -> Result<mirobody_core::ToolResult, CallError> {
        let registry = Registry::builder().tool(super::whoami_tool()).build().unwrap();
        block_on(registry.call("whoami", json!({}), user, &ToolContext::new()))
    }

    #[test]
    fn says_who_without_the_user_id() {
        let result = call(&UserInfo::authenticated("u-secret").with_session("s1")).unwrap();
        assert_eq!(
            result.structured_content().unwrap(),
            json!({"authenticated": true, "session_id": "s1"}).as_object().unwrap()
        );
        assert!(!result.first_text().unwrap().contains("u-secret"));
        let acting = call(&UserInfo::authenticated("u").with_subject("m")).unwrap();
        assert_eq!(acting.structured_content().unwrap()["acting_for_member"], true);
        assert_eq!(acting.structured_content().unwrap()["session_id"], json!(null));
    }

    #[test]
    fn refuses_anonymous_callers_and_unknown_arguments() {
        assert!(matches!(call(&UserInfo::anonymous()), Err(CallError::Unauthenticated { .. })));
        let registry = mirobody_core::Registry::builder().tool(super::whoami_tool()).build().unwrap();
        let err = block_on(registry.call(
            "whoami",
            json!({"user_id": "other"}),
            &UserInfo::authenticated("u"),
            &ToolContext::new(),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("unknown argument 'user_id'"), "{err}");
    }
}
