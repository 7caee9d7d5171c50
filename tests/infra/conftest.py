"""Fixtures of the infra tier: the stack synthesised once for the whole session, in process, with
the context a deployment gives it (cdk.json's flags, a certificate and an image tag)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.infra.synthesis import Synthesized

# Before aws_cdk is first imported (that starts the jsii Node.js process): Node 20 is past its end
# of life, which jsii would announce on every start, and any deprecated CDK API fails the test
# instead of printing a warning nobody reads.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_DEPRECATED", "fail")


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The default deployment (no WAF). Imported here, not at the top, so that the tests of this
    tier that need no CDK (test_packaging.py) run where the infra group is not installed."""
    from tests.infra.synthesis import synthesize

    return synthesize(tmp_path_factory.mktemp("cdk.out"))
