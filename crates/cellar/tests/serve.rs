//! `cellar serve` as a process: it refuses a non-loopback address unless
//! told, stops cleanly on SIGTERM, a write it acknowledged survives a
//! SIGKILL of the server, and it serves a Unix socket.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use cellardb::{Db, GcRule};
use googleapis_tonic_google_bigtable_v2::google::bigtable::v2 as pb;
use pb::bigtable_client::BigtableClient;
use tonic::transport::Channel;

const TABLE: &str = "projects/p/instances/i/tables/t";

/// `cellar serve --dir DIR --listen 127.0.0.1:0 --instance
/// projects/p/instances/i` (the database's own tables are that instance's),
/// and the address it says it serves on.
fn start(dir: &std::path::Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cellar"))
        .args(["serve", "--dir", dir.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .args(["--instance", "projects/p/instances/i"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line.rsplit("BIGTABLE_EMULATOR_HOST=").next().unwrap().trim_end().trim_end_matches(')').to_owned();
    assert!(line.starts_with("cellar: serving"), "{line:?}");
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("own tables are projects/p/instances/i's"), "{line:?}");
    (child, addr)
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill").args([format!("-{name}"), child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

fn wait(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "cellar serve did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn client(addr: &str) -> BigtableClient<Channel> {
    BigtableClient::new(Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap())
}

async fn keys(client: &mut BigtableClient<Channel>) -> Vec<Bytes> {
    let request = pb::ReadRowsRequest { table_name: TABLE.into(), ..Default::default() };
    let mut stream = client.read_rows(request).await.unwrap().into_inner();
    let mut keys = Vec::new();
    while let Some(r) = stream.message().await.unwrap() {
        keys.extend(r.chunks.into_iter().map(|c| c.row_key).filter(|k| !k.is_empty()));
    }
    keys
}

#[test]
fn a_non_loopback_address_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_cellar"))
        .args(["serve", "--dir", dir.path().to_str().unwrap(), "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no authentication"));
}

#[test]
fn an_instance_that_is_not_an_instances_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["i", "projects/p/instances/", "projects/p/instances/i/tables/t"] {
        let o = Command::new(env!("CARGO_BIN_EXE_cellar"))
            .args(["serve", "--dir", dir.path().to_str().unwrap(), "--instance", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("--instance"), "{bad}");
    }
    assert!(!dir.path().join("MANIFEST").exists(), "nothing is created before the flags are checked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledged_write_survives_sigkill_and_sigterm_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path()).unwrap().create_table("t", [("m", GcRule::none())]).unwrap();
    let (mut server, addr) = start(dir.path());
    let mut c = client(&addr).await;
    let set = pb::Mutation {
        mutation: Some(pb::mutation::Mutation::SetCell(pb::mutation::SetCell {
            family_name: "m".into(),
            column_qualifier: Bytes::from_static(b"q"),
            timestamp_micros: 1000,
            value: Bytes::from_static(b"v"),
        })),
    };
    let write = pb::MutateRowRequest {
        table_name: TABLE.into(),
        row_key: Bytes::from_static(b"acknowledged"),
        mutations: vec![set],
        ..Default::default()
    };
    c.mutate_row(write).await.unwrap();
    signal(&server, "KILL");
    wait(&mut server);

    let (mut server, addr) = start(dir.path());
    let mut c = client(&addr).await;
    assert_eq!(keys(&mut c).await, [Bytes::from_static(b"acknowledged")]);
    signal(&server, "TERM");
    assert!(wait(&mut server).success(), "SIGTERM stops the server cleanly");
    // Closed: the directory opens again, with the row.
    let db = Db::open(dir.path()).unwrap();
    assert!(db.table("t").unwrap().read_row("acknowledged", &cellardb::Filter::pass_all()).unwrap().is_some());
}

#[test]
fn a_unix_socket_is_served_and_removed_at_a_clean_stop() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("bigtable.sock");
    let listen = format!("unix:{}", socket.display());
    let serve = |listen: &str| {
        Command::new(env!("CARGO_BIN_EXE_cellar"))
            .args(["serve", "--dir", dir.path().join("db").to_str().unwrap(), "--listen", listen])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut server = serve(&listen);
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.trim_end().ends_with(&format!("(BIGTABLE_EMULATOR_HOST=unix://{})", socket.display())), "{line:?}");
    std::os::unix::net::UnixStream::connect(&socket).expect("the socket takes connections");

    // A second server on the same path is refused, and leaves the socket.
    let second = serve(&listen).wait_with_output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&second.stderr).contains("exists"));
    assert!(socket.exists());

    signal(&server, "TERM");
    assert!(wait(&mut server).success());
    assert!(!socket.exists(), "a clean stop removes the socket");
    let o =
        Command::new(env!("CARGO_BIN_EXE_cellar")).args(["serve", "--dir", "x", "--listen", "unix:"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}
