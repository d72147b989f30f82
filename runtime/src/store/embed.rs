//! Embeddings behind a trait ([`Embeddings`]), a deterministic [`FakeEmbeddings`] for tests and
//! examples, and the cosine similarity the stores without a vector index rank with.

use crate::BoxError;
use futures::future::BoxFuture;
use futures::FutureExt;
use std::fmt::Debug;

/// Turns text into vectors (LangChain's `Embeddings`): documents when items are put, the query
/// when a store is searched. Object safe; a store holds an `Arc<dyn Embeddings>`.
pub trait Embeddings: Send + Sync + Debug + 'static {
    /// One vector per text, in order, each of the configured dimensions.
    fn embed_documents<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, BoxError>>;

    /// The vector of a search query. The default embeds it as a document.
    fn embed_query<'a>(&'a self, text: &'a str) -> BoxFuture<'a, Result<Vec<f32>, BoxError>> {
        async move {
            let texts = [text.to_owned()];
            let mut vectors = self.embed_documents(&texts).await?;
            vectors
                .pop()
                .ok_or_else(|| "the embeddings gave no vector for the query".into())
        }
        .boxed()
    }
}

/// Deterministic embeddings for tests: each lower-cased word adds one to a bucket chosen by its
/// hash, and the vector is normalised. Texts sharing words are similar; no model, no network.
///
/// # Examples
///
/// ```
/// use weir_runtime::store::{cosine, Embeddings, FakeEmbeddings};
///
/// # futures::executor::block_on(async {
/// let e = FakeEmbeddings::new(64);
/// let v = e.embed_documents(&["red apples".into(), "blue sky".into()]).await.unwrap();
/// let q = e.embed_query("apples").await.unwrap();
/// assert!(cosine(&q, &v[0]) > cosine(&q, &v[1]));
/// # });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FakeEmbeddings {
    dims: usize,
}

impl FakeEmbeddings {
    /// Fake embeddings of `dims` dimensions (at least 1).
    pub fn new(dims: usize) -> Self {
        Self { dims: dims.max(1) }
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dims];
        for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            // FNV-1a: stable across runs and platforms.
            let hash = word.to_lowercase().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
            v[(hash % self.dims as u64) as usize] += 1.0;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

impl Embeddings for FakeEmbeddings {
    fn embed_documents<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, BoxError>> {
        let vectors = texts.iter().map(|t| self.embed(t)).collect();
        futures::future::ready(Ok(vectors)).boxed()
    }
}

/// The cosine similarity of two vectors (0 when either is zero or their lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}
