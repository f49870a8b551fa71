import pytest

from lucy_runtime.errors import InvalidField
from lucy_runtime.fields import MAX_TEXT_BYTES, require_id, require_int, require_str


def test_a_bool_is_not_an_int():
    with pytest.raises(InvalidField, match="count: expected an int, got bool"):
        require_int("count", True)


def test_none_is_not_a_string():
    with pytest.raises(InvalidField, match="text: expected a str, got None"):
        require_str("text", None)


def test_64_kib_fits_and_one_byte_more_is_refused():
    assert require_str("text", "x" * MAX_TEXT_BYTES)
    with pytest.raises(InvalidField, match="65537 bytes; the limit is 65536"):
        require_str("text", "x" * (MAX_TEXT_BYTES + 1))


def test_the_limit_counts_bytes_not_characters():
    with pytest.raises(InvalidField):
        require_str("text", "🚀" * (MAX_TEXT_BYTES // 4 + 1))


@pytest.mark.parametrize("value", ["", "a\nb", "x" * 201])
def test_identities_are_short_printable_and_not_empty(value):
    with pytest.raises(InvalidField):
        require_id("source_id", value)
