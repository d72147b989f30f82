//! Feeds checkpoints to `CompiledGraph::decode_checkpoint`, which must never panic: whatever the
//! bytes, it returns the state or an error.
//!
//! The input's first byte picks how the checkpoint is made:
//! - random records: channel references, value chains (whole values and deltas), a body and
//!   pending writes, all from the fuzzer's bytes, with channel names drawn mostly from the
//!   graph's own so that decoding gets past the name checks;
//! - real checkpoints of a run (every checkpoint of a few threads on a `MemorySaver`, covering
//!   every channel kind, joins, sends, interrupts, failures and append deltas) with bytes of one
//!   part overwritten, inserted or flipped;
//! - real checkpoints whose JSON body has one entry replaced by a value chosen by the fuzzer.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run checkpoint -- -max_total_time=240`.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use weir::checkpoint::{ChannelRef, CheckpointRecord, Checkpointer, Loaded, MemorySaver, PendingWrite, Source, Timestamp};
use weir::prelude::*;

fn keep_max(best: &mut i64, score: i64) {
    *best = (*best).max(score);
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Fz {
    name: String,
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(add)]
    calls: u32,
    #[reducer(merge)]
    scores: BTreeMap<String, u32>,
    #[reducer(with = keep_max)]
    best: i64,
    #[channel(ephemeral)]
    scratch: Option<String>,
    #[channel(topic)]
    events: Vec<u8>,
    #[channel(topic, accumulate)]
    history: Vec<u16>,
    #[channel(any)]
    last: bool,
    #[channel(after_finish)]
    summary: String,
    answer: Option<bool>,
}

/// A graph touching every kind of channel, a join, `Send`s, an interrupt and a failure.
fn graph(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Fz> {
    let mut g = GraphBuilder::<Fz>::new();
    g.add_node("plan", |s: &Fz| {
        FzUpdate::default()
            .notes(vec![format!("plan {}", s.name)])
            .calls(1)
            .scores(BTreeMap::from([("plan".to_owned(), 1)]))
            .scratch(Some("tmp".into()))
            .events(vec![1, 2])
            .history(vec![7])
            .last(true)
    });
    g.add_node("left", |_: &Fz| FzUpdate::default().notes(vec!["left".into()]).best(3));
    g.add_node("right", |_: &Fz| {
        FzUpdate::default().notes(vec!["right".into()]).best(-2)
    });
    let worker = g.add_send_node("worker", |n: &u32| FzUpdate::default().calls(*n));
    g.add_node("ask", |s: &Fz, ctx: &Context| -> Result<FzUpdate, BoxError> {
        if s.name == "fail" {
            return Err("failed on purpose".into());
        }
        let yes: bool = ctx.interrupt(format!("approve {}?", s.name))?;
        Ok(FzUpdate::default().answer(Some(yes)).summary("asked".into()))
    });
    let to_worker = worker.clone();
    g.add_edge(START, "plan")
        .add_edge("plan", "left")
        .add_edge("plan", "right");
    g.add_join(["left", "right"], "ask");
    g.add_router(
        "plan",
        move |_: &Fz| vec![to_worker.send(2), to_worker.send(5)],
        [&worker],
    );
    g.add_edge(&worker, END).add_edge("ask", END);
    g.set_checkpointer(saver);
    g.compile().expect("the fuzz graph compiles")
}

struct Seeds {
    app: CompiledGraph<Fz>,
    checkpoints: Vec<Loaded>,
    channel_names: Vec<String>,
}

fn seeds() -> &'static Seeds {
    static SEEDS: OnceLock<Seeds> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let saver = MemorySaver::new();
        let app = graph(Arc::new(saver.clone()));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut checkpoints = Vec::new();
        rt.block_on(async {
            for (thread, name) in [("t-ask", "a"), ("t-fail", "fail")] {
                let cfg = RunConfig::thread(thread);
                let _ = app.run(FzUpdate::default().name(name.into()), &cfg).await;
                let _ = app.resume_with(true, &cfg).await;
                let _ = app.run(FzUpdate::default().name(name.into()), &cfg).await;
                for r in saver.list(thread, "", None, None).await.unwrap() {
                    checkpoints.push(saver.get(thread, "", Some(&r.id)).await.unwrap().unwrap());
                }
            }
        });
        let mut channel_names: Vec<String> = checkpoints
            .iter()
            .flat_map(|l| l.record.channels.iter().map(|c| c.channel.to_string()))
            .collect();
        channel_names.extend(Fz::FIELDS.iter().map(|f| f.name().to_owned()));
        channel_names.sort();
        channel_names.dedup();
        Seeds {
            app,
            checkpoints,
            channel_names,
        }
    })
}

/// A channel name: mostly one of the graph's, sometimes anything.
fn channel_name(u: &mut Unstructured<'_>, names: &[String]) -> arbitrary::Result<String> {
    if u.ratio(7, 8)? {
        Ok(u.choose(names)?.clone())
    } else {
        String::arbitrary(u)
    }
}

fn random_checkpoint(u: &mut Unstructured<'_>, s: &Seeds) -> arbitrary::Result<Loaded> {
    let id = String::arbitrary(u)?;
    let mut channels = Vec::new();
    let mut values = Vec::new();
    for _ in 0..u.int_in_range(0..=14)? {
        let channel = channel_name(u, &s.channel_names)?;
        let blob = if bool::arbitrary(u)? { Some(id.clone()) } else { None };
        if blob.is_some() || u.ratio(1, 8)? {
            let chain: Vec<Vec<u8>> = (0..u.int_in_range(0..=3)?)
                .map(|_| Vec::<u8>::arbitrary(u))
                .collect::<Result<_, _>>()?;
            values.push((channel.clone(), chain));
        }
        channels.push(ChannelRef {
            channel: channel.into(),
            version: u64::arbitrary(u)?,
            blob: blob.map(Into::into),
        });
    }
    let pending_writes = (0..u.int_in_range(0..=4)?)
        .map(|_| {
            Ok(PendingWrite {
                task_id: String::arbitrary(u)?,
                task_path: String::arbitrary(u)?,
                idx: i64::arbitrary(u)?,
                channel: u
                    .choose(&["__writes__", "__error__", "__interrupt__", "__resume__", "x"])?
                    .to_string(),
                bytes: Vec::<u8>::arbitrary(u)?,
            })
        })
        .collect::<arbitrary::Result<_>>()?;
    let record = CheckpointRecord {
        thread_id: String::arbitrary(u)?.into(),
        ns: "".into(),
        id: id.into(),
        parent_id: Option::<String>::arbitrary(u)?.map(Into::into),
        step: i64::arbitrary(u)?,
        source: *u.choose(&[Source::Input, Source::Loop, Source::Update, Source::Fork])?,
        writes: Vec::<String>::arbitrary(u)?.into_iter().map(Into::into).collect(),
        metadata: BTreeMap::new(),
        created_at: Timestamp::from_unix_micros(u64::arbitrary(u)?),
        channels,
        body: Vec::<u8>::arbitrary(u)?,
        blobs: Vec::new(),
    };
    Ok(Loaded {
        record,
        values,
        pending_writes,
        continued: Vec::new(),
    })
}

/// Overwrites, inserts or flips bytes of `bytes` at a chosen place.
fn mutate_bytes(u: &mut Unstructured<'_>, bytes: &mut Vec<u8>) -> arbitrary::Result<()> {
    let at = u.int_in_range(0..=bytes.len())?;
    match u.int_in_range(0..=3)? {
        0 => {
            let with = Vec::<u8>::arbitrary(u)?;
            let end = (at + with.len()).min(bytes.len());
            bytes.splice(at..end, with);
        }
        1 => {
            let with = Vec::<u8>::arbitrary(u)?;
            bytes.splice(at..at, with);
        }
        2 => bytes.truncate(at),
        _ => {
            if let Some(b) = bytes.get_mut(at) {
                *b ^= u8::arbitrary(u)?.max(1);
            }
        }
    }
    Ok(())
}

fn mutated_checkpoint(u: &mut Unstructured<'_>, s: &Seeds) -> arbitrary::Result<Loaded> {
    let mut l = u.choose(&s.checkpoints)?.clone();
    for _ in 0..u.int_in_range(1..=3)? {
        match u.int_in_range(0..=5)? {
            0 => mutate_bytes(u, &mut l.record.body)?,
            1 if !l.values.is_empty() => {
                let i = u.choose_index(l.values.len())?;
                let chain = &mut l.values[i].1;
                if chain.is_empty() || u.ratio(1, 6)? {
                    chain.push(Vec::<u8>::arbitrary(u)?);
                } else {
                    let j = u.choose_index(chain.len())?;
                    mutate_bytes(u, &mut chain[j])?;
                }
            }
            2 if !l.pending_writes.is_empty() => {
                let i = u.choose_index(l.pending_writes.len())?;
                mutate_bytes(u, &mut l.pending_writes[i].bytes)?;
            }
            3 if !l.record.channels.is_empty() => {
                let i = u.choose_index(l.record.channels.len())?;
                let c = &mut l.record.channels[i];
                match u.int_in_range(0..=2)? {
                    0 => c.version = u64::arbitrary(u)?,
                    1 => c.channel = channel_name(u, &s.channel_names)?.into(),
                    _ => c.blob = None,
                }
            }
            4 => l.record.step = i64::arbitrary(u)?,
            _ => {
                // Move a value chain to another channel.
                if !l.values.is_empty() {
                    let i = u.choose_index(l.values.len())?;
                    l.values[i].0 = channel_name(u, &s.channel_names)?;
                }
            }
        }
    }
    Ok(l)
}

/// A JSON value the fuzzer picks, shaped like what a body holds.
fn json(u: &mut Unstructured<'_>, s: &Seeds, depth: u32) -> arbitrary::Result<serde_json::Value> {
    use serde_json::Value;
    Ok(match u.int_in_range(0..=7)? {
        0 => Value::Null,
        1 => Value::Bool(bool::arbitrary(u)?),
        2 => Value::from(i64::arbitrary(u)?),
        3 => Value::from(u64::arbitrary(u)?),
        4 => Value::String(channel_name(u, &s.channel_names)?),
        5 => Value::from(f64::arbitrary(u)?),
        6 if depth < 3 => Value::Array(
            (0..u.int_in_range(0..=3)?)
                .map(|_| json(u, s, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        _ if depth < 3 => Value::Object(
            (0..u.int_in_range(0..=3)?)
                .map(|_| Ok((channel_name(u, &s.channel_names)?, json(u, s, depth + 1)?)))
                .collect::<arbitrary::Result<_>>()?,
        ),
        _ => Value::Null,
    })
}

fn body_mutated_checkpoint(u: &mut Unstructured<'_>, s: &Seeds) -> arbitrary::Result<Loaded> {
    let mut l = u.choose(&s.checkpoints)?.clone();
    let Ok(mut body) = serde_json::from_slice::<serde_json::Value>(&l.record.body) else {
        return Ok(l);
    };
    if let Some(top) = body.as_object_mut() {
        let keys: Vec<String> = top.keys().cloned().collect();
        let key = u.choose(&keys)?.clone();
        let value = json(u, s, 0)?;
        // Replace the entry, or one entry inside it.
        match top.get_mut(&key).and_then(|v| v.as_object_mut()) {
            Some(inner) if bool::arbitrary(u)? => {
                inner.insert(channel_name(u, &s.channel_names)?, value);
            }
            _ => {
                top.insert(key, value);
            }
        }
    }
    l.record.body = serde_json::to_vec(&body).unwrap();
    Ok(l)
}

fuzz_target!(|data: &[u8]| {
    let s = seeds();
    let mut u = Unstructured::new(data);
    let loaded = match u.int_in_range(0..=2u8) {
        Ok(0) => random_checkpoint(&mut u, s),
        Ok(1) => mutated_checkpoint(&mut u, s),
        _ => body_mutated_checkpoint(&mut u, s),
    };
    if let Ok(loaded) = loaded {
        let _ = s.app.decode_checkpoint(loaded);
    }
});
