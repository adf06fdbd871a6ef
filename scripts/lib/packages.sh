# shellcheck shell=bash
# Sourced by the scripts that need something from Debian's archive; not run on its own.

# ensure_packages WHO PACKAGE...: installs whichever PACKAGE is not installed yet (one apt-get update first), saying so
# on stderr as WHO; as root, or through sudo. Every script installs what it needs this one way, so a fresh machine
# gets the same answer from each.
ensure_packages() {
    local who=$1 package sudo=""
    local missing=()
    shift
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    ((${#missing[@]})) || return 0
    [[ $(id -u) == 0 ]] || sudo="sudo"
    echo "$who: installing ${missing[*]}" >&2
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
