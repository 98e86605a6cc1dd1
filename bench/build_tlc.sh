#!/usr/bin/env bash
# Build TLC (tla2tools.jar) from a checkout of github.com/tlaplus/tlaplus, with javac
# alone (no Ant, no network), for bench/tlc_symmetry.py:
#
#     bash bench/build_tlc.sh TLAPLUS_CHECKOUT OUT.jar
#
# TLAPLUS_CHECKOUT is the repository's work tree (or a `git archive` of it). The jar
# holds TLC's classes, the standard modules, and the libraries it ships in lib/.
set -euo pipefail
src=${1:?usage: build_tlc.sh TLAPLUS_CHECKOUT OUT.jar}
out=${2:?usage: build_tlc.sh TLAPLUS_CHECKOUT OUT.jar}
tools="$src/tlatools/org.lamport.tlatools"
[ -d "$tools/src/tlc2" ] || { echo "build_tlc.sh: $tools/src/tlc2 not found: not a tlaplus checkout" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
classpath=$(find "$tools/lib" -name '*.jar' | tr '\n' ':')
echo "compiling TLC's sources ($(find "$tools/src" -name '*.java' | wc -l) files)..."
find "$tools/src" -name '*.java' > "$work/sources"
javac -nowarn -encoding UTF-8 -d "$work/classes" -cp "$classpath" @"$work/sources" 2>&1 \
    | grep -v '^Note:' || true
(cd "$tools/src" && find . -type f ! -name '*.java' -print0 \
    | xargs -0 -I{} sh -c 'mkdir -p "$1/$(dirname "{}")" && cp "{}" "$1/{}"' _ "$work/classes")
# the libraries TLC needs at run time, unpacked beside its classes
for jar in gson/gson-2.8.6.jar javax.mail/mailapi-1.6.3.jar; do
    (cd "$work/classes" && jar xf "$tools/lib/$jar")
done
rm -rf "$work/classes/META-INF"
jar --create --file "$out" --main-class tlc2.TLC -C "$work/classes" .
echo "wrote $out"
