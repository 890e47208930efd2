"""Kubernetes label rules: validating a prefix, sanitising names and values.

A label key is ``<prefix>/<name>``: the prefix a DNS subdomain (RFC 1123, lower case,
at most 253 characters), the name and the value at most 63 characters of
``[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`` (a value may also be empty). Node Feature
Discovery refuses the ``kubernetes.io`` and ``k8s.io`` namespaces for local features, and
NVIDIA's GPU Feature Discovery owns ``nvidia.com``: hwadvisor never writes into them.
"""

from __future__ import annotations

import re

from hwadvisor.errors import UsageError

MAX_NAME = 63
MAX_PREFIX = 253
NAME_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

DEFAULT_PREFIX = "hwadvisor.io"

#: Namespaces owned by others (and their subdomains): Kubernetes itself, NFD's built-in
#: features, NVIDIA's GPU Feature Discovery.
RESERVED_NAMESPACES = ("kubernetes.io", "k8s.io", "nvidia.com")

_BAD_CHARS = re.compile(r"[^-A-Za-z0-9_.]+")
_EDGE = re.compile(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")


def is_valid_name(name: str) -> bool:
    """Whether ``name`` is a valid label name part (also the rule for non-empty values)."""
    return len(name) <= MAX_NAME and NAME_RE.match(name) is not None


def is_valid_value(value: str) -> bool:
    """Whether ``value`` is a valid label value (empty is allowed)."""
    return value == "" or is_valid_name(value)


def is_valid_prefix(prefix: str) -> bool:
    """Whether ``prefix`` is a DNS subdomain (lower case, dot-separated RFC 1123 labels)."""
    if not prefix or len(prefix) > MAX_PREFIX:
        return False
    return all(len(part) <= 63 and DNS_LABEL_RE.match(part) for part in prefix.split("."))


def check_prefix(prefix: str) -> str:
    """Return ``prefix`` (a trailing ``/`` dropped) or raise :class:`UsageError`."""
    p = prefix.strip().rstrip("/")
    if not is_valid_prefix(p):
        raise UsageError(
            f"--prefix {prefix!r} is not a DNS subdomain (lower-case letters, digits, '-' and '.')"
        )
    for ns in RESERVED_NAMESPACES:
        if p == ns or p.endswith("." + ns):
            raise UsageError(
                f"--prefix {p!r} is in the {ns} namespace, which hwadvisor must not write; use e.g. {DEFAULT_PREFIX}"
            )
    return p


def sanitize(text: str) -> str:
    """Turn any text into a valid label name or value (possibly empty).

    Runs of disallowed characters become one ``-``, non-alphanumeric characters are
    trimmed from both ends, and the result is cut to 63 characters (trimming again, so
    it never ends in ``-``, ``_`` or ``.``).
    """
    out = _BAD_CHARS.sub("-", text)
    out = _EDGE.sub("", out)
    if len(out) > MAX_NAME:
        out = _EDGE.sub("", out[:MAX_NAME])
    return out


def bool_value(flag: bool) -> str:
    """Label value of a boolean: ``true`` or ``false``."""
    return "true" if flag else "false"
