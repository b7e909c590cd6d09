//! What one attempt came to, as the resend rules see it. Both transports
//! convert into it: the gRPC client from a tonic `Status` with its
//! `amulet_api::ErrorKind` (`Client`'s `on_status`), the simulator from
//! the replica's [`ClientReply`] (`From` below).

use crate::Error;
use amulet_api::{error_kind, ErrorKind};
use amulet_smr::ClientReply;
use tonic::{Code, Status};

/// The answer to one request (a command or a session opening), or its
/// absence. `why` strings are for the error a caller sees at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<R> {
    /// The command was executed: its reply.
    Done(R),
    /// The session was opened (or renewed).
    SessionOk,
    /// The map the request was routed by is older than the replica's;
    /// nothing was ordered.
    StaleMap(String),
    /// The node does not replicate the partition; nothing was ordered.
    NotAReplica(String),
    /// The replica cannot judge the request yet (its map is older than
    /// the request's, it is catching up, its state is still on the way);
    /// nothing was ordered.
    Behind(String),
    /// The session is unknown to the replica; nothing was executed.
    SessionExpired(String),
    /// The session already executed a later sequence than the request's:
    /// another client uses the session, or this one lost count.
    StaleSequence(String),
    /// The command took effect, but part of its reply is no longer held.
    ReplyLost(String),
    /// Refused for a passing state of the cluster (another
    /// reconfiguration is taking effect); nothing changed: resend later.
    Retryable(String),
    /// No answer in time, or the connection broke: the request may have
    /// reached the replica and taken effect.
    NoAnswer(String),
    /// A final answer: the request changed nothing and a resend would be
    /// answered the same.
    Refused(Error),
}

impl<R> Outcome<R> {
    /// What a failed gRPC call means: the error kinds a client handles by
    /// itself, then the status codes of a call that may have reached the
    /// node (resent), then final answers. The one place a status becomes
    /// an outcome.
    pub fn from_status(status: &Status) -> Outcome<R> {
        let why = status.message().to_string();
        match error_kind(status) {
            Some(ErrorKind::StaleMap) => Outcome::StaleMap(why),
            Some(ErrorKind::NotAReplica) => Outcome::NotAReplica(why),
            Some(ErrorKind::SessionExpired) => Outcome::SessionExpired(why),
            Some(ErrorKind::Behind) => Outcome::Behind(why),
            Some(ErrorKind::StaleSequence) => Outcome::StaleSequence(why),
            Some(ErrorKind::ReplyLost) => Outcome::ReplyLost(why),
            Some(ErrorKind::Retryable) => Outcome::Retryable(why),
            // Another replica may hold the read version's snapshot.
            Some(ErrorKind::ReadVersionElsewhere) => Outcome::Behind(why),
            Some(ErrorKind::Conflict | ErrorKind::ReadVersionTooOld) => {
                Outcome::Refused(Error::from_status(status))
            }
            None => match status.code() {
                Code::DeadlineExceeded | Code::Unavailable | Code::Cancelled | Code::Unknown => {
                    Outcome::NoAnswer(why)
                }
                _ => Outcome::Refused(Error::from_status(status)),
            },
        }
    }
}

impl<R> From<ClientReply<R>> for Outcome<R> {
    /// A replica's answer. A service reply reporting a failure
    /// (`MapReply::Failed`) is `Done`: it is the command's result (the
    /// gRPC edge turns it into a status, which the client reports as the
    /// matching [`Error`]).
    fn from(reply: ClientReply<R>) -> Outcome<R> {
        match reply {
            ClientReply::Done(reply) => Outcome::Done(reply),
            ClientReply::SessionOk => Outcome::SessionOk,
            ClientReply::StaleMap(map) => Outcome::StaleMap(format!(
                "stale partition map; the current version is {}",
                map.version.0
            )),
            ClientReply::NotAReplica(map) => Outcome::NotAReplica(format!(
                "this node does not replicate that partition (map version {})",
                map.version.0
            )),
            ClientReply::Behind => Outcome::Behind("this replica is behind; resend".into()),
            ClientReply::SessionExpired => {
                Outcome::SessionExpired("the session is unknown (expired or closed)".into())
            }
            ClientReply::StaleSequence => {
                Outcome::StaleSequence("the session already executed a later sequence".into())
            }
            ClientReply::Lost => Outcome::ReplyLost(
                "the command took effect but part of its reply is no longer held".into(),
            ),
            ClientReply::UnknownKeyspace(name) => {
                Outcome::Refused(Error::NotFound(format!("no map named {name:?}")))
            }
            ClientReply::KeyspaceExists(name) => Outcome::Refused(Error::AlreadyExists(format!(
                "a map named {name:?} already exists"
            ))),
            // As the client API sends it, so both paths read it alike.
            ClientReply::Refused(refusal) => {
                Outcome::from_status(&amulet_api::refusal_status(&refusal))
            }
            // The answer to a reconfiguration or a join, which no client
            // operation sends.
            ClientReply::Accepted | ClientReply::Joined(_) => Outcome::Refused(Error::Protocol(
                "a reconfiguration's answer to a client operation".into(),
            )),
        }
    }
}
