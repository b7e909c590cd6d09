//! The gRPC client API (`proto/amulet/v1/amulet.proto`): the generated
//! messages and tonic service in [`pb`], and the conversions both ends
//! use, so the node and every Rust client read the wire the same way.
//!
//! Decoding is total: a message from the wire becomes a typed command or a
//! [`tonic::Status`] that says what is wrong with it, never a panic.
#![deny(missing_docs)]

mod access_codec;
mod batch_codec;
mod command_codec;
mod map_codec;
mod reconfigure_codec;
mod refusal_status;
mod reply_codec;

/// Generated from `proto/amulet/v1/amulet.proto`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("amulet.v1");
}

pub use access_codec::{
    access_change_from_pb, access_change_to_pb, access_to_pb, permission_from_pb, permission_to_pb,
};
pub use batch_codec::{outcome_from_result, outcome_to_result, BATCH_REQUESTS_MAX};
pub use command_codec::{command_from_op, command_to_op, layout_from_pb, layout_to_pb};
pub use map_codec::{map_from_pb, map_to_pb};
pub use reconfigure_codec::{reconfiguration_from_pb, reconfiguration_to_pb, storage_from_name};
pub use refusal_status::{refusal_reason, refusal_status};
pub use reply_codec::{
    client_reply_to_response, error_kind, map_error_to_status, reply_from_response, ErrorKind,
    CONFLICT_KEY_KEY, CONFLICT_MAP_KEY,
};

/// Metadata key naming an error a client library handles by itself.
pub const ERROR_KEY: &str = "amulet-error";

/// Metadata key naming, in a stable kebab-case word, why the cluster
/// refused a request (`amulet_smr::Refusal::reason`).
pub const REASON_KEY: &str = "amulet-reason";
