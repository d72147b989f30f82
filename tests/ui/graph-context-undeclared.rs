use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Doc {
    text: String,
}

struct User {
    name: String,
}

struct Tenant;

fn greet(_: &Doc, _: &Context, user: &User) -> DocUpdate {
    DocUpdate::default().text(user.name.clone())
}

fn main() {
    // The graph declares no context, its node reads one.
    let _ = graph! { state: Doc, START -> greet -> END; };
    // The graph declares another context than its node reads.
    let _ = graph! { state: Doc, context: Tenant, START -> greet -> END; };
    // The same through the builder.
    let mut g = GraphBuilder::<Doc>::new().context::<Tenant>();
    g.add_node("greet", greet);
}
