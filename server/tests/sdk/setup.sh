#!/usr/bin/env bash
# Makes the Python venv of the SDK compatibility suite (server/tests/sdk) with pip, and prints
# its python. The venv goes to $WEIR_SDK_VENV (default: target/sdk-venv at the workspace root);
# an existing venv whose requirements have not changed is kept as it is.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
venv="${WEIR_SDK_VENV:-$root/target/sdk-venv}"
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$here/requirements.txt" "$stamp"; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
  cp "$here/requirements.txt" "$stamp"
fi
echo "$venv/bin/python"
