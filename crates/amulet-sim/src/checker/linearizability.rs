//! Linearizability (Herlihy & Wing) of a recorded history against a
//! sequential model, by the Wing–Gong search with Lowe's memoization (the
//! algorithm of Knossos and Porcupine): repeatedly pick, among the calls
//! that could take effect next, one whose model result matches what the
//! client saw, and backtrack on a dead end. A configuration (set of calls
//! taken, model state) is explored once.
//!
//! A call that never returned (a client gave up, or the run ended) may
//! take effect at any point after its invocation, or never.

use std::collections::HashSet;

/// A sequential specification.
pub trait Model: Clone {
    /// An operation.
    type Op;
    /// What an operation returns.
    type Result: PartialEq;
    /// Applies `op`: the next state and the result.
    fn step(&self, op: &Self::Op) -> (Self, Self::Result);
    /// A canonical encoding of the state, for memoization.
    fn key(&self) -> Vec<u8>;
}

/// One call in a history.
#[derive(Clone, Debug)]
pub struct Call<O, R> {
    /// When the client invoked it.
    pub invoke: u64,
    /// When the client got the result; `None` if it never did.
    pub complete: Option<u64>,
    /// The operation.
    pub op: O,
    /// The result seen (`None` with `complete == None`).
    pub result: Option<R>,
}

/// The checker's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Some order explains every result.
    Linearizable,
    /// None does. `stuck_at` is the index (in invocation order) of a
    /// completed call that no explored order could place.
    NotLinearizable {
        /// Completed calls the deepest explored order placed.
        deepest: usize,
        /// A call that could not be placed after that order.
        stuck_at: usize,
    },
    /// The search exceeded its step budget.
    Unknown,
}

/// Checks `calls` from `initial`, exploring at most `step_budget`
/// configurations.
pub fn check<M: Model>(initial: M, calls: &[Call<M::Op, M::Result>], step_budget: u64) -> Verdict {
    let mut order: Vec<usize> = (0..calls.len()).collect();
    order.sort_by_key(|&i| (calls[i].invoke, i));
    let calls: Vec<&Call<M::Op, M::Result>> = order.iter().map(|&i| &calls[i]).collect();
    let completed = calls.iter().filter(|c| c.complete.is_some()).count();
    let mut search = Search {
        calls: &calls,
        seen: HashSet::new(),
        steps: 0,
        step_budget,
        deepest: 0,
        stuck_at: 0,
    };
    let mut taken = vec![false; calls.len()];
    match search.explore(&initial, &mut taken, 0, completed) {
        Some(true) => Verdict::Linearizable,
        Some(false) => Verdict::NotLinearizable {
            deepest: search.deepest,
            stuck_at: search.stuck_at,
        },
        None => Verdict::Unknown,
    }
}

struct Search<'a, O, R> {
    calls: &'a [&'a Call<O, R>],
    seen: HashSet<(Vec<u64>, Vec<u8>)>,
    steps: u64,
    step_budget: u64,
    deepest: usize,
    stuck_at: usize,
}

impl<O, R: PartialEq> Search<'_, O, R> {
    /// Whether the calls not yet `taken` can be linearized from `state`;
    /// `None` when the budget ran out.
    fn explore<M: Model<Op = O, Result = R>>(
        &mut self,
        state: &M,
        taken: &mut Vec<bool>,
        done: usize,
        completed: usize,
    ) -> Option<bool> {
        if done == completed {
            return Some(true);
        }
        self.steps += 1;
        if self.steps > self.step_budget {
            return None;
        }
        if !self.seen.insert((bitset(taken), state.key())) {
            return Some(false);
        }
        // A call may go next only if it was invoked before every untaken
        // completed call returned (real-time order).
        let horizon = self
            .calls
            .iter()
            .zip(taken.iter())
            .filter(|(_, t)| !**t)
            .filter_map(|(c, _)| c.complete)
            .min()
            .expect("an untaken completed call remains");
        let mut first_blocked = None;
        for i in 0..self.calls.len() {
            if taken[i] {
                continue;
            }
            let call = self.calls[i];
            if call.invoke > horizon {
                break; // sorted by invocation
            }
            let (next, result) = state.step(&call.op);
            let matches = match &call.result {
                Some(seen) => *seen == result,
                None => true,
            };
            if !matches {
                if call.complete.is_some() && first_blocked.is_none() {
                    first_blocked = Some(i);
                }
                continue;
            }
            taken[i] = true;
            let counted = usize::from(call.complete.is_some());
            let found = self.explore(&next, taken, done + counted, completed);
            taken[i] = false;
            match found {
                Some(false) => {}
                other => return other,
            }
        }
        if done >= self.deepest {
            self.deepest = done;
            self.stuck_at = first_blocked.unwrap_or(0);
        }
        Some(false)
    }
}

fn bitset(taken: &[bool]) -> Vec<u64> {
    let mut bits = vec![0u64; taken.len().div_ceil(64)];
    for (i, t) in taken.iter().enumerate() {
        if *t {
            bits[i / 64] |= 1 << (i % 64);
        }
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A register: `Some(v)` writes, `None` reads.
    #[derive(Clone)]
    struct Register(u8);

    impl Model for Register {
        type Op = Option<u8>;
        type Result = u8;
        fn step(&self, op: &Option<u8>) -> (Register, u8) {
            match op {
                Some(v) => (Register(*v), *v),
                None => (self.clone(), self.0),
            }
        }
        fn key(&self) -> Vec<u8> {
            vec![self.0]
        }
    }

    fn call(invoke: u64, complete: u64, op: Option<u8>, result: u8) -> Call<Option<u8>, u8> {
        Call {
            invoke,
            complete: Some(complete),
            op,
            result: Some(result),
        }
    }

    #[test]
    fn concurrent_calls_may_take_effect_in_either_order() {
        let calls = [
            call(0, 10, Some(1), 1),
            call(1, 11, None, 0),
            call(2, 12, None, 1),
        ];
        assert_eq!(check(Register(0), &calls, 1000), Verdict::Linearizable);
    }

    #[test]
    fn a_read_after_a_completed_write_must_see_it() {
        let calls = [call(0, 5, Some(1), 1), call(6, 8, None, 0)];
        assert!(matches!(
            check(Register(0), &calls, 1000),
            Verdict::NotLinearizable { .. }
        ));
    }

    #[test]
    fn a_call_that_never_returned_may_or_may_not_take_effect() {
        let pending = Call {
            invoke: 0,
            complete: None,
            op: Some(7),
            result: None,
        };
        let saw_it = [pending.clone(), call(5, 6, None, 7)];
        assert_eq!(check(Register(0), &saw_it, 1000), Verdict::Linearizable);
        let did_not = [pending.clone(), call(5, 6, None, 0)];
        assert_eq!(check(Register(0), &did_not, 1000), Verdict::Linearizable);
        // But not before it was invoked.
        let early = [
            call(0, 1, None, 7),
            Call {
                invoke: 2,
                ..pending
            },
        ];
        assert!(matches!(
            check(Register(0), &early, 1000),
            Verdict::NotLinearizable { .. }
        ));
    }

    #[test]
    fn stale_reads_across_two_readers_are_caught() {
        // w(1) concurrent with two reads; the first read sees 1, a later
        // read (after the first completed) sees 0 again.
        let calls = [
            call(0, 100, Some(1), 1),
            call(1, 3, None, 1),
            call(4, 6, None, 0),
        ];
        assert!(matches!(
            check(Register(0), &calls, 1000),
            Verdict::NotLinearizable { .. }
        ));
    }
}
