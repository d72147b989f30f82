use weir::prelude::*;

#[derive(State, Clone, Debug, Default)]
struct Ticket {
    urgent: bool,
}

fn triage(_: &Ticket) -> Command<Ticket> {
    Command::new().goto("page")
}
fn page(_: &Ticket) {}

fn main() {
    let _ = graph! {
        state: Ticket,
        nodes: [triage(goto(pgae)), page],
        START -> triage;
    };
}
