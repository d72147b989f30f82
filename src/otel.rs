//! OpenTelemetry export (feature `otel`): the runs' `tracing` spans (`weir.run` → `weir.step` →
//! `weir.task` → the agent layer's `chat {model}` and `execute_tool {name}`) sent over OTLP/HTTP
//! (JSON bodies) to a collector, Jaeger, or any OTLP backend. [`Otel`] says where to and under
//! which service name; [`Otel::install`] (or [`install`], its short form) makes the exporter the
//! process's `tracing` subscriber, and [`Otel::layer`] gives it as a layer to add to a subscriber
//! of your own. Either returns an [`OtelGuard`] that sends the spans still buffered when dropped.
//!
//! The spans' attributes are listed in docs/operations.md ("OpenTelemetry").

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use std::fmt;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// The service name when neither [`Otel::service_name`] nor `OTEL_SERVICE_NAME` gives one.
pub const DEFAULT_SERVICE_NAME: &str = "weir";

/// Where the spans go and under which service name. Unset, both come from the environment as
/// OpenTelemetry's SDKs read it: the endpoint from `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full
/// URL) or `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's base URL, `/v1/traces` added), else
/// `http://localhost:4318/v1/traces`; the service name from `OTEL_SERVICE_NAME`, else
/// [`DEFAULT_SERVICE_NAME`]. `OTEL_EXPORTER_OTLP_HEADERS` adds headers (an API key).
///
/// # Examples
///
/// ```no_run
/// # fn main() -> Result<(), weir::otel::OtelError> {
/// let _guard = weir::otel::Otel::new()
///     .endpoint("http://localhost:4318")
///     .service_name("support-bot")
///     .install()?;
/// // … run graphs; the spans still buffered are sent when `_guard` drops.
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Otel {
    endpoint: Option<String>,
    service_name: Option<String>,
}

impl Otel {
    /// Both from the environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends to the OTLP/HTTP collector at `base` (as `OTEL_EXPORTER_OTLP_ENDPOINT` would:
    /// `http://localhost:4318` sends to `http://localhost:4318/v1/traces`).
    pub fn endpoint(mut self, base: impl Into<String>) -> Self {
        self.endpoint = Some(base.into());
        self
    }

    /// The `service.name` of the spans' resource, which backends list the traces under.
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// The exporter as a layer, for a subscriber of your own (with a `fmt` layer, a filter…),
    /// and the guard that flushes it. Unfiltered: it exports every span and event it is given
    /// (as events of their spans), whatever their level.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use tracing_subscriber::layer::SubscriberExt;
    /// # fn main() -> Result<(), weir::otel::OtelError> {
    /// let (layer, _guard) = weir::otel::Otel::new().layer()?;
    /// let subscriber = tracing_subscriber::registry().with(layer);
    /// tracing::subscriber::set_global_default(subscriber).expect("no subscriber yet");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// The endpoint (given, or from the environment) is not a URL, or the HTTP client cannot
    /// be built.
    pub fn layer<S>(self) -> Result<(impl Layer<S>, OtelGuard), OtelError>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    {
        install_crypto_provider();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpJson);
        if let Some(base) = &self.endpoint {
            exporter = exporter.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
        }
        let exporter = exporter.build().map_err(|e| OtelError {
            kind: Kind::Exporter(e.to_string()),
        })?;
        let service_name = self
            .service_name
            .or_else(|| std::env::var("OTEL_SERVICE_NAME").ok().filter(|s| !s.is_empty()))
            .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned());
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name(service_name).build())
            .build();
        let tracer = provider.tracer("weir");
        // Not the OS thread a span started on: a run's tasks move between tokio's workers.
        let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_threads(false);
        Ok((layer, OtelGuard { provider }))
    }

    /// Makes the exporter the process's `tracing` subscriber, for spans and events at level
    /// `INFO` and above (weir's spans are `INFO`; the HTTP clients' `DEBUG` chatter stays out).
    ///
    /// # Errors
    /// As [`layer`](Self::layer); or the process has a global subscriber already (then add
    /// [`layer`](Self::layer) to it instead).
    pub fn install(self) -> Result<OtelGuard, OtelError> {
        let (layer, guard) = self.layer()?;
        let layer = layer.with_filter(LevelFilter::INFO);
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).map_err(|_| OtelError {
            kind: Kind::SubscriberSet,
        })?;
        Ok(guard)
    }
}

/// reqwest's rustls comes without a crypto provider (the feature rmcp asks for too): install
/// ring's as the process default unless one is installed already, before the exporter's client
/// is built.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may install one first: either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Exports the spans to the endpoint of the environment, under `service_name` (or
/// `OTEL_SERVICE_NAME` when `None`): [`Otel::install`] in one call.
///
/// ```no_run
/// # fn main() -> Result<(), weir::otel::OtelError> {
/// let _guard = weir::otel::install(Some("support-bot"))?;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// As [`Otel::install`].
pub fn install(service_name: Option<&str>) -> Result<OtelGuard, OtelError> {
    let otel = Otel::new();
    match service_name {
        Some(name) => otel.service_name(name),
        None => otel,
    }
    .install()
}

/// Keeps the exporter's batch going; dropped, it sends the spans still buffered and stops
/// exporting (later spans are dropped). Keep it until the process's last run ended.
#[must_use = "dropping the guard stops the export"]
pub struct OtelGuard {
    provider: SdkTracerProvider,
}

impl OtelGuard {
    /// Sends the spans buffered so far now, waiting for the collector's answer.
    ///
    /// # Errors
    /// The collector could not be reached or refused them.
    pub fn flush(&self) -> Result<(), OtelError> {
        self.provider.force_flush().map_err(|e| OtelError {
            kind: Kind::Export(e.to_string()),
        })
    }
}

impl fmt::Debug for OtelGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtelGuard").finish_non_exhaustive()
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        // A collector that is gone loses the last spans; the process goes on.
        let _ = self.provider.shutdown();
    }
}

/// The exporter could not start, or could not send.
#[derive(Debug)]
pub struct OtelError {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Exporter(String),
    SubscriberSet,
    Export(String),
}

impl fmt::Display for OtelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Exporter(e) => write!(f, "the OTLP exporter cannot start: {e}"),
            Kind::SubscriberSet => f.write_str(
                "the process has a `tracing` subscriber already: add `Otel::layer` to it instead of installing",
            ),
            Kind::Export(e) => write!(f, "the OTLP exporter could not send the spans: {e}"),
        }
    }
}

impl std::error::Error for OtelError {}
