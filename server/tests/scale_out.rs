//! Scale-out mode end to end, in separate OS processes (the `scale` example) on PostgreSQL and
//! Redis: 2 API processes and 3 workers take 1,000 runs over 100 threads (wait, stream and
//! background through both APIs) while one worker is SIGKILLed; and a worker stopped by SIGTERM
//! hands its runs to another, which resumes them from their last checkpoint. Ignored unless
//! asked for (`-- --include-ignored`); then `WEIR_POSTGRES_URL` and `WEIR_REDIS_URL` must be set
//! (and `WEIR_REDIS_CLUSTER_URL` for the same on a Redis Cluster, 200 runs on 2 workers); and
//! runs going on while a primary of a Redis Cluster of the test's own fails over.
//! Also: a cron made through an API process fires once a time across two workers, and a thread's
//! stream served by one API process follows the runs made through another.
//! `WEIR_SCALE_RUNS` / `WEIR_SCALE_THREADS` / `WEIR_SCALE_WORKERS` change the numbers.

#[path = "scale_out/cluster.rs"]
mod cluster;
#[path = "redis_ha/mod.rs"]
mod redis_ha;
#[path = "served/mod.rs"]
mod served;

use cluster::{call, frames, request, Cluster, Process};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;

const NODES: [&str; 3] = ["s1", "s2", "s3"];

/// Held by each test for its whole run: one deployment at a time. Each of its processes may hold
/// 16 PostgreSQL connections (its pools' sizes), so three deployments at once can pass
/// PostgreSQL's default of 100 connections ("too many clients already") on a loaded machine.
static ONE_DEPLOYMENT: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Makes a thread through `api`; returns its id.
async fn thread(api: &str) -> String {
    let reply = call(api, "POST", "/threads", Some(&json!({}))).await;
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    reply.json()["thread_id"].as_str().expect("a thread id").to_owned()
}

/// Runs `topic` on `tid` in one of three ways (by `k`), through `api` (and `other`, which joins
/// a background run): checks what the client sees, and returns the thread's log after the run.
async fn one_run(api: &str, other: &str, tid: &str, topic: &str, k: usize) -> Vec<String> {
    let body = json!({
        "assistant_id": "steps", "input": {"topic": topic},
        "stream_mode": ["values", "updates"], "stream_resumable": true,
    });
    let values = match k % 3 {
        0 => call(api, "POST", &format!("/threads/{tid}/runs/wait"), Some(&body))
            .await
            .json(),
        1 => {
            let reply = call(api, "POST", &format!("/threads/{tid}/runs/stream"), Some(&body)).await;
            assert_eq!(reply.status, 200);
            stream_values(&frames(&reply.body), topic)
        }
        _ => {
            let run = call(api, "POST", &format!("/threads/{tid}/runs"), Some(&body))
                .await
                .json();
            let rid = run["run_id"].as_str().expect("a run id");
            call(other, "GET", &format!("/threads/{tid}/runs/{rid}/join"), None)
                .await
                .json()
        }
    };
    assert_eq!(values["topic"], json!(topic), "the run's values: {values}");
    let log: Vec<String> = serde_json::from_value(values["log"].clone()).expect("a log");
    assert_eq!(&log[log.len().saturating_sub(3)..], NODES, "the run's log: {log:?}");
    log
}

/// Checks a streamed run's events (from an API process that is not the worker's): `metadata`
/// first, ids increasing, the nodes' updates in order (a run resumed after its worker died
/// starts again with `metadata`, from its last checkpointed step); returns the last values.
fn stream_values(events: &[(String, Value, Option<String>)], topic: &str) -> Value {
    assert_eq!(events.first().map(|e| e.0.as_str()), Some("metadata"), "{events:?}");
    let ids: Vec<(u64, u64)> = events
        .iter()
        .map(|e| {
            let id = e.2.as_deref().expect("a resumable stream's event has an id");
            let (ms, seq) = id.split_once('-').expect("`<ms>-<seq>`");
            (ms.parse().expect("ms"), seq.parse().expect("seq"))
        })
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids out of order: {ids:?}");
    // Each attempt (from its `metadata`) streams consecutive nodes; the last node is s3 (an
    // attempt after one whose steps were all checkpointed has none to run).
    let mut attempts: Vec<Vec<&str>> = Vec::new();
    for (event, data, _) in events {
        match event.as_str() {
            "metadata" => attempts.push(Vec::new()),
            "updates" => {
                let node = data
                    .as_object()
                    .and_then(|o| o.keys().next())
                    .expect("an update names its node");
                attempts.last_mut().expect("metadata first").push(node.as_str());
            }
            _ => {}
        }
    }
    for nodes in &attempts {
        let from = nodes
            .first()
            .map_or(0, |n| NODES.iter().position(|m| m == n).expect("a known node"));
        let to = (from + nodes.len()).min(3);
        assert_eq!(
            nodes[..],
            NODES[from..to],
            "the updates of `{topic}` out of order: {events:?}"
        );
    }
    let last_node = attempts.iter().flatten().last();
    assert_eq!(last_node, Some(&"s3"), "`{topic}` streamed up to s3: {events:?}");
    let last = events.iter().rev().find(|e| e.0 == "values").expect("a values event");
    last.1.clone()
}

/// Checks the effects file: per run (topic), its nodes started in order, one at a time, each
/// start followed by its end in the same process; a process in `stopped` (killed or shut down)
/// may have left one execution unfinished, and the next worker then resumes at the first node
/// whose step was not checkpointed: that one, the one after it, or (async durability: the
/// checkpoints are written while the next step runs) an earlier one. That no checkpointed step
/// ran again is checked on the thread's log (each update applied once). Returns how many node
/// executions were repeated.
fn check_effects(lines: &[(String, String, u32, String)], stopped: &[u32], topics: usize) -> usize {
    let mut by_topic: BTreeMap<&str, Vec<(usize, u32, &str)>> = BTreeMap::new();
    for (topic, node, pid, kind) in lines {
        let index = NODES.iter().position(|n| n == node).expect("a known node");
        by_topic.entry(topic).or_default().push((index, *pid, kind));
    }
    assert_eq!(by_topic.len(), topics, "every run's nodes ran");
    let mut repeated = 0;
    for (topic, trace) in &by_topic {
        let starts: Vec<(usize, u32)> = trace.iter().filter(|t| t.2 == "start").map(|t| (t.0, t.1)).collect();
        // One execution at a time: every start is ended by the same process before the next
        // start, unless that process was stopped.
        let mut open: Option<(usize, u32)> = None;
        for &(index, pid, kind) in trace {
            match kind {
                "start" => {
                    if let Some((_, was)) = open {
                        assert!(
                            stopped.contains(&was) && was != pid,
                            "`{topic}` ran twice at once: {trace:?}"
                        );
                    }
                    open = Some((index, pid));
                }
                _ => {
                    assert_eq!(
                        open,
                        Some((index, pid)),
                        "`{topic}`: an end without its start: {trace:?}"
                    );
                    open = None;
                }
            }
        }
        assert_eq!(open, None, "`{topic}` did not finish: {trace:?}");
        assert_eq!(
            starts.first().map(|s| s.0),
            Some(0),
            "`{topic}` did not start at s1: {trace:?}"
        );
        assert_eq!(
            starts.last().map(|s| s.0),
            Some(2),
            "`{topic}` did not end at s3: {trace:?}"
        );
        let mut handed_over = false;
        for w in starts.windows(2) {
            let ((a, pa), (b, pb)) = (w[0], w[1]);
            if pa == pb || handed_over || !stopped.contains(&pa) {
                assert_eq!(b, a + 1, "`{topic}` skipped or repeated a node: {trace:?}");
                continue;
            }
            handed_over = true;
            assert!(b <= a + 1, "`{topic}` skipped a node when it was resumed: {trace:?}");
            repeated += a + 1 - b;
        }
    }
    repeated
}

/// Every run of every thread, through `api`: their statuses.
async fn statuses(api: &str, tids: &[String]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for tid in tids {
        let runs = call(api, "GET", &format!("/threads/{tid}/runs?limit=1000"), None)
            .await
            .json();
        for run in runs.as_array().expect("a list of runs") {
            *out.entry(run["status"].as_str().unwrap_or("?").to_owned()).or_insert(0) += 1;
        }
    }
    out
}

/// The load: `runs` runs over `threads` threads (each thread's runs one after the other), by
/// turns wait, stream and background, alternating the two APIs. `done` counts finished runs.
async fn load(apis: [String; 2], threads: usize, runs: usize, done: watch::Sender<usize>) -> Vec<String> {
    let mut tids = Vec::new();
    for t in 0..threads {
        tids.push(thread(&apis[t % 2]).await);
    }
    let counter = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(done);
    let mut clients = tokio::task::JoinSet::new();
    for (t, tid) in tids.iter().enumerate() {
        let (apis, tid, counter, done) = (apis.clone(), tid.clone(), counter.clone(), done.clone());
        let mine = runs / threads + usize::from(t < runs % threads);
        clients.spawn(async move {
            for k in 0..mine {
                let (api, other) = (&apis[(t + k) % 2], &apis[(t + k + 1) % 2]);
                let log = one_run(api, other, &tid, &format!("t{t}r{k}"), t + k).await;
                assert_eq!(log.len(), 3 * (k + 1), "no node's update is applied twice: {log:?}");
                done.send_replace(counter.fetch_add(1, Ordering::SeqCst) + 1);
            }
        });
    }
    while let Some(client) = clients.join_next().await {
        client.expect("a client's runs went as expected");
    }
    tids
}

/// Starts 2 API processes and `workers` workers.
fn start(cluster: &Cluster, workers: usize) -> (Vec<Process>, Vec<Process>) {
    // The first process makes the schema; the others start once it is there.
    let apis = vec![cluster.start("api"), cluster.start("api")];
    let workers = (0..workers).map(|_| cluster.start("worker")).collect();
    (apis, workers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn thousand_runs_on_two_apis_and_three_workers_survive_a_killed_worker() {
    let _alone = ONE_DEPLOYMENT.lock().await;
    let cluster = Cluster::new(&["--node-ms", "20", "--heartbeat-ms", "1000", "--poll-ms", "500"]);
    let (runs, threads) = (
        env_number("WEIR_SCALE_RUNS", 1000),
        env_number("WEIR_SCALE_THREADS", 100),
    );
    survive_a_killed_worker(&cluster, runs, threads, env_number("WEIR_SCALE_WORKERS", 3)).await;
}

/// The same on a Redis Cluster (`WEIR_REDIS_CLUSTER_URL`): the wakes, cancellations, streams
/// read through the other API process, heartbeats and fences all go through its slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL and a Redis Cluster: set WEIR_POSTGRES_URL and WEIR_REDIS_CLUSTER_URL, run with --include-ignored"]
async fn runs_on_a_redis_cluster_survive_a_killed_worker() {
    let _alone = ONE_DEPLOYMENT.lock().await;
    let redis = std::env::var("WEIR_REDIS_CLUSTER_URL").expect(
        "WEIR_REDIS_CLUSTER_URL is not set: this test needs a Redis Cluster (server/tests/redis_cluster/setup.sh starts one and prints its URL)",
    );
    let flags = ["--node-ms", "20", "--heartbeat-ms", "1000", "--poll-ms", "500"];
    survive_a_killed_worker(&Cluster::on_redis(redis, &flags), 200, 20, 2).await;
}

/// `runs` runs over `threads` threads through 2 API processes and `workers` workers of
/// `cluster`, one worker SIGKILLed a third of the way in: every run ends `success`, and no
/// finished node runs again (the effects file).
async fn survive_a_killed_worker(cluster: &Cluster, runs: usize, threads: usize, workers: usize) {
    let (apis, mut workers) = start(cluster, workers);
    let urls = [apis[0].url.clone(), apis[1].url.clone()];
    let (done, mut progress) = watch::channel(0);
    let began = Instant::now();
    let load = tokio::spawn(load(urls.clone(), threads, runs, done));
    // Kill a worker with runs in flight, a third of the way in.
    progress.wait_for(|n| *n >= runs / 3).await.expect("the load goes on");
    let killed = workers[0].pid();
    workers[0].child.kill().expect("SIGKILL");
    workers[0].child.wait().expect("the killed worker is reaped");
    let tids = load.await.expect("every run went as expected");
    let secs = began.elapsed().as_secs_f64();
    println!(
        "{runs} runs in {secs:.1} s: {:.1} runs/s (debug build)",
        runs as f64 / secs
    );
    let statuses = statuses(&urls[0], &tids).await;
    assert_eq!(
        statuses,
        BTreeMap::from([("success".to_owned(), runs)]),
        "every run ends `success`"
    );
    let lines = cluster.effects();
    let repeated = check_effects(&lines, &[killed], runs);
    assert!(lines.iter().any(|l| l.2 == killed), "the killed worker had run nodes");
    println!("node executions repeated after the kill: {repeated}");
    drop((workers, apis));
}

/// Runs go on while a primary of a Redis Cluster fails: on a cluster of the test's own
/// (`redis_ha`: three primaries, a replica each), the primary of the workers' wake list, which
/// every queued run touches, is SIGKILLed a third of the way into 150 runs over 15 threads
/// (wait, stream and background through two API processes, two workers). Its replica takes over
/// within a few seconds; the runs in between wait, not fail: every run ends `success`, and no
/// update is applied twice. A worker whose heartbeat lived on the failed primary may look dead
/// to the other meanwhile (the other's own beats went on): its runs are then taken back, fenced,
/// and run on from their last checkpoint, so a node may run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL and redis-server: set WEIR_POSTGRES_URL, run with --include-ignored"]
async fn runs_ride_through_a_redis_cluster_primary_failing_over() {
    let _alone = ONE_DEPLOYMENT.lock().await;
    let mut redis = redis_ha::HaCluster::start();
    let flags = ["--node-ms", "20", "--heartbeat-ms", "1000", "--poll-ms", "500"];
    let cluster = Cluster::on_redis(redis.url(), &flags);
    let (apis, workers) = start(&cluster, 2);
    let urls = [apis[0].url.clone(), apis[1].url.clone()];
    let (runs, threads) = (150, 15);
    let (done, mut progress) = watch::channel(0);
    let load = tokio::spawn(load(urls.clone(), threads, runs, done));
    progress.wait_for(|n| *n >= runs / 3).await.expect("the load goes on");
    redis.wait_replicated();
    redis.kill_primary_of(&format!("{}:queue:wake", cluster.prefix()));
    let tids = load.await.expect("every run went as expected");
    let statuses = statuses(&urls[0], &tids).await;
    assert_eq!(
        statuses,
        BTreeMap::from([("success".to_owned(), runs)]),
        "every run ends `success`"
    );
    let pids: Vec<u32> = workers.iter().map(Process::pid).collect();
    let repeated = check_effects(&cluster.effects(), &pids, runs);
    println!("node executions repeated across the failover: {repeated}");
    drop((workers, apis));
}

/// A Redis away for longer than a heartbeat's time to live (restarting, cut off) costs the runs
/// in flight a wait, not a failure, and no worker takes another's runs for it: every worker's
/// beats lapse alike, and none believes a missing heartbeat before its own have gone through on
/// time for a whole time to live again. Twelve background runs of three 300 ms nodes on two
/// workers, Redis cut off for at least 6 s (the time to live: 3 s), a thirteenth made while it
/// is: every run ends `success`, and every node ran once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn a_redis_outage_longer_than_a_heartbeat_costs_runs_a_wait_and_runs_no_node_twice() {
    let _alone = ONE_DEPLOYMENT.lock().await;
    let relay = weir_test_support::Relay::in_front_of(&std::env::var("WEIR_REDIS_URL").expect("WEIR_REDIS_URL")).await;
    let flags = ["--node-ms", "300", "--heartbeat-ms", "1000", "--poll-ms", "500"];
    let cluster = Cluster::on_redis(relay.url("redis"), &flags);
    let api = cluster.start("api");
    let workers = [cluster.start("worker"), cluster.start("worker")];
    let mut made = Vec::new();
    for t in 0..12 {
        let tid = thread(&api.url).await;
        let body = json!({"assistant_id": "steps", "input": {"topic": format!("t{t}")}});
        let run = call(&api.url, "POST", &format!("/threads/{tid}/runs"), Some(&body)).await;
        assert_eq!(run.status, 200, "{}", String::from_utf8_lossy(&run.body));
        made.push((tid, run.json()["run_id"].as_str().expect("a run id").to_owned()));
    }
    let tid = thread(&api.url).await;
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    relay.go_dark();
    let dark = Instant::now();
    // A run made meanwhile is answered without waiting for Redis (its wake and its thread's
    // notice can do without: a worker's poll finds it), far sooner than the bus's minute of
    // patience; it runs once Redis is back.
    let body = json!({"assistant_id": "steps", "input": {"topic": "t12"}});
    let path = format!("/threads/{tid}/runs");
    let making = call(&api.url, "POST", &path, Some(&body));
    let run = tokio::time::timeout(std::time::Duration::from_secs(5), making)
        .await
        .expect("a run made while Redis is away is answered without waiting for it");
    assert_eq!(run.status, 200, "{}", String::from_utf8_lossy(&run.body));
    made.push((tid, run.json()["run_id"].as_str().expect("a run id").to_owned()));
    println!("a run made while Redis was away was answered in {:?}", dark.elapsed());
    tokio::time::sleep(std::time::Duration::from_secs(6).saturating_sub(dark.elapsed())).await;
    relay.light();
    let started = Instant::now();
    for (tid, rid) in &made {
        loop {
            let run = call(&api.url, "GET", &format!("/threads/{tid}/runs/{rid}"), None)
                .await
                .json();
            match run["status"].as_str() {
                Some("pending" | "running") => {
                    assert!(started.elapsed().as_secs() < 60, "run `{rid}` did not end: {run}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                status => {
                    assert_eq!(status, Some("success"), "run `{rid}`: {run}");
                    break;
                }
            }
        }
    }
    assert_eq!(
        check_effects(&cluster.effects(), &[], made.len()),
        0,
        "no node ran again"
    );
    drop((workers, api));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn sigterm_requeues_a_workers_runs_and_another_resumes_them_from_their_checkpoint() {
    let _alone = ONE_DEPLOYMENT.lock().await;
    let cluster = Cluster::new(&["--node-ms", "1500", "--heartbeat-ms", "1000", "--grace-ms", "100"]);
    let api = cluster.start("api");
    let mut first = cluster.start("worker");
    let mut runs = Vec::new();
    for t in 0..4 {
        let tid = thread(&api.url).await;
        let body = json!({"assistant_id": "steps", "input": {"topic": format!("t{t}")}});
        let run = call(&api.url, "POST", &format!("/threads/{tid}/runs"), Some(&body))
            .await
            .json();
        runs.push((tid, run["run_id"].as_str().expect("a run id").to_owned()));
    }
    // Wait until every run has finished s1 and is in s2 (its s1 checkpoint is being written).
    let mut stream = Vec::new();
    for (tid, rid) in &runs {
        let path = format!("/threads/{tid}/runs/{rid}/stream");
        stream.push(tokio::spawn({
            let (url, path) = (api.url.clone(), path.clone());
            async move { call(&url, "GET", &path, None).await }
        }));
    }
    while cluster
        .effects()
        .iter()
        .filter(|l| l.1 == "s2" && l.3 == "start")
        .count()
        < runs.len()
    {
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let stopped = first.pid();
    first.terminate();
    let _second = cluster.start("worker");
    for (tid, rid) in &runs {
        let values = call(&api.url, "GET", &format!("/threads/{tid}/runs/{rid}/join"), None)
            .await
            .json();
        assert_eq!(
            values["log"],
            json!(NODES),
            "resumed once from the s1 checkpoint: {values}"
        );
        let run = call(&api.url, "GET", &format!("/threads/{tid}/runs/{rid}"), None)
            .await
            .json();
        assert_eq!(run["status"], "success");
    }
    let lines = cluster.effects();
    let repeated = check_effects(&lines, &[stopped], runs.len());
    assert_eq!(
        repeated,
        runs.len(),
        "each run repeats only s2, the step in flight at SIGTERM"
    );
    for (topic, node, pid, _) in &lines {
        if node == "s1" {
            assert_eq!(*pid, stopped, "`{topic}`: s1 was finished and never ran again");
        }
    }
    for s in stream {
        let reply = s.await.expect("the stream was read");
        let events = frames(&reply.body);
        assert_eq!(reply.status, 200);
        assert_eq!(
            events.last().map(|e| e.1["log"].clone()),
            Some(json!(NODES)),
            "{events:?}"
        );
    }
    drop(api);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn runs_per_second_with_one_two_and_three_workers() {
    let _alone = ONE_DEPLOYMENT.lock().await;
    let (runs, threads) = (
        env_number("WEIR_SCALE_RUNS", 300),
        env_number("WEIR_SCALE_THREADS", 100),
    );
    for workers in 1..=3 {
        let cluster = Cluster::new(&["--node-ms", "20", "--heartbeat-ms", "1000", "--poll-ms", "500"]);
        let (apis, workers_up) = start(&cluster, workers);
        let urls = [apis[0].url.clone(), apis[1].url.clone()];
        let began = Instant::now();
        let tids = load(urls.clone(), threads, runs, watch::channel(0).0).await;
        let secs = began.elapsed().as_secs_f64();
        println!(
            "{workers} worker(s): {runs} runs in {secs:.1} s, {:.1} runs/s (debug build)",
            runs as f64 / secs
        );
        let statuses = statuses(&urls[0], &tids).await;
        assert_eq!(statuses, BTreeMap::from([("success".to_owned(), runs)]));
        check_effects(&cluster.effects(), &[], runs);
        drop((workers_up, apis));
    }
}

/// Crons scaled out: a cron made through an API process is fired by the workers, each time by
/// one of them. With two workers each polling every second, an every-second cron makes one run
/// a second on its thread, never two for one time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn a_cron_made_on_an_api_fires_once_a_time_across_two_workers() {
    let _alone = ONE_DEPLOYMENT.lock().await;
    let cluster = Cluster::new(&["--node-ms", "5"]);
    let api = cluster.start("api");
    let _workers = [cluster.start("worker"), cluster.start("worker")];
    let tid = thread(&api.url).await;
    let body = json!({"assistant_id": "steps", "schedule": "* * * * * *", "input": {"topic": "cron"}});
    let made = call(&api.url, "POST", &format!("/threads/{tid}/runs/crons"), Some(&body)).await;
    assert_eq!(made.status, 200, "{}", String::from_utf8_lossy(&made.body));
    let cron_id = made.json()["cron_id"].as_str().expect("a cron id").to_owned();
    tokio::time::sleep(std::time::Duration::from_millis(4500)).await;
    let deleted = call(&api.url, "DELETE", &format!("/runs/crons/{cron_id}"), None).await;
    assert_eq!(deleted.status, 204);
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    let runs = loop {
        let runs = call(&api.url, "GET", &format!("/threads/{tid}/runs?limit=100"), None)
            .await
            .json();
        let runs = runs.as_array().expect("a list of runs").clone();
        if runs.iter().all(|r| r["status"] == "success") {
            break runs;
        }
        assert!(Instant::now() < deadline, "the cron's runs did not finish: {runs:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert!(
        (3..=6).contains(&runs.len()),
        "{} runs in 4.5 s of an every-second cron",
        runs.len()
    );
    let mut times: Vec<jiff::Timestamp> = runs
        .iter()
        .map(|r| r["created_at"].as_str().expect("a time").parse().expect("RFC 3339"))
        .collect();
    times.sort();
    for pair in times.windows(2) {
        assert!(
            pair[1].duration_since(pair[0]) >= jiff::SignedDuration::from_millis(500),
            "two runs for one firing: {times:?}"
        );
    }
    let effects = cluster.effects();
    assert_eq!(
        effects.iter().filter(|e| e.1 == "s1" && e.3 == "end").count(),
        runs.len()
    );
}

/// A thread's stream served by an API process that neither made the runs nor ran them: it learns
/// of each run over Redis (the other API process's notice) and reads its events from the
/// worker's stream there; both runs come whole, the second after the first's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis: set WEIR_POSTGRES_URL and WEIR_REDIS_URL, run with --include-ignored"]
async fn a_thread_stream_on_one_api_follows_the_runs_made_on_another() {
    use http_body_util::BodyExt;
    let _alone = ONE_DEPLOYMENT.lock().await;
    let cluster = Cluster::new(&["--node-ms", "5"]);
    let (watcher, maker) = (cluster.start("api"), cluster.start("api"));
    let _worker = cluster.start("worker");
    let tid = thread(&maker.url).await;
    let res = request(&watcher.url, "GET", &format!("/threads/{tid}/stream"), None).await;
    assert_eq!(res.status(), 200);
    let mut body = res.into_body();
    let mut made = Vec::new();
    for topic in ["one", "two"] {
        let run = json!({"assistant_id": "steps", "input": {"topic": topic}});
        let reply = call(&maker.url, "POST", &format!("/threads/{tid}/runs"), Some(&run)).await;
        assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
        made.push(reply.json()["run_id"].as_str().expect("a run id").to_owned());
    }
    let end = |rid: &str| ("metadata".to_owned(), json!({"status": "run_done", "run_id": rid}));
    let start = |rid: &str| ("metadata".to_owned(), json!({"run_id": rid, "attempt": 1}));
    let mut text = Vec::new();
    let seen: Vec<(String, Value)> = loop {
        let seen: Vec<(String, Value)> = frames(&text).into_iter().map(|(e, d, _)| (e, d)).collect();
        if seen.contains(&end(&made[1])) {
            break seen;
        }
        let frame = tokio::time::timeout(std::time::Duration::from_secs(60), body.frame())
            .await
            .unwrap_or_else(|_| panic!("the thread stream went quiet: {seen:?}"))
            .expect("the thread stream goes on")
            .expect("a frame");
        if let Ok(data) = frame.into_data() {
            text.extend_from_slice(&data);
        }
    };
    assert_eq!(seen[0], start(&made[0]), "{seen:?}");
    let second = seen
        .iter()
        .position(|p| *p == start(&made[1]))
        .expect("the second run's start");
    assert_eq!(seen[second - 1], end(&made[0]));
    for (run, topic) in [(&seen[..second], "one"), (&seen[second..], "two")] {
        let last = run.iter().rev().find(|(e, _)| e == "values").expect("the run's values");
        assert_eq!(last.1["topic"], json!(topic));
        assert_eq!(
            last.1["log"].as_array().map(Vec::len),
            Some(NODES.len() * if topic == "one" { 1 } else { 2 })
        );
    }
    assert_eq!(seen.last(), Some(&end(&made[1])));
}
