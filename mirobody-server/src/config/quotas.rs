//! The `quotas` settings: how much of what one person keeps the server bounds, each bound
//! checked and taken with the write it bounds.

use serde::Deserialize;

/// The `quotas` section. A write past a bound is refused with a message saying so (a tool
/// error for `remember`, 409 for `POST /circle/invites`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct QuotaSettings {
    /// The most memories one person keeps (`remember`).
    pub max_memories_per_user: u64,
    /// The most care-circle invitations one person has waiting for an answer (accepted,
    /// declined and withdrawn ones no longer count).
    pub max_invitations_per_user: u64,
    /// The most FHIR Observations one person keeps: an import past it is refused whole (413).
    pub max_observations_per_user: u64,
}

impl Default for QuotaSettings {
    fn default() -> Self {
        let store = mirobody_store::StoreQuotas::default();
        QuotaSettings {
            max_memories_per_user: store.max_memories_per_user,
            max_invitations_per_user: store.max_pending_invitations_per_user,
            max_observations_per_user: store.max_observations_per_user,
        }
    }
}

impl QuotaSettings {
    /// The bounds the store keeps.
    pub fn store_quotas(&self) -> mirobody_store::StoreQuotas {
        let mut quotas = mirobody_store::StoreQuotas::default();
        quotas.max_memories_per_user = self.max_memories_per_user;
        quotas.max_pending_invitations_per_user = self.max_invitations_per_user;
        quotas.max_observations_per_user = self.max_observations_per_user;
        quotas
    }

    /// Every bound is at least 1: a bound of 0 would refuse every write.
    pub(super) fn validate(&self) -> Result<(), String> {
        for (key, value) in [
            ("quotas.max_memories_per_user", self.max_memories_per_user),
            ("quotas.max_invitations_per_user", self.max_invitations_per_user),
            ("quotas.max_observations_per_user", self.max_observations_per_user),
        ] {
            if value == 0 {
                return Err(format!("{key} must be at least 1"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn quotas_have_defaults_and_reach_the_store_and_zero_is_refused() {
        let defaults = Config::load(None, env(&[])).unwrap().quotas.store_quotas();
        assert_eq!((defaults.max_memories_per_user, defaults.max_pending_invitations_per_user), (10_000, 50));
        let vars =
            [("MIROBODY_QUOTAS__MAX_MEMORIES_PER_USER", "7"), ("MIROBODY_QUOTAS__MAX_INVITATIONS_PER_USER", "3")];
        let store = Config::load(None, env(&vars)).unwrap().quotas.store_quotas();
        assert_eq!((store.max_memories_per_user, store.max_pending_invitations_per_user), (7, 3));
        let err = Config::load(None, env(&[("MIROBODY_QUOTAS__MAX_INVITATIONS_PER_USER", "0")])).unwrap_err();
        assert!(err.to_string().contains("quotas.max_invitations_per_user must be at least 1"), "{err}");
        let err = Config::load(None, env(&[("MIROBODY_QUOTAS__MAX_MEMORIES", "7")])).unwrap_err();
        assert!(err.to_string().contains("max_memories"), "{err}");
    }
}
