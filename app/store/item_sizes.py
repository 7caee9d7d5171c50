"""An item's size as DynamoDB counts it against its 400 KB item limit, from the wire format the
adapter sends, so that what DynamoDB would refuse is found before it is sent. moto, which the
tests and the embedded backend run on, counts its own way (no list or map overhead, a number by
its text, 405,000 bytes at most) and stores items DynamoDB refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

ITEM_LIMIT_BYTES = 400 * 1024
"""DynamoDB's largest item, attribute names and values together: 409,600 bytes."""

_COLLECTION = 3
_ELEMENT = 1


def item_size(item: Mapping[str, AttributeValueTypeDef]) -> int:
    """The item's size in bytes, as DynamoDB counts it against ``ITEM_LIMIT_BYTES``.

    The rules are DynamoDB's documented ones ("Item sizes and formats" in the developer guide):
    an attribute is its name's UTF-8 bytes plus its value; a string is its UTF-8 bytes, a binary
    its raw bytes, null and a Boolean 1 byte; a list or map is 3 bytes, plus 1 byte per element,
    plus its elements (a map's element is its name and its value). A number is documented only
    as "about" 1 byte per two significant digits plus 1: it is counted here in pairs of digits as
    they fall about the decimal point (DynamoDB keeps numbers in base-100 digits), which is the
    documented figure or 1 byte more, never less, so a check with it errs on the side of
    refusing."""
    return sum(_utf8(name) + value_size(value) for name, value in item.items())


def list_element_size(value: Mapping[str, Any]) -> int:
    """What one more element adds to a list: its value and the element's byte."""
    return _ELEMENT + value_size(value)


def value_size(value: Mapping[str, Any]) -> int:  # noqa: PLR0911 - a return per type
    """One attribute value's size, without its name."""
    if "S" in value:
        return _utf8(value["S"])
    if "N" in value:
        return number_size(value["N"])
    if "B" in value:
        return len(value["B"])
    if "NULL" in value or "BOOL" in value:
        return 1
    if "L" in value:
        return _COLLECTION + sum(list_element_size(v) for v in value["L"])
    if "M" in value:
        return _COLLECTION + sum(
            _ELEMENT + _utf8(name) + value_size(v) for name, v in value["M"].items()
        )
    # Sets are not in the documented rules: counted as lists of their members, which is no less.
    if "SS" in value:
        return _COLLECTION + sum(_ELEMENT + _utf8(v) for v in value["SS"])
    if "NS" in value:
        return _COLLECTION + sum(_ELEMENT + number_size(v) for v in value["NS"])
    if "BS" in value:
        return _COLLECTION + sum(_ELEMENT + len(v) for v in value["BS"])
    raise ValueError(f"not a DynamoDB attribute value: {sorted(value)}")


def number_size(text: str) -> int:
    """A number's size: 1 byte, plus 1 per base-100 digit its significant digits take (leading
    and trailing zeros trimmed). Zero counts as one digit."""
    number = Decimal(text)
    if not number.is_finite():
        raise ValueError(f"not a DynamoDB number: {text!r}")
    _, digits, exponent = number.as_tuple()
    significant = "".join(map(str, digits)).lstrip("0")
    if not significant:
        return 2
    trimmed = significant.rstrip("0")
    lowest = int(exponent) + len(significant) - len(trimmed)  # the power of ten of the last digit
    highest = lowest + len(trimmed) - 1
    pairs = highest // 2 - lowest // 2 + 1  # base-100 digits: powers 2k and 2k+1 share one
    return 1 + pairs


def _utf8(text: str) -> int:
    return len(text.encode("utf-8"))
