//! The JSON bridge's runs against LangGraph's server: the anchor graphs served on a SQLite saver
//! in a temporary directory, their events compared with the captures of `langgraph dev` (ids
//! aside); resumes, commands, errors and their kinds, the stream modes, a dropped stream, a flow.

mod support;
use support::*;

#[tokio::test]
async fn chain_streams_custom_and_updates_as_the_capture() {
    let (_dir, saver) = sqlite();
    let g = chain().into_served(saver);
    let (events, end) = run(&g, request("t1", json!({"topic": "c"}), &[Mode::Updates, Mode::Custom])).await;
    assert_eq!(normalize(events), capture("custom.sse"));
    assert_eq!(
        end,
        RunEnd::Success {
            values: json!({"topic": "c", "log": ["a:c", "b"]})
        }
    );
}

#[tokio::test]
async fn a_subgraph_and_an_interrupt_stream_as_the_capture() {
    let (_dir, saver) = sqlite();
    let g = parent().into_served(saver);
    let mut r = request("t2", json!({"topic": "t"}), &[Mode::Values, Mode::Updates]);
    r.subgraphs = true;
    let (events, end) = run(&g, r).await;
    assert_eq!(normalize(events), capture("subgraphs_interrupt.sse"));
    let RunEnd::Interrupted { values, interrupts } = end else {
        panic!("paused, not {end:?}")
    };
    assert_eq!(values, json!({"topic": "t", "log": ["a:t", "b"]}));
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0].value, json!({"question": "ok?"}));
    assert_eq!(interrupts[0].id.len(), 32);
    let state = g.state("t2", None, false).await.unwrap().unwrap();
    assert_eq!(state["tasks"][0]["id"], json!(interrupts[0].task_id));
}

#[tokio::test]
async fn a_resume_answers_the_interrupt_and_state_shows_it_before() {
    let (_dir, saver) = sqlite();
    let g = hitl().into_served(saver);
    let (_, end) = run(&g, request("t3", json!({"topic": "z"}), &[Mode::Values])).await;
    assert!(matches!(end, RunEnd::Interrupted { .. }), "{end:?}");

    // The state after the interrupt, as sdk_trace.txt shows it (ids and times aside).
    let state = g.state("t3", None, false).await.unwrap().unwrap();
    let keys: Vec<&str> = state.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected = vec![
        "values",
        "next",
        "tasks",
        "metadata",
        "created_at",
        "checkpoint",
        "parent_checkpoint",
        "interrupts",
        "checkpoint_id",
        "parent_checkpoint_id",
    ];
    let mut got = keys.clone();
    got.sort_unstable();
    expected.sort_unstable();
    assert_eq!(got, expected);
    assert_eq!(state["values"], json!({"topic": "z", "log": ["a:z"]}));
    assert_eq!(state["next"], json!(["ask"]));
    assert_eq!(state["metadata"]["source"], json!("loop"));
    assert_eq!(state["metadata"]["step"], json!(1));
    let task = &state["tasks"][0];
    assert_eq!(task["name"], json!("ask"));
    assert_eq!(task["path"], json!(["__pregel_pull", "ask"]));
    let interrupt = &task["interrupts"][0];
    assert_eq!(interrupt["value"], json!({"question": "ok?"}));
    assert_eq!(state["interrupts"], json!([interrupt]));
    assert_eq!(state["checkpoint"]["checkpoint_id"], state["checkpoint_id"]);
    assert_eq!(
        state["parent_checkpoint"]["checkpoint_id"],
        state["parent_checkpoint_id"]
    );

    let mut resume = request("t3", Value::Null, &[Mode::Updates]);
    resume.input = None;
    resume.command = Some(json!({"resume": "ok"}));
    let (events, end) = run(&g, resume).await;
    assert_eq!(normalize(events), capture("resume_resumable.sse"));
    assert_eq!(
        end,
        RunEnd::Success {
            values: json!({"topic": "z", "log": ["a:z", "ask:ok"]})
        }
    );
}

#[tokio::test]
async fn a_resume_map_by_interrupt_id_answers_that_interrupt() {
    let g = hitl().into_served(Arc::new(MemorySaver::new()));
    let (_, end) = run(&g, request("t", json!({"topic": "m"}), &[])).await;
    let RunEnd::Interrupted { interrupts, .. } = end else {
        panic!()
    };
    let mut resume = request("t", Value::Null, &[]);
    resume.command = Some(json!({"resume": {interrupts[0].id.clone(): "yes"}}));
    let (_, end) = run(&g, resume).await;
    assert_eq!(
        end,
        RunEnd::Success {
            values: json!({"topic": "m", "log": ["a:m", "ask:yes"]})
        }
    );
}

/// START -> (ask, ask2) -> END: two questions waiting at once.
fn two_questions() -> CompiledGraph<S> {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("ask", ask);
    g.add_node("ask2", ask);
    g.add_edge(START, "ask").add_edge(START, "ask2");
    g.add_edge("ask", END).add_edge("ask2", END);
    g.compile().unwrap()
}

/// Pauses thread `thread` of `g` at its two questions; answers their interrupt ids.
async fn two_waiting(g: &Arc<dyn ServedGraph>, thread: &str) -> Vec<String> {
    let (_, end) = run(g, request(thread, json!({"topic": "q"}), &[])).await;
    let RunEnd::Interrupted { interrupts, .. } = end else {
        panic!("paused, not {end:?}")
    };
    assert_eq!(interrupts.len(), 2);
    interrupts.into_iter().map(|i| i.id).collect()
}

/// A resume of `thread` with `resume`, strict or not.
fn resume(thread: &str, resume: Value, strict: bool) -> RunRequest {
    let mut r = request(thread, Value::Null, &[]);
    r.command = Some(json!({ "resume": resume }));
    r.strict_resume = strict;
    r
}

#[tokio::test]
async fn a_resume_map_answers_an_interrupt_inside_a_subgraph() {
    // START -> inner (hitl: a -> ask, which asks) -> END.
    let mut outer = GraphBuilder::<S>::new();
    outer.add_subgraph(
        "inner",
        hitl(),
        |s: &S| SUpdate::default().topic(s.topic.clone()),
        |t: &S| SUpdate::default().log(t.log.clone()),
    );
    outer.add_edge(START, "inner").add_edge("inner", END);
    let g = outer.compile().unwrap().into_served(Arc::new(MemorySaver::new()));
    let (_, end) = run(&g, request("p", json!({"topic": "s"}), &[])).await;
    let RunEnd::Interrupted { interrupts, .. } = end else {
        panic!("paused, not {end:?}")
    };
    for strict in [false, true] {
        let thread = format!("p{strict}");
        run(&g, request(&thread, json!({"topic": "s"}), &[])).await;
        let (_, end) = run(&g, resume(&thread, json!({interrupts[0].id.clone(): "sub"}), strict)).await;
        let RunEnd::Success { values } = end else {
            panic!("answered, not {end:?}")
        };
        assert_eq!(
            values["log"].as_array().unwrap().last(),
            Some(&json!("ask:sub")),
            "{values}"
        );
    }
}

#[tokio::test]
async fn a_resume_map_s_answers_to_no_waiting_interrupt_are_left_unused() {
    let g = two_questions().into_served(Arc::new(MemorySaver::new()));
    let ids = two_waiting(&g, "t").await;
    // One answer for a waiting interrupt, one for none: the first is given, the second left.
    let stale = "0123456789abcdef0123456789abcdef";
    let (_, end) = run(&g, resume("t", json!({ids[0].clone(): "yes", stale: "no"}), false)).await;
    let RunEnd::Interrupted { values, interrupts } = end else {
        panic!("the other question still waits, not {end:?}")
    };
    assert_eq!(values["log"], json!(["ask:yes"]));
    assert_eq!(interrupts.len(), 1);
    // An empty map answers nothing: the question asks again.
    let (_, end) = run(&g, resume("t", json!({}), false)).await;
    let RunEnd::Interrupted { interrupts: again, .. } = end else {
        panic!("still waiting, not {end:?}")
    };
    assert_eq!(again[0].id, interrupts[0].id);
}

#[tokio::test]
async fn a_strict_resume_that_answers_no_waiting_interrupt_fails_and_changes_nothing() {
    let (_dir, saver) = sqlite();
    let g = two_questions().into_served(saver);
    let ids = two_waiting(&g, "t").await;
    let before = g.state("t", None, false).await.unwrap().unwrap();
    let stale = "0123456789abcdef0123456789abcdef";
    let mut waiting = ids.clone();
    waiting.sort();
    let waiting = waiting.join(", ");
    let cases = [
        (
            json!({ids[0].clone(): "yes", stale: "no"}),
            format!("Unknown or already-consumed interrupt: {stale} (the interrupts waiting: {waiting})"),
        ),
        (
            json!({}),
            format!("The resume map names no interrupt (the interrupts waiting: {waiting})"),
        ),
    ];
    for (answers, message) in cases {
        let (_, end) = run(&g, resume("t", answers, true)).await;
        assert_eq!(
            end,
            RunEnd::Error {
                error: "UnknownInterruptError".into(),
                message
            }
        );
    }
    // One answer for two questions.
    let (_, end) = run(&g, resume("t", json!("yes"), true)).await;
    let RunEnd::Error { error, .. } = &end else {
        panic!("refused, not {end:?}")
    };
    assert_eq!(error, "UnknownInterruptError");
    let after = g.state("t", None, false).await.unwrap().unwrap();
    assert_eq!(after["checkpoint_id"], before["checkpoint_id"], "nothing was written");

    // Answers to both go through; then nothing waits, and a strict map naming either fails.
    let (_, end) = run(&g, resume("t", json!({ids[0].clone(): "a", ids[1].clone(): "b"}), true)).await;
    let RunEnd::Success { values } = end else {
        panic!("done, not {end:?}")
    };
    let mut log: Vec<String> = serde_json::from_value(values["log"].clone()).unwrap();
    log.sort();
    assert_eq!(log, ["ask:a", "ask:b"]);
    let (_, end) = run(&g, resume("t", json!({ids[0].clone(): "again"}), true)).await;
    assert_eq!(
        end,
        RunEnd::Error {
            error: "UnknownInterruptError".into(),
            message: format!(
                "Unknown or already-consumed interrupt: {} (no interrupt is waiting)",
                ids[0]
            )
        }
    );
    // A single answer with nothing waiting goes on from the head, strict or not (it resumes
    // a static breakpoint): here the thread is done, and stays so.
    let (_, end) = run(&g, resume("t", json!("late"), true)).await;
    assert!(matches!(end, RunEnd::Success { .. }), "{end:?}");
}

#[tokio::test]
async fn a_command_updates_the_state_and_goes_to_a_node() {
    let g = chain().into_served(Arc::new(MemorySaver::new()));
    run(&g, request("c", json!({"topic": "x"}), &[])).await;
    let mut r = request("c", Value::Null, &[Mode::Updates]);
    r.command = Some(json!({"update": {"topic": "y", "log": ["edit"]}, "goto": "b"}));
    let (events, end) = run(&g, r).await;
    assert_eq!(events, vec![("updates".to_owned(), json!({"b": {"log": ["b"]}}))]);
    let RunEnd::Success { values } = end else {
        panic!("{end:?}")
    };
    assert_eq!(values, json!({"topic": "y", "log": ["a:x", "b", "edit", "b"]}));
}

#[tokio::test]
async fn a_failing_node_ends_the_run_with_its_kind_and_message() {
    let (_dir, saver) = sqlite();
    let g = failing().into_served(saver);
    let (events, end) = run(&g, request("t4", json!({"topic": "x"}), &[Mode::Updates])).await;
    assert_eq!(events, vec![]);
    assert_eq!(
        end,
        RunEnd::Error {
            error: "ValueError".into(),
            message: "boom in node".into()
        }
    );
}

#[tokio::test]
async fn a_panicking_node_and_the_recursion_limit_end_the_run_with_their_kinds() {
    let mut g = GraphBuilder::<S>::new();
    g.add_node("crash", |_: &S| -> SUpdate { panic!("no topic") });
    g.add_edge(START, "crash").add_edge("crash", END);
    let g = g.compile().unwrap().into_served(Arc::new(MemorySaver::new()));
    let (_, end) = run(&g, request("p", json!({}), &[])).await;
    let RunEnd::Error { error, message } = end else {
        panic!("{end:?}")
    };
    assert_eq!(error, "NodePanic");
    assert!(message.contains("crash") && message.contains("no topic"), "{message}");

    let g = chain().into_served(Arc::new(MemorySaver::new()));
    let mut r = request("r", json!({"topic": "t"}), &[]);
    r.config.insert("recursion_limit".into(), json!(1));
    let (_, end) = run(&g, r).await;
    let RunEnd::Error { error, .. } = end else {
        panic!("{end:?}")
    };
    assert_eq!(error, "GraphRecursionError");
    let mut r = request("r", json!({"topic": "t"}), &[]);
    r.config.insert("recursion_limit".into(), json!("many"));
    let Err(GraphError::Invalid(m)) = g.run(r) else {
        panic!()
    };
    assert_eq!(m, "config.recursion_limit: expected a positive integer, not \"many\"");
}

#[tokio::test]
async fn interrupt_before_every_node_pauses_before_each() {
    let g = chain().into_served(Arc::new(MemorySaver::new()));
    let mut r = request("ib", json!({"topic": "t"}), &[Mode::Updates]);
    r.interrupt_before = vec!["*".into()];
    let (events, end) = run(&g, r.clone()).await;
    assert_eq!(events, vec![]);
    assert_eq!(
        end,
        RunEnd::Interrupted {
            values: json!({"topic": "t", "log": []}),
            interrupts: vec![]
        }
    );
    assert_eq!(g.state("ib", None, false).await.unwrap().unwrap()["next"], json!(["a"]));
    r.input = None;
    let (events, _) = run(&g, r).await;
    assert_eq!(events, vec![("updates".to_owned(), json!({"a": {"log": ["a:t"]}}))]);
    assert_eq!(g.state("ib", None, false).await.unwrap().unwrap()["next"], json!(["b"]));
}

#[tokio::test]
async fn bad_input_is_refused_naming_the_field() {
    let g = chain().into_served(Arc::new(MemorySaver::new()));
    let err = |r: Result<(), GraphError>| match r {
        Err(GraphError::Invalid(m)) => m,
        other => panic!("expected Invalid, got {other:?}"),
    };
    let m = err(g.check_input(Some(&json!({"topic": 3})), None));
    assert!(
        m.starts_with("input.topic: invalid type: integer `3`, expected a string"),
        "{m}"
    );
    let m = err(g.check_input(Some(&json!({"topik": "x"})), None));
    assert_eq!(m, "input.topik: unknown field; the state's fields are topic, log");
    let m = err(g.check_input(Some(&json!(["x"])), None));
    assert_eq!(m, "input: expected an object of the state's fields, not array");
    let m = err(g.check_input(None, Some(&json!({"goto": "c"}))));
    assert!(m.starts_with("command.goto: unknown node `c`"), "{m}");
    let m = err(g.check_input(None, Some(&json!({"update": {"topic": 1}}))));
    assert!(m.starts_with("command.update.topic: invalid type"), "{m}");
    let m = err(g.check_input(Some(&json!({"topic": "x"})), Some(&json!({"resume": 1}))));
    assert_eq!(m, "input: give either `input` or `command`, not both");
    assert_eq!(g.check_input(None, Some(&json!({"resume": "ok"}))), Ok(()));
    let Err(GraphError::Invalid(m)) = g.run(request("t", json!({"log": "x"}), &[])) else {
        panic!("run refuses it too")
    };
    assert!(
        m.starts_with("input.log: invalid type: string \"x\", expected a sequence"),
        "{m}"
    );
    let mut r = request("t", json!({}), &[]);
    r.interrupt_before = vec!["c".into()];
    let Err(GraphError::Invalid(m)) = g.run(r) else {
        panic!()
    };
    assert_eq!(m, "interrupt_before: unknown node `c`; the graph's nodes are a, b");
}

#[tokio::test]
async fn the_stream_modes_tasks_checkpoints_and_debug() {
    let g = chain().into_served(Arc::new(MemorySaver::new()));
    let (events, _) = run(
        &g,
        request("t", json!({"topic": "t"}), &[Mode::Tasks, Mode::Checkpoints]),
    )
    .await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "checkpoints",
            "checkpoints",
            "tasks",
            "tasks",
            "checkpoints",
            "tasks",
            "tasks",
            "checkpoints"
        ]
    );
    let (_, start) = &events[2];
    assert_eq!(start["name"], json!("a"));
    assert_eq!(start["input"], json!({"topic": "t", "log": []}));
    assert_eq!(start["triggers"], json!(["branch:to:a"]));
    let (_, result) = &events[3];
    assert_eq!(result["result"], json!({"log": ["a:t"]}));
    assert_eq!(result["error"], Value::Null);
    let (_, last) = &events[7];
    assert_eq!(last["values"], json!({"topic": "t", "log": ["a:t", "b"]}));
    assert_eq!(last["metadata"], json!({"source": "loop", "step": 2, "parents": {}}));
    assert_eq!(last["next"], json!([]));
    assert_eq!(
        last["parent_config"]["configurable"]["checkpoint_id"],
        events[4].1["config"]["configurable"]["checkpoint_id"]
    );
    let (events, _) = run(&g, request("t", json!({"topic": "t"}), &[Mode::Debug])).await;
    let kinds: Vec<&str> = events.iter().map(|(_, d)| d["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "checkpoint",
            "checkpoint",
            "task",
            "task_result",
            "checkpoint",
            "task",
            "task_result",
            "checkpoint"
        ]
    );
    assert!(events.iter().all(|(n, _)| n == "debug"));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_stream_stops_the_run() {
    // The waiting node holds `alive` until its task is dropped, which closes `stopped`.
    let (alive, stopped) = tokio::sync::oneshot::channel::<()>();
    let alive = Arc::new(std::sync::Mutex::new(Some(alive)));
    let mut g = GraphBuilder::<S>::new();
    g.add_node("a", |_: &S| SUpdate::default().log(vec!["a".into()]));
    g.add_node("wait", move |_: &S| {
        let held = alive.lock().unwrap().take();
        async move {
            let _held = held;
            futures::future::pending::<()>().await;
            SUpdate::default()
        }
    });
    g.add_edge(START, "a").add_edge("a", "wait").add_edge("wait", END);
    let served = g.compile().unwrap().into_served(Arc::new(MemorySaver::new()));
    let mut stream = served
        .run(request("d", json!({"topic": "t"}), &[Mode::Updates]))
        .unwrap();
    let first = stream.next().await.unwrap();
    assert_eq!(
        first,
        RunEvent::Stream {
            event: "updates".into(),
            data: json!({"a": {"log": ["a"]}})
        }
    );
    drop(stream);
    // Were the run left going, the paused clock would reach the timeout instead.
    let ended = tokio::time::timeout(std::time::Duration::from_secs(3600), stopped).await;
    assert!(matches!(ended, Ok(Err(_))), "the waiting task was dropped");
    let state = served.state("d", None, false).await.unwrap().unwrap();
    assert_eq!(state["next"], json!(["wait"]));
}

#[tokio::test]
async fn a_flow_is_served_the_same_way() {
    let flow = weir_flow::Flow::from_json(
        r#"{"nodes": [{"id": "start", "type": "start"},
                      {"id": "flag", "type": "set", "data": {"assign": {"verdict": "review {{ amount }}"}}},
                      {"id": "done", "type": "end"}],
            "edges": [{"id": "e1", "source": "start", "target": "flag"}, {"id": "e2", "source": "flag", "target": "done"}],
            "state": {"amount": {"type": "number"}, "verdict": {"type": "string"}}}"#,
        &weir_flow::Registry::new(),
    )
    .unwrap();
    let g = flow.into_served(Arc::new(MemorySaver::new()));
    let (events, end) = run(&g, request("f", json!({"amount": 250}), &[Mode::Updates])).await;
    assert!(
        events.contains(&("updates".into(), json!({"flag": {"verdict": "review 250"}}))),
        "{events:?}"
    );
    let RunEnd::Success { values } = end else {
        panic!("{end:?}")
    };
    assert_eq!(values, json!({"amount": 250, "verdict": "review 250"}));
    let Err(GraphError::Invalid(m)) = g.check_input(Some(&json!({"amount": "x"})), None) else {
        panic!()
    };
    assert!(m.starts_with("input: input field `amount`"), "{m}");
    assert_eq!(g.state("f", None, false).await.unwrap().unwrap()["values"], values);

    // No input on a new thread names the flow's declared fields (its state type has none).
    let mut r = request("empty", Value::Null, &[]);
    r.input = None;
    let (_, end) = run(&g, r).await;
    assert_eq!(
        end,
        RunEnd::Error {
            error: "EmptyInputError".into(),
            message: "Received no input for amount, verdict".into()
        }
    );
}

/// The bridge's cost over the runtime's own stream: `runs` runs of `chain` streaming values and
/// updates on a memory saver, each way. A figure, not a check: run with `--ignored --nocapture`.
#[tokio::test]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn measure_the_bridge_over_the_runtime() {
    let runs = 500;
    let graph = chain().with_checkpointer(MemorySaver::new());
    let started = std::time::Instant::now();
    for i in 0..runs {
        let input = S {
            topic: "t".into(),
            log: vec![],
        };
        let config = RunConfig::thread(format!("direct-{i}"));
        let mut stream = graph.stream(input, &config, weir::StreamMode::VALUES | weir::StreamMode::UPDATES);
        while stream.next().await.is_some() {}
    }
    let direct = started.elapsed();
    let g = chain().into_served(Arc::new(MemorySaver::new()));
    let started = std::time::Instant::now();
    for i in 0..runs {
        let (events, _) = run(
            &g,
            request(
                &format!("served-{i}"),
                json!({"topic": "t"}),
                &[Mode::Values, Mode::Updates],
            ),
        )
        .await;
        assert_eq!(events.len(), 5);
    }
    let served = started.elapsed();
    println!(
        "{runs} runs: runtime stream {:.1} µs/run, through the bridge {:.1} µs/run",
        direct.as_secs_f64() * 1e6 / f64::from(runs),
        served.as_secs_f64() * 1e6 / f64::from(runs)
    );
}

#[tokio::test]
async fn a_flow_asks_a_person_and_resumes_on_the_choice() {
    // A flow that pauses is loaded with the saver it is served on: its `output` node knows at
    // load time that it can pause.
    let saver: Arc<dyn Checkpointer> = Arc::new(MemorySaver::new());
    let options = weir_flow::LoadOptions {
        checkpointer: Some(saver.clone()),
        ..Default::default()
    };
    let flow = weir_flow::Flow::load(
        &json!({
            "nodes": [{"id": "s", "type": "start"},
                      {"id": "ask", "type": "output", "data": {"message": "Refund?", "choices": [{"id": "yes"}, {"id": "no"}]}},
                      {"id": "ko", "type": "set", "data": {"assign": {"verdict": "declined"}}},
                      {"id": "ok", "type": "set", "data": {"assign": {"verdict": "approved"}}},
                      {"id": "e", "type": "end"}],
            "edges": [{"id": "1", "source": "s", "target": "ask"},
                      {"id": "2", "source": "ask", "sourceHandle": "yes", "target": "ok"},
                      {"id": "3", "source": "ask", "sourceHandle": "no", "target": "ko"},
                      {"id": "4", "source": "ok", "target": "e"}, {"id": "5", "source": "ko", "target": "e"}],
            "state": {"verdict": {"type": "string"}}
        })
        .to_string(),
        &weir_flow::Registry::new(),
        options,
    )
    .unwrap();
    let g = flow.into_served(saver);
    let (_, end) = run(&g, request("f", json!({}), &[])).await;
    let RunEnd::Interrupted { interrupts, .. } = end else {
        panic!("{end:?}")
    };
    assert_eq!(interrupts.len(), 1);
    let state = g.state("f", None, false).await.unwrap().unwrap();
    assert_eq!(state["interrupts"][0]["id"], json!(interrupts[0].id));
    let mut resume = request("f", Value::Null, &[Mode::Updates]);
    resume.command = Some(json!({"resume": "yes"}));
    let (_, end) = run(&g, resume).await;
    let RunEnd::Success { values } = end else {
        panic!("{end:?}")
    };
    assert_eq!(values["verdict"], json!("approved"));
}
