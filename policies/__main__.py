"""Entry point the Pulumi CLI runs for `--policy-pack policies`: assembles the pack only.

Constructing PolicyPack starts the analyzer server and never returns, so tests import
policies.catalog instead of this file.
"""

import sys
from pathlib import Path

# The CLI runs this directory as a script; make `policies` importable as a package so the
# pack and the tests load the very same modules.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from policies.catalog import PACK_NAME, policies

PolicyPack(
    name=PACK_NAME,
    policies=policies(),
    enforcement_level=EnforcementLevel.MANDATORY,
)
