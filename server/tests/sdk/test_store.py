"""The store: items put, read, searched (filters, pages), listed by namespace and deleted
through the official client's `client.store` (README §1.2 `/store/*` rows). Each test works
under a namespace root of its own."""

import uuid

import pytest


def root() -> str:
    return f"t{uuid.uuid4().hex}"


async def test_put_get_and_put_again(client):
    ns = [root(), "users", "u1"]
    await client.store.put_item(ns, key="prefs", value={"color": "blue", "size": 3})
    item = await client.store.get_item(ns, key="prefs")
    assert item["namespace"] == ns
    assert item["key"] == "prefs"
    assert item["value"] == {"color": "blue", "size": 3}
    await client.store.put_item(ns, key="prefs", value={"color": "red"})
    again = await client.store.get_item(ns, key="prefs")
    assert again["value"] == {"color": "red"}
    assert again["updated_at"] > item["updated_at"]


@pytest.mark.weir_only  # LangGraph's in-memory store stamps a put-again item as new
async def test_put_again_keeps_created_at(client):
    # As LangGraph's PostgresStore does (its upsert leaves `created_at`).
    ns = [root()]
    await client.store.put_item(ns, key="k", value={"v": 1})
    first = await client.store.get_item(ns, key="k")
    await client.store.put_item(ns, key="k", value={"v": 2})
    assert (await client.store.get_item(ns, key="k"))["created_at"] == first["created_at"]


async def test_a_missing_or_deleted_item_is_none(client):
    # The server answers `200 null`; the client returns `None`.
    ns = [root(), "docs"]
    assert await client.store.get_item(ns, key="nothing") is None
    await client.store.put_item(ns, key="d1", value={"text": "x"})
    await client.store.delete_item(ns, key="d1")
    assert await client.store.get_item(ns, key="d1") is None


def keys(found) -> set:
    return {i["key"] for i in found["items"]}


async def test_search_filters_and_pages(client):
    top = root()
    for i in range(6):
        await client.store.put_item([top, "a"], key=f"k{i}", value={"kind": "ab"[i % 2], "score": i})
    await client.store.put_item([top, "b"], key="other", value={"kind": "a", "score": 100})
    everything = await client.store.search_items([top], limit=20)
    assert keys(everything) == {"other", "k0", "k1", "k2", "k3", "k4", "k5"}
    assert set(everything["items"][0]) >= {"namespace", "key", "value", "created_at", "updated_at", "score"}
    assert everything["items"][0]["score"] is None
    kind_a = await client.store.search_items([top, "a"], filter={"kind": "a"}, limit=20)
    assert keys(kind_a) == {"k0", "k2", "k4"}
    high = await client.store.search_items([top], filter={"score": {"$gte": 3}}, limit=20)
    assert keys(high) == {"other", "k3", "k4", "k5"}
    both = await client.store.search_items([top], filter={"kind": "a", "score": {"$lt": 4}}, limit=20)
    assert keys(both) == {"k0", "k2"}
    not_b = await client.store.search_items([top, "a"], filter={"kind": {"$ne": "b"}}, limit=20)
    assert keys(not_b) == {"k0", "k2", "k4"}
    pages = [await client.store.search_items([top], limit=3, offset=o) for o in (0, 3, 6)]
    assert [len(p["items"]) for p in pages] == [3, 3, 1]
    assert set().union(*map(keys, pages)) == keys(everything)
    # A prefix is whole labels: `a` does not hold `ab`.
    await client.store.put_item([top, "ab"], key="x", value={"kind": "c"})
    assert (await client.store.search_items([top, "a"], filter={"kind": "c"}))["items"] == []


@pytest.mark.weir_only  # LangGraph's in-memory store lists in the order of the puts
async def test_search_without_a_query_is_newest_first(client):
    # LangGraph's PostgresStore orders by `updated_at DESC` (weir breaks ties by namespace, key).
    top = root()
    for k in ["k0", "k1", "k2"]:
        await client.store.put_item([top], key=k, value={"v": 1})
    await client.store.put_item([top], key="k0", value={"v": 2})
    found = await client.store.search_items([top])
    assert [i["key"] for i in found["items"]] == ["k0", "k2", "k1"]


async def test_list_namespaces_by_prefix_suffix_and_depth(client):
    top = root()
    for ns in [[top, "users", "u1"], [top, "users", "u2"], [top, "docs", "u1"], [top, "docs", "d", "deep"]]:
        await client.store.put_item(ns, key="k", value={"v": 1})
    listed = await client.store.list_namespaces(prefix=[top])
    assert sorted(map(tuple, listed["namespaces"])) == [
        (top, "docs", "d", "deep"),
        (top, "docs", "u1"),
        (top, "users", "u1"),
        (top, "users", "u2"),
    ]
    u1 = await client.store.list_namespaces(prefix=[top], suffix=["u1"])
    assert sorted(map(tuple, u1["namespaces"])) == [(top, "docs", "u1"), (top, "users", "u1")]
    wildcard = await client.store.list_namespaces(prefix=[top, "*", "u2"])
    assert [tuple(n) for n in wildcard["namespaces"]] == [(top, "users", "u2")]
    shallow = await client.store.list_namespaces(prefix=[top], max_depth=2)
    assert sorted(map(tuple, shallow["namespaces"])) == [(top, "docs"), (top, "users")]
    page = await client.store.list_namespaces(prefix=[top], limit=1, offset=1)
    assert len(page["namespaces"]) == 1


async def test_a_namespace_label_with_a_dot_is_422(raw):
    # The client refuses such a label itself; the server does too.
    r = await raw.put("/store/items", json={"namespace": [root(), "a.b"], "key": "k", "value": {}})
    assert r.status_code == 422
    assert "a.b" in r.text
