//! Compiles `proto/` with protox (a protobuf compiler in Rust, so no
//! `protoc` has to be installed) and generates the messages and the tonic
//! service from the descriptors.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read when the script runs, not when it was compiled: a build script
    // compiled for another checkout sharing the target directory would
    // otherwise compile that checkout's proto files.
    let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let file = root.join("amulet/v1/amulet.proto");
    println!("cargo:rerun-if-changed={}", file.display());
    let descriptors = protox::compile([&file], [&root])?;
    tonic_prost_build::configure()
        .bytes(".")
        .compile_fds(descriptors)?;
    Ok(())
}
