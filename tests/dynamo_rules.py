"""What real DynamoDB refuses among the requests moto's server accepts: ``refusal`` gives the
ValidationException message DynamoDB answers one request body with, or None where DynamoDB would
take it, for a botocore before-send hook that fails a test whose request DynamoDB would refuse."""

from __future__ import annotations

import base64
import binascii
import functools
import importlib.util
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NamedTuple

MAX_ITEM_BYTES = 409_600
MAX_TRANSACTION_BYTES = 4 * 1024 * 1024
MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024
MAX_TRANSACTION_ACTIONS = 100
MAX_BATCH_WRITES = 25
MAX_BATCH_KEYS = 100

Item = Mapping[str, Any]
"""Attribute names to attribute values as the wire spells them (``{"S": "..."}``, ...)."""
Checks = Iterator[str | None]
"""A request's checks, in DynamoDB's order as far as it is known: each a refusal, or None."""

# The messages are DynamoDB's own, from its documentation and from emulators whose test suites
# run against it (dynalite, dynoxide, Scylla's Alternator, moto). The few not confirmed so are
# marked "inferred" where they are made.


@dataclass(frozen=True)
class TableShape:
    """A table's key attribute names (partition key first) and each secondary index's."""

    keys: tuple[str, ...]
    indexes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def index_keys(self) -> frozenset[str]:
        return frozenset(name for keys in self.indexes.values() for name in keys)


def shapes_of(specs: Iterable[Mapping[str, Any]]) -> dict[str, TableShape]:
    """Each table's shape by name, from CreateTable requests (``app.store.tables.table_specs``)."""
    return {
        spec["TableName"]: TableShape(
            keys=_key_names(spec["KeySchema"]),
            indexes={
                index["IndexName"]: _key_names(index["KeySchema"])
                for index in (
                    *spec.get("GlobalSecondaryIndexes", ()),
                    *spec.get("LocalSecondaryIndexes", ()),
                )
            },
        )
        for spec in specs
    }


def _key_names(schema: Iterable[Mapping[str, str]]) -> tuple[str, ...]:
    # "HASH" sorts before "RANGE": the partition key comes first.
    return tuple(part["AttributeName"] for part in sorted(schema, key=lambda p: p["KeyType"]))


def refusal(
    operation: str, body: Mapping[str, Any], shapes: Mapping[str, TableShape]
) -> str | None:
    """The message of the ValidationException DynamoDB answers this request with, or None if it
    would take it. ``operation`` is the API's name (``PutItem``, ...; any other is let through);
    a table missing from ``shapes`` gets only the checks that need no key schema."""
    checks = _OPERATIONS.get(operation)
    if checks is None:
        return None
    return next((message for message in checks(body, shapes) if message), None)


# ---- expressions ----------------------------------------------------------------------------

_EXPRESSIONS = (
    "UpdateExpression",
    "ConditionExpression",
    "KeyConditionExpression",
    "FilterExpression",
    "ProjectionExpression",
)
"""In the order DynamoDB reads them, so that the first refusal found is the one it gives."""
_FUNCTIONS = frozenset(
    {
        "attribute_exists",
        "attribute_not_exists",
        "attribute_type",
        "begins_with",
        "contains",
        "size",
        "if_not_exists",
        "list_append",
    }
)
_UPDATE_SECTIONS = frozenset({"SET", "REMOVE", "ADD", "DELETE"})
_CONDITION_OPERATORS = frozenset({"AND", "OR", "BETWEEN", "IN"})

_TOKEN = re.compile(
    r"\s*(?:(?P<name>#[A-Za-z0-9_]+)|(?P<value>:[A-Za-z0-9_]+)|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<number>[0-9]+)|(?P<punct><>|<=|>=|\S))"
)


class _Token(NamedTuple):
    kind: str
    """``name`` (#n), ``value`` (:v), ``word``, ``number`` or ``punct`` as read; a word in the
    grammar's own place becomes a ``keyword`` (upper-cased) or a ``function``."""
    text: str


@dataclass(frozen=True)
class _Path:
    """A document path: its attribute names and #names in order, list indexes left out."""

    elements: tuple[str, ...]
    nested: bool


_Unit = _Token | _Path


@dataclass(frozen=True)
class _Clause:
    """One action of an update expression: ``SET a = :v``, ``REMOVE a``, ``ADD n :d``, ..."""

    section: str
    units: tuple[_Unit, ...]

    @property
    def target(self) -> _Path | None:
        first = self.units[0] if self.units else None
        return first if isinstance(first, _Path) else None

    @property
    def values(self) -> list[str]:
        return [u.text for u in self.units if isinstance(u, _Token) and u.kind == "value"]

    @property
    def sole_value(self) -> str | None:
        """``:v`` of ``SET path = :v``: the value the path is set to outright."""
        if self.section != "SET" or len(self.units) != 3 or self.units[1] != ("punct", "="):
            return None
        value = self.units[2]
        return value.text if isinstance(value, _Token) and value.kind == "value" else None


@dataclass(frozen=True)
class _Reading:
    """An expression read into paths, placeholders, functions and keywords."""

    units: tuple[_Unit, ...]

    @property
    def paths(self) -> list[_Path]:
        return [unit for unit in self.units if isinstance(unit, _Path)]

    @property
    def placeholders(self) -> list[str]:
        """Its #names and :values, in the order they come."""
        found: list[str] = []
        for unit in self.units:
            if isinstance(unit, _Path):
                found += [element for element in unit.elements if element.startswith("#")]
            elif unit.kind == "value":
                found.append(unit.text)
        return found

    @property
    def reserved(self) -> list[str]:
        """The reserved words it uses as attribute names, unescaped."""
        words = reserved_words()
        return [
            element
            for path in self.paths
            for element in path.elements
            if not element.startswith("#") and element.upper() in words
        ]

    @property
    def betweens(self) -> list[tuple[str, str]]:
        """``(:low, :high)`` of each ``BETWEEN :low AND :high`` whose bounds are both values."""
        found = []
        for at, unit in enumerate(self.units[:-3]):
            low, conjunction, high = self.units[at + 1 : at + 4]
            if (
                unit == ("keyword", "BETWEEN")
                and conjunction == ("keyword", "AND")
                and isinstance(low, _Token)
                and low.kind == "value"
                and isinstance(high, _Token)
                and high.kind == "value"
            ):
                found.append((low.text, high.text))
        return found

    @property
    def clauses(self) -> list[_Clause]:
        """An update expression's actions, each under its section (SET, REMOVE, ADD, DELETE)."""
        drafts: list[tuple[str, list[_Unit]]] = []
        depth = 0
        for unit in self.units:
            if isinstance(unit, _Token) and unit.kind == "keyword":
                drafts.append((unit.text, []))
            elif unit == ("punct", ",") and depth == 0 and drafts:
                drafts.append((drafts[-1][0], []))
            elif drafts:
                depth += {"(": 1, ")": -1}.get(unit.text, 0) if isinstance(unit, _Token) else 0
                drafts[-1][1].append(unit)
        return [_Clause(section, tuple(units)) for section, units in drafts if units]


@functools.lru_cache(maxsize=4096)
def _read(expression: str, *, update: bool) -> _Reading:
    tokens = [
        _Token(match.lastgroup or "punct", match.group(match.lastgroup or "punct"))
        for match in _TOKEN.finditer(expression)
    ]
    units: list[_Unit] = []
    at = 0
    while at < len(tokens):
        token = tokens[at]
        if token.kind == "word" and _is_keyword(token.text.upper(), units, update=update):
            units.append(_Token("keyword", token.text.upper()))
        elif token.kind == "word" and token.text in _FUNCTIONS and _text_at(tokens, at + 1) == "(":
            units.append(_Token("function", token.text))
        elif token.kind in ("word", "name"):
            path, at = _path_at(tokens, at)
            units.append(path)
            continue
        else:
            units.append(token)
        at += 1
    return _Reading(tuple(units))


def _is_keyword(upper: str, before: Sequence[_Unit], *, update: bool) -> bool:
    """Whether a word stands where the grammar puts a keyword; anywhere else it is an attribute
    name (and, every keyword being a reserved word, refused unless escaped)."""
    after_operand = bool(before) and _ends_operand(before[-1])
    if update:
        return upper in _UPDATE_SECTIONS and (not before or after_operand)
    if upper == "NOT":
        return not after_operand
    return upper in _CONDITION_OPERATORS and after_operand


def _ends_operand(unit: _Unit) -> bool:
    return isinstance(unit, _Path) or unit.kind == "value" or unit.text == ")"


def _text_at(tokens: Sequence[_Token], at: int) -> str:
    return tokens[at].text if at < len(tokens) else ""


def _path_at(tokens: Sequence[_Token], at: int) -> tuple[_Path, int]:
    """The path starting at ``tokens[at]`` (``a``, ``#a``, ``a[0].#b``) and the index after it."""
    elements, nested = [tokens[at].text], False
    at += 1
    while True:
        if _text_at(tokens, at) == "[" and _text_at(tokens, at + 2) == "]":
            at += 3
        elif _text_at(tokens, at) == "." and at + 1 < len(tokens):
            elements.append(tokens[at + 1].text)
            at += 2
        else:
            return _Path(tuple(elements), nested), at
        nested = True


@functools.cache
def reserved_words() -> frozenset[str]:
    """DynamoDB's reserved words, from the copy of its list moto ships (moto is the tests'
    embedded backend, so it is here wherever these rules run)."""
    spec = importlib.util.find_spec("moto")
    if spec is None or spec.origin is None:
        raise RuntimeError("moto is not installed: DynamoDB's reserved words are read from it")
    listed = Path(spec.origin).parent / "dynamodb" / "parsing" / "reserved_keywords.txt"
    return frozenset(listed.read_text(encoding="utf-8").split())


def _expressions(scope: Mapping[str, Any], *, carrying_values: tuple[str, ...]) -> Checks:
    """Expressions and their attribute names and values, for one request, transaction action or
    batch table (each has maps of its own). ``carrying_values``: the expressions this kind of
    request takes that can hold a :value."""
    names: Mapping[str, str] = scope.get("ExpressionAttributeNames") or {}
    values: Mapping[str, Item] = scope.get("ExpressionAttributeValues") or {}
    yield _attribute_maps(scope, carrying_values)
    for key, value in values.items():
        if problem := _number_problem(value):
            yield f"ExpressionAttributeValues contains invalid value: {problem} for key {key}"
    for kind in _EXPRESSIONS:
        if kind in scope and (problem := _expression_problem(scope[kind], kind, names, values)):
            yield f"Invalid {kind}: {problem}"
    yield _unused(scope, names, values)


def _attribute_maps(scope: Mapping[str, Any], carrying_values: tuple[str, ...]) -> str | None:
    names, values = scope.get("ExpressionAttributeNames"), scope.get("ExpressionAttributeValues")
    if names is not None and not names:
        return "ExpressionAttributeNames must not be empty"
    if values is not None and not values:
        return "ExpressionAttributeValues must not be empty"
    if names and not any(kind in scope for kind in _EXPRESSIONS):
        return "ExpressionAttributeNames can only be specified when using expressions"
    if values and carrying_values and not any(kind in scope for kind in carrying_values):
        verb = "are" if len(carrying_values) > 1 else "is"
        return (
            "ExpressionAttributeValues can only be specified when using expressions: "
            f"{' and '.join(carrying_values)} {verb} null"
        )
    return None


def _expression_problem(
    expression: str, kind: str, names: Mapping[str, str], values: Mapping[str, Item]
) -> str | None:
    if not expression:
        return "The expression can not be empty;"
    reading = _read(expression, update=kind == "UpdateExpression")
    if reading.reserved:
        return f"Attribute name is a reserved keyword; reserved keyword: {reading.reserved[0]}"
    for placeholder in reading.placeholders:
        if placeholder.startswith("#") and placeholder not in names:
            return (
                "An expression attribute name used in the document path is not defined; "
                f"attribute name: {placeholder}"
            )
        if placeholder.startswith(":") and placeholder not in values:
            return (
                "An expression attribute value used in expression is not defined; "
                f"attribute value: {placeholder}"
            )
    return next(
        (p for low, high in reading.betweens if (p := _between(values[low], values[high]))), None
    )


def _between(low: Item, high: Item) -> str | None:
    # DynamoDB checks the bounds in any expression, not only in a key condition.
    (low_type, low_data), (high_type, high_data) = _only(low), _only(high)
    bounds = (
        f"lower bound operand: AttributeValue: {{{low_type}:{low_data}}}, "
        f"upper bound operand: AttributeValue: {{{high_type}:{high_data}}}"
    )
    if low_type != high_type:
        return f"The BETWEEN operator requires same data type for lower and upper bounds; {bounds}"
    if _greater(low_type, low_data, high_data):
        return (
            "The BETWEEN operator requires upper bound to be greater than or equal to lower "
            f"bound; {bounds}"
        )
    return None


def _greater(kind: str, left: Any, right: Any) -> bool:
    """Whether ``left`` sorts after ``right`` as DynamoDB orders them: numbers by value, strings
    by their UTF-8 bytes, binary by its bytes."""
    if kind == "N":
        low, high = _decimal(left), _decimal(right)
        return low is not None and high is not None and low > high
    if kind in ("S", "B"):
        return _bytes(kind, left) > _bytes(kind, right)
    return False


def _unused(
    scope: Mapping[str, Any], names: Mapping[str, str], values: Mapping[str, Item]
) -> str | None:
    used = {
        placeholder
        for kind in _EXPRESSIONS
        if scope.get(kind)
        for placeholder in _read(scope[kind], update=kind == "UpdateExpression").placeholders
    }
    for label, defined in (("Names", names), ("Values", values)):
        unused = sorted(set(defined) - used)
        if unused:
            return (
                f"Value provided in ExpressionAttribute{label} unused in expressions: "
                f"keys: {{{', '.join(unused)}}}"
            )
    return None


def _resolve(element: str, names: Mapping[str, str]) -> str:
    return names.get(element, element) if element.startswith("#") else element


def _filter_on_keys(request: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    """A Query may not filter on a key of what it queries: the table's keys, or the index's
    (a GSI query may filter on the table's own keys: they are not the index's)."""
    names = request.get("ExpressionAttributeNames") or {}
    heads = {
        _resolve(path.elements[0], names)
        for path in _read(request["FilterExpression"], update=False).paths
    }
    return next(
        (
            "Filter Expression can only contain non-primary key attributes: "
            f"Primary key attribute: {key}"
            for key in keys
            if key in heads
        ),
        None,
    )


# ---- attribute values -----------------------------------------------------------------------


def _only(value: Item) -> tuple[str, Any]:
    """An attribute value's one type and its data."""
    return next(iter(value.items()), ("NULL", True))


def _decimal(text: str) -> Decimal | None:
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _digits(number: Decimal) -> str:
    """Its significant digits: DynamoDB trims leading and trailing zeros."""
    return "".join(map(str, number.as_tuple().digits)).strip("0")


def _number_problem(value: Item) -> str | None:
    """The first number in an attribute value (sets, lists and maps included) DynamoDB would
    not store."""
    for text in _numbers_in(value):
        number = _decimal(text)
        if number is None:
            return f"The parameter cannot be converted to a numeric value: {text}"
        digits = _digits(number)
        if digits and number.adjusted() > 125:
            return (
                "Number overflow. Attempting to store a number with magnitude larger than "
                "supported range"
            )
        if digits and number.adjusted() < -130:
            return (
                "Number underflow. Attempting to store a number with magnitude smaller than "
                "supported range"
            )
        if len(digits) > 38:
            return "Attempting to store more than 38 significant digits in a Number"
    return None


def _numbers_in(value: Item) -> Iterator[str]:
    kind, data = _only(value)
    if kind == "N":
        yield data
    elif kind == "NS":
        yield from data
    elif kind in ("L", "M"):
        for inner in data if kind == "L" else data.values():
            yield from _numbers_in(inner)


def _numbers(attributes: Item) -> str | None:
    return next(filter(None, map(_number_problem, attributes.values())), None)


def _raw(data: str | bytes) -> bytes:
    """Binary data as DynamoDB stores it: the wire carries it in base64."""
    if isinstance(data, bytes):
        return data
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error:
        return data.encode()


def _bytes(kind: str, data: str | bytes) -> bytes:
    return _raw(data) if kind == "B" else str(data).encode()


def _number_size(text: str) -> int:
    number = _decimal(text)
    digits = len(text) if number is None else len(_digits(number))
    return math.ceil(digits / 2) + 1


_SIZES: dict[str, Callable[[Any], int]] = {
    "S": lambda text: len(text.encode()),
    "N": _number_size,
    "B": lambda data: len(_raw(data)),
    "BOOL": lambda _: 1,
    "NULL": lambda _: 1,
    "SS": lambda texts: sum(len(text.encode()) for text in texts),
    "NS": lambda numbers: sum(map(_number_size, numbers)),
    "BS": lambda blobs: sum(len(_raw(blob)) for blob in blobs),
    "L": lambda values: 3 + sum(1 + _value_size(value) for value in values),
    "M": lambda item: 3 + len(item) + item_size(item),
}


def _value_size(value: Item) -> int:
    kind, data = _only(value)
    return _SIZES.get(kind, lambda _: 0)(data)


def item_size(item: Item) -> int:
    """An item's size as DynamoDB counts it against its 400 KB limit: each attribute's name in
    UTF-8 plus its value (a string's UTF-8 bytes, a number's 1 byte per 2 significant digits
    plus 1, binary's raw bytes, 1 for null or a boolean, 3 for a list or map plus 1 for each
    element plus the elements, a set the sum of its members)."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _too_large(item: Item) -> str | None:
    if item_size(item) > MAX_ITEM_BYTES:
        return "Item size has exceeded the maximum allowed size"
    return None


# ---- keys -----------------------------------------------------------------------------------


def _empty(value: Item) -> str | None:
    """``string`` or ``binary`` for an empty one, which no key attribute may hold."""
    kind, data = _only(value)
    if kind in ("S", "B") and not data:
        return "string" if kind == "S" else "binary"
    return None


def _key_values(attributes: Item, shape: TableShape) -> str | None:
    for position, name in enumerate(shape.keys):
        value = attributes[name]
        if empty := _empty(value):
            return (
                "One or more parameter values are not valid. The AttributeValue for a key "
                f"attribute cannot contain an empty {empty} value. Key: {name}"
            )
        kind, data = _only(value)
        size = len(_bytes(kind, data)) if kind in ("S", "B") else 0
        if position == 0 and size > MAX_PARTITION_KEY_BYTES:
            # DynamoDB's words, the missing space included.
            return (
                "One or more parameter values were invalid: Size of hashkey has exceeded the "
                f"maximum size limit of{MAX_PARTITION_KEY_BYTES} bytes"
            )
        if position == 1 and size > MAX_SORT_KEY_BYTES:
            return (
                "One or more parameter values were invalid: Aggregated size of all range keys "
                f"has exceeded the size limit of {MAX_SORT_KEY_BYTES} bytes"
            )
    return None


def _key(key: Item, shape: TableShape) -> str | None:
    """A ``Key``: exactly the table's key attributes, each a value a key may hold."""
    if set(key) != set(shape.keys):
        return "The provided key element does not match the schema"
    return _key_values(key, shape)


def _item_keys(item: Item, shape: TableShape) -> str | None:
    """A written item: the table's key attributes, and no empty string in an index's."""
    missing = [name for name in shape.keys if name not in item]
    if missing:
        return (
            f"One or more parameter values were invalid: Missing the key {missing[0]} in the item"
        )
    return _key_values(item, shape) or next(
        (
            "One or more parameter values are not valid. A value specified for a secondary index "
            f"key is not supported. The AttributeValue for a key attribute cannot contain an "
            f"empty {empty} value. IndexName: {index}, IndexKey: {name}"
            for index, keys in shape.indexes.items()
            for name in keys
            if name in item and (empty := _empty(item[name]))
        ),
        None,
    )


def _identity(attributes: Item, names: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """What tells one item from another: its key attributes' values (``1`` and ``1.0`` are
    one number)."""
    return tuple(
        sorted((name, _canonical(attributes[name])) for name in names if name in attributes)
    )


def _canonical(value: Item) -> str:
    kind, data = _only(value)
    number = _decimal(data) if kind == "N" else None
    if number is not None:
        digits = _digits(number)
        return (
            f"N:{'-' if number.is_signed() else ''}{digits}e{number.adjusted()}"
            if digits
            else "N:0"
        )
    if kind == "B":
        return "B:" + _raw(data).hex()
    return json.dumps(value, sort_keys=True, default=str)


def _duplicate(identities: Iterable[object], message: str) -> str | None:
    seen: set[object] = set()
    for identity in identities:
        if identity in seen:
            return message
        seen.add(identity)
    return None


# ---- update expressions ---------------------------------------------------------------------


class _Change(NamedTuple):
    clause: _Clause
    path: _Path
    attribute: str
    """The top-level attribute the path is in."""


def _changes(request: Mapping[str, Any]) -> list[_Change]:
    """An update's clauses that name a path."""
    expression = request.get("UpdateExpression")
    if not expression:
        return []
    names = request.get("ExpressionAttributeNames") or {}
    return [
        _Change(clause, path, _resolve(path.elements[0], names))
        for clause in _read(expression, update=True).clauses
        if (path := clause.target) is not None
    ]


def _update_keys(request: Mapping[str, Any], shape: TableShape) -> str | None:
    values = request.get("ExpressionAttributeValues") or {}
    for clause, path, attribute in _changes(request):
        if attribute in shape.keys:
            return (
                f"One or more parameter values were invalid: Cannot update attribute {attribute}. "
                "This attribute is part of the key"
            )
        value = values.get(clause.sole_value or "")
        if attribute in shape.index_keys and value and not path.nested and (empty := _empty(value)):
            return (
                "One or more parameter values are not valid. The update expression attempted to "
                "update a secondary index key to a value that is not supported. The "
                f"AttributeValue for a key attribute cannot contain an empty {empty} value."
            )
    return None


def _update_size(request: Mapping[str, Any]) -> int:
    """What an update writes, as far as the request shows: its key and the values it SETs and
    ADDs under their attributes' names (the item it changes is not in the request)."""
    values = request.get("ExpressionAttributeValues") or {}
    return item_size(request.get("Key") or {}) + sum(
        len(attribute.encode()) + sum(_value_size(values[v]) for v in clause.values if v in values)
        for clause, _, attribute in _changes(request)
        if clause.section in ("SET", "ADD")
    )


# ---- requests -------------------------------------------------------------------------------


def _shape(request: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> TableShape | None:
    return shapes.get(request.get("TableName", ""))


def _keyed(request: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> Checks:
    key = request.get("Key") or {}
    yield _numbers(key)
    shape = _shape(request, shapes)
    if shape is not None:
        yield _key(key, shape)


def _get(request: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> Checks:
    yield from _expressions(request, carrying_values=())
    yield from _keyed(request, shapes)


def _delete(request: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> Checks:
    yield from _expressions(request, carrying_values=("ConditionExpression",))
    yield from _keyed(request, shapes)


def _put(request: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> Checks:
    item = request.get("Item") or {}
    yield from _expressions(request, carrying_values=("ConditionExpression",))
    yield _numbers(item)
    yield _too_large(item)
    shape = _shape(request, shapes)
    if shape is not None:
        yield _item_keys(item, shape)


def _update(request: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> Checks:
    yield from _expressions(request, carrying_values=("UpdateExpression", "ConditionExpression"))
    yield from _keyed(request, shapes)
    shape = _shape(request, shapes)
    if shape is not None:
        yield _update_keys(request, shape)
    if _update_size(request) > MAX_ITEM_BYTES:
        yield "Item size to update has exceeded the maximum allowed size"


def _limit(request: Mapping[str, Any], *, operation: str) -> str | None:
    limit = request.get("Limit")
    if limit is None or limit >= 1:
        return None
    # DynamoDB words it one way for a Query and another for a Scan.
    value = "Value" if operation == "Query" else f"Value '{limit}'"
    field_name = "Limit" if operation == "Query" else "limit"
    return (
        f"1 validation error detected: {value} at '{field_name}' failed to satisfy constraint: "
        "Member must have value greater than or equal to 1"
    )


def _starting_key(request: Mapping[str, Any]) -> str | None:
    problem = _numbers(request.get("ExclusiveStartKey") or {})
    return None if problem is None else f"The provided starting key is invalid: {problem}"


def _query(request: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> Checks:
    yield _limit(request, operation="Query")
    yield from _expressions(request, carrying_values=("FilterExpression", "KeyConditionExpression"))
    yield _starting_key(request)
    shape = _shape(request, shapes)
    if shape is None or not request.get("FilterExpression"):
        return
    index = request.get("IndexName")
    keys = shape.keys if index is None else shape.indexes.get(index)
    if keys is not None:
        yield _filter_on_keys(request, keys)


def _scan(request: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> Checks:
    yield _limit(request, operation="Scan")
    yield from _expressions(request, carrying_values=("FilterExpression",))
    yield _starting_key(request)


def _batch_get_item(body: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> Checks:
    tables: Mapping[str, Any] = body.get("RequestItems") or {}
    for table, wanted in tables.items():
        if len(wanted.get("Keys", ())) > MAX_BATCH_KEYS:
            yield (
                f"1 validation error detected: Value at 'RequestItems.{table}.member.Keys' failed "
                f"to satisfy constraint: Member must have length less than or equal to {MAX_BATCH_KEYS}"
            )
    if sum(len(wanted.get("Keys", ())) for wanted in tables.values()) > MAX_BATCH_KEYS:
        yield "Too many items requested for the BatchGetItem call"
    for table, wanted in tables.items():
        yield from _expressions(wanted, carrying_values=())
        keys = wanted.get("Keys", ())
        for key in keys:
            yield from _keyed({"TableName": table, "Key": key}, shapes)
        yield _duplicate(
            (_identity(key, key) for key in keys), "Provided list of item keys contains duplicates"
        )


def _batch_write_item(body: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> Checks:
    tables: Mapping[str, Any] = body.get("RequestItems") or {}
    for table, writes in tables.items():
        if len(writes) > MAX_BATCH_WRITES:
            # DynamoDB quotes the table's list of writes where this has "...".
            yield (
                f"1 validation error detected: Value '{{{table}=[...]}}' at 'requestItems' failed "
                "to satisfy constraint: Map value must satisfy constraint: [Member must have "
                f"length less than or equal to {MAX_BATCH_WRITES}, Member must have length "
                "greater than or equal to 1]"
            )
    if sum(map(len, tables.values())) > MAX_BATCH_WRITES:
        # Inferred: BatchGetItem's words for its own total.
        yield "Too many items requested for the BatchWriteItem call"
    for table, writes in tables.items():
        shape = shapes.get(table)
        targets = []
        for write in writes:
            if "PutRequest" in write:
                item = write["PutRequest"].get("Item") or {}
                yield from _put({"TableName": table, "Item": item}, shapes)
                if shape is not None:
                    targets.append(_identity(item, shape.keys))
            if "DeleteRequest" in write:
                key = write["DeleteRequest"].get("Key") or {}
                yield from _keyed({"TableName": table, "Key": key}, shapes)
                targets.append(_identity(key, key))
        yield _duplicate(targets, "Provided list of item keys contains duplicates")


_WRITE_ACTIONS: dict[str, Callable[[Mapping[str, Any], Mapping[str, TableShape]], Checks]] = {
    "Put": _put,
    "Update": _update,
    "Delete": _delete,
    "ConditionCheck": _delete,  # a key and a condition, as a Delete has
}


def _too_many_actions(actions: Sequence[Any]) -> str | None:
    if len(actions) <= MAX_TRANSACTION_ACTIONS:
        return None
    # DynamoDB quotes the list of actions where this has "...".
    return (
        "1 validation error detected: Value '[...]' at 'transactItems' failed to satisfy "
        f"constraint: Member must have length less than or equal to {MAX_TRANSACTION_ACTIONS}"
    )


def _target(
    kind: str, request: Mapping[str, Any], shapes: Mapping[str, TableShape]
) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """The item an action works on: its table and key (None for a put on a table of unknown
    key)."""
    table = request.get("TableName", "")
    if kind != "Put":
        key = request.get("Key") or {}
        return table, _identity(key, key)
    shape = shapes.get(table)
    return None if shape is None else (table, _identity(request.get("Item") or {}, shape.keys))


def _action_size(kind: str, request: Mapping[str, Any]) -> int:
    if kind == "Put":
        return item_size(request.get("Item") or {})
    if kind == "Update":
        return _update_size(request)
    return item_size(request.get("Key") or {})


def _transact_write_items(body: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> Checks:
    actions: Sequence[Mapping[str, Any]] = body.get("TransactItems") or ()
    yield _too_many_actions(actions)
    steps = [(kind, request) for action in actions for kind, request in action.items()]
    for kind, request in steps:
        if kind in _WRITE_ACTIONS:
            yield from _WRITE_ACTIONS[kind](request, shapes)
    yield _duplicate(
        filter(None, (_target(kind, request, shapes) for kind, request in steps)),
        "Transaction request cannot include multiple operations on one item",
    )
    if sum(_action_size(kind, request) for kind, request in steps) > MAX_TRANSACTION_BYTES:
        # Inferred: dynoxide's words; DynamoDB's could not be confirmed.
        yield (
            "Collection size of items exceeded, which can also be caused by the aggregate size "
            "of the items in the transaction exceeding the 4MB limit"
        )


def _transact_get_items(body: Mapping[str, Any], shapes: Mapping[str, TableShape]) -> Checks:
    # Its 4 MB limit is on the items read, which no request shows.
    actions: Sequence[Mapping[str, Any]] = body.get("TransactItems") or ()
    yield _too_many_actions(actions)
    for action in actions:
        if "Get" in action:
            yield from _get(action["Get"], shapes)


_OPERATIONS: dict[str, Callable[[Mapping[str, Any], Mapping[str, TableShape]], Checks]] = {
    "GetItem": _get,
    "PutItem": _put,
    "UpdateItem": _update,
    "DeleteItem": _delete,
    "Query": _query,
    "Scan": _scan,
    "BatchGetItem": _batch_get_item,
    "BatchWriteItem": _batch_write_item,
    "TransactWriteItems": _transact_write_items,
    "TransactGetItems": _transact_get_items,
}
