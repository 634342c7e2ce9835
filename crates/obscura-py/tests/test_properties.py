"""Property tests (hypothesis): any records, keys and sets round-trip through the bindings, and
no message, however mangled, crashes the interpreter."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import obscura

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
items = st.one_of(st.binary(max_size=40), st.text(max_size=20))


@FAST
@given(records=st.lists(st.binary(max_size=300), min_size=1, max_size=40), scheme=st.sampled_from(["index", "double", "ypir-sp"]))
def test_any_records_come_back_as_they_went_in(tmp_path, records, scheme):
    path = tmp_path / f"{scheme}.obs"
    obscura.build_index(records, path, scheme=scheme, progress=False)
    client = obscura.Client.open(path)
    for index in sorted({0, len(records) // 2, len(records) - 1}):
        assert client.get(index) == records[index]


@FAST
@given(pairs=st.dictionaries(st.binary(max_size=30), st.binary(max_size=50), min_size=1, max_size=60), absent=st.binary(min_size=31, max_size=40))
def test_any_keys_find_their_values(tmp_path, pairs, absent):
    path = tmp_path / "kw.obs"
    obscura.build_keyword(pairs, path, progress=False)
    client = obscura.Client.open(path)
    for key in list(pairs)[:5]:
        assert client.get_key(key) == pairs[key]
    assert client.get_key(absent) is None


@FAST
@given(ours=st.lists(items, max_size=60), theirs=st.lists(items, max_size=60))
def test_message_psi_equals_the_plain_intersection(ours, theirs):
    as_bytes = lambda item: item.encode() if isinstance(item, str) else item  # noqa: E731
    server = obscura.EcdhPsiServer()
    setup = server.create_setup_message(theirs, max(len(ours), 1))
    client = obscura.EcdhPsiClient()
    response = server.process_request(client.create_request(ours))
    shared = {as_bytes(t) for t in theirs}
    assert client.get_intersection(setup, response) == [i for i, item in enumerate(ours) if as_bytes(item) in shared]


@FAST
@given(cut=st.integers(min_value=0), flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(1, 255)), max_size=4), tail=st.binary(max_size=8))
def test_mangled_messages_raise_obscura_errors(cut, flips, tail):
    server = obscura.EcdhPsiServer()
    setup = server.create_setup_message(["a", "b", "c"], 4)
    client = obscura.EcdhPsiClient()
    request = client.create_request(["a", "z"])
    response = server.process_request(request)
    for message in (setup, request, response):
        mangled = bytearray(message[: cut % (len(message) + 1)] + tail)
        for position, mask in flips:
            if mangled:
                mangled[position % len(mangled)] ^= mask
        mangled = bytes(mangled)
        try:
            server.process_request(mangled)
            client.get_intersection_size(mangled, response)
            client.get_intersection_size(setup, mangled)
        except obscura.ObscuraError:
            pass
