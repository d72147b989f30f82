//! The Store against every backend: one suite of cases (`cases`, ported from LangGraph's store
//! tests) run on `InMemoryStore`, `SqliteStore` and `PostgresStore` (feature `postgres`; ignored
//! unless asked for with `-- --include-ignored`, and then `WEIR_POSTGRES_URL` must name a
//! database; each test gets a fresh schema). Then the store as nodes see it (`nodes`) and what
//! only one backend does (`backends`).

mod backends;
mod cases;
mod nodes;
mod support;

/// Generates one test per case for a backend, given its [`support::Make`]; `ignore = "why"`
/// marks them ignored unless asked for (a backend that needs a server).
macro_rules! conformance {
    ($backend:ident: $make:path $(, ignore = $why:literal)?) => {
        mod $backend {
            conformance!(@tests $make $(, $why)?;
                put_get_update_delete
                invalid_namespaces_and_values_are_refused_naming_them
                search_finds_items_under_a_prefix_newest_first
                pages_follow_one_newest_first_order_through_rewrites_deletes_and_expiry
                search_filters_with_every_operator
                filters_agree_on_nested_paths_mixed_types_and_missing_keys
                a_prefix_with_like_wildcards_matches_only_itself
                list_namespaces_with_conditions_depth_and_pages
                batch_runs_mixed_operations_in_order
                a_key_written_again_in_one_batch_ends_as_its_last_write
                expired_items_are_omitted_and_reads_refresh_the_ttl
                searches_refresh_ttls_unless_told_not_to_and_listing_skips_expired
                typed_helpers_round_trip_serde_values
                concurrent_writers_from_many_tasks_all_land
                ten_thousand_items_filter_and_page_exactly
            );
        }
    };
    (@tests $make:path; $($case:ident)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                crate::cases::$case($make).await;
            }
        )*
    };
    (@tests $make:path, $why:literal; $($case:ident)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = $why]
            async fn $case() {
                crate::cases::$case($make).await;
            }
        )*
    };
}

conformance!(memory: crate::support::memory);
conformance!(sqlite: crate::support::sqlite);
#[cfg(feature = "postgres")]
conformance!(postgres: crate::support::postgres, ignore = "needs PostgreSQL: set WEIR_POSTGRES_URL, run with --include-ignored");

/// Semantic search needs vectors: brute force in memory and SQLite; pgvector on PostgreSQL,
/// which this suite's server may lack (see `backends::postgres_index_without_pgvector_is_refused_naming_it`).
mod semantic {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory() {
        crate::cases::a_query_ranks_by_similarity_of_indexed_fields(crate::support::memory).await;
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        crate::cases::a_query_ranks_by_similarity_of_indexed_fields(crate::support::sqlite).await;
    }
}
