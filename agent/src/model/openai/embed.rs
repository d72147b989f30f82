//! [`OpenAiEmbeddings`]: the store's [`Embeddings`] over an OpenAI-compatible
//! `POST {base}/embeddings`, configured as [`OpenAiChat`](super::OpenAiChat) is (and able to
//! share its HTTP client), sending the texts in batches.

use crate::model::ModelError;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;
use weir_runtime::store::Embeddings;
use weir_runtime::BoxError;

/// Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, llama.cpp,
/// Ollama's `/v1`), for a store's index.
///
/// The base URL and key come from [`base_url`](Self::base_url) and [`api_key`](Self::api_key),
/// or else from `OPENAI_BASE_URL` (default `https://api.openai.com/v1`) and `OPENAI_API_KEY`;
/// [`OpenAiChat::embeddings`](super::OpenAiChat::embeddings) takes a chat model's. Texts go in
/// batches of [`batch_size`](Self::batch_size) (default 512), one request each. An HTTP error,
/// a timeout or an answer without one vector per text is a [`ModelError`] naming the model and
/// the status.
///
/// ```no_run
/// use weir_agent::model::OpenAiEmbeddings;
/// use weir_runtime::store::{IndexConfig, InMemoryStore, StoreConfig};
///
/// let embed = OpenAiEmbeddings::new("text-embedding-3-small").base_url("http://127.0.0.1:8000/v1");
/// let store = InMemoryStore::with_config(StoreConfig::default().index(IndexConfig::new(1536, embed)));
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiEmbeddings {
    pub(super) model: String,
    pub(super) base_url: String,
    pub(super) api_key: Option<String>,
    pub(super) timeout: Duration,
    pub(super) client: reqwest::Client,
    batch_size: usize,
    dimensions: Option<usize>,
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl OpenAiEmbeddings {
    /// The embedding model `model` (as the endpoint names it), configured from the environment.
    pub fn new(model: impl Into<String>) -> Self {
        let base_url = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| "https://api.openai.com/v1".into());
        Self::with_client(
            model.into(),
            base_url,
            std::env::var("OPENAI_API_KEY").ok().filter(|k| !k.is_empty()),
            Duration::from_secs(60),
            reqwest::Client::new(),
        )
    }

    pub(super) fn with_client(
        model: String,
        base_url: String,
        api_key: Option<String>,
        timeout: Duration,
        client: reqwest::Client,
    ) -> Self {
        Self {
            model,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            timeout,
            client,
            batch_size: 512,
            dimensions: None,
        }
    }

    /// The endpoint's base URL, up to and including `/v1`.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// The bearer key sent with each request.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// How long to wait for each batch's answer (default 60 s).
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit;
        self
    }

    /// How many texts one request carries (default 512, at least 1).
    pub fn batch_size(mut self, size: usize) -> Self {
        self.batch_size = size.max(1);
        self
    }

    /// Asks for vectors of `dims` dimensions (the `dimensions` field, for models that shorten).
    pub fn dimensions(mut self, dims: usize) -> Self {
        self.dimensions = Some(dims);
        self
    }

    /// The vectors of one batch, in the order of `texts`.
    async fn batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        if let Some(d) = self.dimensions {
            body["dimensions"] = json!(d);
        }
        let mut req = self.client.post(format!("{}/embeddings", self.base_url)).json(&body);
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let answered = async {
            let resp = req.send().await.map_err(|e| ModelError::transport(&self.model, e))?;
            let status = resp.status().as_u16();
            let text = resp.text().await.map_err(|e| ModelError::transport(&self.model, e))?;
            Ok::<_, ModelError>((status, text))
        };
        let (status, text) = tokio::time::timeout(self.timeout, answered)
            .await
            .map_err(|_| ModelError::timeout(&self.model, self.timeout, None))??;
        if !(200..300).contains(&status) {
            return Err(ModelError::status_error(&self.model, status, text));
        }
        let answer: Answer = serde_json::from_str(&text)
            .map_err(|e| ModelError::malformed(&self.model, status, format!("the embeddings answer: {e}")))?;
        order(answer, texts.len()).map_err(|detail| ModelError::malformed(&self.model, status, detail))
    }
}

/// The answer's vectors by their `index` (their order when it has none), one per text.
fn order(answer: Answer, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    let got = answer.data.len();
    if got != expected {
        return Err(format!("{got} embeddings for {expected} texts"));
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (i, d) in answer.data.into_iter().enumerate() {
        let at = d.index.unwrap_or(i);
        match slots.get_mut(at) {
            Some(slot @ None) => *slot = Some(d.embedding),
            _ => return Err(format!("embedding index {at} is out of range or repeated")),
        }
    }
    Ok(slots.into_iter().flatten().collect())
}

impl Embeddings for OpenAiEmbeddings {
    fn embed_documents<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, BoxError>> {
        async move {
            let mut vectors = Vec::with_capacity(texts.len());
            for batch in texts.chunks(self.batch_size) {
                vectors.extend(self.batch(batch).await?);
            }
            Ok(vectors)
        }
        .boxed()
    }
}
