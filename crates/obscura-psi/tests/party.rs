//! Every protocol as two [`Party`] state machines driven by hand in one thread, with no
//! transport: each message is handed over as a batch job would move a file, and the outcomes
//! are the plain intersection.

mod common;

use common::{items, options, plain_intersection, PROTOCOLS};
use obscura_psi::{HelloError, Items, Outcome, Party, Protocol, PsiError, Role};

/// Drives `client` and `server` against each other in rounds: in each round every party sends
/// all it has, then takes what the other sent (checking kind and length first). Returns both
/// outcomes and the number of rounds.
fn rounds<'a>(
    mut client: Party<'a>,
    mut server: Party<'a>,
) -> Result<(Outcome, Outcome, usize), PsiError> {
    let mut count = 0;
    while client.expects().is_some() || server.expects().is_some() {
        count += 1;
        let mut to_server = Vec::new();
        while let Some(message) = client.poll_send()? {
            to_server.push(message);
        }
        let mut to_client = Vec::new();
        while let Some(message) = server.poll_send()? {
            to_client.push(message);
        }
        assert!(
            !(to_server.is_empty() && to_client.is_empty()),
            "both parties wait for each other"
        );
        for (party, inbox) in [(&mut server, to_server), (&mut client, to_client)] {
            for message in inbox {
                let expected = party
                    .expects()
                    .expect("a message sent where nothing is due");
                assert_eq!(message.kind, expected.kind);
                assert!(message.payload.len() <= expected.max_len);
                party.take(message.payload)?;
            }
        }
    }
    // Whatever is left to send (both learn's positions) was taken in the last round.
    assert!(client.poll_send()?.is_none() && server.poll_send()?.is_none());
    Ok((client.finish()?, server.finish()?, count))
}

#[test]
fn every_protocol_runs_as_two_parties_driven_by_hand() {
    let mut client_rows = items("a", 0..3000);
    client_rows.extend(items("a", 0..10)); // duplicates, reported once
    let server_rows = items("a", 2000..7000);
    let (client_items, server_items) = (Items::new(&client_rows), Items::new(&server_rows));
    assert_eq!((client_items.rows(), client_items.distinct()), (3010, 3000));
    for protocol in PROTOCOLS {
        for both_learn in [false, true]
            .into_iter()
            .filter(|&both| !both || protocol.offers_both_learn())
        {
            let progress = &|_, _, _| {};
            let client = Party::new(
                &client_items,
                options(protocol, Role::Client, both_learn),
                progress,
            )
            .unwrap();
            let server = Party::new(
                &server_items,
                options(protocol, Role::Server, both_learn),
                progress,
            )
            .unwrap();
            let (c, s, count) = rounds(client, server).unwrap();
            assert_eq!(
                c.intersection,
                Some(plain_intersection(&client_rows, &server_rows)),
                "{protocol}"
            );
            let expected_server =
                both_learn.then(|| plain_intersection(&server_rows, &client_rows));
            assert_eq!(s.intersection, expected_server, "{protocol}");
            assert_eq!(
                (c.duplicates_dropped, c.peer_items, s.peer_items),
                (10, 5000, 3000)
            );
            assert_eq!(
                (c.bytes_sent, s.bytes_sent),
                (s.bytes_received, c.bytes_received)
            );
            assert!(
                count >= 2,
                "{protocol}: the handshake and the protocol take rounds"
            );
        }
    }
}

#[test]
fn an_empty_set_ends_after_the_handshake() {
    let rows = items("a", 0..10);
    let (some, none) = (Items::new(&rows), Items::new::<Vec<u8>>(&[]));
    for protocol in PROTOCOLS {
        let progress = &|_, _, _| {};
        let client = Party::new(&some, options(protocol, Role::Client, false), progress).unwrap();
        let server = Party::new(&none, options(protocol, Role::Server, false), progress).unwrap();
        let (c, s, count) = rounds(client, server).unwrap();
        let intersection = c.intersection.unwrap();
        assert_eq!(
            (intersection.size, intersection.rows.len(), count),
            (0, 0, 1)
        );
        assert!(s.intersection.is_none());
    }
}

#[test]
fn parties_of_different_protocols_stop_at_the_handshake() {
    let rows = items("a", 0..10);
    let set = Items::new(&rows);
    let progress = &|_, _, _| {};
    let client = Party::new(&set, options(Protocol::Kkrt, Role::Client, false), progress).unwrap();
    let server = Party::new(&set, options(Protocol::Rr22, Role::Server, false), progress).unwrap();
    let error = rounds(client, server).err();
    assert!(
        matches!(
            error,
            Some(PsiError::Hello(HelloError::ProtocolMismatch {
                ours: Protocol::Rr22,
                theirs: Protocol::Kkrt
            }))
        ),
        "{error:?}"
    );
}
