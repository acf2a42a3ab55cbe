//! `cellar serve`: Bigtable's v2 Data API and table admin API over gRPC
//! from a database directory, for Google's clients and `cbt` (set
//! `BIGTABLE_EMULATOR_HOST` to the address it prints). `docs/server.md`
//! says what is served.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use cellardb::{Durability, Options};
use cellardb_server::{Listener, ServeOptions, serve};
use tokio::net::{TcpListener, UnixListener};

use crate::{Failure, Out, Outcome};

/// Where the database is and where to listen.
#[derive(clap::Args)]
pub struct Args {
    /// The database directory (created if missing).
    #[arg(long)]
    dir: PathBuf,
    /// The address to listen on (port 0 picks a free one), or `unix:PATH`
    /// (`unix:///abs/path` too), a Unix socket made at PATH and removed
    /// when the server stops.
    #[arg(long, default_value = "127.0.0.1:8086", value_parser = parse_listen)]
    listen: Listen,
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

/// Where `cellar serve` listens.
#[derive(Debug, Clone)]
pub enum Listen {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix socket's path.
    Unix(PathBuf),
}

fn parse_listen(text: &str) -> Result<Listen, String> {
    if let Some(path) = text.strip_prefix("unix://").or_else(|| text.strip_prefix("unix:")) {
        if path.is_empty() {
            return Err("unix: needs a path, as in unix:/tmp/cellar.sock".into());
        }
        return Ok(Listen::Unix(PathBuf::from(path)));
    }
    text.parse().map(Listen::Tcp).map_err(|e| format!("{text:?} is neither HOST:PORT nor unix:PATH ({e})"))
}

/// Binds `listen`, and says where it listens as `BIGTABLE_EMULATOR_HOST`
/// takes it.
fn bind(listen: &Listen) -> Result<(Listener, String), Failure> {
    match listen {
        Listen::Tcp(addr) => {
            let listener = std::net::TcpListener::bind(addr)?;
            listener.set_nonblocking(true)?;
            let listener = TcpListener::from_std(listener)?;
            let addr = listener.local_addr()?;
            Ok((listener.into(), addr.to_string()))
        }
        Listen::Unix(path) => {
            if path.exists() {
                return Err(Failure::Usage(format!(
                    "{} exists: another server may be listening there; remove it if none is",
                    path.display()
                )));
            }
            let listener = UnixListener::bind(path)?;
            // `unix://` and an absolute path: the form Google's Go client
            // and gRPC's own name resolver both take.
            let absolute = std::path::absolute(path)?;
            Ok((listener.into(), format!("unix://{}", absolute.display())))
        }
    }
}

/// Removes the Unix socket this server made, if it listened on one.
fn remove_socket(listen: &Listen) {
    if let Listen::Unix(path) = listen {
        std::fs::remove_file(path).ok();
    }
}

/// Serves until SIGINT or SIGTERM, then finishes the calls in flight and
/// closes the database.
///
/// # Errors
/// A non-loopback address without `--allow-remote`, an `--instance` that
/// is not an instance's name, a database that does
/// not open, an address that cannot be bound, or a transport failure.
pub fn run(args: &Args, out: &mut Out) -> Outcome {
    if let Listen::Tcp(addr) = args.listen
        && !addr.ip().is_loopback()
        && !args.allow_remote
    {
        return Err(Failure::Usage(format!(
            "{addr} is not a loopback address, and the server has no authentication: pass --allow-remote to serve it anyway"
        )));
    }
    cellardb::validate_instance_name(&args.instance).map_err(|e| Failure::Usage(format!("--instance: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // Bound before the database opens: a socket path in use is refused
    // before the database's lock is taken.
    let (listener, addr) = runtime.block_on(async { bind(&args.listen) })?;
    let db = match Options::default().durability(args.durability).open(&args.dir) {
        Ok(db) => db,
        Err(e) => {
            remove_socket(&args.listen);
            return Err(e.into());
        }
    };
    let served = runtime.block_on(async {
        writeln!(out, "cellar: serving {} on {addr} (BIGTABLE_EMULATOR_HOST={addr})", args.dir.display())?;
        writeln!(out, "cellar: the database's own tables are {}'s; other instances' are apart", args.instance)?;
        out.flush()?;
        let options = ServeOptions { instance: args.instance.clone(), ..ServeOptions::default() };
        serve(db.clone(), listener, options, stop_signal())
            .await
            .map_err(|e| Failure::Other(format!("the server failed: {e}")))
    });
    remove_socket(&args.listen);
    served?;
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
