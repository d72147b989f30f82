//! `weir studio FILE.json`: opens one flow in weir studio, on an embedded server (one SQLite
//! file), with no config file to write.

use super::serve::{start, ServeArgs, Settings};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use weir_flow::LoadOptions;

#[derive(Debug, Args)]
pub(crate) struct StudioArgs {
    /// The flow to open (React Flow / xyflow JSON); served as the graph named after the file.
    file: PathBuf,
    /// The SQLite file keeping its threads, runs and checkpoints.
    #[arg(long, default_value = "weir.db")]
    db: PathBuf,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port to listen on.
    #[arg(long, default_value_t = 2024)]
    port: u16,
}

/// Runs `weir studio`.
pub(crate) fn studio(args: StudioArgs) -> Result<ExitCode, ExitCode> {
    let text = super::read(&args.file)?;
    let name = args
        .file
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("flow")
        .to_owned();
    let at = args.file.display().to_string();
    super::load(&text, &at, LoadOptions::default())?;
    let serve = ServeArgs::embedded(args.db, args.host, args.port);
    super::runtime()?.block_on(start(&serve, vec![(name, at, text)], Settings::default()))
}
