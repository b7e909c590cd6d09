//! `amulet-loadgen`: YCSB-style closed-loop benchmark of key-value backends
//! (see `amulet_loadgen::cli`).

fn main() -> anyhow::Result<()> {
    amulet_loadgen::cli::main_from(std::env::args_os())
}
