//! The config file read and refused: every section, and each error naming its field.

use super::*;

fn dir_with_flow() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chain.json"), "{}").unwrap();
    dir
}

fn refused(text: &str) -> (String, String) {
    let dir = dir_with_flow();
    Config::parse(text, dir.path()).unwrap_err()
}

#[test]
fn a_langgraph_json_shaped_file_is_read_with_paths_relative_to_it() {
    let dir = dir_with_flow();
    let text = r#"{"dependencies": ["."], "graphs": {"chain": "chain.json"},
        "store": {"index": {"embed": "openai:text-embedding-3-small", "dims": 1536}, "ttl": {"default_ttl": 60}},
        "checkpointer": {"ttl": {"strategy": "delete", "default_ttl": 43200, "sweep_interval_minutes": 10}}}"#;
    let c = Config::parse(text, dir.path()).unwrap();
    assert_eq!(
        c.graphs,
        BTreeMap::from([("chain".to_owned(), dir.path().join("chain.json"))])
    );
    assert_eq!(c.store.unwrap().index.unwrap().dims, 1536);
    assert_eq!(c.ttl.unwrap().sweep_interval_minutes, Some(10));
}

#[test]
fn a_key_weir_cannot_honour_is_refused_by_name_and_null_ones_pass() {
    for (key, value) in [
        ("auth", r#"{"path": "./auth.py:auth"}"#),
        ("encryption", r#"{"path": "./enc.py:encryption"}"#),
        ("webhooks", r#"{"url": {"require_https": true}}"#),
    ] {
        let (field, message) = refused(&format!(r#"{{"graphs": {{"chain": "chain.json"}}, "{key}": {value}}}"#));
        assert_eq!(field, key);
        assert!(message.starts_with("weir serve cannot honour it: it "), "{message}");
    }
    let (_, message) = refused(r#"{"graphs": {"chain": "chain.json"}, "auth": {"path": "a.py:auth"}}"#);
    assert!(
        message.contains("remove it to serve without authentication"),
        "{message}"
    );
    let dir = dir_with_flow();
    let text = r#"{"graphs": {"chain": "chain.json"}, "auth": null, "dependencies": ["."], "python_version": "3.12"}"#;
    assert!(Config::parse(text, dir.path()).is_ok());
}

#[test]
fn the_http_section_is_read_and_what_weir_cannot_do_or_read_is_refused_by_name() {
    let dir = dir_with_flow();
    let text = r#"{"graphs": {"chain": "chain.json"}, "http": {"disable_mcp": true, "mount_prefix": "/api",
        "cors": {"allow_origins": ["https://app.example.com"], "allow_headers": ["*"], "max_age": 60},
        "logging_headers": {"excludes": ["authorization"]}, "middleware_order": "auth_first"}}"#;
    let http = Config::parse(text, dir.path()).unwrap().http;
    assert!(http.disable_mcp && !http.disable_runs);
    assert_eq!(http.mount_prefix.as_deref(), Some("/api"));
    let cors = http.cors.unwrap();
    assert_eq!(
        (cors.allow_methods, cors.allow_headers, cors.max_age),
        (vec!["GET".to_owned()], vec!["*".to_owned()], 60)
    );
    let cases = [
        (r#"{"app": "./app.py:app"}"#, "http.app", "cannot mount a Python"),
        (
            r#"{"configurable_headers": {"includes": ["x-*"]}}"#,
            "http.configurable_headers",
            "does not copy",
        ),
        (
            r#"{"mount_prefix": "api/"}"#,
            "http.mount_prefix",
            "`api/` is not a path prefix",
        ),
        (
            r#"{"cors": {"allow_origins": ["app.example.com"]}}"#,
            "http.cors.allow_origins",
            "is not an origin",
        ),
        (
            r#"{"cors": {"allow_origin_regex": "(["}}"#,
            "http.cors.allow_origin_regex",
            "not a regular expression",
        ),
        (
            r#"{"cors": {"allow_methods": ["GE T"]}}"#,
            "http.cors.allow_methods",
            "not an HTTP method",
        ),
        (
            r#"{"cors": {"expose_headers": ["*"], "allow_credentials": true}}"#,
            "http.cors.expose_headers",
            "cannot go with",
        ),
        (
            r#"{"cors": {"allow_origin": ["*"]}}"#,
            "http.cors.allow_origin",
            "unknown field `allow_origin`",
        ),
        (r#"{"disable_runs": "yes"}"#, "http.disable_runs", "invalid type"),
    ];
    for (http, field, words) in cases {
        let (f, message) = refused(&format!(r#"{{"graphs": {{"chain": "chain.json"}}, "http": {http}}}"#));
        assert_eq!(f, field, "{http}: {message}");
        assert!(message.contains(words), "{http}: {message}");
    }
}

#[test]
fn a_graph_may_be_given_as_a_definition_with_a_description() {
    let dir = dir_with_flow();
    let text = r#"{"graphs": {"chain": {"path": "chain.json", "description": "Writes a chain."}}}"#;
    let c = Config::parse(text, dir.path()).unwrap();
    assert_eq!(c.graphs["chain"], dir.path().join("chain.json"));
    assert_eq!(c.descriptions["chain"], "Writes a chain.");
    let (field, message) = refused(r#"{"graphs": {"chain": {"file": "chain.json"}}}"#);
    assert_eq!(field, "graphs.chain");
    assert!(message.starts_with("unknown field `file`"), "{message}");
}

#[test]
fn env_is_an_object_of_strings_or_a_dotenv_file_relative_to_the_config() {
    let dir = dir_with_flow();
    std::fs::write(
        dir.path().join(".env"),
        "OPENAI_API_KEY=sk-1\nexport BASE=\"http://x/v1\"\n",
    )
    .unwrap();
    let file = Config::parse(r#"{"graphs": {"chain": "chain.json"}, "env": ".env"}"#, dir.path()).unwrap();
    let pairs = |c: Config| c.env.into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>();
    assert_eq!(pairs(file), ["OPENAI_API_KEY=sk-1", "BASE=http://x/v1"]);
    let object = Config::parse(r#"{"graphs": {"chain": "chain.json"}, "env": {"A": "1"}}"#, dir.path()).unwrap();
    assert_eq!(pairs(object), ["A=1"]);
    std::fs::write(dir.path().join("bad.env"), "A=1\nwords\n").unwrap();
    let cases = [
        (r#"{"A": 1}"#, "env.A", "expected a string, got 1".to_owned()),
        (r#""missing.env""#, "env", "cannot read `".to_owned()),
        (
            r#""bad.env""#,
            "env",
            format!(
                "`{}` line 2: expected `KEY=VALUE`",
                dir.path().join("bad.env").display()
            ),
        ),
        (
            "[1]",
            "env",
            "expected the path of a `.env` file or an object of strings".to_owned(),
        ),
    ];
    for (env, field, words) in cases {
        let text = format!(r#"{{"graphs": {{"chain": "chain.json"}}, "env": {env}}}"#);
        let (f, message) = Config::parse(&text, dir.path()).unwrap_err();
        assert_eq!(f, field, "{env}: {message}");
        assert!(message.contains(&words), "{env}: {message}");
    }
}

#[test]
fn the_postgres_section_sets_the_pools_with_the_ca_file_relative_to_the_config() {
    let dir = dir_with_flow();
    let text = r#"{"graphs": {"chain": "chain.json"}, "postgres": {"pool_size": 3,
        "acquire_timeout_secs": 2.5, "statement_timeout_secs": 30, "application_name": "api",
        "ca_file": "ca.pem"}}"#;
    let pg = Config::parse(text, dir.path()).unwrap().postgres.unwrap();
    assert_eq!(pg.ca_file, Some(dir.path().join("ca.pem")));
    assert_eq!((pg.pool_size, pg.acquire_timeout_secs), (Some(3), Some(2.5)));
    let options = pg.to_pool_options("weir");
    assert_eq!((options.pool_size(), options.schema_name()), (3, Some("weir")));
    let graphs = r#""graphs": {"chain": "chain.json"}"#;
    let (field, _) = refused(&format!(r#"{{{graphs}, "postgres": {{"pool_size": 0}}}}"#));
    assert_eq!(field, "postgres.pool_size");
    let (field, _) = refused(&format!(r#"{{{graphs}, "postgres": {{"connect_timeout_secs": -1}}}}"#));
    assert_eq!(field, "postgres.connect_timeout_secs");
    let (field, message) = refused(&format!(r#"{{{graphs}, "postgres": {{"pool": 3}}}}"#));
    assert!(field.starts_with("postgres"), "{field}");
    assert!(message.starts_with("unknown field `pool`"), "{message}");
}

#[test]
fn each_error_names_its_field() {
    assert_eq!(refused(r#"{"graphs": {}}"#).0, "graphs");
    let (field, message) = refused(r#"{"graphs": {"chain": "./graph.py:chain"}}"#);
    assert_eq!(field, "graphs.chain");
    assert!(message.contains("not a flow file"), "{message}");
    let (field, message) = refused(r#"{"graphs": {"other": "other.json"}}"#);
    assert_eq!(field, "graphs.other");
    assert!(message.starts_with("no file"), "{message}");
    let (field, message) = refused(r#"{"graphs": {"chain": 3}}"#);
    assert_eq!(field, "graphs.chain");
    assert!(message.starts_with("expected the path of a flow file"), "{message}");
    let graphs = r#""graphs": {"chain": "chain.json"}"#;
    assert_eq!(
        refused(&format!(
            r#"{{{graphs}, "store": {{"index": {{"embed": "x", "dims": 0}}}}}}"#
        ))
        .0,
        "store.index.dims"
    );
    assert_eq!(
        refused(&format!(r#"{{{graphs}, "store": {{"indx": {{}}}}}}"#)).0,
        "store.indx"
    );
    assert_eq!(
        refused(&format!(r#"{{{graphs}, "ttl": {{"strategy": "keep"}}}}"#)).0,
        "ttl.strategy"
    );
    assert_eq!(
        refused(&format!(r#"{{{graphs}, "ttl": {{"default_ttl": -1}}}}"#)).0,
        "ttl.default_ttl"
    );
    assert_eq!(
        refused(&format!(r#"{{{graphs}, "store": {{"ttl": {{"default_ttl": 1e12}}}}}}"#)),
        (
            "store.ttl.default_ttl".to_owned(),
            "1000000000000.0 is not a positive number of minutes up to 2147483647".to_owned()
        )
    );
    let twice = format!(r#"{{{graphs}, "ttl": {{}}, "checkpointer": {{"ttl": {{}}}}}}"#);
    assert_eq!(refused(&twice).0, "ttl");
    assert_eq!(
        refused("{"),
        (
            String::new(),
            "not JSON: EOF while parsing an object at line 1 column 1".into()
        )
    );
    assert_eq!(
        refused(r#"{"graphs": {"chain": "chain.json""#),
        (
            String::new(),
            "not JSON: EOF while parsing an object at line 1 column 33".into()
        )
    );
}

#[test]
fn the_store_and_thread_ttl_settings_become_what_the_server_takes() {
    let dir = dir_with_flow();
    let text = r#"{"graphs": {"chain": "chain.json"},
        "store": {"index": {"embed": "openai:text-embedding-3-small", "dims": 8, "fields": ["text"]},
                  "ttl": {"default_ttl": 60, "refresh_on_read": false, "sweep_interval_minutes": 2}},
        "checkpointer": {"ttl": {"strategy": "keep_latest", "default_ttl": 1440}}}"#;
    let c = Config::parse(text, dir.path()).unwrap();
    let store = c.store.unwrap().to_runtime().unwrap();
    let ttl = store.ttl.unwrap();
    assert_eq!(
        (ttl.refresh_on_read, ttl.default_ttl, ttl.sweep_interval_minutes),
        (false, Some(60.0), Some(2.0))
    );
    let index = store.index.unwrap();
    assert_eq!((index.dims, index.fields), (8, vec!["text".to_owned()]));
    let threads = c.ttl.unwrap();
    assert_eq!(
        threads.default_thread_ttl(),
        Some(ThreadTtl {
            strategy: TtlStrategy::KeepLatest,
            minutes: 1440.0
        })
    );
    assert_eq!(threads.sweep_every(), std::time::Duration::from_secs(300));
    let (field, message) =
        refused(r#"{"graphs": {"chain": "chain.json"}, "store": {"index": {"embed": "cohere:embed-v3", "dims": 8}}}"#);
    assert_eq!(field, "store.index.embed");
    assert!(message.contains("`openai:<model>`"), "{message}");
}
