use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Doc {
    text: String,
}

struct User {
    admin: bool,
}

struct Tenant {
    paid: bool,
}

fn check(_: &Doc) -> DocUpdate {
    DocUpdate::default()
}

fn admin(_: &Doc) -> DocUpdate {
    DocUpdate::default()
}

// Reads a `Tenant`, but the graph's runs carry a `User`.
fn by_tenant(_: &Doc, t: &Tenant) -> bool {
    t.paid
}

fn main() {
    let _ = graph! {
        state: Doc,
        context: User,
        START -> check -> by_tenant(context) ? { true => admin, false => END };
        admin -> END;
    };
}
