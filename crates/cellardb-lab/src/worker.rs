//! An engine's database in a process of its own, for one pattern of one
//! round of the balloon lab.
//!
//! Engines that share a process share its heap, its allocator and its
//! threads, and the lab's runs showed what that can cost: an engine loaded
//! second in a round carried p99 tails in its first queries that it did
//! not show loaded first, nor loaded alone (`docs/results-log.md`). So
//! `cellar lab` starts a worker process for each engine's database
//! ([`crate::Processes::Workers`]) while the parent keeps the round's
//! order: which engine writes each turn of the ingest first, which runs
//! each query form first. The worker loads and times; the parent waits on
//! a pipe meanwhile, so every figure is the worker's own. During the
//! ingest the parent also stops each worker outside its turns
//! ([`serve_stdio`]).
//!
//! The conversation is JSON, one message a line. The parent writes a
//! [`Request`] to the worker's standard input; the worker answers on its
//! standard output with any number of [`Reply::Progress`] lines and then
//! one final reply. Given the same [`LabConfig`] as its parent, a worker
//! draws the same query parameters as an engine in the parent's process
//! would. When the parent asks it to finish, or hangs up, the worker closes
//! and removes its database.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::queries::{Form, QueryKind};
use crate::run::{Engine, LabConfig, Loaded, PatternReport, Progress};
use crate::workload::SchemaPattern;
use cellardb::{Error, Result};

/// What a parent asks of its worker.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
enum Request {
    /// Write the events not yet written whose index is below this: a
    /// turn of the ingest.
    Ingest(u64),
    /// End the ingest: flush and compact.
    Settle,
    /// Begin timing a query in a form.
    Begin(QueryKind, Form),
    /// Time a batch of this many runs of the form begun, with the next
    /// parameters of the sequence.
    Time(usize),
    /// End the form begun: its figures go into the report.
    End,
    /// Close and remove the database, and send the report.
    Finish,
}

/// A worker's answer to a request.
#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    /// Where the request's work is; more lines follow.
    Progress {
        /// As [`Progress::stage`].
        stage: String,
        /// As [`Progress::done`].
        done: u64,
        /// As [`Progress::total`].
        total: u64,
    },
    /// The request was carried out.
    Done,
    /// The database's report, once closed and removed (to `Finish`).
    Report(PatternReport),
    /// The request failed: the error's message.
    Failed(String),
}

/// Serves a parent's requests for `engine`'s database of `pattern`, made
/// under `config.dir`: reads them from `requests` and answers on
/// `replies`, until the parent asks to finish or hangs up. The database is
/// closed and removed whatever happened.
///
/// # Errors
/// A request that does not parse (`Error::InvalidArgument`); a failure to
/// read a request or write a reply (`Error::Io`); else the engine's error
/// that failed the run, once reported to the parent.
pub fn serve(
    config: &LabConfig,
    engine: Engine,
    pattern: SchemaPattern,
    requests: impl BufRead,
    mut replies: impl Write,
) -> Result<()> {
    let mut loaded = Loaded::open(config, engine, pattern);
    let mut finish_asked = false;
    let mut broken = Ok(());
    for line in requests.lines() {
        let request = match line.map_err(|e| Error::io("<requests>", e)).and_then(|line| parse(&line)) {
            Ok(Request::Finish) => {
                finish_asked = true;
                break;
            }
            Ok(request) => request,
            Err(e) => {
                broken = Err(e);
                break;
            }
        };
        let outcome = match &mut loaded {
            Ok(loaded) => carry_out(config, pattern, loaded, request, &mut replies),
            Err(e) => Err(e.clone()),
        };
        broken = send(&mut replies, &outcome.map_or_else(|e| Reply::Failed(e.to_string()), |()| Reply::Done));
        if broken.is_err() {
            break;
        }
    }
    // The database goes whatever happened; a parent that asked hears how.
    let report = loaded.and_then(Loaded::finish);
    if finish_asked {
        let reply = report.as_ref().map_or_else(|e| Reply::Failed(e.to_string()), |r| Reply::Report(r.clone()));
        send(&mut replies, &reply)?;
    }
    broken.and(report.map(drop))
}

/// [`serve`] over this process's standard input and output: the body of
/// a worker process. A worker is stopped between its turns of the ingest
/// ([`crate::Processes::Workers`]); should its parent end meanwhile, the
/// worker is continued (Linux's parent-death signal), finds its requests
/// closed and removes its database, rather than waiting stopped for good.
///
/// # Errors
/// As [`serve`].
pub fn serve_stdio(config: &LabConfig, engine: Engine, pattern: SchemaPattern) -> Result<()> {
    // Best effort: without it, a worker orphaned while stopped waits for
    // a SIGCONT from someone else.
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::CONT));
    serve(config, engine, pattern, std::io::stdin().lock(), std::io::stdout().lock())
}

fn parse(line: &str) -> Result<Request> {
    serde_json::from_str(line).map_err(|e| Error::InvalidArgument(format!("a lab worker's request {line:?}: {e}")))
}

/// Loads or times as `request` asks; `Finish` is the caller's.
fn carry_out(
    config: &LabConfig,
    pattern: SchemaPattern,
    loaded: &mut Loaded,
    request: Request,
    replies: &mut impl Write,
) -> Result<()> {
    match request {
        Request::Ingest(until) => loaded.ingest(config, pattern, until, &mut |p| send_progress(replies, p)),
        Request::Settle => loaded.settle(pattern, &mut |p| send_progress(replies, p)),
        Request::Begin(kind, form) => loaded.begin((kind, form)),
        Request::Time(runs) => loaded.time(config, pattern, runs),
        Request::End => loaded.end(),
        Request::Finish => Ok(()),
    }
}

/// Sends where a request's work is. A parent gone is found by the next
/// reply, which must reach it: a progress line may be lost.
fn send_progress(replies: &mut impl Write, p: Progress<'_>) {
    let reply = Reply::Progress { stage: p.stage.to_owned(), done: p.done, total: p.total };
    let _ = send(replies, &reply);
}

fn send(replies: &mut impl Write, reply: &Reply) -> Result<()> {
    let mut line = serde_json::to_vec(reply).map_err(|e| Error::io("<replies>", e.into()))?;
    line.push(b'\n');
    replies.write_all(&line).and_then(|()| replies.flush()).map_err(|e| Error::io("<replies>", e))
}

/// A worker holding one engine's database of one pattern, as its parent
/// sees it: each call sends one request and waits for its answer, passing
/// the worker's progress on.
pub(crate) struct Worker {
    engine: Engine,
    pattern: SchemaPattern,
    /// The worker's process; `None` for a worker served in this process.
    process: Option<Child>,
    /// Whether the worker's process is stopped ([`Worker::pause`]).
    stopped: bool,
    requests: Box<dyn Write>,
    replies: Box<dyn BufRead>,
}

impl Worker {
    /// Starts `command` as the worker of `engine`'s database of `pattern`,
    /// talking to it over its standard input and output (its standard
    /// error is this process's).
    pub(crate) fn start(mut command: Command, engine: Engine, pattern: SchemaPattern) -> Result<Worker> {
        let program = command.get_program().to_owned();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| Error::io(&program, e))?;
        let pipes = child.stdin.take().zip(child.stdout.take());
        let (requests, replies) = pipes.ok_or_else(|| Error::io(&program, std::io::Error::other("no pipes")))?;
        Ok(Worker {
            engine,
            pattern,
            process: Some(child),
            stopped: false,
            requests: Box::new(requests),
            replies: Box::new(BufReader::new(replies)),
        })
    }

    /// A worker at the other end of `requests` and `replies`, whoever
    /// serves it.
    #[cfg(test)]
    pub(crate) fn over(
        requests: impl Write + 'static,
        replies: impl BufRead + 'static,
        engine: Engine,
        pattern: SchemaPattern,
    ) -> Worker {
        Worker {
            engine,
            pattern,
            process: None,
            stopped: false,
            requests: Box::new(requests),
            replies: Box::new(replies),
        }
    }

    /// Writes the events not yet written whose index is below `until`
    /// into the worker's database: a turn of the ingest.
    pub(crate) fn ingest(&mut self, until: u64, progress: &mut dyn FnMut(Progress<'_>)) -> Result<()> {
        self.ask(Request::Ingest(until), progress).and_then(|reply| self.expect_done(reply))
    }

    /// Ends the worker's ingest: it flushes and compacts its database.
    pub(crate) fn settle(&mut self, progress: &mut dyn FnMut(Progress<'_>)) -> Result<()> {
        self.ask(Request::Settle, progress).and_then(|reply| self.expect_done(reply))
    }

    /// Stops the worker's process, every thread of it, and returns once
    /// it has stopped (`SIGSTOP`, then waiting for the stop's notice): an
    /// engine's background flushes and compactions wait while another
    /// engine takes its turn. A worker served in this process, or already
    /// stopped, is left as it is.
    ///
    /// # Errors
    /// `Error::Io` naming the worker if it cannot be stopped or has ended.
    pub(crate) fn pause(&mut self) -> Result<()> {
        let Some(process) = self.process.as_ref().filter(|_| !self.stopped) else { return Ok(()) };
        let pid = rustix::process::Pid::from_child(process);
        let lost = |what: &str| failure(self.engine, self.pattern, what);
        rustix::process::kill_process(pid, rustix::process::Signal::STOP)
            .map_err(|e| lost(&format!("it could not be stopped: {e}")))?;
        // The notice comes once every thread has stopped.
        let waited = loop {
            match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::UNTRACED) {
                Err(rustix::io::Errno::INTR) => {}
                waited => break waited,
            }
        };
        match waited {
            Ok(Some((_, status))) if status.stopped() => {
                self.stopped = true;
                Ok(())
            }
            Ok(status) => Err(lost(&format!("it ended while being stopped ({status:?})"))),
            Err(e) => Err(lost(&format!("its stop was not seen: {e}"))),
        }
    }

    /// Lets a stopped worker's process run again (`SIGCONT`).
    ///
    /// # Errors
    /// `Error::Io` naming the worker if it cannot be continued.
    pub(crate) fn resume(&mut self) -> Result<()> {
        let Some(process) = self.process.as_ref().filter(|_| self.stopped) else { return Ok(()) };
        let pid = rustix::process::Pid::from_child(process);
        rustix::process::kill_process(pid, rustix::process::Signal::CONT)
            .map_err(|e| failure(self.engine, self.pattern, &format!("it could not be continued: {e}")))?;
        self.stopped = false;
        Ok(())
    }

    /// Begins timing query `kind` in `form` on the worker's database.
    pub(crate) fn begin(
        &mut self,
        (kind, form): (QueryKind, Form),
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<()> {
        self.ask(Request::Begin(kind, form), progress).and_then(|reply| self.expect_done(reply))
    }

    /// Times a batch of `runs` runs of the form begun.
    pub(crate) fn time(&mut self, runs: usize, progress: &mut dyn FnMut(Progress<'_>)) -> Result<()> {
        self.ask(Request::Time(runs), progress).and_then(|reply| self.expect_done(reply))
    }

    /// Ends the form begun: its figures go into the worker's report.
    pub(crate) fn end(&mut self, progress: &mut dyn FnMut(Progress<'_>)) -> Result<()> {
        self.ask(Request::End, progress).and_then(|reply| self.expect_done(reply))
    }

    /// Has the worker close and remove its database, waits for it to end,
    /// and returns its report.
    pub(crate) fn finish(mut self) -> Result<PatternReport> {
        let reply = self.resume().and_then(|()| self.ask(Request::Finish, &mut |_| {}));
        drop(self.requests);
        if let Some(mut process) = self.process.take() {
            let status = process.wait().map_err(|e| Error::io(worker_name(self.engine, self.pattern), e))?;
            if reply.is_ok() && !status.success() {
                return Err(failure(self.engine, self.pattern, &format!("it ended with {status}")));
            }
        }
        match reply? {
            Reply::Report(mut report) => {
                report.engine = self.engine.name();
                Ok(report)
            }
            other => Err(failure(self.engine, self.pattern, &format!("it answered {other:?} to Finish"))),
        }
    }

    fn expect_done(&self, reply: Reply) -> Result<()> {
        match reply {
            Reply::Done => Ok(()),
            other => Err(failure(self.engine, self.pattern, &format!("it answered {other:?}"))),
        }
    }

    /// Sends `request` and reads replies up to the final one, handing
    /// progress to `progress`; a worker's failure is an error here.
    fn ask(&mut self, request: Request, progress: &mut dyn FnMut(Progress<'_>)) -> Result<Reply> {
        let (engine, pattern) = (self.engine, self.pattern);
        let lost = |what: &str| failure(engine, pattern, what);
        let mut line = serde_json::to_vec(&request).map_err(|e| lost(&e.to_string()))?;
        line.push(b'\n');
        self.requests
            .write_all(&line)
            .and_then(|()| self.requests.flush())
            .map_err(|e| lost(&format!("it took no request: {e}")))?;
        let mut line = String::new();
        loop {
            line.clear();
            match self.replies.read_line(&mut line) {
                Ok(0) => return Err(lost("it ended without answering")),
                Err(e) => return Err(lost(&format!("its answer did not arrive: {e}"))),
                Ok(_) => {}
            }
            let reply: Reply =
                serde_json::from_str(&line).map_err(|e| lost(&format!("its answer {line:?} does not parse: {e}")))?;
            match reply {
                Reply::Progress { stage, done, total } => progress(Progress { pattern, stage: &stage, done, total }),
                Reply::Failed(message) => return Err(failure(engine, pattern, &message)),
                reply => return Ok(reply),
            }
        }
    }
}

/// A worker's failure, named by its engine and pattern.
fn failure(engine: Engine, pattern: SchemaPattern, what: &str) -> Error {
    Error::io(worker_name(engine, pattern), std::io::Error::other(what.to_owned()))
}

/// How errors name the worker of `engine` on `pattern`.
fn worker_name(engine: Engine, pattern: SchemaPattern) -> String {
    format!("the {} worker of {}", engine.name(), pattern.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;
    use cellardb::Options;
    use std::path::Path;
    use std::thread::JoinHandle;

    fn config(dir: &Path) -> LabConfig {
        LabConfig {
            workload: Workload::new(2, 1),
            options: Options::default(),
            dir: dir.to_path_buf(),
            samples: 25,
            fleet_samples: None,
            seed: 3,
            rounds: 1,
        }
    }

    /// A worker served on a thread of this process, over pipes as a
    /// worker process would be.
    fn worker_on_thread(config: LabConfig, pattern: SchemaPattern) -> (Worker, JoinHandle<Result<()>>) {
        let (requests_in, requests_out) = std::io::pipe().unwrap();
        let (replies_in, replies_out) = std::io::pipe().unwrap();
        let served = std::thread::spawn(move || {
            serve(&config, Engine::Cellardb, pattern, BufReader::new(requests_in), replies_out)
        });
        (Worker::over(requests_out, BufReader::new(replies_in), Engine::Cellardb, pattern), served)
    }

    /// The whole ingest in one turn, then the flush and compaction.
    fn load(worker: &mut Worker, progress: &mut dyn FnMut(Progress<'_>)) -> Result<()> {
        worker.ingest(u64::MAX, progress)?;
        worker.settle(progress)
    }

    fn forms() -> impl Iterator<Item = (QueryKind, Form)> {
        QueryKind::ALL.into_iter().flat_map(|kind| kind.forms().iter().map(move |&form| (kind, form)))
    }

    /// A worker loads in turns, times and reports as an engine in this
    /// process, loaded in one go, does with the same configuration: the
    /// same figures of what was written and read, query by query, its
    /// progress passed on, and its database removed at the end.
    #[test]
    fn a_worker_reports_what_the_same_engine_in_this_process_would() {
        let dir = tempfile::tempdir().unwrap();
        let pattern = SchemaPattern::BucketNewCell;
        let (here, apart) = (config(&dir.path().join("here")), config(&dir.path().join("apart")));
        let (mut worker, served) = worker_on_thread(apart.clone(), pattern);
        let mut stages = Vec::new();
        for until in crate::ingest::turn_ends(apart.workload.events_count()) {
            worker.ingest(until, &mut |p| stages.push(p.stage.to_owned())).unwrap();
        }
        worker.settle(&mut |p| stages.push(p.stage.to_owned())).unwrap();
        assert!(["ingest", "flush", "compact"].iter().all(|s| stages.iter().any(|t| t == s)), "{stages:?}");
        let mut local = Loaded::open(&here, Engine::Cellardb, pattern).unwrap();
        local.load(&here, pattern, &mut |_| {}).unwrap();
        // Each form in batches, as a round's engines take them (the point
        // queries' 25 runs in two).
        for query in forms() {
            worker.begin(query, &mut |_| {}).unwrap();
            local.begin(query).unwrap();
            for batch in crate::timing::batches(crate::run::runs_of(query.0, here.samples, here.fleet_samples)) {
                worker.time(batch, &mut |_| {}).unwrap();
                local.time(&here, pattern, batch).unwrap();
            }
            worker.end(&mut |_| {}).unwrap();
            local.end().unwrap();
        }
        let (a, b) = (worker.finish().unwrap(), local.finish().unwrap());
        served.join().unwrap().unwrap();
        assert_eq!(a.engine, "cellardb");
        assert_eq!(
            (a.events, a.cells, a.logical_bytes, a.bytes_after_compaction),
            (b.events, b.cells, b.logical_bytes, b.bytes_after_compaction)
        );
        assert!(a.events > 0 && a.ingest > std::time::Duration::ZERO);
        assert_eq!(a.queries.len(), forms().count());
        for (qa, qb) in a.queries.iter().zip(&b.queries) {
            assert_eq!(
                (qa.kind, qa.form, qa.runs, qa.cells_read, qa.measurements),
                (qb.kind, qb.form, qb.runs, qb.cells_read, qb.measurements)
            );
        }
        assert!(!apart.dir.join("cellardb-bucket-new-cell").exists());
    }

    /// A paused worker's process is stopped, every thread of it, until it
    /// is resumed; pausing or resuming twice is harmless. (`cat` stands in
    /// for a worker: what is paused is the process.)
    #[test]
    fn a_paused_worker_is_stopped_until_resumed() {
        let mut worker = Worker::start(Command::new("cat"), Engine::Cellardb, SchemaPattern::BucketNewCell).unwrap();
        let pid = worker.process.as_ref().unwrap().id();
        // Each thread's state, the third field of its stat line.
        let states = || -> Vec<char> {
            let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
            tasks
                .map(|t| {
                    let stat = std::fs::read_to_string(t.unwrap().path().join("stat")).unwrap();
                    stat.rsplit_once(") ").unwrap().1.chars().next().unwrap()
                })
                .collect()
        };
        assert!(states().iter().all(|&s| s != 'T'), "{:?}", states());
        for _ in 0..2 {
            worker.pause().unwrap();
            worker.pause().unwrap();
            assert!(states().iter().all(|&s| s == 'T'), "{:?}", states());
            worker.resume().unwrap();
            worker.resume().unwrap();
            // SIGCONT is delivered at once, but the thread runs when next
            // scheduled: wait for it to leave the stopped state.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while states().contains(&'T') && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert!(states().iter().all(|&s| s != 'T'), "{:?}", states());
        }
        // Its input closed, `cat` ends.
        drop(worker.requests);
        assert!(worker.process.take().unwrap().wait().unwrap().success());
    }

    /// A worker that cannot make its database says so, named, to each
    /// request; a parent that hangs up, or sends what does not parse,
    /// leaves no database behind.
    #[test]
    fn a_worker_reports_its_failure_and_cleans_up_when_its_parent_hangs_up() {
        let dir = tempfile::tempdir().unwrap();
        let pattern = SchemaPattern::SingleTsSerialized;
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"not a directory").unwrap();
        let (mut worker, served) = worker_on_thread(config(&file), pattern);
        let err = load(&mut worker, &mut |_| {}).unwrap_err().to_string();
        assert!(err.contains("cellardb worker of single-ts-serialized"), "{err}");
        assert!(worker.finish().is_err());
        assert!(served.join().unwrap().is_err());

        let apart = config(dir.path());
        let (mut worker, served) = worker_on_thread(apart.clone(), pattern);
        load(&mut worker, &mut |_| {}).unwrap();
        assert!(dir.path().join("cellardb-single-ts-serialized").exists());
        drop(worker);
        served.join().unwrap().unwrap();
        assert!(!dir.path().join("cellardb-single-ts-serialized").exists());

        // A request that does not parse ends the worker, and its database.
        let (mut worker, served) = worker_on_thread(apart, pattern);
        load(&mut worker, &mut |_| {}).unwrap();
        worker.requests.write_all(b"{\"Begin\":[\"NoSuchQuery\",\"Natural\"]}\n").unwrap();
        let err = served.join().unwrap().unwrap_err().to_string();
        assert!(err.contains("a lab worker's request"), "{err}");
        assert!(!dir.path().join("cellardb-single-ts-serialized").exists());
    }
}
