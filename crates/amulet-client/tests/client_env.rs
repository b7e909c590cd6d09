//! The client decides with the clock it is given (`ClientEnv`): three real
//! nodes in this process on 127.0.0.1; once they are stopped, a read gives
//! up as soon as the given clock says the operation timeout passed,
//! whatever the wall clock says.

mod common;

use amulet_client::{Client, ClientConfig, ClientEnv, Clock, Error};
use amulet_types::TimeMicros;
use rand::SeedableRng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// A clock that moves only when told.
#[derive(Default)]
struct ManualClock {
    micros: AtomicU64,
}

impl Clock for ManualClock {
    fn now(&self) -> TimeMicros {
        TimeMicros(self.micros.load(Ordering::SeqCst))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_gives_up_when_its_own_clock_says_the_deadline_passed() {
    let cluster = common::start("client-env", 5).await;
    let clock = Arc::new(ManualClock::default());
    let env = ClientEnv {
        clock: clock.clone(),
        rng: Box::new(rand::rngs::StdRng::seed_from_u64(7)),
    };
    let config = ClientConfig {
        attempt_timeout: Duration::from_millis(200),
        operation_timeout: Duration::from_secs(30),
        ..ClientConfig::default()
    };
    let client = Client::connect_with_env(cluster.addresses.clone(), config, env)
        .await
        .unwrap();
    // A frozen clock is no obstacle to operations that succeed.
    let m = client.create_map("m").await.unwrap();
    m.put("a", "1").await.unwrap();
    assert_eq!(m.get("a").await.unwrap().as_deref(), Some(&b"1"[..]));

    // The nodes go; the directory stays until the end.
    let dir = cluster.dir.clone();
    for node in cluster.nodes {
        node.stop().await.unwrap();
    }
    let started = Instant::now();
    let read = tokio::spawn(async move { m.get("a").await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !read.is_finished(),
        "the read retries while the clock stands"
    );
    clock.micros.fetch_add(31_000_000, Ordering::SeqCst);
    let result = tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("the read gave up by the client's clock")
        .unwrap();
    assert!(matches!(result, Err(Error::Unavailable(_))), "{result:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "gave up by the given clock, not after 30 s of wall time"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
