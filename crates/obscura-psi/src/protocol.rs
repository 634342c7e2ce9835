//! The protocols and the two roles of a PSI session.

/// A PSI protocol. Both parties must run the same one; the handshake checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// ECDH-PSI over ristretto255 (see [`crate::ecdh`]).
    Ecdh,
    /// KKRT-PSI: OT extension and a batched OPRF (see [`crate::kkrt`]).
    Kkrt,
    /// RR22 VOLE-PSI: silent VOLE and an OKVS, semi-honest (see [`crate::rr22`]).
    Rr22,
    /// RR22 VOLE-PSI secure against a malicious peer (see [`crate::rr22`]); the client alone learns
    /// the intersection.
    Rr22Malicious,
}

impl Protocol {
    /// The protocol's name as users type it (`ecdh`, `kkrt`, `rr22`, `rr22-malicious`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Ecdh => "ecdh",
            Self::Kkrt => "kkrt",
            Self::Rr22 => "rr22",
            Self::Rr22Malicious => "rr22-malicious",
        }
    }

    /// Whether the server can learn the intersection too ([`crate::Options::both_learn`]). Not in
    /// [`Protocol::Rr22Malicious`]: a server cannot check the matches a malicious client would
    /// report (run a second session with the roles swapped instead).
    pub fn offers_both_learn(self) -> bool {
        self != Self::Rr22Malicious
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which side of the protocol a party plays. The client learns the intersection; the server
/// learns it only with [`crate::Options::both_learn`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The party that learns the intersection.
    Client,
    /// The party that helps; it learns only the client's set size unless both learn.
    Server,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Client => "client",
            Self::Server => "server",
        })
    }
}
