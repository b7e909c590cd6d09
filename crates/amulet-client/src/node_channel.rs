//! A connection to one node: the gRPC endpoint (HTTP/2 windows, timeouts,
//! TCP_NODELAY) over plain TCP or TLS, and the first call a client makes
//! on it, fetching the partition map. With TLS the cluster CA is the only
//! root, the user's certificate is presented, and the node's certificate
//! must name `amulet-node` (every node certificate from the cluster CA
//! does; a user's does not, so a client cannot be answered by another
//! client).

use crate::client::Routing;
use crate::{ClientConfig, Error};
use amulet_api::map_from_pb;
use amulet_api::pb::{self, amulet_client::AmuletClient};
use amulet_tls::{TlsFiles, NODE_SERVER_NAME};
use std::sync::Arc;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

/// Largest reply accepted (a range read of many large values).
const REPLY_BYTES_MAX: usize = 256 * 1024 * 1024;

/// Reads `files` once, for every connection the client opens.
pub(crate) fn client_tls(files: &TlsFiles) -> Result<ClientTlsConfig, Error> {
    let read = |path: &std::path::Path| {
        std::fs::read(path).map_err(|e| {
            Error::InvalidArgument(format!("TLS: cannot read {}: {e}", path.display()))
        })
    };
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read(&files.ca)?))
        .domain_name(NODE_SERVER_NAME);
    if !files.has_certificate() {
        return Ok(tls);
    }
    let (cert, key) = (read(&files.cert)?, read(&files.key)?);
    Ok(tls.identity(Identity::from_pem(cert, key)))
}

/// A node's gRPC client: every request carries the bearer token, if any.
pub(crate) type NodeClient = AmuletClient<InterceptedService<Channel, Bearer>>;

/// Adds `authorization: Bearer TOKEN` to every request (unary and
/// streaming) when the client has a token.
#[derive(Clone)]
pub(crate) struct Bearer(Option<MetadataValue<Ascii>>);

impl Bearer {
    pub(crate) fn new(config: &ClientConfig) -> Result<Bearer, Error> {
        config
            .token
            .as_ref()
            .map(|token| {
                MetadataValue::try_from(format!("Bearer {}", token.0.trim())).map_err(|_| {
                    Error::InvalidArgument(
                        "the bearer token has characters metadata cannot carry".into(),
                    )
                })
            })
            .transpose()
            .map(Bearer)
    }
}

impl tonic::service::Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// HTTP/2 flow-control windows of a connection to a node: room for a whole
/// largest reply (a 4 MiB log read or tail message) in flight.
const STREAM_WINDOW_BYTES: u32 = 8 << 20;
const CONNECTION_WINDOW_BYTES: u32 = 16 << 20;

pub(crate) fn new_client(
    config: &ClientConfig,
    tls: Option<&ClientTlsConfig>,
    address: &str,
) -> Result<NodeClient, Error> {
    if config.token.is_some() && tls.is_none() {
        return Err(Error::InvalidArgument(
            "a bearer token is sent over TLS only: give the cluster's CA (ClientConfig::with_token)".into(),
        ));
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    let mut endpoint = Endpoint::from_shared(format!("{scheme}://{address}"))
        .map_err(|e| Error::InvalidArgument(format!("bad address {address:?}: {e}")))?;
    if let Some(tls) = tls {
        endpoint = endpoint
            .tls_config(tls.clone())
            .map_err(|e| Error::InvalidArgument(format!("TLS files: {e}")))?;
    }
    let endpoint = endpoint
        .connect_timeout(config.attempt_timeout)
        .tcp_nodelay(true)
        // HTTP/2's default window is 64 KiB: a large reply or a tail's
        // 4 MiB messages would stop every 64 KiB for a window update.
        .initial_stream_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES);
    Ok(
        AmuletClient::with_interceptor(endpoint.connect_lazy(), Bearer::new(config)?)
            .max_decoding_message_size(REPLY_BYTES_MAX),
    )
}

pub(crate) async fn fetch_map(
    config: &ClientConfig,
    tls: Option<&ClientTlsConfig>,
    address: &str,
) -> Result<Routing, Error> {
    let mut client = new_client(config, tls, address)?;
    let reply = tokio::time::timeout(
        config.attempt_timeout,
        client.get_partition_map(pb::GetPartitionMapRequest {}),
    )
    .await
    .map_err(|_| Error::Unavailable(format!("{address} did not answer in time")))?
    .map_err(|s| Error::from_status(&s))?;
    let (map, addresses) =
        map_from_pb(reply.into_inner()).map_err(|s| Error::Protocol(s.message().to_string()))?;
    Ok(Routing {
        map: Arc::new(map),
        addresses,
    })
}
