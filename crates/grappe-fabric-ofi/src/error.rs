//! Errors of a libfabric link. Each names the provider, and the peer (its
//! address as libfabric writes it) and the link's ends where there is
//! one, with libfabric's own text for the failure (`fi_strerror`,
//! `fi_cq_strerror`).

use std::fmt;
use std::time::Duration;

/// The two ends of a link, as the caller numbers them (world ranks in
/// grappe): unique for a pair of endpoints, the same pair seen from both
/// sides in reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ends {
    /// This side's number.
    pub local: u32,
    /// The peer's number.
    pub remote: u32,
}

impl fmt::Display for Ends {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} with {}", self.local, self.remote)
    }
}

/// What went wrong on an endpoint or one of its links.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// No provider answers for a reliable-datagram endpoint as asked.
    #[error("no libfabric provider{} offers reliable datagram endpoints{}: {text}", wanted_text(.provider), node_text(.node))]
    NoProvider {
        /// The provider asked for, if one was.
        provider: Option<String>,
        /// The local address asked for, if one was.
        node: Option<String>,
        /// fi_getinfo's answer.
        text: String,
    },
    /// A libfabric call on the endpoint failed.
    #[error("libfabric provider {provider}: {op} failed: {text} (error {code})")]
    Call {
        /// The provider.
        provider: String,
        /// The call.
        op: &'static str,
        /// Its error code (positive, libfabric's numbering).
        code: i32,
        /// fi_strerror's text.
        text: String,
    },
    /// An operation with the peer completed in error: the peer is gone,
    /// unreachable, or refused.
    #[error("libfabric provider {provider}: {op} peer {peer} (link {ends}) failed: {text} (error {code})")]
    Failed {
        /// The provider.
        provider: String,
        /// The peer's address.
        peer: String,
        /// The link's ends.
        ends: Ends,
        /// What was done: "sending to", "receiving from", "posting a receive for".
        op: &'static str,
        /// The completion's error code.
        code: i32,
        /// fi_strerror's and the provider's texts.
        text: String,
    },
    /// None of the messages for the peer completed (or was taken by the
    /// provider) for too long:
    /// its process or host is gone (a provider may never say so), or it
    /// stopped reading.
    #[error(
        "libfabric provider {provider}: peer {peer} (link {ends}) took none of {waiting} messages for {after:?}: \
         its process or host is gone, or it stopped reading"
    )]
    Silent {
        /// The provider.
        provider: String,
        /// The peer's address.
        peer: String,
        /// The link's ends.
        ends: Ends,
        /// Messages posted and not completed, or refused by the provider for now.
        waiting: usize,
        /// How long none completed.
        after: Duration,
    },
    /// Nothing came from the peer for too long, although a live peer
    /// pings every keepalive period: its process or host is gone, or its
    /// network is (a provider may complete sends into the socket of an
    /// unreachable peer).
    #[error(
        "libfabric provider {provider}: nothing came from peer {peer} (link {ends}) for {after:?}: \
         its process, host or network is gone, or it stopped driving its endpoint"
    )]
    Unheard {
        /// The provider.
        provider: String,
        /// The peer's address.
        peer: String,
        /// The link's ends.
        ends: Ends,
        /// How long nothing came.
        after: Duration,
    },
    /// The peer closed the link after its last record, which has been read.
    #[error("libfabric provider {provider}: peer {peer} closed the link ({ends}) after {records} messages")]
    Closed {
        /// The provider.
        provider: String,
        /// The peer's address.
        peer: String,
        /// The link's ends.
        ends: Ends,
        /// Data messages the peer sent on the link.
        records: u32,
    },
    /// The peer sent a message that breaks the link's protocol.
    #[error("libfabric provider {provider}: peer {peer} (link {ends}) sent a bad message: {detail}")]
    Protocol {
        /// The provider.
        provider: String,
        /// The peer's address.
        peer: String,
        /// The link's ends.
        ends: Ends,
        /// What is wrong with it.
        detail: String,
    },
    /// A record given to send is larger than [`MAX_PAYLOAD`](crate::MAX_PAYLOAD).
    #[error("record of {len} bytes for peer {peer} exceeds the largest payload a link carries, {max} bytes")]
    TooLarge {
        /// The peer it was meant for.
        peer: String,
        /// Its payload bytes.
        len: usize,
        /// [`MAX_PAYLOAD`](crate::MAX_PAYLOAD).
        max: usize,
    },
    /// A link cannot be made as asked.
    #[error("libfabric provider {provider}: cannot make link {ends} to {peer}: {detail}")]
    Setup {
        /// The provider.
        provider: String,
        /// The peer's address (hexadecimal if it is not one).
        peer: String,
        /// The link's ends.
        ends: Ends,
        /// Why.
        detail: String,
    },
    /// An endpoint setting that cannot work.
    #[error("endpoint setting {setting} = {value}: {detail}")]
    Config {
        /// The setting's name.
        setting: &'static str,
        /// Its value.
        value: usize,
        /// What it must be.
        detail: &'static str,
    },
}

impl LinkError {
    /// True if the peer closed the link between two records: the end of
    /// its stream, an error only if more was expected.
    pub fn is_clean_close(&self) -> bool {
        matches!(self, LinkError::Closed { .. })
    }
}

fn wanted_text(provider: &Option<String>) -> String {
    provider.as_ref().map(|p| format!(" {p:?}")).unwrap_or_default()
}

fn node_text(node: &Option<String>) -> String {
    node.as_ref().map(|n| format!(" on {n}")).unwrap_or_default()
}
