//! A PostgreSQL schema of a test's own, dropped with everything in it when the test lets go of
//! it (shared by the test binaries that need one: `#[path]`-included).

/// A schema named `name` on the server of `url`; dropped on drop.
pub struct Schema {
    pub url: String,
    pub name: String,
}

impl Schema {
    /// A fresh schema (`{prefix}_{uuid}`) on the PostgreSQL of `WEIR_POSTGRES_URL`; a test that
    /// asks for one without it set fails rather than pass having tested nothing.
    pub fn fresh(prefix: &str) -> Self {
        let url = match std::env::var("WEIR_POSTGRES_URL") {
            Ok(url) if !url.is_empty() => url,
            _ => panic!(
                "WEIR_POSTGRES_URL is not set: these tests need a server, e.g. postgres://postgres@127.0.0.1:5432/test"
            ),
        };
        Self {
            url,
            name: format!("{prefix}_{}", uuid::Uuid::new_v4().simple()),
        }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // On a runtime of its own: this also runs while a test panics, or as its runtime ends.
        let (url, name) = (self.url.clone(), self.name.clone());
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(connection);
                client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE"))
                    .await
                    .unwrap();
            });
        })
        .join();
    }
}
