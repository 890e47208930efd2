"""Provisioning integration: hwadvisor's facts in the engines platform teams run.

See docs/provisioning.md.

- :mod:`~hwadvisor.export.ansible`: an Ansible local fact that prints a cached report;
- :mod:`~hwadvisor.export.nfd`: a Node Feature Discovery ``features.d`` file of node labels;
- :mod:`~hwadvisor.export.prometheus`: node_exporter textfile-collector metrics;
- :mod:`~hwadvisor.export.fleet`: ranking many machines' saved reports for one workload.

Each format is a pure function of a :class:`~hwadvisor.export.report.Report`, so it can
be produced from a saved ``check --json`` document on any machine and tested without
hardware; only the CLI decides whether to read a file or probe this machine.
"""

from __future__ import annotations

from enum import Enum


class ExportFormat(str, Enum):
    """The formats ``hwadvisor export --format`` writes."""

    ANSIBLE = "ansible"
    NFD = "nfd"
    PROMETHEUS = "prometheus"
