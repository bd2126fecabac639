"""What a file's first bytes say of its layout, without the fast readers: whether it may be a List (worth reading item
by item) and from what size a stream is read document by document. `documents` decides with these alone, so a small
file (a fleet of a few nodes, a template) is read by the strict reader without loading msgspec and rapidyaml
(`listing`), which would cost more than reading it."""

from __future__ import annotations

import re

#: How a line at column 0 among the items starts: an item's (`- `, or `-` alone: an empty item)...
ITEM_LINE = rb"-[ \n]"
#: The line break before an item. The item's line is looked at, not taken: an empty item is followed at once by the
#: next one's line (RE2, which has no lookahead, would take it).
YAML_ITEM = re.compile(rb"\n(?=" + ITEM_LINE + rb")")
#: The start of a YAML List, up to its first item: kubectl writes `apiVersion` alone before `items`; a List written by
#: hand or by another tool may put its other fields first (`kind`, a flat `metadata`), with comments and blank lines.
#: What these lines say is checked by the strict reader (`listing.yaml_list`'s envelope); the pattern only bounds them.
YAML_HEAD = re.compile(
    rb"\A(?:---[ \t]*\n)?"
    rb"(?:(?:apiVersion|kind|metadata):[^\n]*\n|[ \t][^\n]*\n|(?:#[^\n]*)?\n)*"
    rb"items:" + YAML_ITEM.pattern
)

#: Streams smaller than this are read by the strict reader alone. It refuses a repeated key, where the fast decoders
#: take the last one (as kubectl's JSON reader does): a file written by hand, where a key is repeated by mistake, is
#: small, and read whole by PyYAML in a fraction of a second; a large one is a dump, read at the fast path's speed.
STREAM_BYTES = 1 << 20


def looks_listed(head: bytes) -> bool:
    """Whether a file's first bytes may start a List (JSON, or YAML as kubectl writes it): worth reading whole."""
    return head.lstrip()[:1] == b"{" or YAML_HEAD.match(head) is not None
