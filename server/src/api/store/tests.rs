//! The `/store/*` routes over real HTTP: the router served on a local port, each request
//! written on a socket, the shapes those of LangGraph's server (`sdk_trace.txt`).

use super::router;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_runtime::store::{InMemoryStore, Store};

/// Serves the store routes on a free local port; its address.
async fn serve(store: Arc<dyn Store>) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router().with_state(store);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// Sends one HTTP/1.1 request; the status and the body (JSON, or `Null` when empty).
async fn call(addr: std::net::SocketAddr, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    socket.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let (_, text) = response.split_once("\r\n\r\n").unwrap();
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(text).unwrap()
    };
    (status, value)
}

#[tokio::test]
async fn put_get_search_list_and_delete_speak_langgraphs_shapes() {
    let addr = serve(Arc::new(InMemoryStore::new())).await;
    let put = json!({"namespace": ["users", "u1"], "key": "prefs", "value": {"color": "blue"}});
    assert_eq!(call(addr, "PUT", "/store/items", Some(put)).await, (204, Value::Null));

    let (status, item) = call(addr, "GET", "/store/items?namespace=users.u1&key=prefs", None).await;
    assert_eq!(status, 200);
    assert_eq!(item["namespace"], json!(["users", "u1"]));
    assert_eq!(
        (&item["key"], &item["value"]),
        (&json!("prefs"), &json!({"color": "blue"}))
    );
    let created = item["created_at"].as_str().unwrap();
    assert!(created.ends_with("+00:00") && created.len() == 32, "{created}");

    let search = json!({"namespace_prefix": ["users"], "limit": 5, "offset": 0});
    let (status, found) = call(addr, "POST", "/store/items/search", Some(search)).await;
    assert_eq!(status, 200);
    let items = found["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!((&items[0]["key"], &items[0]["score"]), (&json!("prefs"), &Value::Null));
    let filtered = json!({"namespace_prefix": ["users"], "filter": {"color": "red"}});
    assert_eq!(
        call(addr, "POST", "/store/items/search", Some(filtered)).await.1,
        json!({"items": []})
    );

    let list = json!({"prefix": ["users"], "limit": 100, "offset": 0});
    let listed = call(addr, "POST", "/store/namespaces", Some(list)).await;
    assert_eq!(listed, (200, json!({"namespaces": [["users", "u1"]]})));

    let delete = json!({"namespace": ["users", "u1"], "key": "prefs"});
    assert_eq!(call(addr, "DELETE", "/store/items", Some(delete)).await.0, 204);
    // LangGraph's server answers a missing item with `null`, which its client returns as `None`.
    let (status, missing) = call(addr, "GET", "/store/items?namespace=users.u1&key=prefs", None).await;
    assert_eq!((status, missing), (200, Value::Null));
}

#[tokio::test]
async fn bad_input_is_a_422_naming_what_is_wrong() {
    let addr = serve(Arc::new(InMemoryStore::new())).await;
    let reserved = json!({"namespace": ["langgraph"], "key": "k", "value": {}});
    let (status, e) = call(addr, "PUT", "/store/items", Some(reserved)).await;
    assert_eq!(status, 422);
    assert_eq!(
        e["detail"],
        "namespace (\"langgraph\"): the root label `langgraph` is reserved"
    );
    let not_object = json!({"namespace": ["a"], "key": "k", "value": [1]});
    let (status, e) = call(addr, "PUT", "/store/items", Some(not_object)).await;
    assert_eq!(status, 422);
    assert!(e["detail"].as_str().unwrap().starts_with("body field `value`"), "{e}");
    let (status, e) = call(addr, "GET", "/store/items?namespace=a", None).await;
    assert_eq!(status, 422);
    assert!(e["detail"].as_str().unwrap().contains("key"), "{e}");
    let bad_filter = json!({"namespace_prefix": ["a"], "filter": {"n": {"$in": [1]}}});
    let (status, e) = call(addr, "POST", "/store/items/search", Some(bad_filter)).await;
    assert_eq!(status, 422);
    assert!(e["detail"].as_str().unwrap().contains("unknown operator `$in`"), "{e}");
}
