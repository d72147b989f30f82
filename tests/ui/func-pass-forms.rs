#![deny(warnings)]
use serde::{Deserialize, Serialize};
use weir::checkpoint::MemorySaver;
use weir::func::Final;
use weir::prelude::*;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Topic {
    name: String,
}

/// A sync task with no arguments.
#[task]
fn seed() -> u32 {
    1
}

#[task(name = "grow", retry(max_attempts = 2), timeout(5s), cache(10min))]
async fn grow(mut n: u32, by: u32) -> Result<u32, BoxError> {
    n += by;
    Ok(n)
}

#[task(cache)]
async fn nested(n: u32) -> Result<u32, BoxError> {
    grow(n, 1).await
}

#[entrypoint]
async fn forms(topic: Topic, ctx: Context, previous: Option<u32>) -> Result<Final<String, u32>, BoxError> {
    ctx.emit("started").await;
    let n = seed().await? + previous.unwrap_or(0);
    let (a, b) = (grow(n, 2), nested(n));
    let total = a.await? + b.await?;
    Ok(Final {
        value: format!("{}: {total}", topic.name),
        save: total,
    })
}

#[entrypoint]
fn sync_entry(n: u32) -> u32 {
    n
}

fn main() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let app = forms().with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("t");
    let topic = Topic { name: "t".into() };
    assert_eq!(rt.block_on(app.invoke(topic.clone(), &cfg)).unwrap(), "t: 5");
    assert_eq!(rt.block_on(app.invoke(topic, &cfg)).unwrap(), "t: 15");
    let plain = sync_entry().compile().unwrap();
    assert_eq!(rt.block_on(plain.invoke(3, &RunConfig::default())).unwrap(), 3);
}
