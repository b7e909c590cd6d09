//! Helpers the node's in-process tests share.

/// `count` ports on 127.0.0.1 that were free a moment ago (bound with port
/// 0, then released for the nodes to take).
pub fn free_ports(count: usize) -> Vec<u16> {
    let listeners: Vec<_> = (0..count)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}
