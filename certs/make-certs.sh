#!/usr/bin/env bash
# Makes the certificates gpu-tenancy serves with, using only the openssl CLI:
#   ca.crt, ca.key           an ECDSA P-256 CA (kept when it already exists, so re-running this
#                            script rotates the serving pair under the same CA and the caBundle
#                            in the webhooks and the scheduler config stays valid)
#   tls.crt, tls.key         the serving pair, signed by the CA, with SANs
#                            <svc>, <svc>.<ns>, <svc>.<ns>.svc, <svc>.<ns>.svc.cluster.local,
#                            localhost, 127.0.0.1 and ::1 (development)
#   client.crt, client.key   a client pair from the same CA, for `serve --client-ca`
#                            (docs/install.md, "Mutual TLS")
#
# usage: certs/make-certs.sh [OUT_DIR]       (default: certs/out, which git ignores)
# env:   SERVICE (gpu-tenancy), NAMESPACE (gpu-tenancy-system), DAYS (365), CA_DAYS (3650)
#
# Private keys never belong in git: *.key and certs/out/ are in .gitignore.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/out}"
service="${SERVICE:-gpu-tenancy}"
namespace="${NAMESPACE:-gpu-tenancy-system}"
days="${DAYS:-365}"
ca_days="${CA_DAYS:-3650}"

mkdir -p "$out"
cd "$out"
umask 077  # keys are readable by their owner only
work="$(mktemp -d "$out/.make-certs.XXXXXX")"
trap 'rm -rf "$work"' EXIT

if [[ -s ca.key && -s ca.crt ]]; then
  echo "reusing the CA in $out/ca.crt"
else
  openssl ecparam -name prime256v1 -genkey -noout -out "$work/ca.key"
  openssl req -x509 -new -key "$work/ca.key" -sha256 -days "$ca_days" \
    -subj "/CN=gpu-tenancy CA" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$work/ca.crt"
  mv "$work/ca.key" ca.key
  mv "$work/ca.crt" ca.crt
  echo "made a new CA: $out/ca.crt"
fi

# issue NAME CN EXTENSIONS: NAME.key and NAME.crt signed by the CA, with a random serial.
issue() {
  local name="$1" cn="$2" ext="$3"
  openssl ecparam -name prime256v1 -genkey -noout -out "$work/$name.key"
  openssl req -new -key "$work/$name.key" -subj "/CN=$cn" -out "$work/$name.csr"
  printf '%b' "$ext" > "$work/$name.ext"
  openssl x509 -req -in "$work/$name.csr" -CA ca.crt -CAkey ca.key \
    -set_serial "0x$(openssl rand -hex 16)" -days "$days" -sha256 \
    -extfile "$work/$name.ext" -out "$work/$name.crt" 2>"$work/$name.log" \
    || { cat "$work/$name.log" >&2; echo "make-certs: cannot sign $name.crt" >&2; exit 1; }
  openssl verify -CAfile ca.crt "$work/$name.crt" >/dev/null
  # Certificate first, key last: a server polling the pair sees a mismatch for at most a moment
  # and keeps its current pair meanwhile.
  mv "$work/$name.crt" "$name.crt"
  mv "$work/$name.key" "$name.key"
}

sans="DNS:$service,DNS:$service.$namespace,DNS:$service.$namespace.svc"
sans+=",DNS:$service.$namespace.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:::1"
issue tls "$service.$namespace.svc" \
  "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=$sans\n"
issue client "gpu-tenancy-client" \
  "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n"
chmod 644 ca.crt tls.crt client.crt

echo "serving certificate: $out/tls.crt ($(openssl x509 -noout -enddate -in tls.crt))"
openssl x509 -noout -ext subjectAltName -in tls.crt | sed 's/^/  /'
echo "client certificate:  $out/client.crt"
echo "next: certs/render-ca-bundle.sh $out"
