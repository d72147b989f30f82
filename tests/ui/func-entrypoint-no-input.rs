use weir::prelude::*;

#[entrypoint]
async fn nothing(ctx: &Context) -> String {
    ctx.node().to_owned()
}

fn main() {}
