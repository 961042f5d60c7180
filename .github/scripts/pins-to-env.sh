#!/usr/bin/env bash
# Hands every pin of toolchain/pins.env to a GitHub job, so no workflow repeats a version:
# KEY=VALUE into $GITHUB_ENV (for the `run:` steps after this one) and key-in-kebab-case=VALUE
# into $GITHUB_OUTPUT (for `with:` inputs, e.g. steps.pins.outputs.pulumi-version), plus
# pulumi-cli, the Pulumi version without its leading v as pulumi/actions wants it.
set -euo pipefail
pins=$(cd "$(dirname "$0")/../.." && pwd)/toolchain/pins.env
: "${GITHUB_ENV:?not in a GitHub job: GITHUB_ENV is unset}" "${GITHUB_OUTPUT:?GITHUB_OUTPUT is unset}"
# shellcheck source=/dev/null
. "$pins"
while IFS= read -r key; do
  value=${!key}
  # One line each: a value with anything but version characters could inject variables.
  [[ $value =~ ^[A-Za-z0-9._+-]+$ ]] || { echo "pins-to-env: $key has an unexpected value '$value'" >&2; exit 1; }
  printf '%s=%s\n' "$key" "$value" >>"$GITHUB_ENV"
  output=${key,,}
  printf '%s=%s\n' "${output//_/-}" "$value" >>"$GITHUB_OUTPUT"
done < <(sed -nE 's/^([A-Z][A-Z0-9_]*)=.*/\1/p' "$pins")
printf 'pulumi-cli=%s\n' "${PULUMI_VERSION#v}" >>"$GITHUB_OUTPUT"
