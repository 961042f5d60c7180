"""Derive or record one Kueue release's facts (gpu_queues/kueue/releases.json) from its
pinned module: `python -m gpu_queues.release.facts --derive|--write VERSION`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from gpu_queues.kueue.versions import RELEASES_FILE, ROOT, DeriveError, derive, write_release
from gpu_queues.release.module import RenderError, module_dir


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_queues.release.facts", description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--derive", metavar="VERSION", help="print one release's facts")
    group.add_argument("--write", metavar="VERSION", help="record one release's facts")
    parser.add_argument("--offline", action="store_true", help="use the module cache only")
    args = parser.parse_args(argv)
    version = args.derive or args.write
    try:
        rel = derive(version, module_dir(version, offline=args.offline))
    except (RenderError, DeriveError, OSError, ValueError) as error:
        print(f"kueue-versions: {error}", file=sys.stderr)
        return 1
    if args.write:
        write_release(rel)
        print(f"{RELEASES_FILE.relative_to(ROOT)}: recorded Kueue {version}")
    else:
        print(json.dumps(rel.to_json(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
