//! The server's side of ECDH-PSI: it answers the client and, when both learn, learns too.

use obscura_math::sample::OsSampler;

use super::Session;
use crate::chunk::{recv_chunk, CHUNK_ITEMS};
use crate::exponent::POINT_BYTES;
use crate::shuffle::random_permutation;
use crate::transport::{FrameKind, Transport};
use crate::unique::UniqueItems;
use crate::{positions, PsiError, Stage};

/// Runs the server's three steps; with both learn, returns which distinct items are in the
/// intersection.
pub(super) fn run<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    unique: &UniqueItems<'_>,
    rng: &mut OsSampler,
) -> Result<Option<Vec<bool>>, PsiError> {
    answer_client_items(session, transport)?;
    let order = random_permutation(unique.len(), rng)?;
    send_own_items(session, transport, unique.values(), &order)?;
    positions::receive_if_both_learn(
        session.both_learn,
        transport,
        session.n_client,
        session.n_server,
        &order,
    )
}

/// Step 1: answers each chunk of the client's `H(x)^a` with the tags of `H(x)^{ab}`.
fn answer_client_items<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
) -> Result<(), PsiError> {
    let mut received = 0u64;
    while received < session.n_client {
        let payload = recv_chunk(
            transport,
            FrameKind::ClientPoints,
            POINT_BYTES,
            session.n_client - received,
        )?;
        transport.send(FrameKind::ClientTags, &session.tags_of(&payload)?)?;
        received += (payload.len() / POINT_BYTES) as u64;
        (session.progress)(Stage::PeerItems, received, session.n_client);
    }
    Ok(())
}

/// Step 2: sends `H(y)^b` for our items in the shuffled `order`, chunk by chunk (the next chunk
/// is computed while the client works on the previous one).
fn send_own_items<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    values: &[&[u8]],
    order: &[usize],
) -> Result<(), PsiError> {
    let shuffled: Vec<&[u8]> = order.iter().map(|&item| values[item]).collect();
    let mut sent = 0u64;
    for chunk in shuffled.chunks(CHUNK_ITEMS) {
        transport.send(FrameKind::ServerPoints, &session.blind(chunk))?;
        sent += chunk.len() as u64;
        (session.progress)(Stage::OwnItems, sent, session.n_server);
    }
    Ok(())
}
