#!/usr/bin/env bash
# Makes TLS files for trying consensusd over HTTPS on this machine: a
# throwaway certificate authority and a server certificate it signs.
#
#   deploy/local/tls.sh DIR [NAME...]
#
# NAMEs are the host names and IP addresses the certificate is valid for
# (default: localhost 127.0.0.1 ::1). The first run creates DIR/ca.crt and
# DIR/ca.key; every run issues a new DIR/server.crt and DIR/server.key
# (a new key and serial number) from that CA, replacing the files
# atomically, so running it again and sending consensusd SIGHUP rotates
# the certificate. Clients trust DIR/ca.crt: curl with --cacert or
# CURL_CA_BUNDLE, the consensus CLI (Go) with SSL_CERT_FILE.
#
# For tests and trials only: the CA key sits unencrypted next to the
# certificates, and anything that trusts ca.crt trusts whatever it signs.
set -euo pipefail

die() { echo "tls.sh: $*" >&2; exit 1; }
dir=${1:-}
[[ -n $dir ]] || die "usage: $0 DIR [NAME...]"
shift
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(localhost 127.0.0.1 ::1)
command -v openssl >/dev/null || die "openssl not found: install it (sudo apt-get install openssl)"

mkdir -p "$dir"
chmod 700 "$dir"
umask 077
days=30

if [[ ! -s $dir/ca.crt || ! -s $dir/ca.key ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" -days "$days" \
    -subj "/CN=Consensus throwaway test CA" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null \
    || die "could not create the CA"
  chmod 644 "$dir/ca.crt"
fi

san=""
for n in "${names[@]}"; do
  if [[ $n =~ ^[0-9.]+$ || $n == *:* ]]; then san+="IP:$n,"; else san+="DNS:$n,"; fi
done
san=${san%,}

tmp=$(mktemp -d "$dir/.issue.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/ext.cnf" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$san
EOF
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout "$tmp/server.key" -out "$tmp/server.csr" -subj "/CN=${names[0]}" 2>/dev/null \
  || die "could not create the server key"
openssl x509 -req -in "$tmp/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
  -CAserial "$dir/ca.srl" -CAcreateserial -days "$days" -extfile "$tmp/ext.cnf" \
  -out "$tmp/server.crt" 2>/dev/null \
  || die "could not sign the server certificate"
chmod 600 "$tmp/server.key"
chmod 644 "$tmp/server.crt"
# The key first: a reload between the two renames fails (the pair does not
# match) and keeps the old certificate; the next SIGHUP takes both.
mv -f "$tmp/server.key" "$dir/server.key"
mv -f "$tmp/server.crt" "$dir/server.crt"

serial=$(openssl x509 -in "$dir/server.crt" -noout -serial)
cat <<MSG
tls.sh: issued $dir/server.crt ($serial) for ${names[*]}
  CONSENSUS_TLS_CERT_FILE=$dir/server.crt
  CONSENSUS_TLS_KEY_FILE=$dir/server.key
  clients trust $dir/ca.crt (curl --cacert, CURL_CA_BUNDLE; SSL_CERT_FILE for Go programs)
MSG
