"""The `Edits` a processor (`span_processor`, `metric_processor`, `log_processor`) answers with.

A processor sees each batch before the exporters it applies to and records, item by item (by
index in the batch, the order the spans, metrics or log records are given in), what changes.
Items it does not name pass unchanged; a processor naming none answers an empty list and
nothing crosses back.
"""

from collections.abc import Sequence


class Edits:
    """What a processor does to the spans of one batch, by index. A dropped span stays dropped
    (later changes to it are ignored); changes to one span apply in the order made."""

    def __init__(self):
        self._items = {}

    def drop(self, index):
        """Drops span `index`: no exporter after this processor sees it."""
        self._items[index] = None

    def set_attribute(self, index, key, value):
        """Sets attribute `key` of item `index` (a str, bool, int, float, or a list of one of
        them), replacing one with that key (on a metric: on each of its data points)."""
        self._change(index, ("set-attribute", key, value))

    def remove_attribute(self, index, key):
        """Removes attribute `key` of item `index`, if it has one (on a metric: from each of its
        data points)."""
        self._change(index, ("remove-attribute", key))

    def rename(self, index, name):
        """Renames item `index`: a span, a metric (a log record: sets its event name)."""
        self._change(index, ("rename", name))

    def set_body(self, index, text):
        """Replaces the body of log record `index` with the string `text` (log processors)."""
        self._change(index, ("set-body", text))

    def set_status(self, index, code, description=""):
        """Sets the status of span `index` (span processors): `code` is "unset", "ok" or
        "error"."""
        if code not in ("unset", "ok", "error"):
            raise ValueError(f"status {code!r}: expected 'unset', 'ok' or 'error'")
        self._change(index, ("set-status", code, description))

    def is_dropped(self, index):
        """Whether span `index` is dropped."""
        return index in self._items and self._items[index] is None

    def __len__(self):
        return len(self._items)

    def _change(self, index, change):
        if not isinstance(index, int) or index < 0:
            raise ValueError(f"span index {index!r}: expected a non-negative int")
        changes = self._items.setdefault(index, [])
        if changes is not None:
            changes.append(change)

    def to_wit(self):
        """The answer `process` returns to the host."""
        from wit_world.imports import edit_types

        answer = []
        for index in sorted(self._items):
            changes = self._items[index]
            if changes is None:
                action = edit_types.Action_Drop()
            else:
                action = edit_types.Action_Edit([_change(c) for c in changes])
            answer.append(edit_types.ItemEdit(index, action))
        return answer


def _change(change):
    from wit_world.imports import edit_types, types

    kind = change[0]
    if kind == "set-attribute":
        return edit_types.Change_SetAttribute(types.KeyValue(change[1], _value(change[2])))
    if kind == "remove-attribute":
        return edit_types.Change_RemoveAttribute(change[1])
    if kind == "rename":
        return edit_types.Change_Rename(change[1])
    if kind == "set-body":
        return edit_types.Change_SetBody(change[1])
    code, description = change[1], change[2]
    status = {
        "unset": types.Status_Unset,
        "ok": types.Status_Ok,
    }.get(code)
    return edit_types.Change_SetStatus(status() if status else types.Status_Error(description))


def _value(v):
    from wit_world.imports import types

    # bool before int: `True` is an int too.
    for kind, case in (
        (bool, types.Value_Bool),
        (int, types.Value_S64),
        (float, types.Value_F64),
        (str, types.Value_String),
        (bytes, types.Value_Bytes),
    ):
        if isinstance(v, kind):
            return case(v)
    if isinstance(v, Sequence) and v:
        arrays = (
            (bool, types.Value_BoolArray),
            (int, types.Value_S64Array),
            (float, types.Value_F64Array),
            (str, types.Value_StringArray),
        )
        for kind, case in arrays:
            if all(isinstance(x, kind) for x in v) and (
                kind is bool or not any(isinstance(x, bool) for x in v)
            ):
                return case(list(v))
    raise TypeError(
        f"attribute value {v!r}: expected str, bool, int, float, bytes or a non-empty list of "
        "one of str, bool, int, float"
    )
