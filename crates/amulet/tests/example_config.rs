//! The example configuration shipped with the binary stays valid.

#[test]
fn the_example_config_parses() {
    let text = include_str!("../node.example.toml");
    let config = amulet_node::NodeConfig::parse(text).unwrap();
    assert_eq!(config.my_streams().len(), 2);
}
