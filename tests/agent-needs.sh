#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The node agent does not load at start what only one of its modes uses: libcurl
# (the Kubernetes API client, DRA mode: lib/kube/kubecurl.c dlopens it) and
# libmicrohttpd (the metrics endpoint, when metrics are on: agent/metrics-mhd.c),
# with the TLS, Kerberos, LDAP and SSH libraries they bring, are not among its
# direct needs, nor reached through them. This checks the artifact (readelf, ldd).
#   tests/agent-needs.sh build/agent/railgate-device-plugin
set -euo pipefail
bin=${1:?usage: agent-needs.sh AGENT-BINARY}
forbidden='libcurl|libmicrohttpd|libgnutls|libgssapi_krb5|libldap|libssh2'
fail=0
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$bin needs: $(echo "$needed" | tr '\n' ' ')"
# the shared libgrpc (-DRAILGATE_STATIC_GRPC=OFF) is Debian's secure build: OpenSSL is its
if ! grep -q '^libgrpc\.so' <<<"$needed"; then
  forbidden+='|libssl|libcrypto'
fi
forbidden="^($forbidden)\.so"
loaded=$(ldd "$bin" | awk '{print $1}')
while read -r lib; do
  [[ -n $lib && $lib =~ $forbidden ]] || continue
  echo "agent-needs: $bin loads $lib at start" >&2
  fail=1
done <<<"$loaded"
exit "$fail"
