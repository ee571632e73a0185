#!/usr/bin/env bash
# Installs what the integration tests drive for real: nginx, libsqlite3's headers and
# library (the test-only CSQLite module links it), and python3 for the scripted server.
# The Resilience library itself needs none of these.
set -euo pipefail

missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
[ -f /usr/include/sqlite3.h ] || missing+=(libsqlite3-dev)
command -v python3 >/dev/null 2>&1 || missing+=(python3)

if [ ${#missing[@]} -eq 0 ]; then
    echo "integration dependencies already present"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "skipping: not root, cannot install ${missing[*]}; the integration tests that need them will say so" >&2
    exit 0
fi

# The tests start their own nginx on a free port; keep the package from starting a
# system-wide one on port 80 (policy-rc.d answering 101 forbids service starts).
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    created_policy=1
fi
trap 'if [ "$created_policy" -eq 1 ]; then rm -f /usr/sbin/policy-rc.d; fi' EXIT

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
