//! The server's tables and the Redis bus against real backends: one suite ([`catalog`],
//! [`crons`], [`narrow`], [`queue`]) run on SQLite (a temporary file) and on PostgreSQL (a fresh schema per test;
//! ignored unless asked for with `-- --include-ignored`, and then `WEIR_POSTGRES_URL` must name a
//! database); the PostgreSQL tables across killed connections ([`reconnect`]); the SQLite file
//! shared with the checkpointer ([`file`]); and the Redis bus
//! ([`redis`]; likewise with `WEIR_REDIS_URL`, a key prefix per test), and a Redis Cluster's
//! primary failing over under it ([`redis_failover`], on a cluster of its own).

mod catalog;
mod crons;
mod file;
mod narrow;
mod queue;
mod reconnect;
mod redis;
mod redis_failover;
#[path = "../redis_ha/mod.rs"]
mod redis_ha;
mod support;

/// One test per case of the suite for a backend, given an async constructor of a
/// [`support::Db`]; `ignore = "why"` marks them ignored unless asked for.
macro_rules! suite {
    ($backend:ident: $open:path $(, ignore = $why:literal)?) => {
        mod $backend {
            suite!(@tests $open $(, $why)?; catalog:
                an_assistant_is_stored_replaced_and_deleted
                assistants_are_filtered_sorted_paged_and_counted
                a_bad_sort_is_refused_naming_the_field
                creating_an_existing_thread_raises_or_returns_it_unchanged
                creating_a_thread_again_returns_the_row_its_first_attempt_made
                a_status_unless_busy_leaves_a_busy_thread_busy
                a_thread_row_is_replaced_whole
                threads_are_filtered_by_ids_status_metadata_and_values
                threads_are_sorted_paged_and_counted
                a_thread_is_read_without_its_values_when_asked
                deleting_a_thread_deletes_its_runs
                threads_expire_by_their_ttl_unless_busy
            );
            suite!(@tests $open $(, $why)?; crons:
                a_cron_is_stored_read_searched_counted_and_deleted
                due_crons_are_taken_once_and_move_to_their_next_time
                concurrent_schedulers_take_each_firing_once
            );
            suite!(@tests $open $(, $why)?; narrow:
                assistant_versions_are_recorded_listed_picked_and_deleted
                concurrent_thread_updates_keep_each_others_fields
                setting_a_threads_status_merges_metadata_and_keeps_its_values
            );
            suite!(@tests $open $(, $why)?; queue:
                enqueue_reports_the_runs_ahead_and_reject_stores_nothing
                enqueue_marks_its_thread_busy_in_the_same_transaction
                concurrent_reject_enqueues_on_one_thread_let_one_in
                a_threads_queue_is_bounded_for_the_enqueue_strategy_only
                a_run_is_read_listed_set_and_deleted
                claim_takes_the_oldest_runnable_run_and_a_threads_runs_in_order
                concurrent_claims_never_run_two_runs_of_one_thread
                requeue_puts_running_runs_back_and_busy_workers_names_their_workers
                in_flight_lists_every_pending_or_running_run_oldest_first
                a_run_is_not_claimed_before_its_time_and_holds_its_threads_later_runs_back
                a_stale_claim_can_neither_hold_nor_end_a_run_claimed_again
                a_run_s_end_leaves_its_thread_busy_while_another_run_of_it_waits
                a_rolled_back_run_is_deleted_under_its_claim_with_its_thread_written
                a_pending_run_is_ended_only_while_it_is_still_pending
                a_thread_is_in_flight_while_another_run_of_it_is_pending_or_running
                a_worker_claims_the_run_it_queues_only_when_it_could_start_at_once
                a_run_s_end_claims_the_workers_next_run_in_the_same_trip
                queue_stats_count_runs_and_age_the_waiting
            );
        }
    };
    (@tests $open:path; $module:ident: $($test:ident)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                let db = $open().await;
                crate::$module::$test(&db).await;
            }
        )*
    };
    (@tests $open:path, $why:literal; $module:ident: $($test:ident)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = $why]
            async fn $test() {
                let db = $open().await;
                crate::$module::$test(&db).await;
            }
        )*
    };
}

suite!(sqlite: crate::support::sqlite);
suite!(postgres: crate::support::postgres, ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored");
