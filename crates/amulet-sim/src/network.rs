//! A faulty network in virtual time.
//!
//! Messages wait in one queue ordered by (delivery time, send sequence), so
//! simultaneous deliveries always come out in the order they were sent and
//! a seed replays exactly. Partitions are sets of blocked directed links:
//! blocking `a -> b` loses what `a` sends to `b`, including messages
//! already in flight when they fall due, as a cut cable would.

use crate::rng::Rng;
use crate::swarm::NetworkOptions;
use amulet_types::{NodeId, TimeMicros};
use std::collections::{BTreeMap, BTreeSet};

/// Counts of what the network did, for reports and coverage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetworkStats {
    /// `send` calls.
    pub sent: u64,
    /// Messages handed out by `deliver_due`.
    pub delivered: u64,
    /// Messages lost at random.
    pub lost: u64,
    /// Extra copies created.
    pub duplicated: u64,
    /// Messages that took a tail delay.
    pub delayed: u64,
    /// Messages lost to a partition (at send or when due).
    pub partitioned: u64,
    /// In-flight messages purged by `drop_to` (their receiver crashed).
    pub dropped_to_crashed: u64,
}

/// A message in flight.
#[derive(Clone, Debug)]
struct InFlight<M> {
    from: NodeId,
    to: NodeId,
    message: M,
}

/// Virtual-time message queue between nodes, with loss, duplication,
/// delay, reordering and partitions. Generic over the message type.
///
/// Invariant: every queued message is due strictly after the time it was
/// sent (latency is at least 1 micro), so a message sent while handling a
/// delivery is never due in the same `deliver_due` call.
#[derive(Clone, Debug)]
pub struct Network<M> {
    options: NetworkOptions,
    rng: Rng,
    queue: BTreeMap<(TimeMicros, u64), InFlight<M>>,
    next_sequence: u64,
    blocked: BTreeSet<(NodeId, NodeId)>,
    /// A node whose every link also loses this share of messages, both
    /// ways, until the heal (a flaky NIC or an overloaded host: Rapid
    /// §4.1's case of a node that is slow, not dead).
    flaky: Option<(NodeId, f64)>,
    stats: NetworkStats,
}

impl<M: Clone> Network<M> {
    /// An empty network with the given faults, drawing from `rng`.
    pub fn new(options: NetworkOptions, rng: Rng) -> Network<M> {
        assert!(
            options.latency_micros_min <= options.latency_micros_max,
            "latency range is empty: {options:?}"
        );
        Network {
            options,
            rng,
            queue: BTreeMap::new(),
            next_sequence: 0,
            blocked: BTreeSet::new(),
            flaky: None,
            stats: NetworkStats::default(),
        }
    }

    /// Sends `message` from `from` to `to` at `now`. It may be lost,
    /// duplicated and delayed. A message to oneself is never lost, blocked
    /// or duplicated, only delayed by the minimum latency.
    pub fn send(&mut self, now: TimeMicros, from: NodeId, to: NodeId, message: M) {
        self.stats.sent += 1;
        if from == to {
            let at = now.plus(self.options.latency_micros_min.max(1));
            self.enqueue(at, from, to, message);
            return;
        }
        if self.blocked.contains(&(from, to)) {
            self.stats.partitioned += 1;
            return;
        }
        if self.rng.chance(self.options.loss_probability) {
            self.stats.lost += 1;
            return;
        }
        // Drawn only for the flaky node's links: every other seed draws
        // as it did before flaky nodes existed.
        if let Some((node, share)) = self.flaky {
            if (from == node || to == node) && self.rng.chance(share) {
                self.stats.lost += 1;
                return;
            }
        }
        if self.rng.chance(self.options.duplicate_probability) {
            self.stats.duplicated += 1;
            let at = now.plus(self.draw_latency());
            self.enqueue(at, from, to, message.clone());
        }
        let at = now.plus(self.draw_latency());
        self.enqueue(at, from, to, message);
    }

    /// Removes and returns, in delivery order, every message due at or
    /// before `now` whose link is not blocked, as `(from, to, message)`.
    pub fn deliver_due(&mut self, now: TimeMicros) -> Vec<(NodeId, NodeId, M)> {
        let mut due = Vec::new();
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let packet = entry.remove();
            if self.blocked.contains(&(packet.from, packet.to)) {
                self.stats.partitioned += 1;
                continue;
            }
            self.stats.delivered += 1;
            due.push((packet.from, packet.to, packet.message));
        }
        due
    }

    /// When the earliest queued message falls due, if any.
    pub fn next_event_time(&self) -> Option<TimeMicros> {
        self.queue.first_key_value().map(|(key, _)| key.0)
    }

    /// Messages in flight.
    pub fn in_flight(&self) -> usize {
        self.queue.len()
    }

    /// Purges every in-flight message addressed to `node` (it crashed: what
    /// was on its way is gone with its sockets). Returns how many.
    pub fn drop_to(&mut self, node: NodeId) -> usize {
        let before = self.queue.len();
        self.queue.retain(|_, packet| packet.to != node);
        let dropped = before - self.queue.len();
        self.stats.dropped_to_crashed += dropped as u64;
        dropped
    }

    /// Blocks the directed link `from -> to` until `unblock_all`/`heal`.
    pub fn block(&mut self, from: NodeId, to: NodeId) {
        assert_ne!(from, to, "a node is never partitioned from itself");
        self.blocked.insert((from, to));
    }

    /// Blocks every listed directed link.
    pub fn block_links(&mut self, links: &[(NodeId, NodeId)]) {
        for &(from, to) in links {
            self.block(from, to);
        }
    }

    /// Whether `from -> to` is blocked.
    pub fn is_blocked(&self, from: NodeId, to: NodeId) -> bool {
        self.blocked.contains(&(from, to))
    }

    /// From now until the heal, every link of `node` loses `share` of its
    /// messages (both ways) on top of the network's own loss.
    pub fn set_flaky(&mut self, node: NodeId, share: f64) {
        assert!((0.0..1.0).contains(&share), "a share of messages: {share}");
        self.flaky = Some((node, share));
    }

    /// The flaky node and its links' extra loss, if any.
    pub fn flaky(&self) -> Option<(NodeId, f64)> {
        self.flaky
    }

    /// Ends every partition; loss, duplication and delays stay.
    pub fn unblock_all(&mut self) {
        self.blocked.clear();
    }

    /// Starts the liveness phase: no partitions, no loss, no duplication,
    /// small delays from now on. Messages already in flight keep the
    /// delivery time they drew.
    pub fn heal(&mut self) {
        self.unblock_all();
        self.flaky = None;
        self.options = self.options.healed();
    }

    /// The faults in force.
    pub fn options(&self) -> &NetworkOptions {
        &self.options
    }

    /// What the network did so far.
    pub fn stats(&self) -> NetworkStats {
        self.stats
    }

    fn draw_latency(&mut self) -> u64 {
        let options = &self.options;
        let (min, max) = (options.latency_micros_min, options.latency_micros_max);
        let (tail_probability, tail_max) = (
            options.delay_tail_probability,
            options.delay_tail_micros_max,
        );
        let latency = if tail_probability > 0.0 && self.rng.chance(tail_probability) {
            self.stats.delayed += 1;
            self.rng.range(max, tail_max.max(max))
        } else {
            self.rng.range(min, max)
        };
        latency.max(1)
    }

    fn enqueue(&mut self, at: TimeMicros, from: NodeId, to: NodeId, message: M) {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let previous = self
            .queue
            .insert((at, sequence), InFlight { from, to, message });
        assert!(previous.is_none(), "send sequences are unique");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(id: u32) -> NodeId {
        NodeId(id)
    }

    fn network(options: NetworkOptions) -> Network<u32> {
        Network::new(options, Rng::new(1))
    }

    #[test]
    fn reliable_network_delivers_everything_once_after_latency() {
        let mut net = network(NetworkOptions::reliable(10, 10));
        for i in 0..5 {
            net.send(TimeMicros(0), n(1), n(2), i);
        }
        assert!(net.deliver_due(TimeMicros(9)).is_empty());
        assert_eq!(net.next_event_time(), Some(TimeMicros(10)));
        let got: Vec<u32> = net
            .deliver_due(TimeMicros(10))
            .into_iter()
            .map(|d| d.2)
            .collect();
        // Same due time: send order is the tie-break.
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
        assert_eq!(net.next_event_time(), None);
    }

    #[test]
    fn loss_and_duplication_happen_at_their_rates() {
        let mut options = NetworkOptions::reliable(1, 100);
        options.loss_probability = 0.5;
        options.duplicate_probability = 0.5;
        let mut net = network(options);
        for i in 0..1_000 {
            net.send(TimeMicros(0), n(1), n(2), i);
        }
        let stats = net.stats();
        assert!((400..600).contains(&stats.lost), "{stats:?}");
        assert!((200..300).contains(&stats.duplicated), "{stats:?}");
        let delivered = net.deliver_due(TimeMicros(1_000)).len() as u64;
        assert_eq!(delivered, 1_000 - stats.lost + stats.duplicated);
    }

    #[test]
    fn random_latency_reorders() {
        let mut net = network(NetworkOptions::reliable(1, 1_000));
        for i in 0..100 {
            net.send(TimeMicros(0), n(1), n(2), i);
        }
        let got: Vec<u32> = net
            .deliver_due(TimeMicros(1_000))
            .into_iter()
            .map(|d| d.2)
            .collect();
        assert_eq!(got.len(), 100);
        assert!(got.windows(2).any(|w| w[0] > w[1]), "no reordering");
    }

    #[test]
    fn one_way_partition_blocks_one_direction_including_in_flight() {
        let mut net = network(NetworkOptions::reliable(5, 5));
        net.send(TimeMicros(0), n(1), n(2), 1);
        net.block(n(1), n(2));
        net.send(TimeMicros(0), n(1), n(2), 2);
        net.send(TimeMicros(0), n(2), n(1), 3);
        let got = net.deliver_due(TimeMicros(5));
        assert_eq!(got, vec![(n(2), n(1), 3)]);
        assert_eq!(net.stats().partitioned, 2);
        net.heal();
        net.send(TimeMicros(5), n(1), n(2), 4);
        assert_eq!(net.deliver_due(TimeMicros(100)), vec![(n(1), n(2), 4)]);
    }

    #[test]
    fn drop_to_purges_messages_to_a_crashed_node() {
        let mut net = network(NetworkOptions::reliable(5, 5));
        net.send(TimeMicros(0), n(1), n(2), 1);
        net.send(TimeMicros(0), n(1), n(3), 2);
        assert_eq!(net.drop_to(n(2)), 1);
        assert_eq!(net.deliver_due(TimeMicros(5)), vec![(n(1), n(3), 2)]);
    }

    #[test]
    fn heal_removes_loss_and_self_sends_are_never_lost() {
        let mut options = NetworkOptions::reliable(3, 3);
        options.loss_probability = 1.0;
        let mut net = network(options);
        net.send(TimeMicros(0), n(1), n(1), 7);
        net.send(TimeMicros(0), n(1), n(2), 8);
        assert_eq!(net.deliver_due(TimeMicros(3)), vec![(n(1), n(1), 7)]);
        net.heal();
        net.send(TimeMicros(3), n(1), n(2), 9);
        assert_eq!(net.deliver_due(TimeMicros(100)), vec![(n(1), n(2), 9)]);
    }

    #[test]
    fn a_flaky_node_loses_its_share_both_ways_until_the_heal() {
        let mut net = network(NetworkOptions::reliable(1, 1));
        net.set_flaky(n(2), 0.5);
        let mut delivered = [0u32; 3];
        for i in 0..2_000u32 {
            let t = TimeMicros(u64::from(i) * 10);
            net.send(t, n(1), n(2), 0);
            net.send(t, n(2), n(3), 1);
            net.send(t, n(1), n(3), 2);
            for (_, _, m) in net.deliver_due(TimeMicros(t.0 + 5)) {
                delivered[m as usize] += 1;
            }
        }
        assert!((800..1_200).contains(&delivered[0]), "{delivered:?}");
        assert!((800..1_200).contains(&delivered[1]), "{delivered:?}");
        assert_eq!(delivered[2], 2_000, "links of other nodes lose nothing");
        net.heal();
        assert_eq!(net.flaky(), None);
        net.send(TimeMicros(100_000), n(1), n(2), 0);
        assert_eq!(net.deliver_due(TimeMicros(200_000)).len(), 1);
    }

    #[test]
    fn same_seed_same_schedule() {
        let run = || {
            let mut options = NetworkOptions::reliable(1, 500);
            options.loss_probability = 0.3;
            options.duplicate_probability = 0.3;
            options.delay_tail_probability = 0.1;
            options.delay_tail_micros_max = 10_000;
            let mut net: Network<u32> = Network::new(options, Rng::new(77));
            for i in 0..200 {
                net.send(TimeMicros(u64::from(i)), n(i % 3), n(3), i);
            }
            net.deliver_due(TimeMicros(1_000_000))
        };
        assert_eq!(run(), run());
    }
}
