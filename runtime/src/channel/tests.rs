//! The channel contract, kind by kind, with conformance scenarios C01–C06 of SEMANTICS.md §6
//! (LangGraph's own values).

use super::*;
use std::collections::BTreeMap;

fn round_trip<T, C>(c: &ChannelCell<T, C>) -> ChannelCell<T, C>
where
    T: Default + Clone + Serialize + DeserializeOwned,
    C: Channel<T>,
{
    // Through serde, as a checkpoint would: JSON text and back.
    let saved = c.checkpoint();
    let text = serde_json::to_string(&saved).unwrap();
    let back: Option<Checkpoint<T, C::Meta>> = serde_json::from_str(&text).unwrap();
    c.from_checkpoint(back)
}

fn append(v: &mut Vec<String>, more: Vec<String>) {
    v.extend(more);
}

fn add(v: &mut i64, more: i64) {
    *v += more;
}

fn s(x: &str) -> String {
    x.to_owned()
}

// C01: LastValue(int): get; update([]); update([5,6]); update([3]); update([4]); checkpoint round trip.
#[test]
fn c01_last_value() {
    let mut c = ChannelCell::<i64, _>::new(LastValue::new());
    assert_eq!(c.get(), Err(EmptyChannel));
    assert!(!c.is_available());
    assert_eq!(c.update([]), Ok(false));
    assert_eq!(c.update([5, 6]), Err(UpdateError::TooManyWrites { count: 2 }));
    assert_eq!(c.update([3]), Ok(true));
    assert_eq!(c.get(), Ok(&3));
    assert_eq!(c.update([4]), Ok(true));
    assert_eq!(c.get(), Ok(&4));
    assert_eq!(c.update([]), Ok(false));
    assert_eq!(c.get(), Ok(&4), "update([]) keeps the value");
    assert_eq!(round_trip(&c).get(), Ok(&4));
    let empty = ChannelCell::<i64, _>::new(LastValue::new());
    assert!(
        empty.checkpoint().is_none(),
        "an empty channel is missing from checkpoints"
    );
    assert_eq!(round_trip(&empty).get(), Err(EmptyChannel));
    assert!(
        !c.clone().consume() && !c.clone().finish(),
        "consume and finish are no-ops"
    );
}

#[test]
fn stored_none_is_not_empty() {
    let mut c = ChannelCell::<Option<String>, _>::new(LastValue::new());
    assert_eq!(c.get(), Err(EmptyChannel));
    c.update([None]).unwrap();
    assert_eq!(c.get(), Ok(&None));
    let saved = c.checkpoint().expect("a stored None is saved");
    assert_eq!(serde_json::to_string(&saved).unwrap(), r#"{"value":null,"meta":null}"#);
    assert_eq!(round_trip(&c).get(), Ok(&None));
}

// C02: Topic(str): [a,b]; [[c,d],d]; []; []; [e].
#[test]
fn c02_topic_per_step() {
    let mut c = ChannelCell::<Vec<String>, _>::new(Topic::new());
    assert_eq!(c.get(), Err(EmptyChannel));
    assert_eq!(c.update([vec![s("a"), s("b")]]), Ok(true));
    assert_eq!(c.get().unwrap(), &[s("a"), s("b")]);
    assert_eq!(c.update([vec![s("c"), s("d")], vec![s("d")]]), Ok(true));
    assert_eq!(c.get().unwrap(), &[s("c"), s("d"), s("d")], "replaced and flattened");
    assert_eq!(c.update([]), Ok(true), "update([]) clears");
    assert_eq!(c.get(), Err(EmptyChannel));
    assert_eq!(c.update([]), Ok(false));
    assert_eq!(
        c.checkpoint().map(|cp| cp.value),
        Some(vec![]),
        "an emptied topic checkpoints as []"
    );
    assert_eq!(c.update([vec![s("e")]]), Ok(true));
    assert_eq!(c.checkpoint().map(|cp| cp.value), Some(vec![s("e")]));
    assert_eq!(round_trip(&c).get().unwrap(), &[s("e")]);
}

// C03: Topic(str, accumulate=True): [a,b]; [b,[c,d],d]; [].
#[test]
fn c03_topic_accumulate() {
    let mut c = ChannelCell::<Vec<String>, _>::new(Topic::accumulate());
    assert_eq!(c.update([vec![s("a"), s("b")]]), Ok(true));
    assert_eq!(c.update([vec![s("b")], vec![s("c"), s("d")], vec![s("d")]]), Ok(true));
    let all = [s("a"), s("b"), s("b"), s("c"), s("d"), s("d")];
    assert_eq!(c.get().unwrap(), &all);
    assert_eq!(c.update([]), Ok(false));
    assert_eq!(c.get().unwrap(), &all, "kept");
    assert_eq!(round_trip(&c).get().unwrap(), &all);
}

// C04: binop(int,+): initial; [1,2,3]; [4]; binop(list,+) with overwrites.
#[test]
fn c04_binop() {
    let mut c = ChannelCell::<i64, _>::new(BinaryOperatorAggregate::new(add as fn(&mut i64, i64)));
    assert_eq!(c.get(), Ok(&0), "starts at the default, available");
    assert_eq!(c.update([1, 2, 3].map(ReducerWrite::Reduce)), Ok(true));
    assert_eq!(c.get(), Ok(&6));
    assert_eq!(c.update([ReducerWrite::Reduce(4)]), Ok(true));
    assert_eq!(c.get(), Ok(&10));
    assert_eq!(c.update([]), Ok(false));
    assert_eq!(round_trip(&c).get(), Ok(&10));

    let mut l = ChannelCell::<Vec<String>, _>::new(BinaryOperatorAggregate::new(
        append as fn(&mut Vec<String>, Vec<String>),
    ));
    assert_eq!(l.get(), Ok(&vec![]));
    let writes = [
        ReducerWrite::Reduce(vec![s("a")]),
        ReducerWrite::Overwrite(vec![s("X")]),
        ReducerWrite::Reduce(vec![s("c")]),
    ];
    assert_eq!(l.update(writes), Ok(true));
    assert_eq!(
        l.get(),
        Ok(&vec![s("X")]),
        "the overwrite replaces, later writes are ignored"
    );
    assert_eq!(l.update([ReducerWrite::Overwrite(vec![s("Y")])]), Ok(true));
    assert_eq!(l.get(), Ok(&vec![s("Y")]));
    let two = [
        ReducerWrite::Overwrite(vec![s("1")]),
        ReducerWrite::Overwrite(vec![s("2")]),
    ];
    assert_eq!(l.update(two), Err(UpdateError::TwoOverwrites));
}

// C05: UntrackedValue(dict).
#[test]
fn c05_untracked() {
    let mut c = ChannelCell::<BTreeMap<String, i64>, _>::new(UntrackedValue::new());
    assert_eq!(c.get(), Err(EmptyChannel));
    c.update([BTreeMap::from([(s("a"), 1)])]).unwrap();
    assert_eq!(c.get().unwrap()[&s("a")], 1);
    assert!(c.checkpoint().is_none(), "never checkpointed");
    assert_eq!(round_trip(&c).get(), Err(EmptyChannel), "a reload finds it empty");
    assert_eq!(c.update([]), Ok(false), "kept across steps");
    assert!(c.is_available());
    assert_eq!(
        c.update([BTreeMap::new(), BTreeMap::new()]),
        Err(UpdateError::TooManyWrites { count: 2 })
    );
    let mut u = ChannelCell::<i64, _>::new(UntrackedValue::unguarded());
    assert_eq!(u.update([1, 2]), Ok(true));
    assert_eq!(u.get(), Ok(&2));
}

// C06: ephemeral, any value, barriers and after-finish lifecycles.
#[test]
fn c06_ephemeral() {
    let mut c = ChannelCell::<i64, _>::new(EphemeralValue::new());
    assert_eq!(c.update([1]), Ok(true));
    assert_eq!(c.get(), Ok(&1));
    assert_eq!(round_trip(&c).get(), Ok(&1), "an ephemeral value is saved while set");
    assert_eq!((c.update([]), c.is_available()), (Ok(true), false), "update([]) clears");
    assert_eq!(c.update([]), Ok(false));
    assert!(c.checkpoint().is_none());
    assert_eq!(c.update([1, 2]), Err(UpdateError::TooManyWrites { count: 2 }));
    let mut u = ChannelCell::<i64, _>::new(EphemeralValue::unguarded());
    assert_eq!(u.update([1, 2]), Ok(true));
    assert_eq!(u.get(), Ok(&2));
}

#[test]
fn c06_any_value() {
    let mut c = ChannelCell::<i64, _>::new(AnyValue::new());
    assert_eq!(c.get(), Err(EmptyChannel));
    assert_eq!(c.update([1, 2]), Ok(true));
    assert_eq!(c.get(), Ok(&2), "keeps the last");
    assert_eq!(round_trip(&c).get(), Ok(&2));
    assert_eq!((c.update([]), c.is_available()), (Ok(true), false), "update([]) clears");
    assert_eq!(c.update([]), Ok(false));
}

#[test]
fn c06_named_barrier() {
    let mut c = ChannelCell::<(), _>::new(NamedBarrierValue::new([s("a"), s("b")]));
    assert_eq!((c.update([s("a")]), c.is_available()), (Ok(true), false), "partial");
    assert_eq!(c.update([s("a")]), Ok(false), "a repeated name changes nothing");
    let saved = round_trip(&c);
    assert_eq!(
        (c.update([s("b")]), c.is_available(), c.get()),
        (Ok(true), true, Ok(&()))
    );
    assert_eq!(c.update([]), Ok(false));
    assert_eq!((c.consume(), c.is_available()), (true, false), "consume resets");
    assert!(!c.consume());
    assert_eq!(
        c.update([s("z")]),
        Err(UpdateError::UnknownName { name: "\"z\"".into() })
    );
    // The half-seen barrier survives a checkpoint.
    let mut saved = saved;
    assert_eq!((saved.update([s("b")]), saved.is_available()), (Ok(true), true));
    assert!(!c.finish());
}

#[test]
fn named_barrier_of_a_wide_join_in_any_order_and_across_a_checkpoint() {
    // Names given twice count once; writes in reverse order; the count survives a checkpoint.
    let names: Vec<u32> = (0..1000).chain([7, 7]).collect();
    let mut c = ChannelCell::<(), _>::new(NamedBarrierValue::new(names));
    assert_eq!(c.update((500..1000).rev()), Ok(true));
    assert_eq!(c.update([999, 500]), Ok(false), "seen names change nothing");
    let mut saved = round_trip(&c);
    assert!(!c.is_available());
    assert_eq!(c.update((0..499).rev()), Ok(true));
    assert!(!c.is_available(), "one name still missing");
    assert_eq!(c.update([499]), Ok(true));
    assert!(c.is_available());
    assert_eq!(c.update([1000]), Err(UpdateError::UnknownName { name: "1000".into() }));
    assert_eq!((saved.update(0..500), saved.is_available()), (Ok(true), true));
    assert!(saved.consume());
    assert_eq!(
        (saved.update([3]), saved.is_available()),
        (Ok(true), false),
        "consume starts over"
    );
}

#[test]
fn c06_last_value_after_finish() {
    let mut c = ChannelCell::<i64, _>::new(LastValueAfterFinish::new());
    assert_eq!(
        (c.update([7]), c.is_available()),
        (Ok(true), false),
        "hidden before finish"
    );
    assert!(!round_trip(&c).is_available());
    assert_eq!((c.finish(), c.get()), (true, Ok(&7)));
    assert!(!c.finish());
    assert_eq!(round_trip(&c).get(), Ok(&7), "finished state survives a checkpoint");
    assert_eq!(c.update([]), Ok(false));
    assert_eq!(
        (c.consume(), c.is_available()),
        (true, false),
        "consume after finish clears"
    );
    assert!(c.checkpoint().is_none());
    assert!(!c.consume());
}

#[test]
fn c06_named_barrier_after_finish() {
    let mut c = ChannelCell::<(), _>::new(NamedBarrierValueAfterFinish::new([s("a"), s("b")]));
    assert_eq!(c.update([s("a"), s("b")]), Ok(true));
    assert_eq!(
        (c.is_available(), c.finish(), c.is_available()),
        (false, true, true),
        "needs finish"
    );
    assert!(round_trip(&c).is_available());
    assert!(c.consume());
    assert!(!c.is_available());
    assert!(!c.finish(), "an incomplete barrier does not finish");
}

#[test]
fn copies_are_independent() {
    let mut c = ChannelCell::<Vec<String>, _>::new(Topic::accumulate());
    c.update([vec![s("a")]]).unwrap();
    let copy = c.clone();
    c.update([vec![s("b")]]).unwrap();
    assert_eq!(copy.get().unwrap(), &[s("a")]);
    assert_eq!(c.get().unwrap().len(), 2);
}

// The loop skips `update([])` for kinds that say it cannot change them: check that it cannot.
#[test]
fn only_kinds_that_clear_when_idle_change_on_an_empty_update() {
    fn check<T: Default + Clone + std::fmt::Debug, C: Channel<T>>(channel: C, write: C::Write) {
        let clears = channel.clears_when_idle();
        let mut c = ChannelCell::<T, C>::new(channel);
        c.update([write]).unwrap();
        assert_eq!(c.update([]), Ok(clears), "{c:?}");
    }
    check::<i64, _>(LastValue::new(), 1);
    check::<i64, _>(AnyValue::new(), 1);
    check::<i64, _>(EphemeralValue::new(), 1);
    check::<i64, _>(UntrackedValue::new(), 1);
    check::<i64, _>(LastValueAfterFinish::new(), 1);
    check::<Vec<i64>, _>(Topic::new(), vec![1]);
    check::<Vec<i64>, _>(Topic::accumulate(), vec![1]);
    check::<i64, _>(
        BinaryOperatorAggregate::new(add as fn(&mut i64, i64)),
        ReducerWrite::Reduce(1),
    );
    check::<(), _>(NamedBarrierValue::new([s("a"), s("b")]), s("a"));
    check::<(), _>(NamedBarrierValueAfterFinish::new([s("a")]), s("a"));
}

/// Puts `x`, or, for a negative `x`, removes the items equal to `-x`: a reducer that reports.
fn put_or_remove(v: &mut Vec<i64>, x: i64) -> Folded {
    if x >= 0 {
        v.push(x);
        Folded::Appended
    } else {
        v.retain(|y| *y != -x);
        Folded::Rewrote
    }
}

// The rewrite count, which tells a checkpoint whether a list only grew: a reporting reducer's
// appends leave it, its rewrites, an overwrite and a reset bump it; a reducer that says nothing
// bumps it at every fold; a restored channel starts again from 0.
#[test]
fn the_rewrite_count_moves_only_when_a_list_did_not_just_grow() {
    let mut v = Vec::new();
    let mut c = BinaryOperatorAggregate::reporting(put_or_remove as fn(&mut Vec<i64>, i64) -> Folded);
    c.update(&mut v, [1, 2, 3].map(ReducerWrite::Reduce)).unwrap();
    assert_eq!((c.rewrites(), &v[..]), (0, &[1, 2, 3][..]));
    c.update(&mut v, [ReducerWrite::Reduce(-2), ReducerWrite::Reduce(4)])
        .unwrap();
    assert_eq!((c.rewrites(), &v[..]), (1, &[1, 3, 4][..]));
    c.update(&mut v, [ReducerWrite::Overwrite(vec![7])]).unwrap();
    assert_eq!(c.rewrites(), 2);
    c.reset(&mut v);
    assert_eq!((c.rewrites(), v.len()), (3, 0));
    assert_eq!(c.from_checkpoint(Some(())).rewrites(), 0);

    let mut plain = BinaryOperatorAggregate::new(append as fn(&mut Vec<String>, Vec<String>));
    let mut l = Vec::new();
    plain
        .update(
            &mut l,
            [ReducerWrite::Reduce(vec![s("a")]), ReducerWrite::Reduce(vec![s("b")])],
        )
        .unwrap();
    assert_eq!(plain.rewrites(), 2, "a reducer that says nothing may have rewritten");
}
