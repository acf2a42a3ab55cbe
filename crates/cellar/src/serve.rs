//! `cellar serve`: Bigtable's v2 Data API and table admin API over gRPC
//! from a database directory, for Google's clients and `cbt` (set
//! `BIGTABLE_EMULATOR_HOST` to the address it prints). `docs/server.md`
//! says what is served.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use cellardb::{Durability, Options};
use cellardb_server::{ServeOptions, serve};
use tokio::net::TcpListener;

use crate::{Failure, Out, Outcome};

/// Where the database is and where to listen.
#[derive(clap::Args)]
pub struct Args {
    /// The database directory (created if missing).
    #[arg(long)]
    dir: PathBuf,
    /// The address to listen on; port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:8086")]
    listen: SocketAddr,
    /// Listen on an address other than loopback. The server has no
    /// authentication and no TLS: anyone who reaches the port can read
    /// and write every table.
    #[arg(long)]
    allow_remote: bool,
    /// `buffered` (an acknowledged write survives a crash of the server)
    /// or `sync` (it survives power loss).
    #[arg(long, default_value = "buffered", value_parser = crate::lab::parse_durability)]
    durability: Durability,
    /// The instance whose tables are the database's own, those an
    /// embedding program created by id; every other instance a client
    /// names has its own tables, apart.
    #[arg(long, default_value = cellardb_server::DEFAULT_INSTANCE, value_name = "projects/P/instances/I")]
    instance: String,
}

/// Serves until SIGINT or SIGTERM, then finishes the calls in flight and
/// closes the database.
///
/// # Errors
/// A non-loopback address without `--allow-remote`, an `--instance` that
/// is not an instance's name, a database that does
/// not open, an address that cannot be bound, or a transport failure.
pub fn run(args: &Args, out: &mut Out) -> Outcome {
    if !args.listen.ip().is_loopback() && !args.allow_remote {
        return Err(Failure::Usage(format!(
            "{} is not a loopback address, and the server has no authentication: pass --allow-remote to serve it anyway",
            args.listen
        )));
    }
    cellardb::validate_instance_name(&args.instance).map_err(|e| Failure::Usage(format!("--instance: {e}")))?;
    let db = Options::default().durability(args.durability).open(&args.dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let listener = TcpListener::bind(args.listen).await?;
        let addr = listener.local_addr()?;
        writeln!(out, "cellar: serving {} on {addr} (BIGTABLE_EMULATOR_HOST={addr})", args.dir.display())?;
        writeln!(out, "cellar: the database's own tables are {}'s; other instances' are apart", args.instance)?;
        out.flush()?;
        let options = ServeOptions { instance: args.instance.clone(), ..ServeOptions::default() };
        serve(db.clone(), listener, options, stop_signal())
            .await
            .map_err(|e| Failure::Other(format!("the server failed: {e}")))
    })?;
    db.close()?;
    Ok(())
}

/// Completes at the first SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(e) => {
            log::warn!("cannot watch for SIGTERM ({e}); stop the server with SIGINT");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
