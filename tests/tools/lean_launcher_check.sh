#!/bin/sh
# Usage: lean_launcher_check.sh DDPRUN
# Fails when the `ddprun` binary DDPRUN holds a symbol of gRPC, Protobuf or OpenSSL: `ddprun`
# hands what needs them to the network launcher (launcher/src/network_launcher.h), so that no
# launch pays for their static initializers and pages. Also when it calls one of glibc's
# functions that load shared libraries at run time (name resolution, users and groups): `ddprun`
# is linked statically (cmake/CompilerOptions.cmake), and those would need the NSS modules of
# the glibc it was linked with.
set -eu
symbols=$(nm -C "$1")
found=$(printf '%s\n' "$symbols" | grep -i -E 'grpc|google::protobuf|openssl|ssl_ctx' || true)
if [ -n "$found" ]; then
  echo "$1 links $(printf '%s\n' "$found" | wc -l) gRPC, Protobuf or OpenSSL symbols, such as:"
  printf '%s\n' "$found" | head -5
  exit 1
fi
# Only a static program (no program interpreter) cannot call them safely; a sanitizer's build is
# dynamic, and its runtime defines them all, as interceptors.
if readelf -l "$1" | grep -q INTERP; then
  echo "$1: no gRPC, Protobuf or OpenSSL symbol; dynamically linked, so NSS is not checked"
  exit 0
fi
nss=$(printf '%s\n' "$symbols" | grep -E ' U (getaddrinfo|gethostbyname|getpwnam|getpwuid|getgrnam|getgrgid|getservbyname|initgroups)(@|$)| [TW] (getaddrinfo|gethostbyname|getpwnam|getpwuid|getgrnam|getgrgid|getservbyname|initgroups)$' || true)
if [ -n "$nss" ]; then
  echo "$1 calls glibc functions that load NSS modules at run time:"
  printf '%s\n' "$nss"
  exit 1
fi
echo "$1: no gRPC, Protobuf, OpenSSL or NSS symbol among $(printf '%s\n' "$symbols" | wc -l)"
