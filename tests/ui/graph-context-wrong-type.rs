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

async fn run() {
    let app = graph! { state: Doc, context: User, START -> greet -> END; }.compile().unwrap();
    // A context of another type than the graph's.
    let _ = app.invoke(Doc::default(), &RunConfig::default().context(Tenant)).await;
    // No context at all, for a graph that declares one.
    let _ = app.invoke(Doc::default(), &RunConfig::default()).await;
}

fn main() {
    let _ = run();
}
