//! The comparison harness of `scripts/bench-dotted` (DottedDB §V-E) runs
//! both stores correctly: after a run with all replication lost (so
//! anti-entropy did every repair) and further exchanges, every replica of
//! every key holds the same versions, for DottedDB and for the MerkleDB
//! baseline at both leaf sizes. The figures themselves are the
//! benchmark's, not asserted here.

use amulet_sim::dotted::compare::{converges, Config, Scale, System};

fn small() -> Scale {
    Scale {
        keys: 800,
        rate: 200,
        seconds: 4,
        ..Scale::default()
    }
}

#[test]
fn dotteddb_v_e_both_stores_converge_by_anti_entropy_alone() {
    for system in [
        System::Dotted,
        System::Merkle {
            segments: 2,
            width: 2,
        },
        System::Merkle {
            segments: 1024,
            width: 4,
        },
    ] {
        let config = Config {
            system,
            state_changed: 0.1,
            loss: 1.0,
        };
        let rounds = converges(config, small(), 3).unwrap_or_else(|e| panic!("{system:?}: {e}"));
        println!("{system:?}: converged after {rounds} more rounds");
    }
}
