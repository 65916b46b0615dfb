//! Whose health data a tool reads: the caller, or a care-circle member named as upstream named
//! them (a self word, an id, a nickname or email, or a unique part of one), but only among the
//! members who share with the caller, so that no tool can be used to learn who else exists.
//!
//! Upstream's "single substring hit" picked whoever happened to contain `a`; a part of a name
//! must now be at least three characters, and two matches are an ambiguity the model must
//! resolve. Every read re-checks access on its own: this only picks the subject.

use mirobody_core::{ToolContext, ToolError, UserInfo};

use super::fail;
use mirobody_health::{CircleMember, HealthStore};

/// Words that name the caller.
const SELF_WORDS: [&str; 6] = ["me", "self", "myself", "i", "my", "mine"];
/// The shortest part of a nickname or email that may name a member.
pub(crate) const MIN_PARTIAL_MATCH: usize = 3;
/// The most characters in `member`.
pub(crate) const MAX_MEMBER_CHARS: usize = 200;

/// The subject `wanted` names for `me` (empty or absent: the caller, or the member the caller
/// acts for), and how to call them in an answer ("you", or the member's nickname). Another
/// person's data is noted for the access log before it is read
/// ([`ToolContext::reads_data_of`]): when the log cannot take the note, nothing is read.
pub(crate) async fn subject(
    wanted: Option<&str>,
    me: &str,
    user: &UserInfo,
    db: &dyn HealthStore,
    ctx: &ToolContext<'_>,
) -> Result<(String, String), ToolError> {
    let wanted = wanted.map(str::trim).unwrap_or_default();
    if wanted.chars().count() > MAX_MEMBER_CHARS {
        return Err(ToolError::new(format!("'member' is too long: at most {MAX_MEMBER_CHARS} characters.")));
    }
    let is_self = wanted == me || SELF_WORDS.contains(&wanted.to_lowercase().as_str());
    let named = if wanted.is_empty() {
        match user.subject_user_id().filter(|s| *s != me) {
            // The member the caller acts for; the read below checks the share again.
            Some(subject) => {
                let sharers = db.health_sharers(me).await.map_err(fail)?;
                let name = sharers.iter().find(|m| m.user_id == subject).map_or(subject, label);
                (subject.to_owned(), name.to_owned())
            }
            None => (me.to_owned(), "you".to_owned()),
        }
    } else if is_self {
        (me.to_owned(), "you".to_owned())
    } else {
        let sharers = db.health_sharers(me).await.map_err(fail)?;
        let member = resolve(wanted, &sharers)?;
        (member.user_id.clone(), label(member).to_owned())
    };
    if named.0 != me {
        ctx.reads_data_of(&named.0).await.map_err(fail)?;
    }
    Ok(named)
}

fn label(member: &CircleMember) -> &str {
    member.nickname.as_deref().or(member.email.as_deref()).unwrap_or(&member.user_id)
}

fn available(sharers: &[CircleMember]) -> String {
    if sharers.is_empty() {
        return " Nobody has shared their health data with you yet.".into();
    }
    let mut names: Vec<&str> = sharers.iter().map(label).collect();
    names.sort_unstable_by_key(|n| n.to_lowercase());
    format!(" Available: {}.", names.join(", "))
}

/// The one sharer `wanted` names, or an error the model can act on.
fn resolve<'a>(wanted: &str, sharers: &'a [CircleMember]) -> Result<&'a CircleMember, ToolError> {
    if let Some(by_id) = sharers.iter().find(|m| m.user_id == wanted) {
        return Ok(by_id);
    }
    let wanted_lower = wanted.to_lowercase();
    let fields = |m: &'a CircleMember| m.nickname.iter().chain(m.email.iter()).map(|f| f.to_lowercase());
    let pick = |matches: Vec<&'a CircleMember>| -> Result<Option<&'a CircleMember>, ToolError> {
        match matches.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            many => {
                let names: Vec<&str> = many.iter().map(|m| label(m)).collect();
                Err(ToolError::new(format!(
                    "'{wanted}' matches more than one member ({}); say which one.",
                    names.join(", ")
                )))
            }
        }
    };
    let exact: Vec<&CircleMember> = sharers.iter().filter(|m| fields(m).any(|f| f == wanted_lower)).collect();
    if let Some(found) = pick(exact)? {
        return Ok(found);
    }
    if wanted.chars().count() >= MIN_PARTIAL_MATCH {
        let partial: Vec<&CircleMember> =
            sharers.iter().filter(|m| fields(m).any(|f| f.contains(&wanted_lower))).collect();
        if let Some(found) = pick(partial)? {
            return Ok(found);
        }
    }
    Err(ToolError::new(format!(
        "No circle member matching '{wanted}' has shared their health data with you.{}",
        available(sharers)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, nickname: Option<&str>, email: Option<&str>) -> CircleMember {
        CircleMember { user_id: id.into(), nickname: nickname.map(Into::into), email: email.map(Into::into) }
    }

    fn circle() -> Vec<CircleMember> {
        vec![
            member("u-mom", Some("Mom"), Some("ann@example.com")),
            member("u-dad", Some("Dad"), Some("bob@example.com")),
            member("u-gran", Some("Granny Ann"), None),
        ]
    }

    #[test]
    fn members_resolve_by_id_name_email_or_a_unique_part() {
        let c = circle();
        assert_eq!(resolve("u-dad", &c).unwrap().user_id, "u-dad");
        assert_eq!(resolve("mom", &c).unwrap().user_id, "u-mom");
        assert_eq!(resolve("BOB@example.com", &c).unwrap().user_id, "u-dad");
        assert_eq!(resolve("granny", &c).unwrap().user_id, "u-gran");
    }

    #[test]
    fn short_or_ambiguous_parts_do_not_pick_someone() {
        let c = circle();
        let short = resolve("a", &c).unwrap_err().to_string();
        assert!(
            short.contains("No circle member matching 'a'") && short.contains("Available: Dad, Granny Ann, Mom"),
            "{short}"
        );
        let two = resolve("ann", &c).unwrap_err().to_string();
        assert!(two.contains("more than one member"), "{two}");
        let none = resolve("Uncle", &[]).unwrap_err().to_string();
        assert!(none.contains("Nobody has shared"), "{none}");
    }
}
