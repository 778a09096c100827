//! PostgresWriter under a burst of resources arriving together, against each control plane and a real,
//! throwaway PostgreSQL: a new table is created once however many reconciles want it at once, and
//! every row written and deleted has its Event.

mod support;

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::api::events::v1::Event;
use kube::{
    Api,
    api::{DeleteParams, ListParams, PostParams},
};
use operator::{
    api::postgres_writer::PostgresWriter,
    controllers::postgres_writer::{self, Settings},
    db::{DatabaseConfig, RowStore, TableName, TableState, throwaway::ThrowawayPostgres},
    runtime::metrics::Metrics,
};
use support::{
    Backend, eventually,
    postgres_writer::{connect, ready_reason, rows, writer},
};

/// How long a burst may take to converge on a loaded machine.
const LONG: Duration = Duration::from_secs(120);

/// Resources created at once, each reconciled at once: more than the pool has connections (8), as
/// many as `--max-concurrent-reconciles` allows by default.
const FIRST_WRITERS: usize = 64;

/// Resources of the Event burst: enough that Events wait for the writers, few enough that the test
/// takes seconds on the embedded server.
const BURST: usize = 200;

/// Creates `names` at once, each a PostgresWriter of `table`.
async fn create_at_once(api: &Api<PostgresWriter>, names: &[String], table: &str) {
    futures::future::try_join_all(names.iter().enumerate().map(|(i, name)| async move {
        api.create(&PostParams::default(), &writer(name, table, "n", i as i64, "c"))
            .await
    }))
    .await
    .expect("every resource is created");
}

/// Waits until `api` lists `count` resources, every one reporting `reason` (`True/Synced`, say).
async fn wait_all(api: &Api<PostgresWriter>, count: usize, reason: &str) {
    eventually(
        &format!("{count} resources to report {reason:?}"),
        LONG,
        || async {
            let listed = api.list(&ListParams::default()).await.ok()?.items;
            let done = listed.iter().all(|w| ready_reason(w).as_deref() == Some(reason));
            (done && listed.len() == count).then_some(())
        },
    )
    .await;
}

/// The Warning Events about PostgresWriters in `namespace`, as `reason: note` lines. (The real control
/// plane records warnings of its own in `default`, about its `kubernetes` Service, while it starts.)
async fn warnings(client: &kube::Client, namespace: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    events
        .list(&ListParams::default())
        .await
        .expect("events list")
        .items
        .into_iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .filter(|e| e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some("PostgresWriter"))
        .map(|e| format!("{}: {}", e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect()
}

async fn first_writers_of_a_new_table_create_it_once_and_all_converge(backend: Backend) {
    let (_plane, client) = support::cluster(backend).await;
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let sql = connect(&pg).await;
    let api: Api<PostgresWriter> = Api::namespaced(client.clone(), "default");
    let (ctx, shutdown) =
        support::context_with_concurrency(&client, Duration::from_secs(300), FIRST_WRITERS as u16);
    let pool = DatabaseConfig::from_url(&pg.url()).connect().expect("pool");
    let running = support::spawn(ctx, shutdown, move |ctx| {
        postgres_writer::run(ctx, pool, Settings::default())
    });

    // Neither the table nor the ledger exists yet: every first reconcile wants both created.
    let names: Vec<String> = (0..FIRST_WRITERS).map(|i| format!("w{i:03}")).collect();
    create_at_once(&api, &names, "freshmen").await;
    wait_all(&api, FIRST_WRITERS, "True/Synced").await;

    assert_eq!(rows(&sql, "freshmen").await.len(), FIRST_WRITERS);
    assert_eq!(warnings(&client, "default").await, Vec::<String>::new());
    assert_eq!(
        running.reconcile_errors(postgres_writer::NAME),
        0,
        "no reconcile failed on its way to the row"
    );
    running.stop().await;
}

/// How many times each PostgresWriter's Events with `reason` were reported (a series counts its
/// repeats), by name.
async fn reported(client: &kube::Client, reason: &str) -> BTreeMap<String, i32> {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let mut times = BTreeMap::new();
    for event in events
        .list(&ListParams::default())
        .await
        .expect("events list")
        .items
    {
        let Some(regarding) = event
            .regarding
            .filter(|r| r.kind.as_deref() == Some("PostgresWriter"))
        else {
            continue;
        };
        if event.reason.as_deref() == Some(reason) {
            *times.entry(regarding.name.unwrap_or_default()).or_default() +=
                event.series.map_or(1, |s| s.count);
        }
    }
    times
}

async fn every_row_written_and_deleted_in_a_burst_has_its_event(backend: Backend) {
    let (_plane, client) = support::cluster(backend).await;
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let sql = connect(&pg).await;
    let api: Api<PostgresWriter> = Api::namespaced(client.clone(), "default");
    let (ctx, shutdown) = support::context_with_concurrency(&client, Duration::from_secs(300), 64);
    let recorder = ctx.events.clone();
    let pool = DatabaseConfig::from_url(&pg.url()).connect().expect("pool");
    let running = support::spawn(ctx, shutdown, move |ctx| {
        postgres_writer::run(ctx, pool, Settings::default())
    });

    let names: Vec<String> = (0..BURST).map(|i| format!("b{i:04}")).collect();
    create_at_once(&api, &names, "students").await;
    wait_all(&api, BURST, "True/Synced").await;
    assert_eq!(rows(&sql, "students").await.len(), BURST);
    tokio::time::timeout(LONG, recorder.idle())
        .await
        .expect("the Events are written in time");
    let once: BTreeMap<String, i32> = names.iter().map(|n| (n.clone(), 1)).collect();
    assert_eq!(
        reported(&client, "Written").await,
        once,
        "one Written per row written"
    );

    futures::future::try_join_all(
        names
            .iter()
            .map(|name| async { api.delete(name, &DeleteParams::default()).await }),
    )
    .await
    .expect("every resource is deleted");
    wait_all(&api, 0, "").await;
    assert_eq!(rows(&sql, "students").await.len(), 0);
    tokio::time::timeout(LONG, recorder.idle())
        .await
        .expect("the Events are written in time");
    assert_eq!(
        reported(&client, "Deleted").await,
        once,
        "one Deleted per row deleted"
    );
    assert_eq!(running.events_dropped(), 0);
    assert_eq!(warnings(&client, "default").await, Vec::<String>::new());
    running.stop().await;
}

/// Operator replicas, each with a pool of its own as separate processes have, each with many
/// reconciles that find the same new tables missing at the same moment: every one of them finds every
/// table ready, none fails on another's half-made table.
#[tokio::test]
async fn replicas_creating_the_same_new_tables_at_once_all_find_them_ready() {
    const REPLICAS: usize = 8;
    const RECONCILES: usize = 8;
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let replicas: Vec<RowStore> = (0..REPLICAS)
        .map(|_| {
            let pool = DatabaseConfig::from_url(&pg.url()).connect().expect("pool");
            RowStore::new(pool, Metrics::new().database)
        })
        .collect();
    for round in 0..4 {
        let tables: Vec<TableName> = (0..4)
            .map(|t| TableName::parse(&format!("round{round}_table{t}")).unwrap())
            .collect();
        let checks = replicas.iter().flat_map(|store| {
            tables.iter().flat_map(move |table| {
                (0..RECONCILES).map(move |_| async move { store.ensure_table(table, true).await })
            })
        });
        let states = futures::future::join_all(checks).await;
        let failed: Vec<String> = states
            .iter()
            .filter_map(|state| match state {
                Ok(TableState::Ready) => None,
                Ok(other) => Some(format!("{other:?}")),
                Err(error) => Some(error.to_string()),
            })
            .collect();
        assert_eq!(failed, Vec::<String>::new(), "round {round}");
    }
}

testenv::each_control_plane!(
    first_writers_of_a_new_table_create_it_once_and_all_converge,
    every_row_written_and_deleted_in_a_burst_has_its_event,
);
