//! Durability for `--data-dir` : every stored object lives in one redb file,
//! `DIR/store.redb`, and a write's HTTP response is sent only after its transaction is committed.
//!
//! Group commit. Writes happen under the store lock, which must stay short, so they only enqueue their
//! event (an `Arc` the history ring already holds: no copy). A write that would run past the reserved
//! resourceVersions waits for the persister before it takes the lock (see [`Journal::wait_for_room`]),
//! so a slow disk holds up writers only, never the readers and watchers behind the lock. One persister thread drains whatever is
//! queued, applies it in resourceVersion order in one redb transaction (`Durability::Immediate`: on
//! disk when `commit` returns) and then wakes the requests waiting for it. Under load one fsync covers
//! many writes; a lone write pays one fsync, as a synchronous commit would. The cost is the queue and
//! a thread instead of a commit under the lock, which would hold every reader up for an fsync.
//!
//! What a reader may see. Readers and watchers see a write the moment it is in memory, a little before
//! it is committed (the writer itself is answered only after). A crash can lose such a write, but never
//! its resourceVersion: the meta table holds a *reserved* resourceVersion, committed ahead of use, and
//! the store never hands out one above it. A restart continues after the reservation, so a
//! resourceVersion a client saw is never given to another object, and never goes back.
//!
//! Without a data dir none of this exists: `Store::journal` is `None` and the write path pays one
//! `if let` per write.

use std::{
    collections::{BTreeMap, HashMap},
    path::{Path, PathBuf},
    sync::{
        Arc, Condvar, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    thread::JoinHandle,
};

use apimachinery::meta;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::Value;

use super::event::{EventType, StoredEvent};

/// Storage key, namespace ("" when cluster-scoped), name -> the object as JSON.
const OBJECTS: TableDefinition<(&str, &str, &str), &[u8]> = TableDefinition::new("objects");
/// Counters that must survive a restart.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const FORMAT: &str = "format";
const RESERVED_RESOURCE_VERSION: &str = "reserved_resource_version";
/// The hooks' saved cursor, under the name of its one user (the Service address allocator), which
/// the data dirs written so far carry.
const SAVED_CURSOR: &str = "next_cluster_ip";
/// The layout above; a file from a newer layout is refused rather than misread.
const FORMAT_VERSION: u64 = 1;
/// How far ahead resourceVersions are reserved. Each restart skips up to this many; a write finding
/// the reservation used up waits for the persister, which only happens with this many uncommitted.
/// (Tests reserve less, so that they spend a reservation in a few writes.)
const RESERVATION: u64 = if cfg!(test) { 64 } else { 10_000 };
/// How many reserved resourceVersions a write wants left before it takes the store lock: more than one
/// object's write hands out. A collection deletion makes room between its objects; only a cascade of
/// thousands of dependents set off by one deletion could still wait under the lock.
const ROOM: u64 = RESERVATION / 2;
/// The most writes one transaction takes, so a huge backlog still commits (and answers) in steps.
const MAX_BATCH: usize = 4_096;

/// The state found in the data dir at start-up.
#[derive(Default)]
pub(crate) struct Loaded {
    /// storage key -> (namespace, name) -> object, as `State::objects`.
    pub objects: HashMap<String, BTreeMap<(String, String), Value>>,
    /// New writes get resourceVersions above this.
    pub resource_version: u64,
    /// `None` in a new data dir.
    pub saved_cursor: Option<u32>,
}

/// What the persister commits: one change, with the hooks' saved cursor as it stood after it.
enum Message {
    Change {
        event: Arc<StoredEvent>,
        saved_cursor: u32,
    },
    Close,
}

/// How far the persister got, shared with the requests that wait for it.
struct Progress {
    /// Every resourceVersion up to here is committed (or was skipped at start-up).
    durable: AtomicU64,
    /// The resourceVersion of the last change queued.
    queued: AtomicU64,
    /// How many requests wait for the persister to reserve more resourceVersions.
    waiting: AtomicU64,
    /// Held by a test to stop the persister between commits, as a stalled disk would.
    #[cfg(test)]
    paused: Mutex<()>,
    /// No resourceVersion above this may be handed out yet.
    reserved: AtomicU64,
    /// Set once when the persister stops: a failed commit, or `close`. Guards the condvar too.
    stopped: Mutex<Option<String>>,
    changed: Condvar,
}

impl Progress {
    /// Blocks until `reached` holds or the persister stopped (then `Err` with why).
    fn wait(&self, reached: impl Fn(&Progress) -> bool) -> Result<(), String> {
        if reached(self) {
            return Ok(());
        }
        let mut stopped = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if reached(self) {
                return Ok(());
            }
            if let Some(reason) = stopped.as_ref() {
                return Err(reason.clone());
            }
            stopped = self.changed.wait(stopped).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn advance(&self, durable: u64, reserved: u64) {
        self.durable.store(durable, Ordering::Release);
        self.reserved.store(reserved, Ordering::Release);
        // Taking the lock orders this after any waiter's check, so no wake-up is lost.
        let _guard = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        self.changed.notify_all();
    }

    fn stop(&self, reason: String) {
        let mut stopped = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        stopped.get_or_insert(reason);
        self.changed.notify_all();
    }
}

/// The open data dir: the queue to the persister thread, which owns the redb file.
pub(crate) struct Journal {
    path: PathBuf,
    queue: mpsc::Sender<Message>,
    progress: Arc<Progress>,
    persister: Mutex<Option<JoinHandle<()>>>,
}

/// `cannot open data dir DIR: WHAT`, the one line the bin prints when it cannot start.
fn open_error(dir: &Path, what: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("cannot open data dir {}: {what}", dir.display()))
}

impl Journal {
    /// Opens (or creates) the store in `dir`, reads every object, reserves resourceVersions and starts
    /// the persister. Fails when the dir is unusable, the file corrupt or held by another process.
    pub(crate) fn open(dir: &Path) -> std::io::Result<(Journal, Loaded)> {
        let path = dir.join("store.redb");
        if dir.exists() && !dir.is_dir() {
            return Err(open_error(dir, "it is not a directory"));
        }
        create_private_dir(dir).map_err(|e| open_error(dir, e))?;
        let in_file =
            |what: &dyn std::fmt::Display| open_error(dir, format_args!("{}: {what}", path.display()));
        create_private_file(&path).map_err(|e| in_file(&e))?;
        let db = Database::create(&path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => {
                open_error(dir, "it is in use by another process (another apiserver?)")
            }
            other => in_file(&other),
        })?;
        let mut loaded = read_all(&db).map_err(|e| in_file(&e))?;
        // Everything up to the old reservation may have been seen by a client: continue after it.
        let reserved = loaded.resource_version + RESERVATION;
        reserve(&db, reserved).map_err(|e| in_file(&e))?;
        let progress = Arc::new(Progress {
            durable: AtomicU64::new(loaded.resource_version),
            queued: AtomicU64::new(loaded.resource_version),
            waiting: AtomicU64::new(0),
            #[cfg(test)]
            paused: Mutex::new(()),
            reserved: AtomicU64::new(reserved),
            stopped: Mutex::new(None),
            changed: Condvar::new(),
        });
        let (queue, received) = mpsc::channel();
        let persister = {
            let progress = progress.clone();
            std::thread::Builder::new()
                .name("apiserver-persister".into())
                .spawn(move || persist_until_closed(db, received, progress))?
        };
        tracing::info!(
            path = %path.display(),
            objects = loaded.objects.values().map(BTreeMap::len).sum::<usize>(),
            resource_version = loaded.resource_version,
            "data dir opened"
        );
        loaded.objects.retain(|_, objects| !objects.is_empty());
        Ok((
            Journal {
                path,
                queue,
                progress,
                persister: Mutex::new(Some(persister)),
            },
            loaded,
        ))
    }

    /// Queues one change. Called with the store lock held, so changes queue in resourceVersion order.
    /// Waits (rarely: see [`RESERVATION`]) until the change's resourceVersion is reserved on disk, so
    /// that nobody sees it before a restart is sure to skip it.
    pub(crate) fn record(&self, event: &Arc<StoredEvent>, saved_cursor: u32) {
        let rv = event.resource_version;
        self.progress.queued.store(rv, Ordering::Release);
        // A stopped persister fails the write in `wait_durable`; nothing more to do here.
        let _ = self.wait_for_reservation(|p| p.reserved.load(Ordering::Acquire) >= rv);
        let message = Message::Change {
            event: event.clone(),
            saved_cursor,
        };
        // A closed queue means the persister stopped, which `wait_durable` reports.
        let _ = self.queue.send(message);
    }

    /// Returns once the persister has reserved room for the next write (see [`ROOM`]). Called before the
    /// store lock is taken, so that waiting for the disk holds up no other request.
    pub(crate) fn wait_for_room(&self) {
        // A stopped persister fails the write in `wait_durable`.
        let _ = self.wait_for_reservation(|p| {
            p.reserved.load(Ordering::Acquire) >= p.queued.load(Ordering::Acquire) + ROOM
        });
    }

    /// Whether the next write has room without waiting.
    pub(crate) fn has_room(&self) -> bool {
        self.progress.reserved.load(Ordering::Acquire) >= self.progress.queued.load(Ordering::Acquire) + ROOM
    }

    fn wait_for_reservation(&self, reached: impl Fn(&Progress) -> bool) -> Result<(), String> {
        if reached(&self.progress) {
            return Ok(());
        }
        self.progress.waiting.fetch_add(1, Ordering::AcqRel);
        let result = block_in_place(|| self.progress.wait(reached));
        self.progress.waiting.fetch_sub(1, Ordering::AcqRel);
        result
    }

    /// Returns once every change up to `rv` is committed; `Err` when the persister stopped first.
    pub(crate) fn wait_durable(&self, rv: u64) -> std::io::Result<()> {
        if self.progress.durable.load(Ordering::Acquire) >= rv {
            return Ok(());
        }
        block_in_place(|| self.progress.wait(|p| p.durable.load(Ordering::Acquire) >= rv)).map_err(|reason| {
            std::io::Error::other(format!(
                "the write was not saved to {}: {reason}",
                self.path.display()
            ))
        })
    }

    /// Commits what is queued, stops the persister and closes the file, so it can be opened again.
    /// Later writes fail with 500. Idempotent.
    pub(crate) fn close(&self) {
        let persister = self
            .persister
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(persister) = persister {
            let _ = self.queue.send(Message::Close);
            if persister.join().is_err() {
                tracing::error!("the persister thread panicked");
            }
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.close();
    }
}

/// Runs `wait` where blocking is allowed: on a multi-threaded tokio runtime the worker hands its other
/// tasks to another thread first. A current-thread runtime (most `#[tokio::test]`s) has nobody to hand
/// them to and blocks, which is safe: the persister is an OS thread of its own.
fn block_in_place<T>(wait: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(wait)
        }
        _ => wait(),
    }
}

/// The persister thread: commits queued changes in batches until `Close`, a failure, or every sender
/// is gone. Marks progress stopped however it ends (a panic included), so no request waits forever.
fn persist_until_closed(db: Database, received: mpsc::Receiver<Message>, progress: Arc<Progress>) {
    struct StopOnExit(Arc<Progress>);
    impl Drop for StopOnExit {
        fn drop(&mut self) {
            self.0.stop("the store is closed".into());
        }
    }
    let _stop_on_exit = StopOnExit(progress.clone());
    let mut closing = false;
    while !closing {
        let Ok(first) = received.recv() else { break };
        let mut batch = Vec::new();
        for message in std::iter::once(first).chain(received.try_iter()) {
            match message {
                Message::Change { event, saved_cursor } => batch.push((event, saved_cursor)),
                Message::Close => {
                    closing = true;
                    break;
                }
            }
            if batch.len() >= MAX_BATCH {
                break;
            }
        }
        let Some((last, saved_cursor)) = batch.last() else {
            continue;
        };
        #[cfg(test)]
        let _paused = progress.paused.lock().unwrap_or_else(PoisonError::into_inner);
        let (durable, saved_cursor) = (last.resource_version, *saved_cursor);
        let reserved = durable + RESERVATION;
        match commit(&db, &batch, reserved, saved_cursor) {
            Ok(()) => progress.advance(durable, reserved),
            Err(error) => {
                tracing::error!(%error, "committing to the data dir failed; every later write fails");
                progress.stop(format!("commit failed: {error}"));
                return;
            }
        }
    }
}

/// One transaction with every change of `batch`, in order, and the counters after the last.
fn commit(
    db: &Database,
    batch: &[(Arc<StoredEvent>, u32)],
    reserved: u64,
    saved_cursor: u32,
) -> Result<(), redb::Error> {
    let transaction = db.begin_write()?;
    {
        let mut objects = transaction.open_table(OBJECTS)?;
        let mut counters = transaction.open_table(META)?;
        for (event, _) in batch {
            let key = (
                event.resource.as_str(),
                event.namespace.as_str(),
                event.name.as_str(),
            );
            match event.event_type {
                EventType::Deleted => {
                    objects.remove(key)?;
                }
                EventType::Added | EventType::Modified => {
                    objects.insert(key, event.object.as_bytes())?;
                }
            }
        }
        counters.insert(RESERVED_RESOURCE_VERSION, reserved)?;
        counters.insert(SAVED_CURSOR, u64::from(saved_cursor))?;
    }
    transaction.commit()?;
    Ok(())
}

/// Commits a new reservation (and the format) before anything is served.
fn reserve(db: &Database, reserved: u64) -> Result<(), redb::Error> {
    let transaction = db.begin_write()?;
    {
        let mut counters = transaction.open_table(META)?;
        counters.insert(FORMAT, FORMAT_VERSION)?;
        counters.insert(RESERVED_RESOURCE_VERSION, reserved)?;
        // Created now so that readers never meet a missing table.
        transaction.open_table(OBJECTS)?;
    }
    transaction.commit()?;
    Ok(())
}

#[derive(Debug, thiserror::Error)]
enum ReadError {
    #[error(transparent)]
    Store(#[from] redb::Error),
    #[error("it was written by a newer apiserver (format {0}, this one reads {FORMAT_VERSION})")]
    NewerFormat(u64),
    #[error("object {resource} {namespace}/{name} is not valid JSON: {source}")]
    Object {
        resource: String,
        namespace: String,
        name: String,
        source: serde_json::Error,
    },
}

impl From<redb::TableError> for ReadError {
    fn from(error: redb::TableError) -> Self {
        ReadError::Store(error.into())
    }
}

impl From<redb::StorageError> for ReadError {
    fn from(error: redb::StorageError) -> Self {
        ReadError::Store(error.into())
    }
}

impl From<redb::TransactionError> for ReadError {
    fn from(error: redb::TransactionError) -> Self {
        ReadError::Store(error.into())
    }
}

/// Every object and counter in `db`; an empty [`Loaded`] for a new file.
fn read_all(db: &Database) -> Result<Loaded, ReadError> {
    let transaction = db.begin_read()?;
    let counters = match transaction.open_table(META) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Loaded::default()),
        Err(error) => return Err(error.into()),
    };
    let counter =
        |name: &str| -> Result<Option<u64>, ReadError> { Ok(counters.get(name)?.map(|value| value.value())) };
    let format = counter(FORMAT)?.unwrap_or(FORMAT_VERSION);
    if format > FORMAT_VERSION {
        return Err(ReadError::NewerFormat(format));
    }
    let mut loaded = Loaded {
        objects: HashMap::new(),
        resource_version: counter(RESERVED_RESOURCE_VERSION)?.unwrap_or(0),
        saved_cursor: counter(SAVED_CURSOR)?.and_then(|ip| u32::try_from(ip).ok()),
    };
    let objects = match transaction.open_table(OBJECTS) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(loaded),
        Err(error) => return Err(error.into()),
    };
    for row in objects.iter()? {
        let (key, json) = row?;
        let (resource, namespace, name) = key.value();
        let object: Value = serde_json::from_slice(json.value()).map_err(|source| ReadError::Object {
            resource: resource.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source,
        })?;
        // The reservation is always ahead of every stored object; this only guards a hand-edited file.
        let rv = meta::resource_version(&object)
            .and_then(|rv| rv.parse::<u64>().ok())
            .unwrap_or(0);
        loaded.resource_version = loaded.resource_version.max(rv);
        loaded
            .objects
            .entry(resource.to_owned())
            .or_default()
            .insert((namespace.to_owned(), name.to_owned()), object);
    }
    Ok(loaded)
}

/// The data dir, created owner-only when missing: it holds every Secret.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// The store file, created empty and owner-only when missing (redb initializes an empty file).
fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map(drop)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::*;
    use crate::emulated::Controllers;
    use crate::store::{HistoryLimits, Store, WriteOptions};

    /// A write that must wait for the disk waits without the store lock: the readers behind the lock
    /// go on while the disk is stalled.
    #[test]
    fn a_write_waiting_for_a_stalled_disk_does_not_hold_the_store_lock() {
        let dir = tempfile::tempdir().unwrap();
        let limits = HistoryLimits {
            events: 100,
            bytes: 1 << 20,
        };
        let store = Store::open(limits, Some(dir.path()), Arc::new(Controllers::default())).unwrap();
        let rt = store.resolve("", "v1", "configmaps").unwrap();
        let config_map =
            |name: String| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        let journal = store.journal.as_ref().unwrap();
        let stall = journal.progress.paused.lock().unwrap();
        // Writes queue their changes without a commit until one has to wait for the disk. Each answers
        // only once committed, so each runs on a thread of its own.
        let mut writers = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while journal.progress.waiting.load(Ordering::Acquire) == 0 {
            let queued = journal.progress.queued.load(Ordering::Acquire);
            let store = store.clone();
            let (rt, object) = (rt.clone(), config_map(format!("cm-{}", writers.len())));
            writers.push(std::thread::spawn(move || {
                crate::strategy::writes::create(&store, &rt, "default", object, &WriteOptions::default())
            }));
            // The deadline is far beyond a thread's start; the write then queues or waits.
            while journal.progress.queued.load(Ordering::Acquire) == queued
                && journal.progress.waiting.load(Ordering::Acquire) == 0
            {
                assert!(Instant::now() < deadline, "the write neither queued nor waited");
                std::thread::yield_now();
            }
        }
        assert!(
            store.state.try_lock().is_ok(),
            "the waiting write holds the store lock"
        );
        assert!(
            store.get(&rt, "default", "cm-0").is_ok(),
            "a read is served meanwhile"
        );

        drop(stall);
        let written = writers.len();
        for writer in writers {
            writer
                .join()
                .unwrap()
                .expect("each write is saved once the disk moves");
        }
        assert!(store.get(&rt, "default", &format!("cm-{}", written - 1)).is_ok());
    }

    /// A collection deletion makes room between its objects: it lets the lock go while it waits.
    #[test]
    fn a_collection_deletion_waiting_for_a_stalled_disk_lets_the_store_lock_go() {
        let dir = tempfile::tempdir().unwrap();
        let limits = HistoryLimits {
            events: 1000,
            bytes: 1 << 20,
        };
        let store = Store::open(limits, Some(dir.path()), Arc::new(Controllers::default())).unwrap();
        let rt = store.resolve("", "v1", "configmaps").unwrap();
        // More objects than one reservation holds, written while the disk moves.
        let count = 2 * RESERVATION;
        for i in 0..count {
            let object =
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")}});
            crate::strategy::writes::create(&store, &rt, "default", object, &WriteOptions::default())
                .unwrap();
        }
        let journal = store.journal.as_ref().unwrap();
        let stall = journal.progress.paused.lock().unwrap();
        let deleting = {
            let (store, rt) = (store.clone(), rt.clone());
            std::thread::spawn(move || {
                store.delete_collection(&rt, Some("default"), |_| true, &Default::default())
            })
        };
        // The deadline is far beyond a thread's start; the deletion then waits until the disk moves.
        let deadline = Instant::now() + Duration::from_secs(30);
        while journal.progress.waiting.load(Ordering::Acquire) == 0 {
            assert!(Instant::now() < deadline, "the deletion never waited for room");
            std::thread::yield_now();
        }
        assert!(
            store.state.try_lock().is_ok(),
            "the waiting deletion holds the store lock"
        );

        drop(stall);
        let deleted = deleting.join().unwrap().expect("the deletion is saved");
        assert_eq!(deleted.len() as u64, count);
        assert!(store.get(&rt, "default", "cm-0").is_err());
    }
}
