//! The `telemetry` settings: where traces are exported (OTLP over HTTP), under which service
//! name, and how many of them. Off unless an endpoint is given, here or in the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` variable.

use serde::Deserialize;

/// The standard variable naming an OTLP collector's base URL (`/v1/traces` is added).
const OTEL_EXPORTER_OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// The standard variable naming the full URL traces are sent to (used as it is).
const OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";

/// The `telemetry` section: traces of each request, tool call, database operation and
/// message between instances, exported over OTLP/HTTP (protobuf) to a collector.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct TelemetrySettings {
    /// The OTLP/HTTP collector's base URL, such as `http://127.0.0.1:4318` (traces go to
    /// `<url>/v1/traces`). Unset: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL) or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL) if set, else no traces are exported.
    pub otlp_endpoint: Option<String>,
    /// The `service.name` of the exported traces.
    pub service_name: String,
    /// The share of traces kept, from 0 to 1, for requests that do not say: a request whose
    /// `traceparent` says its trace is sampled (or not) is kept (or not) as it says.
    pub sampling_ratio: f64,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        TelemetrySettings { otlp_endpoint: None, service_name: "mirobody-server".into(), sampling_ratio: 1.0 }
    }
}

impl TelemetrySettings {
    /// The URL traces are sent to: `otlp_endpoint` with `/v1/traces`, else what the standard
    /// variables say (read through `env`); `None` when traces are not exported.
    pub fn traces_url(&self, env: impl Fn(&str) -> Option<String>) -> Option<String> {
        let given = |value: Option<String>| value.filter(|url| !url.trim().is_empty());
        if let Some(base) = given(self.otlp_endpoint.clone()) {
            return Some(signal_url(&base));
        }
        if let Some(url) = given(env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) {
            return Some(url);
        }
        given(env(OTEL_EXPORTER_OTLP_ENDPOINT)).map(|base| signal_url(&base))
    }

    /// The endpoint is an http(s) URL, the ratio within 0 and 1, the name not empty.
    pub(super) fn validate(&self) -> Result<(), String> {
        if let Some(url) = &self.otlp_endpoint
            && !url.is_empty()
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(format!("telemetry.otlp_endpoint must start with http:// or https://, not '{url}'"));
        }
        if !(0.0..=1.0).contains(&self.sampling_ratio) {
            return Err(format!("telemetry.sampling_ratio must be from 0 to 1, not {}", self.sampling_ratio));
        }
        if self.service_name.trim().is_empty() {
            return Err("telemetry.service_name must not be empty".into());
        }
        Ok(())
    }
}

// A base URL's traces path, as the OTLP exporter specification builds it.
fn signal_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn variables<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| value.to_string())
    }

    #[test]
    fn traces_are_off_unless_an_endpoint_is_given() {
        let defaults = Config::load(None, env(&[])).unwrap().telemetry;
        assert_eq!(defaults.traces_url(variables(&[])), None);
        assert_eq!((defaults.service_name.as_str(), defaults.sampling_ratio), ("mirobody-server", 1.0));
        let vars = [
            ("MIROBODY_TELEMETRY__OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            ("MIROBODY_TELEMETRY__SERVICE_NAME", "family"),
            ("MIROBODY_TELEMETRY__SAMPLING_RATIO", "0.25"),
        ];
        let set = Config::load(None, env(&vars)).unwrap().telemetry;
        let standard = [(OTEL_EXPORTER_OTLP_ENDPOINT, "http://collector:4318")];
        assert_eq!(
            set.traces_url(variables(&standard)).as_deref(),
            Some("http://127.0.0.1:4318/v1/traces"),
            "ours wins"
        );
        assert_eq!((set.service_name.as_str(), set.sampling_ratio), ("family", 0.25));
        // The standard variables, when the configuration names none.
        assert_eq!(defaults.traces_url(variables(&standard)).as_deref(), Some("http://collector:4318/v1/traces"));
        let full = [(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "http://c:4318/custom"), standard[0]];
        assert_eq!(defaults.traces_url(variables(&full)).as_deref(), Some("http://c:4318/custom"));
        assert_eq!(defaults.traces_url(variables(&[(OTEL_EXPORTER_OTLP_ENDPOINT, " ")])), None, "blank is unset");
    }

    #[test]
    fn a_bad_endpoint_ratio_or_name_is_named() {
        for (key, value, named) in [
            ("MIROBODY_TELEMETRY__OTLP_ENDPOINT", "collector:4318", "telemetry.otlp_endpoint"),
            ("MIROBODY_TELEMETRY__SAMPLING_RATIO", "1.5", "telemetry.sampling_ratio"),
            ("MIROBODY_TELEMETRY__SAMPLING_RATIO", "-0.1", "telemetry.sampling_ratio"),
            ("MIROBODY_TELEMETRY__SERVICE_NAME", "''", "telemetry.service_name"),
            ("MIROBODY_TELEMETRY__ENDPOINT", "http://x", "endpoint"),
        ] {
            let err = Config::load(None, env(&[(key, value)])).unwrap_err().to_string();
            assert!(err.contains(named), "{key}={value}: {err}");
        }
    }
}
