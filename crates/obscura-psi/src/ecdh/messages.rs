//! ECDH-PSI as three messages that the caller carries (an HTTP API, a queue, files), in the
//! shape openmined-psi made familiar: the server publishes one **setup message** that serves
//! any number of clients, each client sends a **request** and reads the **response**.
//!
//! # Protocol
//!
//! The server holds one secret non-zero scalar `b` for its lifetime, the client one scalar `a`
//! (both from the OS CSPRNG); `H` is the hash to ristretto255 of the session protocol.
//!
//! 1. **Setup** (server, once): the tags of `H(y)^b` for the server's distinct items, sorted
//!    (so their order says nothing about the server's input order).
//! 2. **Request** (client): `H(x)^a` for the client's distinct items.
//! 3. **Response** (server): `(H(x)^a)^b` for each requested point, in the request's order when
//!    the server reveals the intersection, shuffled (OS-CSPRNG permutation) when it reveals only
//!    its size.
//! 4. The client raises each response point to `a^-1`, which gives `H(x)^b`, and looks its tag
//!    up among the setup's tags.
//!
//! # Security
//!
//! Semi-honest, under the same assumptions as the session protocol (see [the module](super)):
//! DDH in ristretto255 with `H` as a random oracle. The client learns the server's set size and
//! the intersection (or with a shuffled response only its size); the server learns the size of
//! each request. The server's key serves many clients, so a client that colludes with nobody
//! learns nothing more from several requests than from one; reusing the client's key across
//! requests is equally safe, but each request's points are fresh only when its items are.
//!
//! **False positives.** A setup is made for at most `client_items` distinct client items at a
//! false-positive rate `fpr` for the whole intersection: tags have
//! `⌈-log2 fpr⌉ + ⌈log2 client_items⌉ + ⌈log2 server_items⌉` bits (union bound over pairs, as in
//! [`super::tag_bytes`]), at most 32 bytes. A request with more distinct items than the setup
//! was made for is refused when its response is read.
//!
//! # Format
//!
//! Each message starts with the magic `OBEM`, the format version (1) and its kind (1 setup,
//! 2 request, 3 response); integers are little-endian.
//!
//! - setup: tag bytes (u8), client items (u64), server items (u64), the sorted tags;
//! - request: items (u64), one 32-byte encoding per item;
//! - response: order (u8: 0 the request's, 1 shuffled), items (u64), one encoding per item.

use curve25519_dalek::scalar::Scalar;
use obscura_math::sample::OsSampler;
use zeroize::Zeroize;

use crate::exponent::{random_nonzero_scalar, Exponent, Raiser, POINT_BYTES};
use crate::hash_to_group::HashToGroup;
use crate::shuffle::random_permutation;
use crate::unique::{rows_matching, UniqueItems};
use crate::PsiError;

/// The magic that starts every message.
const MAGIC: &[u8; 4] = b"OBEM";

/// The format version of the messages.
const VERSION: u8 = 1;

/// The false-positive rate a setup has when none is asked for: 2^-40.
pub const DEFAULT_FPR: f64 = 1.0 / (1u64 << 40) as f64;

pub use crate::error::MessageError;

/// The kinds of message.
#[derive(Clone, Copy)]
enum MessageKind {
    Setup = 1,
    Request = 2,
    Response = 3,
}

impl MessageKind {
    fn name(self) -> &'static str {
        match self {
            Self::Setup => "setup message",
            Self::Request => "request",
            Self::Response => "response",
        }
    }
}

/// A message being read: its fields after the header, each length checked before use.
struct Reader<'a> {
    bytes: &'a [u8],
    kind: MessageKind,
}

impl<'a> Reader<'a> {
    /// Checks the header of `bytes` as a message of `kind`.
    fn open(bytes: &'a [u8], kind: MessageKind) -> Result<Self, MessageError> {
        let mut reader = Self { bytes, kind };
        let header = reader.take(6)?;
        if &header[..4] != MAGIC {
            return Err(reader.malformed("it does not start with the magic OBEM".into()));
        }
        if header[4] != VERSION {
            return Err(reader.malformed(format!(
                "format version {}, this library reads version {VERSION}",
                header[4]
            )));
        }
        if header[5] != kind as u8 {
            return Err(reader.malformed(format!("it is a message of kind {}", header[5])));
        }
        Ok(reader)
    }

    fn malformed(&self, reason: String) -> MessageError {
        MessageError::Malformed {
            expected: self.kind.name(),
            reason,
        }
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], MessageError> {
        if self.bytes.len() < len {
            return Err(self.malformed("it is cut short".into()));
        }
        let (head, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, MessageError> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64, MessageError> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
    }

    /// The rest of the message, which must be `count` elements of `width` bytes exactly.
    fn elements(self, count: u64, width: usize) -> Result<&'a [u8], MessageError> {
        let expected = usize::try_from(count)
            .ok()
            .and_then(|count| count.checked_mul(width));
        if expected != Some(self.bytes.len()) {
            return Err(self.malformed(format!(
                "it announces {count} elements of {width} bytes but carries {} bytes",
                self.bytes.len()
            )));
        }
        Ok(self.bytes)
    }
}

/// The header of a message of `kind` followed by `body`.
fn message(kind: MessageKind, body_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + body_len);
    out.extend_from_slice(MAGIC);
    out.push(VERSION);
    out.push(kind as u8);
    out
}

/// The points of a request or response as 32-byte encodings.
fn encodings(points: &[u8]) -> &[[u8; POINT_BYTES]] {
    points.as_chunks::<POINT_BYTES>().0
}

/// Tag bytes for a setup of `server_items` made for `client_items` at false-positive rate `fpr`.
fn tag_bytes_for_fpr(
    client_items: u64,
    server_items: u64,
    fpr: f64,
) -> Result<usize, MessageError> {
    if !(fpr > 0.0 && fpr < 1.0) {
        return Err(MessageError::InvalidFpr(fpr.to_string()));
    }
    let security = (-fpr.log2()).ceil().max(1.0) as u32;
    Ok(super::tag_bytes_with(client_items, server_items, security))
}

/// The server of the message API: one secret key for all the setups and responses it makes.
pub struct MessageServer {
    exponent: Exponent,
    reveal_intersection: bool,
}

impl MessageServer {
    /// A server with a fresh key. With `reveal_intersection` its responses are in the request's
    /// order, so clients learn the intersection; without, they are shuffled and clients learn
    /// only its size.
    pub fn new(reveal_intersection: bool) -> Result<Self, PsiError> {
        Ok(Self {
            exponent: Exponent::random(&mut OsSampler::new())?,
            reveal_intersection,
        })
    }

    /// Whether clients learn the intersection (else only its size).
    pub fn reveals_intersection(&self) -> bool {
        self.reveal_intersection
    }

    /// The setup message for the server's `items` (duplicates count once), for requests of at
    /// most `client_items` distinct items and a false-positive rate `fpr` for the whole
    /// intersection (e.g. [`DEFAULT_FPR`]). Runs on the current rayon pool.
    pub fn create_setup_message<I: AsRef<[u8]> + Sync>(
        &self,
        items: &[I],
        client_items: u64,
        fpr: f64,
    ) -> Result<Vec<u8>, PsiError> {
        let unique = UniqueItems::new(items);
        let server_items = unique.len() as u64;
        let width = tag_bytes_for_fpr(client_items, server_items, fpr)?;
        let mut tags = vec![0u8; unique.len() * width];
        self.exponent
            .raise_items_into(&HashToGroup::psi(), unique.values(), width, &mut tags);
        let mut sorted: Vec<&[u8]> = tags.chunks_exact(width).collect();
        sorted.sort_unstable();
        let mut out = message(MessageKind::Setup, 17 + tags.len());
        out.push(width as u8);
        out.extend_from_slice(&client_items.to_le_bytes());
        out.extend_from_slice(&server_items.to_le_bytes());
        sorted.iter().for_each(|tag| out.extend_from_slice(tag));
        Ok(out)
    }

    /// The response to a client's `request`: each point raised to the server's key, in the
    /// request's order or shuffled (see [`MessageServer::new`]). Fails on a malformed request,
    /// an invalid point or the identity.
    pub fn process_request(&self, request: &[u8]) -> Result<Vec<u8>, PsiError> {
        let mut reader = Reader::open(request, MessageKind::Request)?;
        let count = reader.u64()?;
        let points = encodings(reader.elements(count, POINT_BYTES)?);
        let mut raised = vec![0u8; points.len() * POINT_BYTES];
        self.exponent
            .raise_points_into(points, POINT_BYTES, &mut raised)?;
        let mut out = message(MessageKind::Response, 9 + raised.len());
        out.push(u8::from(!self.reveal_intersection));
        out.extend_from_slice(&count.to_le_bytes());
        if self.reveal_intersection {
            out.extend_from_slice(&raised);
        } else {
            let order = random_permutation(points.len(), &mut OsSampler::new())?;
            let raised = encodings(&raised);
            order
                .iter()
                .for_each(|&i| out.extend_from_slice(&raised[i]));
        }
        Ok(out)
    }
}

/// What the client keeps of its last request: which distinct item each input row holds.
struct Pending {
    value_of_row: Vec<usize>,
    distinct: u64,
}

/// The client of the message API: one secret key (and its inverse), and the last request made.
pub struct MessageClient {
    exponent: Exponent,
    inverse: Exponent,
    pending: Option<Pending>,
}

impl MessageClient {
    /// A client with a fresh key.
    pub fn new() -> Result<Self, PsiError> {
        let mut a = random_nonzero_scalar(&mut OsSampler::new())?;
        let mut inverse: Scalar = a.invert();
        let raiser = Raiser::selected();
        let client = Self {
            exponent: Exponent::from_scalar(a, raiser).expect("the scalar is not zero"),
            inverse: Exponent::from_scalar(inverse, raiser).expect("an inverse is not zero"),
            pending: None,
        };
        a.zeroize();
        inverse.zeroize();
        Ok(client)
    }

    /// The request for the client's `items` (duplicates are sent once: equal points would show
    /// the server their multiplicity). Replaces any earlier request: the response read next
    /// must answer this one. Runs on the current rayon pool.
    pub fn create_request<I: AsRef<[u8]> + Sync>(&mut self, items: &[I]) -> Vec<u8> {
        let unique = UniqueItems::new(items);
        let mut points = vec![0u8; unique.len() * POINT_BYTES];
        self.exponent.raise_items_into(
            &HashToGroup::psi(),
            unique.values(),
            POINT_BYTES,
            &mut points,
        );
        let count = unique.len() as u64;
        let mut out = message(MessageKind::Request, 8 + points.len());
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&points);
        self.pending = Some(Pending {
            value_of_row: unique.value_of_row().to_vec(),
            distinct: count,
        });
        out
    }

    /// The rows (ascending, from 0) of the last request's items that are in the server's set,
    /// from the server's `setup` message and its `response` to that request. Every row holding
    /// a shared value is listed, duplicates included.
    pub fn get_intersection(&self, setup: &[u8], response: &[u8]) -> Result<Vec<usize>, PsiError> {
        let (matched, shuffled) = self.matches(setup, response)?;
        if shuffled {
            return Err(MessageError::SizeOnly.into());
        }
        let pending = self.pending.as_ref().ok_or(MessageError::NoRequest)?;
        Ok(rows_matching(&pending.value_of_row, &matched))
    }

    /// The number of distinct items of the last request that are in the server's set, from the
    /// server's `setup` message and its `response`; works whether or not the server reveals the
    /// intersection.
    pub fn get_intersection_size(&self, setup: &[u8], response: &[u8]) -> Result<usize, PsiError> {
        let (matched, _) = self.matches(setup, response)?;
        Ok(matched.iter().filter(|&&m| m).count())
    }

    /// For each point of `response`, whether its item is in the server's set; and whether the
    /// response is shuffled.
    fn matches(&self, setup: &[u8], response: &[u8]) -> Result<(Vec<bool>, bool), PsiError> {
        let pending = self.pending.as_ref().ok_or(MessageError::NoRequest)?;
        let mut reader = Reader::open(setup, MessageKind::Setup)?;
        let width = usize::from(reader.u8()?);
        if !(1..=POINT_BYTES).contains(&width) {
            return Err(reader.malformed(format!("tags of {width} bytes")).into());
        }
        let sized_for = reader.u64()?;
        let server_items = reader.u64()?;
        let tags: Vec<&[u8]> = reader
            .elements(server_items, width)?
            .chunks_exact(width)
            .collect();
        if tags.windows(2).any(|pair| pair[0] > pair[1]) {
            return Err(MessageError::Malformed {
                expected: MessageKind::Setup.name(),
                reason: "its tags are not sorted".into(),
            }
            .into());
        }
        if pending.distinct > sized_for {
            return Err(MessageError::TooManyItems {
                items: pending.distinct,
                sized_for,
            }
            .into());
        }
        let mut reader = Reader::open(response, MessageKind::Response)?;
        let shuffled = match reader.u8()? {
            0 => false,
            1 => true,
            order => return Err(reader.malformed(format!("unknown order {order}")).into()),
        };
        let count = reader.u64()?;
        if count != pending.distinct {
            return Err(MessageError::CountMismatch {
                response: count,
                request: pending.distinct,
            }
            .into());
        }
        let points = encodings(reader.elements(count, POINT_BYTES)?);
        let mut unblinded = vec![0u8; points.len() * width];
        self.inverse
            .raise_points_into(points, width, &mut unblinded)?;
        let matched = unblinded
            .chunks_exact(width)
            .map(|tag| tags.binary_search(&tag).is_ok())
            .collect();
        Ok((matched, shuffled))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(names: &[&str]) -> Vec<Vec<u8>> {
        names.iter().map(|n| n.as_bytes().to_vec()).collect()
    }

    #[test]
    fn the_client_learns_the_rows_it_shares() {
        let server = MessageServer::new(true).unwrap();
        let setup = server
            .create_setup_message(
                &items(&["carol", "dave", "alice", "carol"]),
                10,
                DEFAULT_FPR,
            )
            .unwrap();
        let mut client = MessageClient::new().unwrap();
        let request = client.create_request(&items(&["alice", "bob", "carol", "alice", "eve"]));
        let response = server.process_request(&request).unwrap();
        assert_eq!(
            client.get_intersection(&setup, &response).unwrap(),
            [0, 2, 3]
        );
        assert_eq!(client.get_intersection_size(&setup, &response).unwrap(), 2);
    }

    #[test]
    fn a_shuffled_response_gives_only_the_size() {
        let server = MessageServer::new(false).unwrap();
        let shared: Vec<String> = (0..300).map(|i| format!("item {i}")).collect();
        let setup = server
            .create_setup_message(&shared[..200], 1000, DEFAULT_FPR)
            .unwrap();
        let mut client = MessageClient::new().unwrap();
        let request = client.create_request(&shared[150..]);
        let response = server.process_request(&request).unwrap();
        assert_eq!(client.get_intersection_size(&setup, &response).unwrap(), 50);
        let refused = client.get_intersection(&setup, &response).unwrap_err();
        assert!(matches!(refused, PsiError::Message(MessageError::SizeOnly)));
    }

    #[test]
    fn a_setup_serves_many_clients() {
        let server = MessageServer::new(true).unwrap();
        let setup = server
            .create_setup_message(&["a", "b", "c"], 4, DEFAULT_FPR)
            .unwrap();
        for (asked, shared) in [
            (&["a", "x"][..], vec![0]),
            (&["y", "c", "b"][..], vec![1, 2]),
        ] {
            let mut client = MessageClient::new().unwrap();
            let response = server
                .process_request(&client.create_request(asked))
                .unwrap();
            assert_eq!(client.get_intersection(&setup, &response).unwrap(), shared);
        }
    }

    #[test]
    fn tags_grow_with_the_sizes_and_the_rate() {
        let server = MessageServer::new(true).unwrap();
        let width = |client_items, fpr| {
            server
                .create_setup_message(&["a", "b"], client_items, fpr)
                .unwrap()[6]
        };
        assert_eq!(width(2, DEFAULT_FPR), 6); // 40 + 1 + 1 bits
        assert_eq!(width(1 << 20, DEFAULT_FPR), 8); // 40 + 20 + 1
        assert_eq!(width(2, 1e-3), 2); // 10 + 1 + 1
        for bad in [0.0, 1.0, -0.5, f64::NAN, 2.0] {
            let error = server.create_setup_message(&["a"], 2, bad).unwrap_err();
            assert!(matches!(
                error,
                PsiError::Message(MessageError::InvalidFpr(_))
            ));
        }
    }

    #[test]
    fn requests_larger_than_the_setup_are_refused() {
        let server = MessageServer::new(true).unwrap();
        let setup = server.create_setup_message(&["a"], 2, DEFAULT_FPR).unwrap();
        let mut client = MessageClient::new().unwrap();
        let response = server
            .process_request(&client.create_request(&["a", "b", "c"]))
            .unwrap();
        let error = client.get_intersection(&setup, &response).unwrap_err();
        assert!(error.to_string().contains("made for at most 2"), "{error}");
    }

    #[test]
    fn malformed_messages_are_refused() {
        let server = MessageServer::new(true).unwrap();
        let setup = server
            .create_setup_message(&["a", "b"], 4, DEFAULT_FPR)
            .unwrap();
        let mut client = MessageClient::new().unwrap();
        assert!(matches!(
            client.get_intersection(&setup, &setup).unwrap_err(),
            PsiError::Message(MessageError::NoRequest)
        ));
        let request = client.create_request(&["a", "z"]);
        let response = server.process_request(&request).unwrap();
        // Every cut of every message is refused, never a panic.
        for cut in 0..request.len() {
            assert!(server.process_request(&request[..cut]).is_err(), "{cut}");
        }
        for cut in 0..response.len() {
            assert!(client.get_intersection(&setup, &response[..cut]).is_err());
        }
        for cut in 0..setup.len() {
            assert!(client.get_intersection(&setup[..cut], &response).is_err());
        }
        // Messages of the wrong kind, and points that are not points.
        assert!(server.process_request(&setup).is_err());
        assert!(client.get_intersection(&response, &response).is_err());
        let mut bad = request.clone();
        bad[14..46].fill(0xff); // not a canonical encoding
        let invalid = server.process_request(&bad);
        assert!(matches!(invalid, Err(PsiError::Peer(_))), "{invalid:?}");
        let mut identity = request.clone();
        identity[14..46].fill(0);
        assert!(server.process_request(&identity).is_err());
        // A response for another request.
        let other = server
            .process_request(&client.create_request(&["a"]))
            .unwrap();
        let _ = client.create_request(&["a", "z"]);
        assert!(matches!(
            client.get_intersection(&setup, &other).unwrap_err(),
            PsiError::Message(MessageError::CountMismatch {
                response: 1,
                request: 2
            })
        ));
        // A count that would overflow is refused before anything is allocated.
        let mut huge = request[..6].to_vec();
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(server.process_request(&huge).is_err());
    }
}
