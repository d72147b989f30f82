use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Doc {
    text: String,
}

struct User {
    admin: bool,
}

fn check(_: &Doc) -> DocUpdate {
    DocUpdate::default()
}

fn admin(_: &Doc) -> DocUpdate {
    DocUpdate::default()
}

fn is_admin(_: &Doc, u: &User) -> bool {
    u.admin
}

fn main() {
    // The router reads the run's context, but the graph declares none.
    let _ = graph! {
        state: Doc,
        START -> check -> is_admin(context) ? { true => admin, false => END };
        admin -> END;
    };
}
