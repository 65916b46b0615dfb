//! Duration histograms as Prometheus keeps them: fixed buckets of atomic counters.
//!
//! Written here rather than taken from `metrics-exporter-prometheus`, whose histograms keep
//! every sample (time-stamped, in an epoch-managed queue) until a fold: that cost about 250
//! instructions a record on the `tools/call` path, these about 40 (benches/README.md,
//! "Metrics, traces and the access log"). [`Recorder`] hands counters and gauges to the
//! exporter's recorder and keeps the histograms; [`Recorder::render`] writes both.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use metrics::{Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, SharedString, Unit};
use metrics_exporter_prometheus::{PrometheusHandle, PrometheusRecorder};

/// One histogram: a count per bucket (not cumulative: the bucket a value falls in) and the sum
/// of the values in nanoseconds (whole, so one atomic add).
struct Buckets {
    bounds: &'static [f64],
    // `bounds.len() + 1` counts: the last is the values above every bound (`+Inf`).
    counts: Box<[AtomicU64]>,
    sum_nanos: AtomicU64,
}

impl Buckets {
    fn new(bounds: &'static [f64]) -> Buckets {
        Buckets {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_nanos: AtomicU64::new(0),
        }
    }
}

impl HistogramFn for Buckets {
    fn record(&self, value: f64) {
        // A NaN or negative duration is nobody's: counted in the first bucket as zero.
        let value = if value.is_finite() && value > 0.0 { value } else { 0.0 };
        let bucket = self.bounds.partition_point(|bound| *bound < value);
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        // `as` saturates: a duration past 584 years adds u64::MAX, never wraps a panic.
        self.sum_nanos.fetch_add((value * 1e9) as u64, Ordering::Relaxed);
    }
}

/// The process's recorder: the exporter's for counters and gauges, [`Buckets`] for histograms.
pub(super) struct Recorder {
    prometheus: PrometheusRecorder,
    bounds: &'static [f64],
    histograms: Arc<Mutex<BTreeMap<Key, Arc<Buckets>>>>,
}

/// Renders what a [`Recorder`] holds; cheap to clone.
#[derive(Clone)]
pub(super) struct Render {
    prometheus: PrometheusHandle,
    histograms: Arc<Mutex<BTreeMap<Key, Arc<Buckets>>>>,
}

impl Recorder {
    /// Histograms with `bounds` (in seconds, ascending) beside `prometheus`'s other metrics.
    pub(super) fn new(prometheus: PrometheusRecorder, bounds: &'static [f64]) -> (Recorder, Render) {
        let histograms = Arc::default();
        let render = Render { prometheus: prometheus.handle(), histograms: Arc::clone(&histograms) };
        (Recorder { prometheus, bounds, histograms }, render)
    }
}

impl metrics::Recorder for Recorder {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.prometheus.describe_counter(key, unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.prometheus.describe_gauge(key, unit, description);
    }

    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        self.prometheus.register_counter(key, metadata)
    }

    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        self.prometheus.register_gauge(key, metadata)
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let mut histograms = self.histograms.lock().unwrap_or_else(PoisonError::into_inner);
        let buckets = histograms.entry(key.clone()).or_insert_with(|| Arc::new(Buckets::new(self.bounds)));
        Histogram::from_arc(Arc::clone(buckets))
    }
}

impl Render {
    /// Every metric in Prometheus' text format: the exporter's, then each histogram (its
    /// cumulative `_bucket` lines, `_sum` and `_count`), one `# TYPE` line per name.
    pub(super) fn render(&self) -> String {
        let mut out = self.prometheus.render();
        let histograms = self.histograms.lock().unwrap_or_else(PoisonError::into_inner);
        let mut last_name = None;
        for (key, buckets) in histograms.iter() {
            let name = key.name();
            if last_name != Some(name) {
                let _ = writeln!(out, "# TYPE {name} histogram");
                last_name = Some(name);
            }
            let mut labels = String::new();
            for label in key.labels() {
                let _ = write!(labels, "{}=\"{}\",", label.key(), escaped(label.value()));
            }
            let mut cumulative = 0;
            for (index, count) in buckets.counts.iter().enumerate() {
                cumulative += count.load(Ordering::Relaxed);
                match buckets.bounds.get(index) {
                    Some(bound) => {
                        let _ = writeln!(out, "{name}_bucket{{{labels}le=\"{bound}\"}} {cumulative}");
                    }
                    None => {
                        let _ = writeln!(out, "{name}_bucket{{{labels}le=\"+Inf\"}} {cumulative}");
                    }
                }
            }
            let labels = match labels.trim_end_matches(',') {
                "" => String::new(),
                labels => format!("{{{labels}}}"),
            };
            let sum = buckets.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
            let _ = writeln!(out, "{name}_sum{labels} {sum}");
            let _ = writeln!(out, "{name}_count{labels} {cumulative}");
        }
        out
    }
}

// A label value as the text format writes it: backslash, quote and newline escaped.
fn escaped(value: &str) -> std::borrow::Cow<'_, str> {
    if !value.contains(['\\', '"', '\n']) {
        return value.into();
    }
    value.replace('\\', r"\\").replace('"', r#"\""#).replace('\n', r"\n").into()
}

#[cfg(test)]
mod tests {
    use metrics::Recorder as _;
    use metrics_exporter_prometheus::PrometheusBuilder;

    use super::*;

    static BOUNDS: [f64; 3] = [0.001, 0.01, 0.1];

    fn recorder() -> (Recorder, Render) {
        Recorder::new(PrometheusBuilder::new().build_recorder(), &BOUNDS)
    }

    #[test]
    fn buckets_are_cumulative_with_sum_and_count() {
        let (recorder, render) = recorder();
        let key = Key::from_parts("x_seconds", vec![metrics::Label::new("tool", "echo")]);
        let histogram = recorder.register_histogram(&key, &Metadata::new("t", metrics::Level::INFO, None));
        for value in [0.0005, 0.001, 0.005, 0.5, f64::NAN, -1.0] {
            histogram.record(value);
        }
        // Registered again, the same histogram.
        recorder.register_histogram(&key, &Metadata::new("t", metrics::Level::INFO, None)).record(0.05);
        let text = render.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "# TYPE x_seconds histogram",
                r#"x_seconds_bucket{tool="echo",le="0.001"} 4"#,
                r#"x_seconds_bucket{tool="echo",le="0.01"} 5"#,
                r#"x_seconds_bucket{tool="echo",le="0.1"} 6"#,
                r#"x_seconds_bucket{tool="echo",le="+Inf"} 7"#,
                r#"x_seconds_sum{tool="echo"} 0.5565"#,
                r#"x_seconds_count{tool="echo"} 7"#,
            ]
        );
    }

    #[test]
    fn one_type_line_per_name_and_counters_still_rendered() {
        let (recorder, render) = recorder();
        let metadata = Metadata::new("t", metrics::Level::INFO, None);
        let _ =
            recorder.register_histogram(&Key::from_parts("y_seconds", vec![metrics::Label::new("m", "a")]), &metadata);
        let _ = recorder
            .register_histogram(&Key::from_parts("y_seconds", vec![metrics::Label::new("m", "b\"\n")]), &metadata);
        let _ = recorder.register_histogram(&Key::from_name("z_seconds"), &metadata);
        recorder.register_counter(&Key::from_name("c_total"), &metadata).increment(3);
        let text = render.render();
        assert!(text.contains("c_total 3"), "{text}");
        assert_eq!(text.matches("# TYPE y_seconds histogram").count(), 1, "{text}");
        assert!(text.contains(r#"y_seconds_count{m="b\"\n"} 0"#), "escaped label values: {text}");
        assert!(text.contains("z_seconds_bucket{le=\"+Inf\"} 0\nz_seconds_sum 0\nz_seconds_count 0"), "{text}");
    }
}
