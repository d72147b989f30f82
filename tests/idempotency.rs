//! A task's idempotency key (`Context::idempotency_key`): the same for every run of one task
//! (retries, the resume after an error or an interrupt) and different for every other task
//! (another node, `Send`, step, thread, subgraph, or a task of a fork: a replay or a state
//! edit), so an
//! external service that dedupes by it makes a side effect happen once. The crash across
//! processes is in `crash_mid_step.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weir::checkpoint::MemorySaver;
use weir::prelude::*;
use weir::RetryPolicy;

#[derive(State, Clone, Debug, Default)]
struct Order {
    #[reducer(append)]
    done: Vec<String>,
}

/// A node's label and the key it saw.
type Sighting = (String, Option<String>);

/// What the nodes saw, in the order they ran.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Sighting>>>);

impl Seen {
    fn push(&self, label: &str, ctx: &Context) -> Option<String> {
        let key = ctx.idempotency_key();
        self.0.lock().unwrap().push((label.to_owned(), key.clone()));
        key
    }

    fn keys(&self, label: &str) -> Vec<String> {
        let seen = self.0.lock().unwrap();
        seen.iter()
            .filter(|(l, _)| l == label)
            .map(|(_, k)| k.clone().expect("a checkpointed run gives a key"))
            .collect()
    }
}

/// A payment service that dedupes by idempotency key, as Stripe does: a second charge under a
/// key it knows is answered from the first.
#[derive(Clone, Default)]
struct Payments(Arc<Mutex<BTreeMap<String, u32>>>);

impl Payments {
    fn charge(&self, key: &str, amount: u32) {
        self.0.lock().unwrap().entry(key.to_owned()).or_insert(amount);
    }

    fn charges(&self) -> Vec<u32> {
        self.0.lock().unwrap().values().copied().collect()
    }
}

fn done(what: &str) -> OrderUpdate {
    OrderUpdate::default().done(vec![what.to_owned()])
}

/// START -> charge -> notify -> END. `charge` charges, then fails its first `failures` runs (a
/// crash after the side effect, before its writes are saved); two attempts per run.
fn shop(seen: &Seen, payments: &Payments, failures: usize) -> CompiledGraph<Order> {
    let mut g = GraphBuilder::<Order>::new();
    let (s, p, runs) = (seen.clone(), payments.clone(), Arc::new(Mutex::new(0)));
    let charge = g.add_node(
        "charge",
        move |_: &Order, ctx: &Context| -> Result<OrderUpdate, std::io::Error> {
            let key = s.push("charge", ctx).expect("a checkpointed run gives a key");
            p.charge(&key, 42);
            let mut runs = runs.lock().unwrap();
            *runs += 1;
            if *runs <= failures {
                return Err(std::io::Error::other("the connection dropped after the charge"));
            }
            Ok(done("charged"))
        },
    );
    g.retry(
        &charge,
        RetryPolicy::new(2)
            .initial_interval(Duration::from_millis(1))
            .jitter(false),
    );
    let s = seen.clone();
    g.add_node("notify", move |_: &Order, ctx: &Context| {
        s.push("notify", ctx);
        done("notified")
    });
    g.add_edge(START, "charge")
        .add_edge("charge", "notify")
        .add_edge("notify", END);
    g.with_checkpointer(MemorySaver::new()).compile().unwrap()
}

#[tokio::test]
async fn retries_and_the_resume_after_an_error_charge_once_under_one_key() {
    let (seen, payments) = (Seen::default(), Payments::default());
    let app = shop(&seen, &payments, 2);
    let cfg = RunConfig::thread("order-1");
    let err = app.invoke(Order::default(), &cfg).await.unwrap_err();
    assert_eq!(err.node_name(), Some("charge"));
    let out = app.resume(&cfg).await.unwrap();
    assert_eq!(out.state().done, ["charged", "notified"]);

    let charges = seen.keys("charge");
    assert_eq!(charges.len(), 3, "two attempts, then the resumed one");
    assert!(charges.iter().all(|k| *k == charges[0]), "{charges:?}");
    assert_eq!(payments.charges(), [42], "three runs of the node, one charge");
    assert_ne!(seen.keys("notify"), charges[..1], "the next step is another task");

    // The thread's next order is new work: a new key, a second charge.
    app.invoke(Order::default(), &cfg).await.unwrap();
    let charges = seen.keys("charge");
    assert_eq!(charges.len(), 4);
    assert_ne!(charges[3], charges[0]);
    assert_eq!(payments.charges(), [42, 42]);
    // Another thread's order too.
    app.invoke(Order::default(), &RunConfig::thread("order-2"))
        .await
        .unwrap();
    let keys: std::collections::BTreeSet<_> = seen.keys("charge").into_iter().collect();
    assert_eq!(keys.len(), 3);
}

#[tokio::test]
async fn a_task_answered_after_an_interrupt_has_the_key_it_asked_with() {
    let seen = Seen::default();
    let mut g = GraphBuilder::<Order>::new();
    let s = seen.clone();
    g.add_node(
        "ship",
        move |_: &Order, ctx: &Context| -> Result<OrderUpdate, BoxError> {
            s.push("ship", ctx);
            let address: String = ctx.interrupt("where to?")?;
            Ok(done(&address))
        },
    );
    g.add_edge(START, "ship").add_edge("ship", END);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("t");
    assert!(app.run(Order::default(), &cfg).await.unwrap().is_paused());
    let out = app.resume_with("Paris", &cfg).await.unwrap();
    assert_eq!(out.state().done, ["Paris"]);
    let keys = seen.keys("ship");
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1]);
}

#[tokio::test]
async fn each_send_of_a_step_and_each_node_has_its_own_key() {
    let seen = Seen::default();
    let mut g = GraphBuilder::<Order>::new();
    let s = seen.clone();
    let worker = g.add_send_node("worker", move |n: &u32, ctx: &Context| {
        s.push("worker", ctx);
        done(&n.to_string())
    });
    let s = seen.clone();
    g.add_node("plan", move |_: &Order, ctx: &Context| {
        s.push("plan", ctx);
    });
    g.add_edge(START, "plan");
    let w = worker.clone();
    g.add_router(
        "plan",
        move |_: &Order| (0..3).map(|i| w.send(i)).collect::<Vec<_>>(),
        [&worker],
    );
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    app.invoke(Order::default(), &RunConfig::thread("t")).await.unwrap();
    let mut all = seen.keys("worker");
    all.extend(seen.keys("plan"));
    let distinct: std::collections::BTreeSet<_> = all.iter().collect();
    assert_eq!((all.len(), distinct.len()), (4, 4), "{all:?}");
}

#[tokio::test]
async fn a_replay_and_a_state_edit_fork_the_thread_and_their_tasks_are_new_work() {
    let (seen, payments) = (Seen::default(), Payments::default());
    let app = shop(&seen, &payments, 0);
    let cfg = RunConfig::thread("t");
    app.invoke(Order::default(), &cfg).await.unwrap();
    let history = app.get_state_history(&cfg, None).await.unwrap();
    let before_charge = history
        .iter()
        .find(|s| s.next == ["charge"])
        .expect("a checkpoint whose next task is the charge");
    let at = cfg.clone().checkpoint_id(before_charge.checkpoint_id.clone());

    // A replay from a past checkpoint runs its tasks again as a fork (LangGraph's time travel).
    app.resume(&at).await.unwrap();
    let charges = seen.keys("charge");
    assert_eq!(charges.len(), 2);
    assert_ne!(charges[1], charges[0], "a replay is new work");
    assert_eq!(payments.charges(), [42, 42]);

    let edited = app.update_state(&at, done("coupon"), None).await.unwrap();
    app.resume(&cfg.clone().checkpoint_id(edited)).await.unwrap();
    let charges = seen.keys("charge");
    assert_eq!(charges.len(), 3);
    assert!(
        charges[2] != charges[0] && charges[2] != charges[1],
        "after an edit, the charge is new work"
    );
    assert_eq!(payments.charges(), [42, 42, 42]);
}

#[tokio::test]
async fn a_subgraphs_task_has_a_key_of_its_own() {
    let seen = Seen::default();
    let mut sub = GraphBuilder::<Order>::new();
    let s = seen.clone();
    sub.add_node("x", move |_: &Order, ctx: &Context| {
        s.push("x", ctx);
        done("x")
    });
    sub.add_edge(START, "x").add_edge("x", END);
    let mut g = GraphBuilder::<Order>::new();
    let s = seen.clone();
    g.add_node("p", move |_: &Order, ctx: &Context| {
        s.push("p", ctx);
        done("p")
    });
    g.add_subgraph(
        "sub",
        sub.compile().unwrap(),
        |_: &Order| OrderUpdate::default(),
        |o: &Order| OrderUpdate::default().done(o.done.clone()),
    );
    g.add_edge(START, "p").add_edge("p", "sub").add_edge("sub", END);
    let app = g.with_checkpointer(MemorySaver::new()).compile().unwrap();
    app.invoke(Order::default(), &RunConfig::thread("t")).await.unwrap();
    let (p, x) = (seen.keys("p"), seen.keys("x"));
    assert_eq!((p.len(), x.len()), (1, 1));
    assert_ne!(p[0], x[0]);
}

#[tokio::test]
async fn a_run_without_a_checkpointer_has_no_key() {
    let seen = Seen::default();
    let mut g = GraphBuilder::<Order>::new();
    let s = seen.clone();
    g.add_node("a", move |_: &Order, ctx: &Context| {
        s.push("a", ctx);
        done("a")
    });
    g.add_edge(START, "a").add_edge("a", END);
    g.compile()
        .unwrap()
        .invoke(Order::default(), &RunConfig::default())
        .await
        .unwrap();
    assert_eq!(*seen.0.lock().unwrap(), [("a".to_owned(), None)]);
}
