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

fn main() {
    let mut g = GraphBuilder::<Doc>::new().context::<User>();
    g.add_node("check", |_: &Doc| DocUpdate::default());
    // Reads a `Tenant`, but the graph's runs carry a `User`.
    g.add_router_with_context("check", |_: &Doc, t: &Tenant| if t.paid { Goto::End } else { Goto::End }, [END]);
}
