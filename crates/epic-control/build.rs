//! Generates the gRPC contract's Rust code from `proto/` with the protoc
//! binary of the `protoc-bin-vendored` crate (no system install).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc);
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_with_config(config, &["proto/epic/manager/v1/manager.proto"], &["proto"])?;
    Ok(())
}
