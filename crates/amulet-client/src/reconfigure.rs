//! Changes ordered on the global stream, from a client: repartitioning
//! (docs/ARCHITECTURE.md, DMap §III-C: a split, merge, stream replacement
//! or move), and the waits until every node has applied such a change.

use crate::{Client, Error};
use amulet_smr::PartitionMap;
use amulet_types::{NodeId, TimeMicros};
use std::time::Duration;

impl Client {
    /// Asks the cluster to change its partitioning (split, merge, new
    /// stream), computed from the freshest map this client can get. Returns
    /// the map version the change was made from once the cluster ordered
    /// and accepted it; every replica applies it at a fence soon after
    /// (watch for a map version above the one returned: see
    /// [`Client::wait_for_map_version`]). A node behind the client's map
    /// version (restarted, still replaying) refuses it before ordering
    /// anything: the client asks again until the operation timeout. Not
    /// retried on an unknown outcome: a resend would be refused as stale
    /// or as overlapping.
    pub async fn reconfigure(&self, change: &amulet_smr::Reconfiguration) -> Result<u64, Error> {
        self.reconfigure_with(|_| Ok(change.clone()))
            .await
            .map(|(version, _)| version)
    }

    /// Like [`Client::reconfigure`], with the change built by `build` from
    /// the freshest map at every attempt: ids it allocates from the map
    /// (`PartitionMap::next_stream_id`, `next_partition_id`) are fresh at
    /// the version the change is checked against, and a change that raced
    /// another one is rebuilt on the map after it. Returns the version and
    /// the change accepted.
    pub async fn reconfigure_with(
        &self,
        build: impl Fn(&PartitionMap) -> Result<amulet_smr::Reconfiguration, Error>,
    ) -> Result<(u64, amulet_smr::Reconfiguration), Error> {
        // A node behind the map version asked for (restarted, replaying)
        // refused before ordering anything, or another change had not yet
        // taken effect: ask again, at another node perhaps, until the
        // operation timeout. A change that raced
        // another one is rebuilt on the newer map, three times at most.
        let mut backoff = self.backoff();
        let mut raced = 0;
        while raced < 3 {
            self.refresh_map().await;
            let version = self.map_version();
            let change = build(&self.partition_map())?;
            let (mut channel, _) = self.global_node()?;
            let request = amulet_api::reconfiguration_to_pb(version, &change);
            let answer = tokio::time::timeout(
                self.config().operation_timeout,
                channel.reconfigure(request),
            )
            .await
            .map_err(|_| Error::OutcomeUnknown("reconfigure: no answer in time".into()))?;
            match answer {
                Ok(_) => return Ok((version, change)),
                Err(status) => match amulet_api::error_kind(&status) {
                    Some(amulet_api::ErrorKind::StaleMap) => raced += 1,
                    // Behind, or another change still waiting for its
                    // fence (`reconfiguration-pending`): both pass. A bulk
                    // load's next split, say, comes right after the last.
                    // A node that replicates nothing (any more) executes
                    // no reconfiguration: another node, by the newer map.
                    Some(
                        amulet_api::ErrorKind::Behind
                        | amulet_api::ErrorKind::Retryable
                        | amulet_api::ErrorKind::NotAReplica,
                    ) => match backoff.pause(self.now()) {
                        Some(until) => self.sleep_until(until).await,
                        None => return Err(Error::from_status(&status)),
                    },
                    _ => return Err(Error::from_status(&status)),
                },
            }
        }
        Err(Error::Unavailable(
            "reconfigure: the map kept changing".into(),
        ))
    }

    /// Waits until every node in the map has executed, at each of its
    /// replicas, every global-stream value some node had executed when
    /// called (or `timeout` passes); returns whether they all got there.
    /// A change ordered on the global stream (an access change: a token
    /// created or revoked, a grant) takes effect at a node when its
    /// replicas execute it; after this, it has taken effect everywhere
    /// (docs/security.md "Where a change takes effect"). A node that does
    /// not answer counts as not there yet.
    pub async fn wait_until_every_node_caught_up(&self, timeout: Duration) -> bool {
        let timeout_micros = u64::try_from(timeout.as_micros()).unwrap_or(u64::MAX);
        let deadline = TimeMicros(self.now().0.saturating_add(timeout_micros));
        let addresses: Vec<String> = self.node_addresses().into_values().collect();
        let mut target = 0;
        for address in &addresses {
            if let Ok(status) = self.status(address).await {
                let most = status.replicas.iter().map(|r| r.global_position).max();
                target = target.max(most.unwrap_or(0));
            }
        }
        for address in &addresses {
            loop {
                // A node that runs no replica executes nothing: it is there.
                let executed = self.status(address).await.ok().map(|status| {
                    status
                        .replicas
                        .iter()
                        .map(|r| r.global_position)
                        .min()
                        .unwrap_or(u64::MAX)
                });
                if executed.is_some_and(|e| e >= target) {
                    break;
                }
                if self.now() >= deadline {
                    return false;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        true
    }

    /// Waits until every node in the map reports a map version of at
    /// least `version` (or `timeout` passes); `progress` hears each
    /// node's version on every poll. Returns whether all got there; if
    /// so, the cached partition map is at `version` or later too.
    pub async fn wait_for_map_version(
        &self,
        version: u64,
        timeout: Duration,
        mut progress: impl FnMut(&[(NodeId, Option<u64>)]),
    ) -> bool {
        let timeout_micros = u64::try_from(timeout.as_micros()).unwrap_or(u64::MAX);
        let deadline = TimeMicros(self.now().0.saturating_add(timeout_micros));
        loop {
            self.refresh_map().await;
            let mut seen = Vec::new();
            for (node, address) in self.node_addresses() {
                let at = self.status(&address).await.ok().map(|s| s.map_version);
                seen.push((node, at));
            }
            progress(&seen);
            if !seen.is_empty() && seen.iter().all(|(_, v)| v.is_some_and(|v| v >= version)) {
                // The map was fetched before the nodes were asked: fetch it
                // again, so that on return the cached map is at `version`
                // too (a repartitioning test once read the old stream of a
                // partition from the cache right after this said yes).
                self.refresh_map().await;
                if self.map_version() >= version {
                    return true;
                }
            }
            if self.now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
