//! Properties of the node clock's algebra (DottedDB §IV-B) against a model
//! of plain sets of counters: join is the union (so commutative,
//! associative, idempotent), missing dots are the set difference, and an
//! entry always holds exactly the counters added, however they arrive.

use amulet_dotted::ClockEntry;
use proptest::prelude::*;
use std::collections::BTreeSet;

fn entry_of(counters: &BTreeSet<u64>) -> ClockEntry {
    let mut e = ClockEntry::default();
    for &c in counters {
        assert!(e.add(c));
    }
    e
}

fn counters() -> impl Strategy<Value = BTreeSet<u64>> {
    // Dense near the start (bases form) and sparse above (gaps), over
    // several bitmap words.
    prop_oneof![
        proptest::collection::btree_set(1u64..40, 0..40),
        proptest::collection::btree_set(1u64..400, 0..120),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn dotteddb_iv_b_an_entry_holds_exactly_the_counters_added(set in counters()) {
        let e = entry_of(&set);
        prop_assert_eq!(e.counters(), set.iter().copied().collect::<Vec<_>>());
        let base = (1..).take_while(|c| set.contains(c)).count() as u64;
        prop_assert_eq!(e.base(), base);
        prop_assert_eq!(e.max(), set.iter().max().copied().unwrap_or(0));
    }

    #[test]
    fn dotteddb_iv_b_join_is_the_union(a in counters(), b in counters(), c in counters()) {
        let (ea, eb, ec) = (entry_of(&a), entry_of(&b), entry_of(&c));
        let union: BTreeSet<u64> = a.union(&b).copied().collect();
        prop_assert_eq!(ea.join(&eb), entry_of(&union));
        prop_assert_eq!(ea.join(&eb), eb.join(&ea));
        prop_assert_eq!(ea.join(&eb).join(&ec), ea.join(&eb.join(&ec)));
        prop_assert_eq!(ea.join(&ea), ea.clone());
    }

    #[test]
    fn dotteddb_iv_g_missing_dots_are_the_set_difference(a in counters(), b in counters()) {
        let (ea, eb) = (entry_of(&a), entry_of(&b));
        let difference: Vec<u64> = a.difference(&b).copied().collect();
        prop_assert_eq!(ea.missing_from(&eb).collect::<Vec<_>>(), difference);
    }

    #[test]
    fn an_entry_cut_at_a_counter_is_the_set_below_it(a in counters(), cut in 0u64..420) {
        let below: BTreeSet<u64> = a.iter().copied().filter(|&c| c <= cut).collect();
        prop_assert_eq!(entry_of(&a).up_to(cut), entry_of(&below));
    }
}
