//! Testing with `cellardb-server` from Rust, as `docs/testing.md` shows it:
//! the server started in-process over a temporary database, on an
//! ephemeral loopback port and on a Unix socket, a Rust Bigtable client
//! (`bigtable_rs`, which honours `BIGTABLE_EMULATOR_HOST`) pointed at it,
//! and everything torn down at the end of the test.

use std::time::Duration;

use bigtable_rs::bigtable::BigTableConnection;
use bt::google::bigtable::v2::{MutateRowRequest, Mutation, ReadRowsRequest, RowSet, mutation};
use bt_protos as bt;
use cellardb::{Db, GcRule};
use cellardb_server::{ServeError, ServeOptions, serve};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A server in this process over a fresh database with table `weather`
/// (family `m`) in instance `projects/p/instances/i`; dropping the
/// directory after `stop` removes everything it wrote.
struct TestServer {
    stop: oneshot::Sender<()>,
    served: JoinHandle<Result<(), ServeError>>,
    dir: tempfile::TempDir,
}

impl TestServer {
    /// The database, its table made as an embedding program makes it.
    fn database() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        db.create_table("weather", [("m", GcRule::max_versions(1))]).unwrap();
        (dir, db)
    }

    fn start(dir: tempfile::TempDir, db: Db, listener: impl Into<cellardb_server::Listener>) -> TestServer {
        let options = ServeOptions { instance: "projects/p/instances/i".into(), ..ServeOptions::default() };
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tokio::spawn(serve(db, listener.into(), options, async {
            stopped.await.ok();
        }));
        TestServer { stop, served, dir }
    }

    async fn stop(self) {
        self.stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), self.served).await.unwrap().unwrap().unwrap();
    }
}

/// Writes a row through `connection` and reads it back.
async fn write_and_read_back(connection: &BigTableConnection) {
    let mut client = connection.client();
    let set = Mutation {
        mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
            family_name: "m".into(),
            column_qualifier: b"temperature".to_vec(),
            timestamp_micros: 1_000,
            value: b"21.5".to_vec(),
        })),
    };
    let table_name = client.get_full_table_name("weather");
    let write = MutateRowRequest {
        table_name: table_name.clone(),
        row_key: b"balloon#1".to_vec(),
        mutations: vec![set],
        ..MutateRowRequest::default()
    };
    client.mutate_row(write).await.unwrap();
    let read = ReadRowsRequest {
        table_name,
        rows: Some(RowSet { row_keys: vec![b"balloon#1".to_vec()], row_ranges: Vec::new() }),
        ..ReadRowsRequest::default()
    };
    let rows = client.read_rows(read).await.unwrap();
    assert_eq!(rows.len(), 1);
    let (key, cells) = &rows[0];
    assert_eq!(key, b"balloon#1");
    assert_eq!(cells.len(), 1);
    assert_eq!((cells[0].family_name.as_str(), &cells[0].qualifier[..]), ("m", &b"temperature"[..]));
    assert_eq!(cells[0].value, b"21.5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_client_reads_what_it_wrote_over_tcp() {
    let (dir, db) = TestServer::database();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    // What BIGTABLE_EMULATOR_HOST would hold; `BigTableConnection::new`
    // reads it from the environment and calls this.
    let emulator_host = listener.local_addr().unwrap().to_string();
    let server = TestServer::start(dir, db.clone(), listener);
    let timeout = Some(Duration::from_secs(10));
    let connection = BigTableConnection::new_with_emulator(&emulator_host, "p", "i", false, 1, timeout).unwrap();
    write_and_read_back(&connection).await;
    server.stop().await;
    // The server is gone; what it acknowledged is in the database.
    let row = db.table("weather").unwrap().read_row("balloon#1", &cellardb::Filter::pass_all()).unwrap();
    assert!(row.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_client_reads_what_it_wrote_over_a_unix_socket() {
    let (dir, db) = TestServer::database();
    let socket = dir.path().join("bigtable.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let emulator_host = format!("unix://{}", socket.display());
    let server = TestServer::start(dir, db, listener);
    let timeout = Some(Duration::from_secs(10));
    let connection = BigTableConnection::new_with_emulator(&emulator_host, "p", "i", false, 1, timeout).unwrap();
    write_and_read_back(&connection).await;
    assert!(server.dir.path().join("bigtable.sock").exists());
    server.stop().await;
}
