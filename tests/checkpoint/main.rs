//! Checkpointed runs against every saver: one generic suite (`scenarios`, `behaviours`) run on
//! `MemorySaver`, `SqliteSaver` and `PostgresSaver` (feature `postgres`; ignored unless asked
//! for with `-- --include-ignored`, and then `WEIR_POSTGRES_URL` must name a database), with the conformance scenarios P05, P06, G02, G11, G12,
//! G13, G14, G18, G20, G21 and G30 of `../shared/langgraph/SEMANTICS.md` §6 and LangGraph
//! 1.2.9's expected values. Where weir's typed API makes a case impossible, the test says so.
//! Then the storage growth of a long run on SQLite (`growth`).

mod behaviours;
mod growth;
mod rollback;
mod scenarios;
mod support;

/// Generates one test per scenario for a saver, given an async constructor of a
/// [`support::Harness`]; `ignore = "why"` marks them ignored unless asked for (a saver that
/// needs a server).
macro_rules! suite {
    ($saver:ident: $harness:path $(, ignore = $why:literal)?) => {
        mod $saver {
            suite!(@tests $harness $(, $why)?; scenarios:
                p05_binop_across_runs_and_error_write
                p06_topic_cleared_between_steps_and_runs
                g02_interrupt_after_then_before_with_update_state_on_a_join
                g11_resume_after_failure_skips_the_succeeded_sibling
                g12_multiple_interrupts_in_one_node
                g13_interrupt_loop
                g14_parallel_interrupts_are_answered_by_id
                g18_fork_via_update_state_ignores_old_pending_writes
                g20_interrupt_after_every_node_and_checkpoint_counts
                g21_resume_passes_a_static_breakpoint
                g30_checkpoint_layout_after_a_two_node_run
            );
            suite!(@tests $harness $(, $why)?; behaviours:
                resume_with_nothing_to_resume_is_a_bad_resume
                an_answer_of_the_wrong_type_fails_the_node_naming_it_and_the_type
                time_travel_from_a_past_checkpoint_forks_there
                a_head_written_by_a_process_with_a_clock_ahead_is_followed
                two_runs_of_one_thread_at_once_one_proceeds_the_other_conflicts
                many_threads_run_concurrently_on_one_saver
                a_checkpoint_of_an_incompatible_state_fails_naming_the_field
                each_checkpoint_names_the_nodes_that_wrote_it_once
                a_half_seen_join_is_saved_by_name_and_resumed
                each_checkpoint_says_what_each_node_has_seen
                history_is_one_read_and_loading_the_head_is_one_read
            );
            suite!(@tests $harness $(, $why)?; rollback:
                delete_after_takes_a_thread_back_to_a_checkpoint
            );
        }
    };
    (@tests $harness:path; $module:ident: $($test:ident)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                let harness = $harness().await;
                crate::$module::$test(harness.saver.clone()).await;
            }
        )*
    };
    (@tests $harness:path, $why:literal; $module:ident: $($test:ident)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = $why]
            async fn $test() {
                let harness = $harness().await;
                crate::$module::$test(harness.saver.clone()).await;
            }
        )*
    };
}

suite!(memory: crate::support::memory);
suite!(sqlite: crate::support::sqlite);
#[cfg(feature = "postgres")]
suite!(postgres: crate::support::postgres, ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored");
