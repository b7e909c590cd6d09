//! Batching: the operations that tasks sharing one [`crate::Client`] send
//! to the same node at the same time go out as one ExecuteBatch call.
//!
//! A node's gRPC and loop costs are mostly per call (a frame, a syscall, a
//! wakeup), not per operation, so under load many small calls cost far
//! more than a few large ones. Batching is natural, not timed: a batch
//! leaves as soon as a slot is free (at most `in_flight` calls per node),
//! and whatever queued meanwhile rides the next one, so a lone operation
//! waits for nothing and a busy client fills its batches by itself. Each
//! request keeps its own session, sequence and outcome, exactly as Execute.

use amulet_api::pb;
use amulet_api::{outcome_to_result, BATCH_REQUESTS_MAX};
use prost::Message;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tonic::Status;

/// Bytes of requests gathered into one call, well under the node's
/// request limit (16 MiB), so a batch of large puts is never refused.
const BATCH_BYTES_MAX: usize = 4 * 1024 * 1024;

type Reply = oneshot::Sender<Result<pb::MapResponse, Status>>;

/// The queue of one node's batcher; cheap to clone.
#[derive(Clone)]
pub(crate) struct Batcher {
    queue: mpsc::UnboundedSender<(pb::MapRequest, Reply)>,
}

impl Batcher {
    /// Starts the batcher of the node `client` talks to. A call taking
    /// longer than `call_timeout` fails its requests as DEADLINE_EXCEEDED
    /// (callers resend with the same sequence), so a node that stopped
    /// answering cannot hold a slot forever. The batcher ends when the
    /// last clone of it is dropped.
    pub(crate) fn start(
        client: crate::node_channel::NodeClient,
        in_flight: usize,
        call_timeout: Duration,
    ) -> Batcher {
        let (queue, requests) = mpsc::unbounded_channel();
        tokio::spawn(run(client, requests, in_flight.max(1), call_timeout));
        Batcher { queue }
    }

    /// Sends `request` in the next batch to this node and waits for its
    /// outcome.
    pub(crate) async fn execute(&self, request: pb::MapRequest) -> Result<pb::MapResponse, Status> {
        let (reply, outcome) = oneshot::channel();
        self.queue
            .send((request, reply))
            .map_err(|_| Status::unavailable("the client's batcher stopped"))?;
        outcome
            .await
            .map_err(|_| Status::unavailable("the batch carrying the request was dropped"))?
    }
}

async fn run(
    client: crate::node_channel::NodeClient,
    mut requests: mpsc::UnboundedReceiver<(pb::MapRequest, Reply)>,
    in_flight: usize,
    call_timeout: Duration,
) {
    let slots = Arc::new(Semaphore::new(in_flight));
    // A node of a version without ExecuteBatch answers UNIMPLEMENTED;
    // from then on its requests go one Execute call each.
    let unbatched = Arc::new(AtomicBool::new(false));
    while let Some(first) = requests.recv().await {
        // Waiting for a slot is what lets a batch grow under load.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let mut bytes = first.0.encoded_len();
        let mut batch = vec![first];
        while batch.len() < BATCH_REQUESTS_MAX && bytes < BATCH_BYTES_MAX {
            match requests.try_recv() {
                Ok(item) => {
                    bytes += item.0.encoded_len();
                    batch.push(item);
                }
                Err(_) => break,
            }
        }
        let client = client.clone();
        let unbatched = unbatched.clone();
        tokio::spawn(async move {
            send_batch(client, batch, call_timeout, &unbatched).await;
            drop(slot);
        });
    }
}

async fn send_batch(
    mut client: crate::node_channel::NodeClient,
    mut batch: Vec<(pb::MapRequest, Reply)>,
    call_timeout: Duration,
    unbatched: &AtomicBool,
) {
    // A caller that gave up resends under the same sequence; sending its
    // old request too would only cost the node work.
    batch.retain(|(_, reply)| !reply.is_closed());
    if batch.is_empty() {
        return;
    }
    if unbatched.load(Ordering::Relaxed) {
        return send_each(client, batch, call_timeout).await;
    }
    let (requests, replies): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
    let count = requests.len();
    let answer = tokio::time::timeout(
        call_timeout,
        client.execute_batch(pb::MapRequestBatch { requests }),
    )
    .await;
    let outcomes = match answer {
        Ok(Ok(response)) => response.into_inner().outcomes,
        Ok(Err(status)) if status.code() == tonic::Code::Unimplemented => {
            // Nothing was executed: the node does not know the call.
            unbatched.store(true, Ordering::Relaxed);
            // The requests are gone with the call; the callers resend.
            let status = Status::unavailable("the node does not batch; resend one by one");
            return fail_all(replies, &status);
        }
        Ok(Err(status)) => return fail_all(replies, &status),
        Err(_) => {
            let status = Status::deadline_exceeded("the node did not answer the batch in time");
            return fail_all(replies, &status);
        }
    };
    if outcomes.len() != count {
        let status = Status::internal(format!(
            "a batch of {count} requests got {} outcomes",
            outcomes.len()
        ));
        return fail_all(replies, &status);
    }
    for (reply, outcome) in replies.into_iter().zip(outcomes) {
        let _ = reply.send(outcome_to_result(outcome));
    }
}

/// One Execute call per request, all at once (a node without ExecuteBatch).
async fn send_each(
    client: crate::node_channel::NodeClient,
    batch: Vec<(pb::MapRequest, Reply)>,
    call_timeout: Duration,
) {
    let mut calls = tokio::task::JoinSet::new();
    for (request, reply) in batch {
        let mut client = client.clone();
        calls.spawn(async move {
            let answer = match tokio::time::timeout(call_timeout, client.execute(request)).await {
                Ok(answer) => answer.map(tonic::Response::into_inner),
                Err(_) => Err(Status::deadline_exceeded("the node did not answer in time")),
            };
            let _ = reply.send(answer);
        });
    }
    while calls.join_next().await.is_some() {}
}

fn fail_all(replies: Vec<Reply>, status: &Status) {
    for reply in replies {
        let _ = reply.send(Err(status.clone()));
    }
}
