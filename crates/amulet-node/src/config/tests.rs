use super::*;

const GOOD: &str = r#"
cluster = 7
node = 1
listen = "127.0.0.1:7001"
data_dir = "/tmp/amulet-test-1"

[peers]
1 = "127.0.0.1:7001"
2 = "127.0.0.1:7002"
3 = "127.0.0.1:7003"

[[streams]]
id = 1
acceptors = [1, 2, 3]
storage = "memory"

[[streams]]
id = 2
acceptors = [1, 2, 3]
storage = "sync"
[streams.limits]
pipeline_instances_max = 32
"#;

#[test]
fn a_local_cluster_of_more_than_three_nodes_spreads_three_replicas_per_partition() {
    let (global, placement) = local_dmap_placement(5, 5);
    assert_eq!(global, vec![1, 2, 3]);
    let mut per_node = [0usize; 5];
    for replicas in &placement {
        let mut distinct = replicas.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 3, "{replicas:?}");
        for &n in replicas {
            per_node[n as usize - 1] += 1;
        }
    }
    assert_eq!(per_node, [3, 3, 3, 3, 3]);
    // Three nodes: every node does everything, as before.
    assert_eq!(
        local_dmap_placement(3, 2),
        (vec![1, 2, 3], vec![vec![1, 2, 3], vec![1, 2, 3]])
    );
    assert_eq!(
        local_dmap_placement(1, 2),
        (vec![1], vec![vec![1], vec![1]])
    );
    // Every generated configuration parses, with its map valid.
    for nodes in 1..=9u32 {
        let peers: Vec<u16> = (0..nodes as u16).map(|i| 7011 + i).collect();
        let clients: Vec<u16> = (0..nodes as u16).map(|i| 7001 + i).collect();
        for node in 1..=nodes {
            let text = local_dmap_cluster_toml(
                1,
                &peers,
                &clients,
                node,
                Path::new("/tmp/x"),
                3,
                "memory",
            );
            let config =
                NodeConfig::parse(&text).unwrap_or_else(|e| panic!("{nodes} nodes: {e}\n{text}"));
            assert!(config.partition_map().unwrap().is_some());
        }
    }
}

fn error_of(text: &str) -> String {
    NodeConfig::parse(text).unwrap_err().to_string()
}

#[test]
fn a_good_config_parses() {
    let config = NodeConfig::parse(GOOD).unwrap();
    assert_eq!(config.me(), NodeId(1));
    assert_eq!(config.peer_addrs().unwrap().len(), 2);
    let mine = config.my_streams();
    assert_eq!(mine.len(), 2);
    assert_eq!(mine[1].storage, StorageMode::SyncDurable);
    assert_eq!(mine[1].limits.pipeline_instances_max, 32);
    assert!(config.frame_bytes_max() > mine[0].limits.value_bytes_max);
}

#[test]
fn the_balancer_section_is_optional_and_its_bound_checked() {
    let config = NodeConfig::parse(GOOD).unwrap();
    assert!(config.balancer.enabled);
    assert_eq!(config.balancer.split_entries, 1_000_000);
    let paused = NodeConfig::parse(&format!(
        "{GOOD}\n[balancer]\nenabled = false\nsplit_entries = 5000\n"
    ))
    .unwrap();
    assert!(!paused.balancer.enabled);
    assert!(config.balancer.moves);
    let still = NodeConfig::parse(&format!("{GOOD}\n[balancer]\nmoves = false\n")).unwrap();
    assert!(!still.balancer.moves);
    assert!(still.balancer.enabled);
    assert_eq!(paused.balancer.split_entries, 5000);
    assert_eq!(paused.balancer.split_bytes, 256 * 1024 * 1024);
    let by_size = NodeConfig::parse(&format!("{GOOD}\n[balancer]\nsplit_bytes = 0\n")).unwrap();
    assert_eq!(by_size.balancer.split_bytes, 0);
    let error = error_of(&format!("{GOOD}\n[balancer]\nsplit_entries = 1\n"));
    assert!(error.contains("split_entries = 1"), "{error}");
    let error = error_of(&format!(
        "{GOOD}\n[balancer]\nsplit_entries = 100\nmerge_entries = 51\n"
    ));
    assert!(error.contains("merge_entries = 51"), "{error}");
    let error = error_of(&format!("{GOOD}\n[balancer]\nload_window_ms = 99\n"));
    assert!(error.contains("load_window_ms = 99"), "{error}");
    let error = error_of(&format!("{GOOD}\n[balancer]\nsplit_at = 5\n"));
    assert!(error.contains("unknown field"), "{error}");
}

#[test]
fn the_eventual_section_sets_when_the_journal_is_checkpointed() {
    let config = NodeConfig::parse(GOOD).unwrap();
    assert_eq!(config.eventual.checkpoint_journal_bytes, 64 << 20);
    let small = NodeConfig::parse(&format!(
        "{GOOD}\n[eventual]\ncheckpoint_journal_bytes = 65536\n"
    ))
    .unwrap();
    assert_eq!(small.eventual.checkpoint_journal_bytes, 65536);
    let error = error_of(&format!(
        "{GOOD}\n[eventual]\ncheckpoint_journal_bytes = 4095\n"
    ));
    assert!(error.contains("checkpoint_journal_bytes = 4095"), "{error}");
    let error = error_of(&format!("{GOOD}\n[eventual]\njournal = 5\n"));
    assert!(error.contains("unknown field"), "{error}");
}

#[test]
fn the_logs_section_sets_the_segment_size_or_turns_segments_off() {
    let config = NodeConfig::parse(GOOD).unwrap();
    assert_eq!(config.logs.segment_bytes, 16 << 20);
    for ok in [0, 256, 1 << 30] {
        let parsed = NodeConfig::parse(&format!("{GOOD}\n[logs]\nsegment_bytes = {ok}\n"));
        assert_eq!(parsed.unwrap().logs.segment_bytes, ok);
    }
    let error = error_of(&format!("{GOOD}\n[logs]\nsegment_bytes = 255\n"));
    assert!(error.contains("segment_bytes = 255"), "{error}");
    let error = error_of(&format!("{GOOD}\n[logs]\nsegments = 5\n"));
    assert!(error.contains("unknown field"), "{error}");
}

#[test]
fn the_smr_section_gives_a_checked_partition_map() {
    let smr = "\n[smr]\nglobal_stream = 1\n\n[[smr.partitions]]\nid = 1\nstream = 2\nreplicas = [1, 2, 3]\n";
    let map = NodeConfig::parse(&format!("{GOOD}{smr}"))
        .unwrap()
        .partition_map()
        .unwrap()
        .unwrap();
    assert_eq!(
        map.partitions_of(NodeId(2)),
        vec![amulet_types::PartitionId(1)]
    );
    assert!(NodeConfig::parse(GOOD)
        .unwrap()
        .partition_map()
        .unwrap()
        .is_none());
    let bad = [
        (smr.replace("stream = 2", "stream = 9"), "no stream 9"),
        (
            smr.replace("replicas = [1, 2, 3]", "replicas = [1, 2, 4]"),
            "not a member",
        ),
        (smr.replace("stream = 2", "stream = 1"), "share a stream"),
        (
            format!("{smr}\n[[smr.partitions]]\nid = 1\nstream = 2\nreplicas = [1]\n"),
            "listed twice",
        ),
    ];
    for (section, expected) in bad {
        let error = error_of(&format!("{GOOD}{section}"));
        assert!(error.contains(expected), "{expected}: {error}");
    }
}

#[test]
fn unknown_members_are_refused() {
    let text = GOOD.replace(
        "acceptors = [1, 2, 3]\nstorage = \"memory\"",
        "acceptors = [1, 2, 9]\nstorage = \"memory\"",
    );
    assert!(error_of(&text).contains("node 9 is not in [peers]"));
}

#[test]
fn bad_storage_and_unknown_fields_are_refused() {
    let text = GOOD.replace("\"sync\"", "\"disk\"");
    assert!(error_of(&text).contains("parse"));
    let text = GOOD.replace("pipeline_instances_max", "pipeline_max");
    assert!(error_of(&text).contains("parse"));
}

#[test]
fn duplicate_streams_and_bad_limits_are_refused() {
    let text = GOOD.replace("id = 2", "id = 1");
    assert!(error_of(&text).contains("listed twice"));
    let text = GOOD.replace("pipeline_instances_max = 32", "pipeline_instances_max = 0");
    assert!(error_of(&text).contains("pipeline_instances_max"));
}

#[test]
fn a_node_outside_every_stream_is_refused() {
    let text = GOOD
        .replace("node = 1", "node = 4")
        .replace("[peers]", "[peers]\n4 = \"127.0.0.1:7004\"");
    assert!(error_of(&text).contains("member of no stream"));
    let joiner = format!("{text}\n[membership]\njoiner = true\n");
    assert!(
        error_of(&joiner).contains("needs membership enabled and an [smr] section"),
        "a joiner without [smr] has nothing to join"
    );
    let smr = "\n[smr]\nglobal_stream = 1\n\n[[smr.partitions]]\nid = 1\nstream = 2\nreplicas = [1, 2, 3]\n";
    let joiner = format!("{text}{smr}\n[membership]\njoiner = true\n");
    let config = NodeConfig::parse(&joiner).expect("a joiner may be in no stream");
    assert!(config.my_streams().is_empty());
    let off = joiner.replace("joiner = true", "joiner = true\nenabled = false");
    assert!(error_of(&off).contains("needs membership enabled"));
}

#[test]
fn local_cluster_configs_are_valid() {
    let text = local_cluster_toml(9, &[7001, 7002, 7003], 2, Path::new("/tmp/x"), 2, "async");
    let config = NodeConfig::parse(&text).unwrap();
    assert_eq!(config.listen.port(), 7002);
    assert_eq!(config.my_streams().len(), 2);
    assert_eq!(config.my_streams()[0].storage, StorageMode::AsyncDurable);
}

#[test]
fn local_dmap_cluster_configurations_are_valid() {
    let text = local_dmap_cluster_toml(
        9,
        &[7011, 7012, 7013],
        &[7001, 7002, 7003],
        3,
        Path::new("/tmp/x"),
        3,
        "sync",
    );
    let config = NodeConfig::parse(&text).unwrap();
    let map = config.partition_map().unwrap().unwrap();
    assert_eq!(map.partitions.len(), 3);
    assert_eq!(map.partitions_of(NodeId(3)).len(), 3);
    assert_eq!(
        config.client_listen().unwrap(),
        Some("127.0.0.1:7003".parse().unwrap())
    );
    assert_eq!(config.client_addresses().unwrap().len(), 3);
}

#[test]
fn bad_client_addresses_are_refused() {
    let text = local_dmap_cluster_toml(
        9,
        &[7011, 7012, 7013],
        &[7001, 7002, 7003],
        1,
        Path::new("/tmp/x"),
        1,
        "sync",
    );
    assert!(error_of(&text.replace("127.0.0.1:7002", "nowhere")).contains("not ip:port"));
    assert!(
        error_of(&text.replace("\n3 = \"127.0.0.1:7003\"", "\n9 = \"127.0.0.1:7003\""))
            .contains("not in [peers]")
    );
}

#[test]
fn bad_peer_addresses_are_refused() {
    let text = GOOD.replace("127.0.0.1:7002", "localhost");
    assert!(error_of(&text).contains("not ip:port"));
}
#[test]
fn sconekv_2_membership_settings_default_and_out_of_bounds_timeouts_are_refused() {
    let config = NodeConfig::parse(GOOD).unwrap();
    let settings = config.membership_settings();
    assert!(settings.enabled && settings.self_healing);
    assert_eq!(settings.monitor().failure_after_micros, 4_500_000);
    assert_eq!(
        config.first_view().unwrap(),
        None,
        "no [smr]: membership is the service replicas' state"
    );
    let section = |body: &str| format!("{GOOD}\n[membership]\n{body}\n");
    let tuned = NodeConfig::parse(&section("failure_timeout_ms = 8000\nself_healing = false"))
        .unwrap()
        .membership_settings();
    assert_eq!(tuned.monitor().failure_after_micros, 8_000_000);
    assert!(!tuned.self_healing);
    for bad in ["failure_timeout_ms = 100", "failure_timeout_ms = 700000"] {
        assert!(
            error_of(&section(bad)).contains("failure_timeout_ms"),
            "{bad}"
        );
    }
    assert!(error_of(&section("monitor = true")).contains("unknown field"));
}
